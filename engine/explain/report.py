"""Exported files: names that say what they hold, provenance inside, and the one-file HTML report.

Every export carries where it came from: the scenario (its name, its preset, its seed, its TOML
where the format has room for it) and the engine version. CSV files start with ``# key: value``
comment lines (``pandas.read_csv(..., comment="#")`` skips them), PNG files hold them as iTXt
chunks, SVG files in a ``<metadata>`` element, HTML files in ``<meta>`` tags and a visible
header. File names read ``fengong_<preset>_<seed>_<what>.<ext>``; a scenario edited away from
its preset says so (``<preset>-edited``). Pure functions: bytes and text in, bytes and text out.

It also holds what the About page computes: the validation table, and recalibration from a
user's own measurements (`parse_measurements` reads an uploaded CSV and names the line and
column of any problem, `recalibrate` fits a chip's profile and builds the catalog entry that
carries it, as ``python -m engine calibrate`` does; `example_measurements_csv` writes a sample).
"""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import re
import struct
import tempfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from engine.calibration import calibrate, measurements, own_fit, predictor, reference, trust
from engine.catalog.entries import Catalog, entry_to_toml
from engine.catalog.specs import CalibrationProfile, HardwareSpec
from engine.core import bounds
from engine.core.errors import ScenarioError, format_validation_error
from engine.core.safecsv import safe_comment, safe_csv
from engine.scenario.model import Scenario
from engine.serving.run import ENGINE_VERSION


def provenance(
    scenario: Scenario, preset: str, edited: bool, engine_version: str = ENGINE_VERSION
) -> dict[str, str]:
    """What an export records about its origin."""
    return {
        "generator": "Fengong",
        "engine_version": engine_version,
        "scenario": scenario.name,
        "preset": preset + (" (edited)" if edited else ""),
        "seed": str(scenario.seed),
    }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "scenario"


def file_name(preset: str, seed: int, what: str, ext: str, edited: bool = False) -> str:
    """``fengong_<preset>[-edited]_<seed>_<what>.<ext>``, safe for any file system."""
    stem = _slug(preset) + ("-edited" if edited else "")
    return f"fengong_{stem}_{seed}_{_slug(what)}.{ext.lstrip('.')}"


def csv_with_provenance(frame: pd.DataFrame, meta: Mapping[str, str]) -> str:
    """A table as CSV text (see `safe_csv`) after ``# key: value`` lines of provenance."""
    head = "".join(f"# {safe_comment(str(k))}: {safe_comment(str(v))}\n" for k, v in meta.items())
    return head + safe_csv(frame)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_with_text(png: bytes, entries: Mapping[str, str]) -> bytes:
    """The PNG with one uncompressed iTXt (UTF-8 text) chunk per entry, right after its header."""
    if not png.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG image")
    ihdr_len = struct.unpack(">I", png[8:12])[0]
    cut = 8 + 12 + ihdr_len
    chunks = b""
    for key, text in entries.items():
        keyword = key.encode("latin-1", "replace")[:79]
        chunks += _png_chunk(b"iTXt", keyword + b"\x00\x00\x00\x00\x00" + text.encode("utf-8"))
    return png[:cut] + chunks + png[cut:]


def png_text(png: bytes) -> dict[str, str]:
    """The iTXt entries of a PNG (the inverse of `png_with_text`, for tests and readers)."""
    out: dict[str, str] = {}
    pos = 8
    while pos + 8 <= len(png):
        length = struct.unpack(">I", png[pos : pos + 4])[0]
        kind = png[pos + 4 : pos + 8]
        data = png[pos + 8 : pos + 8 + length]
        if kind == b"iTXt":
            key, _, rest = data.partition(b"\x00")
            # compression flag, method, then language tag and translated keyword (both empty)
            text = rest[2:].split(b"\x00", 2)[-1]
            out[key.decode("latin-1")] = text.decode("utf-8")
        pos += 12 + length
    return out


def svg_with_metadata(svg: str, entries: Mapping[str, str]) -> str:
    """The SVG with a ``<metadata>`` element holding the entries, right after its opening tag."""
    end = svg.find(">", svg.find("<svg"))
    if end < 0:
        raise ValueError("not an SVG document")
    body = "".join(
        f'<fengong:entry key="{html.escape(k)}">{html.escape(v)}</fengong:entry>' for k, v in entries.items()
    )
    meta = f'<metadata xmlns:fengong="https://fengong.invalid/export">{body}</metadata>'
    return svg[: end + 1] + meta + svg[end + 1 :]


def html_report(
    title: str,
    meta: Mapping[str, str],
    scenario_toml: str,
    summary: pd.DataFrame,
    sections: Sequence[tuple[str, str]],
    notes: str = "",
) -> str:
    """One self-contained HTML page: provenance, the summary table, every chart, the scenario TOML.

    `sections` are ``(heading, html fragment)`` pairs, e.g. plotly's ``to_html(full_html=False)``
    (the first with plotly.js inline, the others without, so the page carries it once).
    """
    esc = html.escape
    metas = "\n".join(f'<meta name="fengong:{esc(k)}" content="{esc(v)}">' for k, v in meta.items())
    facts = "".join(f"<dt>{esc(k.replace('_', ' '))}</dt><dd>{esc(v)}</dd>" for k, v in meta.items())
    parts = "\n".join(f"<section><h2>{esc(h)}</h2>\n{frag}\n</section>" for h, frag in sections)
    table = summary.to_html(index=False, border=0, classes="summary", float_format=lambda v: f"{v:,.6g}")
    # a chart's own export has no summary: its heading over an empty table read as a run that wrote none
    fields = (
        ""
        if summary.empty
        else "<section><h2>Every summary field</h2><p>As the engine wrote them, unmarked: where the run falls "
        "behind its load or has no headroom, read its latencies as the headline marks them.</p>"
        f"{table}</section>"
    )
    note = f"<p>{esc(notes)}</p>" if notes else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{esc(title)}</title>
{metas}
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #222; }}
dl {{ display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; }}
dt {{ font-weight: 600; }} dd {{ margin: 0; }}
table.summary {{ border-collapse: collapse; font-size: .9rem; }}
table.summary td, table.summary th {{ padding: .15rem .6rem; border-bottom: 1px solid #ddd; text-align: left; }}
pre {{ background: #f6f6f6; padding: 1rem; overflow-x: auto; }}
section {{ margin-top: 2rem; }}
</style></head><body>
<h1>{esc(title)}</h1>
<dl>{facts}</dl>
{note}
{parts}
{fields}
<section><h2>Scenario (TOML)</h2><pre>{esc(scenario_toml)}</pre></section>
</body></html>
"""


def validation_table(catalog: Catalog) -> pd.DataFrame | None:
    """The cost model's predicted-against-measured table (what ``python -m engine validate`` prints),
    with `fitted`: False for the MoE points, which no dense profile is fitted to (they borrow the
    dense profiles and fit one factor of their own, the experts'; `make validate` reports them apart)."""
    if calibrate.reference_csv() is None:
        return None
    points = reference.usable_points(catalog)
    tab = calibrate.table(points, catalog)
    tab.insert(4, "fitted", [not calibrate.is_moe(m, catalog) for m in points])
    return tab


BASIS_LABELS = {
    "fitted": "fitted: the chip's own profile for the stack",
    "same_silicon": "same silicon: a chip of the same die",
    "other_stack": "other stack: the chip's profile under another stack",
    "transfer": "transfer: a conservative share of the fitted chips",
    "moe": "MoE models, on any basis (their MoE terms refitted without the point's source)",
}
"""How the About page names each rule behind a profile (docs/calibration.md, 'How sure a number is')."""


def expected_error_frame() -> pd.DataFrame:
    """The held-out error the app attaches to each headline figure, one row per rule: the median
    |error| of predictions made on that basis with their source, chip or chip family left out, and
    for MoE models that of the MoE points left out with their source (the dense profiles and the
    MoE terms refitted without it)
    (presets/calibration.toml, written by `calibrate --reference --write`). A pool whose fit missed
    serving at a rate shows the larger online error instead (`trust.online_errors`). Empty when
    that file is missing."""
    table = trust.error_table()
    rows = [
        {"rule": BASIS_LABELS[b], **{f: table[b].get(f) for f in ("throughput", "ttft", "tpot", "energy")}}
        for b in BASIS_LABELS
        if b in table
    ]
    return pd.DataFrame(rows, columns=["rule", "throughput", "ttft", "tpot", "energy"])


# --- recalibration from a user's own measurements -------------------------------------------

MAX_MEASUREMENT_BYTES = 1024 * 1024
"""Largest measurement CSV the dashboard accepts (1 MiB: thousands of rows)."""
MAX_FIT_POINTS = 64
"""Most points fitted at once for one chip (the grid search holds about 2.5 MB per point)."""
PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
"""A calibration profile's name: it becomes part of a catalog id (``<chip>-<profile>``)."""

MEASUREMENT_COLUMN_HELP: dict[str, tuple[bool, str]] = {
    "id": (False, "a name for the point (default: line<N>)"),
    "model": (True, "catalog model id, e.g. llama-3.1-8b"),
    "hardware": (True, "catalog chip id, e.g. l40s (the fit uses the rows of one chip)"),
    "tp": (True, "tensor-parallel degree: chips per instance"),
    "weights": (False, "bf16, fp8, fp4 or int4 (default bf16)"),
    "kv": (False, "KV-cache precision: bf16 or fp8 (default bf16)"),
    "kind": (True, "prefill (one prompt alone), decode (one step of a batch) or throughput (an offline run)"),
    "prompt_tokens": (False, "prefill: the prompt's length; throughput: every request's input length"),
    "output_tokens": (False, "throughput: every request's output length"),
    "batch": (False, "decode: requests in the step (default 1)"),
    "context_tokens": (False, "decode: tokens of context of each request in the step"),
    "value": (True, "prefill and decode: the time in ms; throughput: output tokens/s"),
    "unit": (False, "ms or tok/s (informative; default from the kind)"),
    "source": (False, "where the number comes from (default: the file name)"),
}
"""Per column of a measurement CSV (`measurements.MEASUREMENT_COLUMNS`): required?, meaning."""

MAX_MEASURED = 1e9
"""Largest measured value a CSV row may give: 11 days in ms, or a billion output tokens/s."""
_INT_COLUMNS = {"tp": 1, "prompt_tokens": 0, "output_tokens": 0, "batch": 1, "context_tokens": 0}
_MAX_INT = {"tp": bounds.MAX_TP, "batch": bounds.MAX_BATCH}

EXAMPLE_PROFILE = CalibrationProfile(
    eta_compute=0.55,
    eta_bandwidth=0.72,
    overhead_ms=6.0,
    source="example: the profile the example measurements were generated from",
)
"""The profile `example_measurements_csv` generates its (noisy) numbers from."""


def example_measurements_csv(catalog: Catalog, model: str = "llama-3.1-8b", hardware: str = "l40s") -> str:
    """A small, valid measurement CSV: prefill, decode and throughput points of one model on one chip.

    The numbers are the cost model's predictions with `EXAMPLE_PROFILE`, each off by a fixed
    few percent as a measurement would be; fitting them gives back about that profile.
    """
    setups: list[dict[str, Any]] = [
        *({"kind": "prefill", "prompt_tokens": n} for n in (256, 1024, 2048, 4096)),
        *({"kind": "decode", "batch": b, "context_tokens": 2048} for b in (1, 8, 32, 64)),
        {"kind": "throughput", "prompt_tokens": 1000, "output_tokens": 1000},
    ]
    noise = (1.03, 0.97, 1.02, 0.99, 1.04, 0.98, 1.01, 0.96, 1.02)
    rows = []
    for i, (setup, jitter) in enumerate(zip(setups, noise, strict=True)):
        kind = setup["kind"]
        unit = "tok/s" if kind == "throughput" else "ms"
        m = measurements.Measurement(
            id=f"{hardware}-{kind}-{i + 1}",
            model=model,
            hardware=hardware,
            tp=1,
            weights="bf16",
            kv="bf16",
            value=1.0,
            unit=unit,
            **setup,
        )
        value = predictor.predict(m, catalog, EXAMPLE_PROFILE) * jitter
        rows.append(
            {
                **{c: "" for c in measurements.MEASUREMENT_COLUMNS},
                **{k: getattr(m, k) for k in measurements.MEASUREMENT_COLUMNS},
                "value": round(value, 2) if kind != "throughput" else round(value),
                "source": "example: generated by Fengong (not a real measurement)",
            }
        )
    frame = pd.DataFrame(rows, columns=list(measurements.MEASUREMENT_COLUMNS))
    return safe_csv(frame, lineterminator="\n")


def _check_rows(text: str, name: str, catalog: Catalog | None) -> None:
    """What `measurements.read_measurements` would trip over, named by line and column."""
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        fields = reader.fieldnames or []
        if not fields:
            raise ScenarioError(
                f"{name}: empty; the first line names the columns ({', '.join(measurements.MEASUREMENT_COLUMNS)})"
            )
        unknown = [c for c in fields if c not in measurements.MEASUREMENT_COLUMNS]
        if unknown:
            raise ScenarioError(
                f"{name}: line 1: unknown column(s) {', '.join(map(repr, unknown))}; the columns are "
                + ", ".join(measurements.MEASUREMENT_COLUMNS)
            )
        for line, row in enumerate(reader, start=2):
            _check_row(row, f"{name}: line {line}", catalog)
    except csv.Error as exc:
        raise ScenarioError(f"{name}: not a CSV file: {exc}") from None


def _check_row(row: dict[str | Any, Any], where: str, catalog: Catalog | None) -> None:
    if None in row:
        raise ScenarioError(f"{where}: more fields than columns")
    for col in ("model", "hardware", "tp", "kind", "value"):
        if not (row.get(col) or "").strip():
            raise ScenarioError(f"{where}: {col}: missing")
    ints: dict[str, int] = {}
    for col, low in _INT_COLUMNS.items():
        raw = (row.get(col) or "").strip()
        if not raw:
            continue
        try:
            ints[col] = int(raw)
        except ValueError:
            raise ScenarioError(f"{where}: {col}: {raw!r} is not a whole number") from None
        high = _MAX_INT.get(col, bounds.MAX_TOKENS_PER_REQUEST)
        if not low <= ints[col] <= high:
            raise ScenarioError(f"{where}: {col}: must be from {low} to {high:,} (got {ints[col]})")
    try:
        value = float(row["value"])
    except ValueError:
        raise ScenarioError(f"{where}: value: {row['value'].strip()!r} is not a number") from None
    if not 0 < value <= MAX_MEASURED:  # (a NaN fails too)
        raise ScenarioError(
            f"{where}: value: must be above 0 and at most {MAX_MEASURED:,.0f} (ms, or output tokens/s; got "
            f"{row['value'].strip()})"
        )
    kind = row["kind"].strip()
    needs = {"prefill": ("prompt_tokens",), "throughput": ("prompt_tokens", "output_tokens")}.get(kind, ())
    for col in needs:
        if ints.get(col, 0) < 1:
            raise ScenarioError(f"{where}: {col}: a {kind} point needs it (at least 1)")
    if catalog is not None:
        for col, known in (("model", catalog.models), ("hardware", catalog.hardware)):
            ident = row[col].strip()
            if ident not in known:
                raise ScenarioError(
                    f"{where}: {col}: {ident!r} is not in the catalog; known: {', '.join(sorted(known))}"
                )
        # as a scenario refuses it (tp 3 was fitted: a review)
        from engine.costmodel.stacks import tp_split_problem

        if why := tp_split_problem(catalog.models[row["model"].strip()], ints.get("tp", 1)):
            raise ScenarioError(f"{where}: tp: {why}")


def parse_measurements(
    data: bytes | str, name: str = "measurements.csv", catalog: Catalog | None = None
) -> list[measurements.Measurement]:
    """A measurement CSV's content (an upload) as points, through `measurements.read_measurements`.

    Raises ScenarioError naming the file, the line and the column of the first problem, also for
    what the reader itself does not check (a missing or non-numeric field, an unknown column,
    a prefill without a prompt; with `catalog`, a model or chip it lacks).
    """
    if isinstance(data, bytes):
        if len(data) > MAX_MEASUREMENT_BYTES:
            raise ScenarioError(f"{name}: {len(data):,} bytes; the limit is {MAX_MEASUREMENT_BYTES:,}")
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    text = data.removeprefix("\ufeff")
    _check_rows(text, name, catalog)
    with tempfile.TemporaryDirectory(prefix="fengong-measurements-") as tmp:
        path = Path(tmp) / "measurements.csv"
        path.write_text(text, encoding="utf-8")
        try:
            points = measurements.read_measurements(path)
        except ScenarioError as exc:
            raise ScenarioError(str(exc).replace(str(path), name)) from None
    return [dataclasses.replace(m, source=name) if m.source == str(path) else m for m in points]


@dataclass(frozen=True)
class Recalibration:
    """A profile fitted to a user's measurements of one chip, and the catalog entry that carries it."""

    fit: calibrate.Fit
    entry: HardwareSpec
    """The chip copied as ``<chip>-<profile>``, the fitted profile its default."""
    toml: str
    """The entry as the TOML text of a catalog file (``hardware/<id>.toml``)."""

    @property
    def profile(self) -> CalibrationProfile:
        """The fitted profile."""
        return self.fit.profile


def recalibrate(
    points: Sequence[measurements.Measurement],
    catalog: Catalog,
    hardware: str,
    profile: str,
    name: str = "measurements.csv",
    stack: str = "vllm",
) -> Recalibration:
    """Fit `hardware`'s factors to its rows of `points`; the result as a new catalog entry.

    What ``python -m engine calibrate FILE --hardware H --profile P --stack S`` does: the entry is the
    chip copied with id ``<H>-<P>`` and the fitted profile as its default, marked as the user's own
    under `stack` with the band of its held-out points (`own_fit.fit_own`). ScenarioError says why not.
    """
    if not PROFILE_NAME.match(profile):
        raise ScenarioError(
            f"profile: {profile!r} must be 1 to 32 lower-case letters, digits, '-' or '_', starting with a letter or digit"
        )
    rows = [m for m in points if m.hardware == hardware]
    if not rows:
        have = sorted({m.hardware for m in points})
        raise ScenarioError(
            f"no measurements of {hardware!r} in {name} (it has: {', '.join(have) or 'none'})"
        )
    if len(rows) > MAX_FIT_POINTS:
        raise ScenarioError(
            f"{name}: {len(rows)} measurements of {hardware}; at most {MAX_FIT_POINTS} are fitted at once"
        )
    chip = catalog.chip(hardware)
    try:
        result = own_fit.fit_own(rows, catalog, name, stack)
        entry = chip.model_copy(
            update={
                "id": f"{chip.id}-{profile}",
                "profiles": {**chip.profiles, profile: result.profile},
                "default_profile": profile,
            }
        )
        entry = HardwareSpec.model_validate(entry.model_dump(by_alias=True))
    except ValidationError as exc:
        raise ScenarioError(f"calibration: {format_validation_error(exc)}") from None
    except (ValueError, ArithmeticError) as exc:
        raise ScenarioError(f"calibration: {exc}") from None
    return Recalibration(fit=result, entry=entry, toml=entry_to_toml(entry))
