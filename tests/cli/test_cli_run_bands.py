"""`run --json` carries the bands the text prints beside the headline figures, as numbers (a script
could read only the spread's raw moves, which a printed band can be wider than: a review)."""

from __future__ import annotations

import json
import re

import pytest

from engine.cli.main import main

SHORT = ["--set", "duration_s=60"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, dict]:
    assert main(["run", *args, *SHORT]) == 0
    text = capsys.readouterr().out
    assert main(["run", *args, *SHORT, "--json", "--bands"]) == 0
    return text, json.loads(capsys.readouterr().out)


LINES = {
    "ttft_p99_ms": r"^  ttft  ms .*",
    "tpot_p99_ms": r"^  tpot  ms .*",
    "e2e_p99_ms": r"^  e2e   ms .*",
    "throughput_rps": r"^throughput: .*",
    "goodput_rps": r"^SLO attainment .*",
    "usd_per_request": r"^cost: .* per 1k requests.*",
    "usd_per_million_output_tokens": r"^cost: .* per million output tokens.*",
}


@pytest.mark.parametrize(
    "args",
    [
        ("chat-disaggregated",),
        ("chat-disaggregated", "--margin"),
        ("kv-link-fault", "--margin"),
        ("chat-colocated",),
    ],
)
def test_the_json_bands_are_the_printed_ones(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    text, doc = _run(capsys, *args)
    bands = doc["bands"]
    assert {"tpot_p99_ms", "throughput_rps", "usd_per_request"} <= set(bands)
    for key, b in bands.items():
        assert b["low"] <= 0.0 <= b["high"], (key, b)  # a band holds its figure
        line = re.search(LINES[key], text, re.MULTILINE)
        assert line is not None and b["text"] in line.group(0), (key, b["text"], line)
    if "--margin" in args:  # the spread's goodput band, in the text only with it
        assert "goodput_rps" in bands
    else:
        assert "goodput_rps" not in bands and "(" not in re.search(LINES["goodput_rps"], text, re.M).group(0)


def test_a_plain_json_run_leaves_the_bands_out(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --bands or --margin a `--json` run loads no calibration table (its process is timed:
    docs/performance.md), so it carries no `bands`."""
    assert main(["run", "chat-disaggregated", *SHORT, "--json"]) == 0
    assert "bands" not in json.loads(capsys.readouterr().out)
