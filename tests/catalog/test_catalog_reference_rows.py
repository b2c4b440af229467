"""The reference table's last rows in the catalog (TPU7x, Qualcomm Cloud AI 100 Standard, Cerebras WSE-3):
each loads with every number sourced, its published figures equal to the reference row's, every other
figure an assumption that says so, and each under the calibration rule its kind calls for."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from engine.calibration import trust
from engine.catalog.entries import Catalog, list_priced, price_assumed
from engine.catalog.specs import GIB, OPTIONAL_SOURCED_FIELDS, SOURCED_FIELDS
from engine.core.errors import ScenarioError
from engine.planning.candidates import hardware_choice
from engine.scenario import codec as io
from engine.scenario.resolve import resolve

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "reference" / "hardware.csv"
ROWS = {  # catalog id: the reference table's accelerator column
    "tpu7x": "Google TPU7x (Ironwood)",
    "qualcomm-ai100-std": "Qualcomm Cloud AI 100 Standard",
    "cerebras-wse3": "Cerebras WSE-3 (CS-3)",
}
PUBLISHED = {  # fields each entry takes from a public figure; every other price or power is assumed
    "tpu7x": ("tflops", "memory_gb", "memory_tb_s", "scale_up_gb_s", "scale_out_gb_s"),
    "qualcomm-ai100-std": ("tflops", "memory_gb", "memory_tb_s", "scale_up_gb_s", "pcie_gb_s", "tdp_w"),
    "cerebras-wse3": ("memory_gb", "memory_tb_s", "tdp_w", "scale_up_domain"),
}
ASSUMED = ("idle_w", "usd_per_hour", "capex_usd", "server_capex_usd", "allreduce_latency_us")


def _row(chip_id: str) -> dict[str, str]:
    with REFERENCE.open(encoding="utf-8") as f:
        return next(r for r in csv.DictReader(f) if r["accelerator"] == ROWS[chip_id])


@pytest.mark.parametrize("chip_id", sorted(ROWS))
def test_every_number_has_a_source_and_assumptions_say_so(catalog: Catalog, chip_id: str) -> None:
    chip = catalog.chip(chip_id)
    fields = (
        *SOURCED_FIELDS,
        *OPTIONAL_SOURCED_FIELDS,
        "pcie_gb_s",
        "allreduce_latency_us",
        "scale_up_domain",
    )
    for field in fields:
        if field == "scale_up_domain" and chip.kind == "ASIC":  # a PCIe card: the default 8, no fabric
            continue
        assert len(chip.sources[field]) > 20, field
    for field in PUBLISHED[chip_id]:
        assert not chip.sources[field].startswith("assumption"), field
    for field in ASSUMED:
        assert chip.sources[field].startswith("assumption"), field
    assert price_assumed(chip) and price_assumed(chip, own=True)
    assert not list_priced(chip)  # no cloud lists them: billed as assumed prices, not as list prices
    assert chip.idle_w < chip.tdp_w and set(chip.profiles) == {"default"}


def test_published_figures_are_the_reference_rows(catalog: Catalog) -> None:
    tpu, row = catalog.chip("tpu7x"), _row("tpu7x")
    assert (tpu.tflops["bf16"], tpu.tflops["fp8"]) == (
        float(row["bf16_dense_tflops"]),
        float(row["fp8_dense_tflops"]),
    )
    assert (tpu.memory_gb, tpu.memory_tb_s) == (192, float(row["mem_bandwidth_tbs"]))  # 192 GiB, as listed
    assert (tpu.scale_up_gb_s, tpu.scale_up_domain) == (float(row["scaleup_bw_gbs_per_chip"]), 9216)
    assert not tpu.illustrative and tpu.kind == "TPU"

    std, row = catalog.chip("qualcomm-ai100-std"), _row("qualcomm-ai100-std")
    assert (std.tflops["bf16"], std.tflops["int8"]) == (110, 325)
    assert (std.memory_gb, std.memory_tb_s, std.tdp_w) == (16, float(row["mem_bandwidth_tbs"]), 75)
    assert std.memory_type == "LPDDR" and std.pcie_gb_s == 16  # PCIe Gen4 x8, one direction
    ultra = catalog.chip("qualcomm-ai100-ultra")  # modelled as the Ultra is, at a quarter of its price
    assert (std.kind, std.memory_type, std.profiles) == (ultra.kind, ultra.memory_type, ultra.profiles)
    assert std.usd_per_hour == pytest.approx(ultra.usd_per_hour / 4)

    wse, row = catalog.chip("cerebras-wse3"), _row("cerebras-wse3")
    assert wse.memory_gb * GIB == pytest.approx(float(row["mem_capacity_gb"]) * 1e9, rel=1e-3)  # 44 GB in GiB
    assert (wse.memory_tb_s, wse.tdp_w) == (float(row["mem_bandwidth_tbs"]), float(row["tdp_w"]))
    assert row["bf16_dense_tflops"] == ""  # none published: the entry's peak is an assumption
    assert wse.sources["tflops"].startswith("assumption") and wse.tflops["bf16"] == 125_000 / 2
    assert wse.illustrative and wse.kind == "Dataflow" and wse.memory_type == "SRAM" and not wse.tiered


def test_each_takes_the_rule_of_its_kind(catalog: Catalog) -> None:
    for chip_id in ("tpu7x", "qualcomm-ai100-std"):
        assert chip_id in trust.TRANSFER_CHIPS
        assert trust.calibration(catalog.chip(chip_id), "vllm", catalog)[1].basis == "transfer"
    prof, cal = trust.calibration(catalog.chip("cerebras-wse3"), "vllm", catalog)
    h100, _ = trust.calibration(catalog.chip(trust.ILLUSTRATIVE_REFERENCE), "vllm", catalog)
    assert cal.basis == "illustrative" and (prof.eta_compute, prof.overhead_ms) == (
        h100.eta_compute,
        h100.overhead_ms,
    )
    every = hardware_choice(io.load_preset("chat-colocated"), "all")  # the planner's "all": real chips only
    assert {"tpu7x", "qualcomm-ai100-std"} <= set(every) and "cerebras-wse3" not in every


def test_a_wafer_holds_an_8b_model_and_a_70b_one_needs_four() -> None:
    base = io.load_preset("chat-colocated")
    wse = {
        "deployment.pools[0].hardware": "cerebras-wse3",
        "deployment.pools[0].count": 1,
        "model.weights": "bf16",
    }
    small = io.apply_overrides(base, {**wse, "model.id": "llama-3.1-8b", "deployment.pools[0].tp": 1})
    assert resolve(small).pools[0].instance.tp == 1
    with pytest.raises(ScenarioError, match="at least 4 chips per instance"):
        resolve(io.apply_overrides(base, {**wse, "deployment.pools[0].tp": 1}))
    four = io.apply_overrides(base, {**wse, "deployment.pools[0].tp": 1, "deployment.pools[0].pp": 4})
    assert resolve(four).pools[0].instance.pp == 4
