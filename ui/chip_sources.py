"""The Hardware page's Sources tab: one chip's every figure, its value and where it comes from.

A table of every chip with its sources in one cell cut the text after about five lines (a chip's
scale-up, scale-out, PCIe, all-reduce, power and clock sources run to a page). One chip at a time, a
row per figure, shows each source whole and beside the number it stands for.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from engine.catalog import Catalog, HardwareSpec
from engine.scenario import Scenario

FIGURES: dict[str, tuple[str, str]] = {
    "tflops": ("dense peak", "TFLOP/s"),
    "memory_gb": ("memory", "GiB"),
    "memory_tb_s": ("memory bandwidth", "TB/s"),
    "sram_gb": ("SRAM", "GiB"),
    "sram_tb_s": ("SRAM bandwidth", "TB/s"),
    "ddr_gb": ("DDR", "GiB"),
    "ddr_tb_s": ("DDR bandwidth", "TB/s"),
    "scale_up_gb_s": ("scale-up link", "GB/s"),
    "scale_up_domain": ("scale-up domain", "chips"),
    "scale_out_gb_s": ("scale-out link", "GB/s"),
    "pcie_gb_s": ("PCIe", "GB/s"),
    "allreduce_latency_us": ("all-reduce latency", "µs"),
    "tdp_w": ("TDP", "W"),
    "idle_w": ("idle power", "W"),
    "clock_ghz": ("clock", "GHz"),
    "reconfig_s": ("reconfiguration", "s"),
    "reconfig_j": ("reconfiguration energy", "J"),
    "usd_per_hour": ("price", "$ / chip-hour"),
    "capex_usd": ("purchase", "$ / chip"),
    "server_capex_usd": ("server share", "$ / chip"),
}
"""Every figure a chip's `sources` may cite, by its key, with its label and unit, in the catalog's order."""


DEFAULT = "the catalog's default for a chip that states none (docs/cost-model.md)"
"""The source of a figure the chip's entry leaves to the field's default (the scale-up domain's 8)."""


def _value(h: HardwareSpec, key: str) -> str:
    """A figure of a chip in words: 'bf16 989 · fp8 1,979' for the peaks, '' where the chip has none."""
    if key == "tflops":
        return " · ".join(f"{p} {v:,.0f}" for p, v in h.tflops.items())
    v = getattr(h, key, None)
    # six digits: a purchase price of 27,500 read "2.75e+04" at four (a read-through)
    return "" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:,.6g}"


def figure_rows(h: HardwareSpec) -> pd.DataFrame:
    """One row per figure of chip `h` that has a value or a source: the figure, its value and unit,
    and its source (a citation, or 'assumption: why')."""
    rows = []
    for key, (label, unit) in FIGURES.items():
        value, source = _value(h, key), h.sources.get(key, "")
        if value or source:
            rows.append(
                {"figure": label, "value": f"{value} {unit}" if value else "—", "source": source or DEFAULT}
            )
    return pd.DataFrame(rows, columns=["figure", "value", "source"])


def sources_tab(tab: Any, cat: Catalog, sc: Scenario) -> None:
    """The chip picked (the scenario's first pool's to begin with) and its figures with their sources."""
    ids = sorted(cat.hardware)
    first = sc.deployment.pools[0].hardware if sc.deployment.pools else ids[0]
    chip = tab.selectbox(
        "Chip",
        ids,
        index=ids.index(first) if first in ids else 0,
        format_func=lambda i: f"{i} · {cat.hardware[i].name}",
        key="hardware_sources_chip",
        help="Every figure of the chip the cost model reads, with its value and where it comes from.",
    )
    tab.table(figure_rows(cat.hardware[chip]).set_index("figure"))
