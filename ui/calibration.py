"""The About page's recalibration: fit a chip's profile to the user's own measurements.

The user uploads a CSV of measured prefill times, decode step times or offline throughputs
(`engine.calibration.calibrate.MEASUREMENT_COLUMNS`), picks a chip of the file and names the profile;
`engine.explain.report.recalibrate` fits eta_compute, eta_bandwidth and overhead_ms as
``python -m engine calibrate`` does. The page shows the fit and its error per point, offers the
new catalog entry (``<chip>-<profile>``) as TOML, and can add it to the scenario's custom
hardware so it can be picked on the Strategy page. The user says which serving stack the timings
came from: the profile is marked their own calibration under it, with the band of its held-out
points. A bad file is refused with its line and column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from engine import explain as ex
from engine.calibration import MEASUREMENT_COLUMNS, Measurement
from engine.catalog import Catalog, HardwareSpec, load_catalog
from engine.core import ScenarioError
from engine.costmodel import SERVING_STACKS, STACK_NAMES
from engine.scenario import scenario_catalog
from ui import custom_chip, state, tables, uploads
from ui.text import plain

UPLOAD = "fg:calib-upload"
CHIP = "fg:calib-chip"
PROFILE = "fg:calib-profile"
STACK = "fg:calib-stack"


@st.cache_data(show_spinner=False)
def _example() -> str:
    return ex.example_measurements_csv(load_catalog())


def _truth() -> str:
    """The profile the example file was generated from ('it gives that profile back' read η_F 0.559, η_B
    0.769, overhead 11.34 ms against 0.55, 0.72 and 6.0, shown nowhere: a review)."""
    p = ex.EXAMPLE_PROFILE
    return f"η_F {p.eta_compute}, η_B {p.eta_bandwidth}, overhead {p.overhead_ms} ms per 80 layers"


def _example_note(points: list[Measurement], chip: str) -> None:
    """Where the file is the example's, says the profile it was generated from: not a measurement."""
    if all(m.source.startswith("example:") for m in points if m.hardware == chip):
        st.caption(
            f"These are the example's generated numbers, not measurements: the profile they came from is {_truth()}. "
            "Fitted, they are marked your own calibration as any file is."
        )


def columns_frame() -> pd.DataFrame:
    """The CSV's columns in order: name, required, meaning."""
    return pd.DataFrame(
        [
            {"column": c, "required": ex.MEASUREMENT_COLUMN_HELP[c][0], "meaning": ex.MEASUREMENT_COLUMN_HELP[c][1]}
            for c in MEASUREMENT_COLUMNS
        ]
    )  # fmt: skip


@st.cache_data(max_entries=8, show_spinner=False)
def _parse(data: bytes, name: str, catalog_key: str, _catalog: Catalog) -> list[Measurement]:
    return ex.parse_measurements(data, name, _catalog)


@st.cache_data(max_entries=8, show_spinner="Fitting…")
def _fit(
    data: bytes, name: str, hardware_id: str, profile: str, stack: str, catalog_key: str, _catalog: Catalog
) -> ex.Recalibration:
    points = ex.parse_measurements(data, name, _catalog)
    return ex.recalibrate(points, _catalog, hardware_id, profile, name, stack)


def _use(chip: HardwareSpec) -> None:
    custom_chip.add_custom_chip(chip)


def _stack(col: Any, default: str) -> str:
    """The serving stack the timings came from (the scenario's by default): the fit is marked under it."""
    return str(
        col.selectbox(
            "Measured under",
            SERVING_STACKS,
            index=SERVING_STACKS.index(default),
            key=STACK,
            format_func=lambda s: STACK_NAMES[s],
            help="The serving stack your timings came from: the fit is marked your own calibration under it "
            "(docs/calibration.md, 'Marked as your own').",
        )
    )


def _fit_figures(rec: Any) -> None:
    """The fitted profile's three factors and its errors on its own points, as a row of cards."""
    p = rec.profile
    with st.container(horizontal=True, gap="small"):
        st.metric("η_F (compute)", f"{p.eta_compute:.3f}", border=True, width="content",
                  help="Achieved over the BF16 dense peak FLOP/s (FP8 and FP4 speed up only the matmuls).")  # fmt: skip
        st.metric("η_B (bandwidth)", f"{p.eta_bandwidth:.3f}", border=True, width="content",
                  help="Achieved over peak memory bytes/s.")  # fmt: skip
        st.metric("Overhead per 80 layers", f"{p.overhead_ms:.2f} ms", border=True, width="content",
                  help="Fixed cost per iteration of an 80-layer model (launches, small per-layer kernels); "
                  "a model with L layers pays L/80 of it.")  # fmt: skip
        st.metric("Median |error|", f"{rec.fit.median_abs_error:,.1%}", border=True, width="content")
        st.metric("Worst |error|", f"{rec.fit.worst_abs_error:,.1%}", border=True, width="content")


def _captions(
    chip: HardwareSpec, band: Mapping[str, tuple[float, float]] | None, stack: str, points: int
) -> None:
    """The chip's profile until now, and the fit's mark: the user's own calibration under `stack`, with
    the band of its held-out points; a warning where fewer `points` than factors pin nothing down."""
    if points <= 3:  # as `fengong calibrate` (a review): three factors through three points fit them exactly
        st.warning(
            f"{points} point{'' if points == 1 else 's'} for three factors: the fit matches "
            f"{'it' if points == 1 else 'them'} whatever the chip does elsewhere, so its error says nothing of "
            "its accuracy. Measure at several batch sizes or loads (prefill and decode) before using it.",
            icon=":material/warning:",
        )
    was = chip.profile()
    st.caption(
        f"{plain(chip.id)}'s default profile until now: η_F {was.eta_compute}, η_B {was.eta_bandwidth}, overhead "
        f"{was.overhead_ms} ms per 80 layers ({plain(was.source)})."
    )
    held = (
        "no held-out error (one point), so no band"
        if band is None
        # where measured figures land around the model's, as Strategy and `calibrate` print the same band
        # (this read the ratios' sides: TPOT -2.7% to +3.8% beside Strategy's −4% to +3%: a review)
        else ", ".join(
            f"{_FIGURE[f]} {ex.signed_text(1.0 / hi - 1.0, 1.0 / lo - 1.0)}" for f, (lo, hi) in band.items()
        )
        or "too few held-out points for a band (three per figure)"
    )
    st.caption(
        f"Marked as **your own** calibration under {STACK_NAMES[stack]}: each point predicted by the profile "
        f"fitted without it gives the band it carries, where measured figures land around the model's ({held})."
    )


_FIGURE = {"throughput": "throughput", "ttft": "TTFT", "tpot": "TPOT"}


def section() -> None:
    """Explain the CSV, offer an example, fit an upload, and offer the result."""
    st.markdown(
        "Measured your own stack (vLLM, SGLang, TensorRT-LLM...) on your own chips? Fit the cost model's three "
        "factors to your numbers: **η_F** (achieved / BF16 peak FLOP/s; FP8 and FP4 rows speed up only the matmuls), "
        "**η_B** (achieved / peak memory bandwidth) "
        "and the **overhead** per iteration (stated per 80 layers: a model with L layers pays L/80 of it). Write one row per measurement: a prefill time (one prompt alone, "
        "ms), a decode step time (one step of `batch` requests at `context_tokens` each, ms) or an offline "
        "throughput (every request `prompt_tokens` in, `output_tokens` out, all queued at once; output tokens/s). "
        "Mix kinds and batch sizes: short and long prompts, small and large batches pin down different factors. "
        "The same fit from the command line: `fengong calibrate FILE.csv --hardware CHIP --profile NAME`."
    )
    with st.expander("The columns", icon=":material/view_column:"):
        st.dataframe(columns_frame(), hide_index=True, width="stretch", column_config={
            "required": st.column_config.CheckboxColumn("required"), "meaning": st.column_config.TextColumn(width="large")})  # fmt: skip
    limit_mib = ex.MAX_MEASUREMENT_BYTES // (1024 * 1024)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    up = c1.file_uploader(
        "Your measurements (CSV)", type=["csv"], key=UPLOAD, max_upload_size=limit_mib,
        help=f"At most {limit_mib} MiB; the columns above, the first line naming them.",
        on_change=uploads.keep, args=(UPLOAD,),
    )  # fmt: skip
    c2.download_button("Example CSV", data=_example(), file_name="fengong_example_measurements_l40s.csv",
                       mime="text/csv", on_click="ignore", icon=":material/download:", key="fg:dl:calib-example",
                       help=f"Nine points of llama-3.1-8b on one L40S, generated by the cost model with a known "
                       f"profile ({_truth()}) and a few percent of noise: fitting them gives about that profile back, "
                       "the overhead least closely (nine noisy points pin it down least).")  # fmt: skip
    got = uploads.files(UPLOAD, up)  # (kept from an earlier visit where the box is empty)
    if not got:
        return
    (raw, up_name), sc = got[0], state.scenario()
    cat = scenario_catalog(sc)
    key = sc.model_dump_json(include={"custom_hardware", "custom_models"})
    try:
        points = _parse(raw, up_name, key, cat)
    except ScenarioError as exc:
        st.error(plain(exc), icon=":material/error:")
        return
    if not points:
        st.error(f"{plain(up_name)}: no measurements (only the header line)", icon=":material/error:")
        return
    counts = pd.Series([m.hardware for m in points]).value_counts()
    chips = sorted(counts.index)
    c1, c2, c3 = st.columns(3)
    chip = c1.selectbox("Chip to fit", chips, key=CHIP, format_func=lambda c: f"{c} ({counts[c]} points)",
                        help="The fit uses the file's rows of this chip only.")  # fmt: skip
    profile = c2.text_input("Profile name", value="mine", key=PROFILE, max_chars=32,
                            help="Names the fitted profile and the new chip: <chip>-<profile>, e.g. l40s-vllm.")  # fmt: skip
    stack = _stack(c3, sc.deployment.stack)
    try:
        rec = _fit(raw, up_name, str(chip), profile.strip(), stack, key, cat)
    except ScenarioError as exc:
        st.error(plain(exc), icon=":material/error:")
        return
    p = rec.profile
    _fit_figures(rec)
    if problem := rec.fit.problem():  # impossible timings were offered for use with no word (a review)
        st.warning(plain(problem[:1].upper() + problem[1:]) + ".", icon=":material/warning:")
    _captions(cat.hardware[str(chip)], p.band, stack, len(rec.fit.table))
    _example_note(points, str(chip))
    fit = tables.stepped(rec.fit.table[list(tables.CALIBRATION_FIT)], tables.CALIBRATION_FIT)
    st.dataframe(fit, hide_index=True, width="stretch", column_config=tables.CALIBRATION_FIT)
    mine = {h.id: h for h in sc.custom_hardware}
    present = mine.get(rec.entry.id) == rec.entry
    with st.container(horizontal=True, gap="small"):
        st.download_button(f"Catalog entry {rec.entry.id}.toml", data=rec.toml, file_name=f"{rec.entry.id}.toml",
                           mime="application/toml", on_click="ignore", icon=":material/download:", key="fg:dl:calib-toml",
                           help="A hardware catalog file: put it in hardware/ under a FENGONG_CATALOG directory.")  # fmt: skip
        st.button("Add this chip to the scenario's hardware", icon=":material/add_circle:", key="fg:calib-use",
                  on_click=_use, args=(rec.entry,), disabled=present,
                  help="Adds it to the scenario's custom hardware (it travels with the share link and the TOML); "
                  "pick it for a pool on the Strategy page.")  # fmt: skip
    if present:
        st.success(
            f"**{plain(rec.entry.id)}** is in this scenario's custom hardware: pick it for a pool on the Strategy page.",
            icon=":material/check_circle:",
        )
        st.page_link("app_pages/strategy.py", label="Strategy", icon=":material/call_split:")
