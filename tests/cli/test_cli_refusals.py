"""Refusals of bad input on the command line: each names its flag or field (and the file it comes from), cuts a
long value short, and exits 2 with no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import ScenarioError


def test_a_number_too_long_names_its_flag_and_field(capsys: pytest.CaptureFixture[str]) -> None:
    """A 5,000-digit --set value read "value '999...': nested too deeply or a number too long", naming
    neither the flag nor the field (a review); --vary's values likewise."""
    from engine.cli.main import main
    from engine.planning.sweep import parse_vary

    huge = "9" * 5000
    assert main(["run", "chat-disaggregated", "--set", f"workload.rate_rps={huge}"]) == 2
    assert "--set workload.rate_rps: value '9999" in capsys.readouterr().err
    with pytest.raises(ScenarioError, match=r"^--vary workload\.rate_rps: value '9999.*4,300 digits"):
        parse_vary([f"workload.rate_rps=1,{huge}"])


def test_a_files_unknown_chip_or_model_is_said_of_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A file's other refusals name it; its unknown chip or model was refused at the run, unnamed (a CLI
    review). A --set that mends the name still runs."""
    from engine.cli.main import main
    from engine.scenario import codec

    text = codec.dumps_toml(codec.load_preset("chat-colocated")).replace('"h100-sxm"', '"h100-sxn"')
    bad = tmp_path / "typo.toml"
    bad.write_text(text)
    assert main(["run", str(bad)]) == 2
    assert "typo.toml: deployment.pools[0].hardware: unknown hardware 'h100-sxn'" in capsys.readouterr().err
    mended = ["run", str(bad), "--set", "deployment.pools[0].hardware=h100-sxm", "--set", "duration_s=30"]
    assert main(mended) == 0


def test_a_whole_number_flag_refuses_a_long_text_cut_short(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse echoed a 5,000-digit --replications whole (a CLI review): the refusal cuts it short."""
    from engine.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["run", "chat-colocated", "--replications", "9" * 5000])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert (
        "--replications: not a whole number of at most 30 digits: '99999999999999999999... (5,000 characters)'"
        in err
    )
    assert len(err) < 1000


def test_a_mistyped_chip_or_model_is_answered_with_the_likely_id(capsys: pytest.CaptureFixture[str]) -> None:
    """'mi300X' and 'h100' listed all 33 chips with no hint, and roofline's refusal named no flag where plan's
    and its own --tp did (a hardware strategist's review)."""
    from engine.catalog.entries import unknown_text
    from engine.cli.main import main

    assert unknown_text("hardware", "mi300X", ["h100-sxm", "mi300x"]) == (
        "unknown hardware 'mi300X' (did you mean 'mi300x'?); known: h100-sxm, mi300x"
    )
    assert unknown_text("hardware", "h100sxm", ["h100-sxm", "h200"]).startswith(
        "unknown hardware 'h100sxm' (did you mean 'h100-sxm'?)"
    )
    assert unknown_text("model", "zzz", ["llama-3.1-8b"]) == "unknown model 'zzz'; known: llama-3.1-8b"
    # the chip whose id the name begins, not the nearest spelling: 'h100' was offered 'h200' (a review)
    chips = ["h100-sxm", "h20", "h200", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x"]
    assert unknown_text("hardware", "h100", chips).startswith(
        "unknown hardware 'h100' (did you mean 'h100-sxm'?)"
    )
    assert unknown_text("hardware", "tpu", chips).startswith(
        "unknown hardware 'tpu' (did you mean 'tpu-v5e', 'tpu-v5p' or 'tpu-v6e'?)"
    )
    for args, said in (
        (
            ["--model", "llama-3.1-70b", "--hardware", "h100sxm"],
            "--hardware: unknown hardware 'h100sxm' (did you",
        ),
        (
            ["--model", "Llama-3.1-70B", "--hardware", "h100-sxm"],
            "--model: unknown model 'Llama-3.1-70B' (did you",
        ),
    ):
        assert main(["roofline", *args]) == 2
        assert said in capsys.readouterr().err
    assert main(["run", "chat-colocated", "--set", "deployment.pools[0].hardware=H200"]) == 2
    assert (
        "deployment.pools[0].hardware: unknown hardware 'H200' (did you mean 'h200'?)"
        in capsys.readouterr().err
    )
