"""The side files and flags a hostile review reached past the bar: each refused by name, bounded by what
is read, and never silently changed into another figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.catalog.entries import model_from_hf_config
from engine.cli import main as cli
from engine.cli.observe import profile_from
from engine.core import safeparse
from engine.core.errors import ScenarioError
from engine.observe import detect
from engine.planning.emit_manifests import _k8s_name
from engine.scenario import codec

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "observe" / "fixtures"
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "intermediate_size": 14336,
}


@pytest.fixture
def l40s_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "l40s.toml"
    argv = [
        "calibrate",
        str(ROOT / "docs/examples/l40s-timings.csv"),
        "--hardware",
        "l40s",
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    capsys.readouterr()
    return out


def test_a_profile_file_out_of_range_too_large_or_of_another_chip_is_refused_by_name(
    l40s_entry: Path, tmp_path: Path
) -> None:
    """eta_compute = 0 printed a pydantic traceback; a 1 GiB file was read whole before its size was
    refused; an L40S fit replayed on an H100 read its TPOT 89% off with nothing said."""
    assert profile_from(str(l40s_entry), "l40s").eta_compute > 0
    zero = tmp_path / "zero.toml"
    zero.write_text(re.sub(r"eta_compute = [0-9.e-]+", "eta_compute = 0", l40s_entry.read_text()))
    with pytest.raises(ScenarioError, match=r"--profile-from .*eta_compute.*0\.01"):
        profile_from(str(zero), "l40s")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * 1_000_001)
    with pytest.raises(ScenarioError, match=r"more than 1,000,000 bytes"):
        profile_from(str(big), "l40s")
    with pytest.raises(ScenarioError, match=r"other peaks than --hardware h100-sxm"):
        profile_from(str(l40s_entry), "h100-sxm")
    # a fit of a chip on the same die is taken, as the catalog runs an H200 on the H100's profile
    from engine.catalog.entries import entry_to_toml, load_catalog

    h100 = tmp_path / "h100.toml"
    spec = (
        load_catalog().hardware["h100-sxm"].model_copy(update={"id": "h100-mine", "default_profile": "vllm"})
    )
    h100.write_text(entry_to_toml(spec))
    assert profile_from(str(h100), "h200").eta_compute > 0


def test_reads_are_bounded_by_what_is_read_not_by_the_file_s_stated_size() -> None:
    """/dev/zero's size reads 0: import-model and --earlier ran out of memory on it."""
    with pytest.raises(ScenarioError, match=r"config\.json /dev/zero: more than"):
        model_from_hf_config("/dev/zero", "my-x")
    with pytest.raises(ScenarioError, match=r"--earlier /dev/zero: more than"):
        safeparse.read_capped("/dev/zero", 1000, "--earlier")


def test_a_benchmark_s_max_concurrency_of_zero_is_no_limit_as_its_benchmark_reads_it() -> None:
    """vLLM's and SGLang's benchmarks read 0 as no limit; the replay made it one client (43% under)."""
    doc = json.loads((FIXTURES / "vllm_bench.json").read_text())
    assert detect.read_text(json.dumps(doc | {"max_concurrency": 0}), "b.json").setup.concurrency is None
    assert detect.read_text(json.dumps(doc | {"max_concurrency": 3}), "b.json").setup.concurrency == 3


@pytest.mark.parametrize(
    ("key", "value"),
    [("intermediate_size", 0), ("max_position_embeddings", 0)],
)
def test_a_config_s_zero_size_is_refused_not_read_as_a_default(key: str, value: int) -> None:
    """intermediate_size 0 became 4 x hidden, max_position_embeddings 0 became 131,072, with nothing said."""
    with pytest.raises(ScenarioError, match=rf"config\.json: {key}: must be in \[1, "):
        model_from_hf_config(LLAMA | {key: value}, "my-x")
    moe = LLAMA | {"num_local_experts": 8, "num_experts_per_tok": 0}
    with pytest.raises(ScenarioError, match=r"num_experts_per_tok"):
        model_from_hf_config(moe, "my-x")
    assert model_from_hf_config(LLAMA | {"num_local_experts": 0}, "my-x").moe is None  # 0 experts: dense


def test_names_refuse_control_characters_and_say_their_length_in_characters() -> None:
    with pytest.raises(ScenarioError, match=r"name: control character U\+001B"):
        model_from_hf_config(LLAMA, "my-evil", name="evil\x1b[31mRED\a")
    base = codec.load_preset("chat-colocated")
    with pytest.raises(ScenarioError, match=r"name: needs at most 160 characters \(got 200\)$"):
        codec.apply_overrides(base, {"name": "a" * 200})  # its length said, not its text as well


def test_a_kubernetes_name_never_ends_in_a_hyphen() -> None:
    name = _k8s_name("a" * 49 + " b")
    assert len(name) <= 50 and not name.endswith("-") and name == "a" * 49
    assert _k8s_name("---") == "fengong"


def test_run_bands_is_refused_where_it_would_be_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "chat-colocated", "--set", "duration_s=5", "--bands"]
    assert cli.main(argv) == 2 and "--bands: applies to --json" in capsys.readouterr().err
    assert cli.main([*argv, "--json", "--replications", "2"]) == 2
    assert "--bands: applies to one run" in capsys.readouterr().err


def test_a_length_file_whose_first_line_is_not_a_header_is_not_quoted_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """/etc/passwd named as a length file printed its first line as the columns (docs/bounds.md: no
    message quotes a file's content)."""
    bad = 'workload.classes[0].input={kind="empirical",path="/etc/passwd",column="x"}'
    assert cli.main(["run", "chat-colocated", "--set", "duration_s=5", "--set", bad]) == 2
    err = capsys.readouterr().err
    assert "is not a header of column names" in err and "root" not in err
    token = tmp_path / "token.csv"  # a one-line file of word characters is not quoted either
    token.write_text("ghp_R3alL00kingT0kenABCDEFGHIJKLMNOPQRSTUV\n")
    bad = f'workload.classes[0].input={{kind="empirical",path="{token}",column="x"}}'
    assert cli.main(["run", "chat-colocated", "--set", "duration_s=5", "--set", bad]) == 2
    err = capsys.readouterr().err
    assert "(1 field) is not a header" in err and "ghp_" not in err
    named = tmp_path / "lengths.csv"  # pandas' to_csv: an unnamed index column, then the names
    named.write_text(",input_len,output_len\n0,10,20\n")
    bad = f'workload.classes[0].input={{kind="empirical",path="{named}",column="x"}}'
    assert cli.main(["run", "chat-colocated", "--set", "duration_s=5", "--set", bad]) == 2
    assert "columns: '', 'input_len', 'output_len'" in capsys.readouterr().err
