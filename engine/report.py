"""Exported files: names that say what they hold, provenance inside, and the one-file HTML report.

Every export carries where it came from: the scenario (its name, its preset, its seed, its TOML
where the format has room for it) and the engine version. CSV files start with ``# key: value``
comment lines (``pandas.read_csv(..., comment="#")`` skips them), PNG files hold them as iTXt
chunks, SVG files in a ``<metadata>`` element, HTML files in ``<meta>`` tags and a visible
header. File names read ``fengong_<preset>_<seed>_<what>.<ext>``; a scenario edited away from
its preset says so (``<preset>-edited``). Pure functions: bytes and text in, bytes and text out.
"""

from __future__ import annotations

import html
import re
import struct
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from engine import calibrate
from engine.catalog import Catalog, shared_dir
from engine.run import ENGINE_VERSION
from engine.scenario import Scenario


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
    """A table as CSV text after ``# key: value`` lines of provenance."""
    head = "".join(f"# {k}: {' '.join(str(v).split())}\n" for k, v in meta.items())
    return head + frame.to_csv(index=False)


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
<section><h2>Summary</h2>{table}</section>
<section><h2>Scenario (TOML)</h2><pre>{esc(scenario_toml)}</pre></section>
</body></html>
"""


def reference_points_path() -> Path | None:
    """The shared reference measurements the validation table uses (None when not found)."""
    root = shared_dir()
    path = root / "reference" / "calibration.csv" if root else None
    return path if path is not None and path.is_file() else None


def validation_table(catalog: Catalog) -> pd.DataFrame | None:
    """The cost model's predicted-against-measured table (what ``python -m engine validate`` prints)."""
    path = reference_points_path()
    if path is None:
        return None
    return calibrate.table(calibrate.read_reference_csv(path), catalog)
