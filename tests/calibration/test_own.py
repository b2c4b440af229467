"""A profile fitted to the user's own benchmark (`engine.calibration.own`): calibrated under the stack it
was fitted under, with the band of its own held-out errors; under another stack, a rule like any other."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from engine.calibration import trust
from engine.calibration.own import FEW_HELD_OUT, NO_HELD_OUT
from engine.catalog.entries import load_catalog
from engine.catalog.specs import CalibrationProfile
from engine.explain.confidence import pool_marks, run_mark
from engine.explain.previews import with_custom_chip
from engine.observe import detect
from engine.observe.fit import entry_with, fit_files
from engine.observe.playback import Deployment
from engine.scenario.codec import from_link, load_preset, to_link
from engine.scenario.resolve import resolve, scenario_catalog

FIX = Path(__file__).parent.parent / "observe" / "fixtures"
FILES = ("vllm_bench_detailed.json", "vllm_bench_detailed_rate8.json", "aiperf_profile_export_aiperf.json")
H100 = Deployment(hardware="h100-sxm", model="llama-3.1-8b", stack="vllm")


def _fitted(files: tuple[str, ...] = FILES) -> CalibrationProfile:
    return fit_files([detect.read_path(FIX / f) for f in files], H100, load_catalog()).profile


def _on_mine(profile: CalibrationProfile, stack: str = "vllm"):  # type: ignore[no-untyped-def]
    entry = entry_with(load_catalog().chip("h100-sxm"), profile, "mine")
    sc = with_custom_chip(load_preset("chat-disaggregated"), entry)
    pools = tuple(p.model_copy(update={"hardware": entry.id, "profile": None}) for p in sc.deployment.pools)
    dep = sc.deployment.model_copy(update={"pools": pools, "stack": stack})
    return sc.model_copy(update={"deployment": dep})


def test_a_fit_carries_its_stack_and_held_out_band() -> None:
    prof = _fitted()
    assert prof.stack == "vllm" and prof.source.startswith("user's own")
    assert prof.band is not None and set(prof.band) == {"tpot", "ttft"}  # three held-out points each
    assert all(0 < lo <= hi for lo, hi in prof.band.values())
    assert _fitted(FILES[2:]).band is None  # one file: no held-out error at all
    assert hash(prof) == hash(prof.model_copy(update={"band": dict(reversed(list(prof.band.items())))}))


def test_own_fit_is_calibrated_under_its_stack_with_its_own_band() -> None:
    prof = _fitted()
    sc = _on_mine(prof)
    cat = scenario_catalog(sc)
    _, cal = trust.calibration(cat.chip("h100-sxm-mine"), "vllm", cat, custom=True)
    assert cal.basis == "own" and cal.fitted and cal.mark == "calibrated"
    shipped = trust.bands_for("h100-sxm-mine", "vllm", "fitted")
    assert cal.band == {**shipped, **dict(prof.band or {})}  # the fit's own band where it has one
    assert set(prof.band or {}) == {"tpot", "ttft"} and cal.band["throughput"] == shipped["throughput"]
    assert cal.band != trust.calibration(cat.chip("h100-sxm"), "vllm", cat)[1].band
    assert cal.rule.startswith("your own benchmark under vLLM: fitted to 7 points")
    assert cal.caveat == "throughput: the catalog's fitted chips' band (no held-out errors of its own)"
    assert set(cal.expected_error) == {"tpot", "ttft", "throughput"}
    marks = pool_marks(sc)
    assert [m.calibration.basis for m in marks] == ["own", "own"] and run_mark(marks) == "calibrated"


def test_own_fit_under_another_stack_is_not_calibrated() -> None:
    sc = _on_mine(_fitted(), stack="sglang")
    cal = resolve(sc).pools[0].calibration
    assert cal.basis == "other_stack" and not cal.fitted and cal.mark == "uncalibrated"
    assert cal.rule == "your own vLLM fit used for SGLang (no fit of yours under it)"
    assert cal.band == trust.bands_for("h100-sxm-mine", "sglang", "other_stack")
    assert cal.expected_error == trust.expected_errors("other_stack")


def test_on_an_ascend_npu_a_vllm_fit_is_a_vllm_ascend_fit() -> None:
    from engine.calibration.own import own_terms

    prof = _fitted().model_copy(update={"stack": "vllm-ascend"})
    for stack in ("vllm", "vllm-ascend"):
        terms = own_terms("ascend-910b", prof, stack, trust.native_stack)
        assert terms is not None and terms[0] == "own"
    other = own_terms("h100-sxm", prof, "vllm", trust.native_stack)
    assert other is not None and other[0] == "other_stack"
    catalog_fit = load_catalog().chip("h100-sxm").profile("vllm")
    assert (
        own_terms("h100-sxm", catalog_fit, "vllm", trust.native_stack) is None
    )  # a shipped fit is not "own"


def test_one_file_fit_is_calibrated_with_an_honest_note_and_the_fitted_chips_band() -> None:
    """A fit with no held-out error of its own printed its figures with no band, surer-looking than any
    catalog chip (a review: a one-point CSV fit); it takes the catalog's fitted chips' band, and says so."""
    shipped = trust.bands_for("h100-sxm-mine", "vllm", "fitted")
    assert shipped
    sc = _on_mine(_fitted(FILES[2:]))
    cal = resolve(sc).pools[0].calibration
    assert cal.basis == "own" and cal.band == shipped and cal.caveat == NO_HELD_OUT
    few = _fitted().model_copy(update={"band": {}})
    cal = resolve(_on_mine(few)).pools[0].calibration
    assert cal.caveat == FEW_HELD_OUT and cal.band == shipped
    # a figure the fit's own held-out errors band keeps its own; the others take the shipped band
    prof = _fitted()
    cal = resolve(_on_mine(prof)).pools[0].calibration
    assert cal.band == {**shipped, **(prof.band or {})} and cal.caveat.startswith("throughput: ")


def test_the_mark_travels_with_the_share_link() -> None:
    prof = _fitted()
    sc = _on_mine(prof)
    back = from_link(to_link(sc, "chat-disaggregated"))
    assert back == sc
    assert back.custom_hardware[0].profiles["mine"].band == prof.band
    cal = resolve(back).pools[0].calibration
    assert cal.basis == "own" and cal.band == resolve(sc).pools[0].calibration.band


def test_a_summary_keeps_the_own_mark() -> None:
    sc = _on_mine(_fitted())
    cal = resolve(sc).pools[0].calibration
    again = pool_marks(sc, {"calibration": {p.name: cal.as_dict() for p in sc.deployment.pools}})
    assert again[0].calibration == cal


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"band": {"tpot": (1.2, 0.9)}}, "band.tpot: its low ratio 1.2 exceeds its high ratio 0.9"),
        ({"band": {"energy": (0.9, 1.1)}}, "band.energy"),
        ({"band": {"tpot": (0.0, 1.1)}}, "greater than or equal to 0.01"),
        ({"band": {"tpot": (0.9, float("nan"))}}, "finite number"),
        ({"stack": "vlm"}, "stack\n  Input should be 'vllm', 'vllm-v0'"),
    ],
)
def test_bad_bands_and_stacks_are_refused(update: dict[str, object], message: str) -> None:
    good = {"eta_compute": 0.5, "eta_bandwidth": 0.7, "overhead_ms": 3.0, "source": "user's own: test"}
    with pytest.raises(ValidationError, match=message.replace(".", r"\.") if "band." in message else message):
        CalibrationProfile.model_validate({**good, **update})


def test_the_mark_travels_with_the_catalog_entry() -> None:
    import tomllib

    from engine.catalog.specs import HardwareSpec
    from engine.observe.fit import entry_toml

    entry = entry_with(load_catalog().chip("h100-sxm"), _fitted(), "mine")
    back = HardwareSpec.model_validate(tomllib.loads(entry_toml(entry)))
    assert back == entry and back.profiles["mine"].stack == "vllm" and back.profiles["mine"].band


def test_a_profile_names_the_stacks_the_engine_serves() -> None:
    from typing import get_args

    from engine.catalog.specs import FittedStack
    from engine.costmodel.stacks import SERVING_STACKS

    assert set(get_args(FittedStack)) == set(SERVING_STACKS)


def test_the_advisor_asks_no_calibration_of_an_own_fit_and_says_where_to_make_one() -> None:
    from types import SimpleNamespace

    from engine.explain.advisor import calibration_findings

    mine = SimpleNamespace(scenario=_on_mine(_fitted()), summary={})
    assert calibration_findings(mine) == []  # type: ignore[arg-type]
    (other,) = calibration_findings(SimpleNamespace(scenario=_on_mine(_fitted(), "sglang"), summary={}))  # type: ignore[arg-type]
    assert "your own vLLM fit used for SGLang" in other.text
    assert 'the Hardware page\'s "Calibrate from your benchmark"' in other.text
    # a custom chip is unknown to the command line: the command names the catalog directory that knows it
    assert (
        "FENGONG_CATALOG=DIR fengong calibrate RESULT.json --hardware h100-sxm-mine --stack sglang"
        in other.text
    )
    assert "DIR/hardware/h100-sxm-mine.toml" in other.text


def test_the_advisors_command_for_a_custom_chip_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from engine.cli.main import main
    from engine.explain.advisor import calibration_findings
    from engine.observe.fit import entry_toml

    sc = _on_mine(_fitted(), "sglang")
    (finding,) = calibration_findings(SimpleNamespace(scenario=sc, summary={}))  # type: ignore[arg-type]
    command = finding.text.split(" or FENGONG_CATALOG=DIR ", 1)[1].split(",", 1)[0].split()
    assert command[:2] == ["fengong", "calibrate"]
    real = Path(__file__).parent.parent / "observe" / "fixtures" / "real"
    argv = [*command[1:], "--model", "qwen3-8b", "--out", str(tmp_path / "out.toml")]
    argv[argv.index("RESULT.json")] = str(real / "gpustack_qwen3-8b_h100_sglang-server_c4.txt")
    assert main(argv) == 2  # as the advisor says: not without the chip's file
    assert "unknown hardware 'h100-sxm-mine'" in capsys.readouterr().err
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "h100-sxm-mine.toml").write_text(entry_toml(sc.custom_hardware[0]))
    monkeypatch.setenv("FENGONG_CATALOG", str(tmp_path))
    assert main(argv) == 0
    assert 'id = "h100-sxm-mine-mine"' in (tmp_path / "out.toml").read_text()


@pytest.mark.parametrize("name", ["mine", "vllm"])
def test_an_own_fit_read_from_a_catalog_directory_runs_as_it_does_inline(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fengong calibrate`'s entry dropped in a `FENGONG_CATALOG` directory (the route the docs give) ran
    the catalog's own H100 profile, marked "fitted to vLLM measurements X125...", or a transfer for an
    L40S: only an entry inline in `custom_hardware` ran its default profile (a review: 24% apart). Now
    the catalog entry runs the user's fit, marked and banded as the same entry inline."""
    from engine.observe.fit import entry_toml

    prof = _fitted()
    entry = entry_with(load_catalog().chip("h100-sxm"), prof, name)
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / f"{entry.id}.toml").write_text(entry_toml(entry))
    monkeypatch.setenv("FENGONG_CATALOG", str(tmp_path))
    cat = load_catalog()
    run, cal = trust.calibration(cat.chip(entry.id), "vllm", cat)
    assert run == prof and cal.basis == "own" and cal.band["tpot"] == (prof.band or {})["tpot"]
    inline = trust.calibration(entry, "vllm", cat, custom=True)
    assert (run, cal) == inline
