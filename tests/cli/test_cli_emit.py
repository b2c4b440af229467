"""`fengong emit SCENARIO --stack S` and `plan --emit S`: the export on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.cli.emit import STACK_CHOICES
from engine.cli.main import main
from engine.planning import EMIT_STACKS
from tests.planning.test_emit import _parse

SMALL_PLAN = ["plan", "chat-colocated", "--hardware", "h100-sxm", "--tp", "2", "--duration-s", "30",
              "--finalists", "1", "--no-progress", "--no-margin", "--target-rps", "8"]  # fmt: skip


def test_the_cli_offers_every_stack_the_engine_writes() -> None:
    assert STACK_CHOICES == EMIT_STACKS


def test_emit_prints_a_manifest_for_a_disaggregated_preset(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emit", "chat-disaggregated", "--stack", "dynamo"]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["kind"] == "DynamoGraphDeployment"
    roles = sorted(s.get("subComponentType", "") for s in doc["spec"]["services"].values())
    assert roles == ["", "decode", "prefill"]


def test_a_written_manifest_is_called_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'wrote the dynamo launch commands' named a DynamoGraphDeployment (a review)."""
    out = tmp_path / "dynamo.yaml"
    assert main(["emit", "chat-disaggregated", "--stack", "dynamo", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote the dynamo manifest to {out}"


def test_emit_takes_set_and_writes_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "serve.sh"
    args = [
        "emit",
        "chat-colocated",
        "--stack",
        "vllm",
        "--set",
        "deployment.pools[0].tp=4",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    assert "wrote the vllm launch commands" in capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/sh") and "--tensor-parallel-size 4" in text


def test_emit_refuses_what_the_stack_cannot_take(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emit", "chat-colocated", "--stack", "llm-d"]) == 2
    assert "deployment.mode" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["emit", "chat-colocated", "--stack", "ollama"])


def test_plan_emit_exports_the_chosen_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL_PLAN, "--json", "--emit", "vllm"]) == 0
    doc = json.loads(capsys.readouterr().out)
    frag = doc["emit"]
    assert frag["stack"] == "vllm" and frag["text"].startswith("#!/bin/sh")
    pools = doc["best"]["deployment"]["pools"]
    assert frag["text"].count("vllm serve ") == len(pools)
    for pool in pools:  # each command is the chosen deployment's pool, its copies noted
        assert f"# pool {pool['name']}: {pool['role']}, {pool['count']} x {pool['hardware']}" in frag["text"]
        assert f"--tensor-parallel-size {pool['tp']}" in frag["text"]


def test_plan_emit_says_why_a_manifest_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    colocated_only = [*SMALL_PLAN, "--modes", "colocated"]
    assert main([*colocated_only, "--emit", "dynamo"]) == 0  # the plan stands
    assert "emit dynamo: not written: deployment.mode" in capsys.readouterr().out
    out = tmp_path / "sglang.sh"
    assert main([*colocated_only, "--emit", "sglang", "--emit-out", str(out)]) == 0
    assert f"wrote the sglang launch commands to {out}" in capsys.readouterr().out
    argv = [w for w in out.read_text(encoding="utf-8").split() if w != "\\"]
    start = argv.index("sglang.launch_server") + 1
    _parse("sglang", tuple(argv[start:]))  # the written command parses with SGLang's flags


def test_emit_out_without_emit_is_refused_before_the_search(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL_PLAN, "--emit-out", "/tmp/never-written.sh"]) == 2
    assert "--emit-out: names where --emit writes" in capsys.readouterr().err
