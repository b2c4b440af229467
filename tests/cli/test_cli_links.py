"""Dashboard addresses from the command line (`engine.cli.links`): `scenario --link` and `plan --link`
print the address the dashboard opens to the same scenario and plan, or say what it would refuse."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from engine.cli.links import PAGES
from engine.cli.main import main
from engine.planning.plan_link import decode
from engine.scenario.codec import apply_overrides, dumps_toml, from_link, load_preset, to_data

SMALL_PLAN = ["--target-rps", "8", "--hardware", "h100-sxm", "--tp", "2", "--modes", "colocated",
              "--duration-s", "60", "--max-simulations", "20", "--no-margin", "--no-progress"]  # fmt: skip


def _printed(capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, str]]:
    out = capsys.readouterr().out.strip().splitlines()[-1]
    url = out.split(": ", 1)[-1] if ": http" in out else out
    parts = urlsplit(url)
    return parts.path, dict(parse_qsl(parts.query))


def test_a_scenario_link_opens_the_same_scenario_on_the_page_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sets = ["--set", "workload.arrival.rate_rps=20", "--set", "deployment.pools[0].count=3"]
    assert main(["scenario", "chat-colocated", *sets, "--link"]) == 0
    path, params = _printed(capsys)
    assert path == "/" and params["p"] == "chat-colocated"
    assert main(["scenario", "chat-colocated", *sets, "--json"]) == 0
    assert to_data(from_link(params)) == json.loads(capsys.readouterr().out)
    assert (
        main(["scenario", "chat-colocated", "--link", "compare", "--url", "https://fg.example.com/lab"]) == 0
    )
    out = capsys.readouterr().out.strip()
    assert out == "https://fg.example.com/lab/compare?v=1&p=chat-colocated"


def test_a_scenario_the_dashboard_would_refuse_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lengths = tmp_path / "lengths.csv"
    lengths.write_text("x\n" + "\n".join(str(100 + i) for i in range(50)) + "\n", encoding="utf-8")
    sc = apply_overrides(
        load_preset("chat-colocated"),
        {"workload.classes[0].input": {"kind": "empirical", "path": str(lengths), "column": "x"}},
    )
    toml = tmp_path / "mine.toml"
    toml.write_text(dumps_toml(sc), encoding="utf-8")
    assert main(["scenario", str(toml), "--link"]) == 2
    err = capsys.readouterr().err
    assert "--link: the dashboard would refuse this scenario: workload.classes[0].input.path" in err
    assert main(["scenario", "chat-colocated", "--link", "--url", "javascript:alert(1)"]) == 2
    assert "--url: 'javascript:alert(1)' is not an http:// or https:// address" in capsys.readouterr().err


def test_a_plan_link_carries_the_plan_the_command_made(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "chat-colocated", *SMALL_PLAN, "--link"]) == 0
    path, params = _printed(capsys)
    assert path == "/planner" and params["p"] == "chat-colocated"
    form = decode(params["plan"], ["h100-sxm"])
    assert form["rps"] == 8.0 and form["hw"] == ["h100-sxm"] and form["tp"] == [2] and form["window"] == 60.0
    assert form["sims"] == 20 and form["margin"] is False and form["risk"] is True and form["mixed"] is True
    assert form["ep"] == []  # a dense model: no expert-parallel groups in its form (the CLI's default 8,16)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--duration-s", "90"], "does not offer plan.window (Planning window (s)): '90' is not allowed"),
        (["--tp", "16"], "does not offer plan.tp (Tensor parallel): '16' is not allowed"),
        (["--finalists", "2"], "the Planner's form has no --finalists (it plans with 3)"),
        (["--no-verify"], "the Planner's form has no --no-verify"),
    ],
)
def test_a_plan_the_form_cannot_ask_for_is_said_before_the_search(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_search(*_: object, **__: object) -> None:
        raise AssertionError("the plan was searched before its link was refused")

    monkeypatch.setattr("engine.planning.plan.plan", no_search)
    assert main(["plan", "chat-colocated", "--target-rps", "8", "--no-progress", *flags, "--link"]) == 2
    assert said in capsys.readouterr().err


def test_the_link_pages_are_the_dashboards(capsys: pytest.CaptureFixture[str]) -> None:
    """Every page `--link` offers is one app.py serves (Results at the root), and the other way round."""
    app = (Path(__file__).resolve().parents[2] / "app.py").read_text(encoding="utf-8")
    served = set(re.findall(r'page\("\w+", "[^"]+", "[^"]+", "(\w+)"', app))
    assert {"home" if p == "results" else p for p in PAGES} == served
    assert main(["scenario", "chat-colocated", "--link", "--url", "http://h/x?y=1#f"]) == 2
    assert "--url: 'http://h/x?y=1#f' has a query or a fragment" in capsys.readouterr().err


def test_a_files_link_keeps_its_preset_and_its_seeds_as_the_dashboard_opens_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A file's link named chat-disaggregated whatever preset the file came from (its exports and Reset
    went there), and dropped the seeds count its first line states, opening one seed's figures where the
    file was the mean of three (a round-trip review)."""
    from engine.scenario.codec import SEEDS_NOTE

    sc = apply_overrides(load_preset("mooncake-replay"), {"seed": 2})
    path = tmp_path / "edited.toml"
    path.write_text(
        f"{SEEDS_NOTE}3 seeds (2 to 4): `fengong run FILE --replications 3` gives the same\n" + dumps_toml(sc)
    )
    assert main(["scenario", str(path), "--link"]) == 0
    _, params = _printed(capsys)
    assert params["p"] == "mooncake-replay" and params["seeds"] == "3"
    assert from_link(params) == sc
    plain = tmp_path / "plain.toml"
    plain.write_text(dumps_toml(sc))
    assert main(["scenario", str(plain), "--link"]) == 0
    assert "seeds" not in _printed(capsys)[1]
