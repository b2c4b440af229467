"""What the command line does with what it was asked, said or done: a file asked for is written, a grid
with nothing in it or a scenario the planner cannot plan is refused in words, a field a load does not use
is named, a window is the one measured and a name prints as text (a review of the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.scenario.codec import load_preset, loads_toml

PLAN = ["plan", "chat-colocated", "--hardware", "h100-sxm", "--tp", "2", "--pp", "1", "--duration-s", "30"]
PLAN += ["--finalists", "1", "--target-rps", "8", "--no-progress", "--no-margin", "--no-verify"]


def test_plan_json_writes_the_chosen_scenario_it_was_asked_for(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # checked writable before the search, then never written with --json (a review)
    out = tmp_path / "chosen.toml"
    assert main([*PLAN, "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["wrote"] == str(out) and out.is_file()
    chosen = loads_toml(out.read_text(encoding="utf-8"))
    assert chosen.deployment.pools and main([*PLAN, "--out", str(out)]) == 0  # as the text's file
    capsys.readouterr()
    assert loads_toml(out.read_text(encoding="utf-8")) == chosen


def test_an_empty_grid_and_an_edge_site_are_refused_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    # a pipeline degree above 1 pairs only with tp 4 or more: tp 1,2 with pp 2 died in a KeyError (a review)
    base = ["plan", "chat-colocated", "--target-rps", "16", "--no-progress", "--no-margin"]
    assert main([*base, "--tp", "1,2", "--pp", "2"]) == 2
    err = capsys.readouterr().err
    assert "no instance layout to try" in err and "add pp 1, or a tp of 4 or more" in err
    assert "Traceback" not in err
    # its pools replaced, the site's rule was refused as if edge-offload had no edge pool (a review)
    assert main(["plan", "edge-offload", "--target-rps", "1", "--no-progress", "--no-margin"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: deployment.edge: the planner sizes a data centre's pools")
    assert "an edge site needs at least one pool" not in err


def test_a_warm_up_a_whole_run_load_does_not_use_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "offline-batch", "--set", "workload.arrival.requests=200"]
    assert main([*args, "--set", "warmup_s=10"]) == 0
    out = capsys.readouterr().out
    assert "warmup_s (10) is not used by an offline batch: its whole run is measured" in out
    assert main(args) == 0
    assert "warmup_s" not in capsys.readouterr().out  # none set: nothing said


def test_capacity_names_the_window_it_measured(capsys: pytest.CaptureFixture[str]) -> None:
    # a 600 s window was read where requests were measured over [400, 600) only (a review)
    base = ["capacity", "chat-colocated", "--duration-s", "60", "--set", "warmup_s=40", "--no-margin"]
    base += ["--no-progress", "--max-simulations", "2"]
    assert main(base) == 0
    assert " over a 20 s window after a 40 s warm-up" in capsys.readouterr().out
    assert main([*base, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["window_s"], doc["warmup_s"]) == (20.0, 40.0)


def test_a_name_with_control_characters_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # an escape sequence in the name cleared the terminal and wrote a fake line above `run`'s report (a review)
    text = (Path("presets/scenarios") / "chat-colocated.toml").read_text(encoding="utf-8")
    bad = tmp_path / "evil.toml"
    evil = 'name = "\\u001b[2J\\u001b[31mEVIL\\r\\nrequests: 0 in window"\n'
    bad.write_text(
        evil + "\n".join(ln for ln in text.splitlines() if not ln.startswith("name =")), encoding="utf-8"
    )
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "name: control character U+001B at 0: printable text only" in err and "\x1b" not in err
    assert load_preset("chat-colocated").description  # a preset's prose stays valid


def test_plan_says_what_it_replaces_of_set_and_a_window_longer_than_the_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.cli.plan import _replaced_sets

    # the help's own --set examples were dropped unsaid by plan (a review)
    said = _replaced_sets(
        ["deployment.pools[0].tp=4", "workload.arrival.rate_rps=20", "deployment.stack=sglang"]
    )
    assert said == (
        "the plan replaces deployment.pools[0].tp (its deployments, which keep only the pools' chips and "
        "profiles); workload.arrival.rate_rps (--target-rps): those --set values are not used"
    )
    assert _replaced_sets(["deployment.pools[0].hardware=mi300x", "duration_s=60"]) == ""  # its chips: used
    args = [
        *PLAN[:-1],
        "--set",
        "duration_s=60",
        "--set",
        "deployment.pools[0].tp=4",
        "--max-simulations",
        "2",
    ]
    assert main(args) in (0, 1)
    out, err = capsys.readouterr()
    assert "note: the plan replaces deployment.pools[0].tp (its deployments, which keep only" in err
    # its picks verified over 60 s, chosen over a 30 s planning window here: no note; over 120 s, one
    assert "shorter than the" not in out
    assert main([*args[:9], "120", *args[10:]]) in (0, 1)
    assert "full-length runs that verify each pick (the scenario's 60 s) are shorter than the 120 s" in (
        capsys.readouterr().out
    )


def test_capacity_says_what_it_replaces_of_set() -> None:
    """`capacity --set duration_s=120 --duration-s 60` ran over 60 s unsaid (a review), as plan said its
    own replacements: the rate it searches always, the window where --duration-s is given."""
    from engine.cli.capacity import _replaced_sets

    sets = ["duration_s=120", "workload.arrival.rate_rps=3", "deployment.stack=sglang"]
    assert _replaced_sets(sets, window=True) == (
        "the search replaces workload.arrival.rate_rps (the rates it searches); duration_s (--duration-s): "
        "those --set values are not used"
    )
    assert _replaced_sets(sets, window=False) == (
        "the search replaces workload.arrival.rate_rps (the rates it searches): those --set values are not used"
    )
    assert _replaced_sets(["duration_s=120", "deployment.stack=sglang"], window=False) == ""


def test_run_says_its_latencies_are_of_the_answered_where_many_were_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """prefill-loss-nofallback fails 15% of its requests: Results' TTFT card said its p99 was of the 85%
    answered while `run` printed the same figures bare (a note)."""
    assert main(["run", "prefill-loss-nofallback"]) == 0
    out = capsys.readouterr().out
    assert "(latencies of the 85% answered: a failed or rejected request has none)" in out
    assert main(["run", "chat-disaggregated", "--set", "duration_s=30"]) == 0
    assert "answered:" not in capsys.readouterr().out


def test_run_says_what_the_edge_site_did(capsys: pytest.CaptureFixture[str]) -> None:
    """`run edge-offload` printed nothing of its edge tier, every figure of its lesson only in --json (a review):
    the Results page's edge line, from the same summary."""
    from engine.explain.presentation import edge_line

    assert main(["run", "edge-offload", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    said = edge_line(doc)
    assert said is not None and "served locally" in said and "59 for power" in said
    assert main(["run", "edge-offload"]) == 0
    assert said in capsys.readouterr().out
    assert main(["run", "chat-disaggregated", "--set", "duration_s=30"]) == 0
    assert "Edge site:" not in capsys.readouterr().out


def test_what_qualifies_a_run_is_said_to_python_and_in_json_as_in_the_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A fault set after the run's end and a client count a Poisson load ignores were said by the text
    report alone: `engine.simulate`'s result and `run --json` gave no word of either (a notebook user's
    review). `engine.notes(result)` and the JSON's `notes` carry the report's sentences."""
    import engine

    sets = ["duration_s=30", "workload.arrival.clients=8", 'faults=[{at_s=900, pool="mixed", instances=1}]']
    args = ["run", "chat-colocated", *(x for s in sets for x in ("--set", s))]
    assert main([*args, "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("faults[0] at 900 s never fired") for n in said)
    assert "workload.arrival.clients (8) is not used by a poisson load" in said
    assert main(args) == 0
    report = capsys.readouterr().out
    assert all(n in report for n in said)
    assert main([*args, "--replications", "2", "--json"]) == 0  # each seed's notes, once each
    seeds = json.loads(capsys.readouterr().out)["notes"]
    assert said[1] in seeds and seeds.count(said[1]) == 1  # the same for every seed: said once
    assert all(
        n.startswith("faults[0] at 900 s never fired") for n in seeds if n != said[1]
    )  # each seed's end
    over = {
        "duration_s": 30.0,
        "workload.arrival.clients": 8,
        "faults": [{"at_s": 900, "pool": "mixed", "instances": 1}],
    }
    result = engine.simulate(engine.apply_overrides(load_preset("chat-colocated"), over))
    assert engine.notes(result) == said
    assert (
        engine.notes(
            engine.simulate(engine.apply_overrides(load_preset("chat-colocated"), {"duration_s": 30.0}))
        )
        == []
    )


def test_a_trace_run_says_how_its_file_meets_the_window_and_planning_one_names_the_sweep(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The Workload page said where a trace's rows went and its idle tail; `run` said neither (a CSV in
    milliseconds replayed 26 of 12,031 rows, exit 0), and `capacity` on a trace refused with no way
    forward (a trace replay review)."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n" + "".join(f"{i},100,10\n" for i in range(200)))
    sets = ["duration_s=120", f'workload.trace={{format="csv", path="{trace}"}}']
    assert main(["run", "chat-colocated", *(x for s in sets for x in ("--set", s)), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["notes"]
    assert said == [
        "120 requests in the window of the file's 200: 80 at or past its end at 120 s (the file runs to 199 s).",
        # the preset's own rate, left behind by the trace, is named as a closed loop names it
        "workload.arrival.rate_rps (16.0) is not used with a trace: its arrivals come from the file "
        "(workload.trace.time_scale replays it faster or slower)",
    ]
    assert main(["capacity", "chat-colocated", *(x for s in sets for x in ("--set", s))]) == 2
    assert (
        "sweep its pace: `fengong sweep SCENARIO --vary workload.trace.time_scale=1,2,4`"
        in capsys.readouterr().err
    )


def test_a_kv_hand_off_between_chip_vendors_is_said_where_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """Prefill on H100s and decode on MI300Xs ran, advised and compared with no word of the KV cache crossing
    vendors; `emit` alone said to check the stack's connector (a hardware strategist's review)."""
    sets = ["duration_s=20", "deployment.pools[1].hardware=mi300x"]
    args = ["run", "chat-disaggregated", *(x for s in sets for x in ("--set", s))]
    assert main([*args, "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["notes"]
    crossing = "The KV cache crosses vendors: prefill on NVIDIA (h100-sxm), decode on AMD (mi300x)."
    (said,) = [n for n in said if n.startswith("The KV cache")]
    assert said.startswith(crossing) and said.endswith("moves the cache between these chips before you buy.")
    assert main(args) == 0 and said in capsys.readouterr().out
    assert main(["run", "chat-disaggregated", "--set", "duration_s=20", "--json"]) == 0  # one vendor: nothing
    assert not [n for n in json.loads(capsys.readouterr().out)["notes"] if "crosses vendors" in n]


def test_a_tp_group_wider_than_a_machine_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """A TP64 of H100s ran over eight machines with nothing said (a hardware strategist's review)."""
    sets = ["duration_s=20", "deployment.pools[1].tp=64"]
    assert main(["run", "chat-disaggregated", *(x for s in sets for x in ("--set", s)), "--json"]) == 0
    said = [n for n in json.loads(capsys.readouterr().out)["notes"] if "TP group" in n]
    assert said == [
        "deployment.pools[1] (decode): its TP group of 64 h100-sxm spans 8 machines of 8 chips, so each layer's "
        "two all-reduces cross the network, at least 150 µs each; instances of at most 8 chips keep them inside "
        "a machine"
    ]
