"""The planner verdict's bands: each quoted figure's range, taking in its own reruns at the bands'
pessimistic edge (`take_in`) and cut where an open loop's load says the figure cannot go (`cut_band`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from engine.serving.speed_limits import cut

FIGURES = {  # column: (band kind, turned round)
    "usd_per_million_output_tokens": ("throughput", True),
    "usd_per_request": ("throughput", True),
    "output_tokens_per_s_per_chip": ("throughput", False),
    "ttft_ms_at_slo": ("ttft", False),
    "tpot_ms_at_slo": ("tpot", False),
}
"""The verdict's banded figures and the band each takes (`band_of`)."""
LATENCIES = ("ttft_ms_at_slo", "tpot_ms_at_slo")
"""The banded figures whose bands also hold the risk-aware check's own (`take_in`)."""


def band_of(row: dict[str, Any], column: str) -> list[float] | None:
    """[low, high] of a figure from its row's band columns (`FIGURES`); None where none is shown."""
    kind, inverse = FIGURES[column]
    v, fall, rise = row.get(column), row.get(f"{kind}_fall"), row.get(f"{kind}_rise")
    if v is None or fall is None or rise is None or any(x != x for x in (v, fall, rise)):
        return None
    if inverse:
        fall, rise = 1.0 / (1.0 + rise) - 1.0, 1.0 / (1.0 + fall) - 1.0
    return [float(v) * (1.0 + fall), float(v) * (1.0 + rise)]


def take_in(band: list[float] | None, *seen: float | None, figure: float | None = None) -> list[float] | None:
    """A figure's band widened to hold what its own reruns gave (the risk-aware check, every chip at its
    band's pessimistic edge, can land past the band of the figure as modelled): never narrower than
    either, as Results reads a run's spread. Where the figure has no band of its kind (a TTFT on chips
    whose TTFT coverage is not measured), the range of the `figure` and its reruns, as Results' spread
    reads it: a verdict read 'TTFT p90 431 ms' above a margin rerunning it at 1,380 ms, past its target
    (a review). None where neither is known."""
    xs = [float(x) for x in seen if x is not None and math.isfinite(x)]
    if not xs:
        return band
    if band is None:
        if figure is None or not math.isfinite(figure):
            return None
        return [min(figure, *xs), max(figure, *xs)]
    return [min(band[0], *xs), max(band[1], *xs)]


def tokens_band(row: dict[str, Any], reruns: tuple[Any, ...] = ()) -> list[float] | None:
    """The choice's output tokens/s per chip band: where the margin reran it with its chips at their
    bands' edges (`reruns`), how far those runs move it, as Results reads a throughput's band (an open
    loop that keeps up serves the same requests either way); else its kind's band, cut by its load. A
    choice that held with slowed chips read '1,039 (786 to 1,039)' while its slowed rerun served the
    load at the same rate (a review)."""
    fig = row.get("output_tokens_per_s_per_chip")
    xs = [
        float(x)
        for r in reruns
        if (x := getattr(r, "output_tokens_per_s_per_chip", None)) is not None and math.isfinite(x)
    ]
    if fig is None or not xs:
        return row.get("output_tokens_per_s_per_chip_band")
    return take_in(None, *xs, figure=float(fig))  # the figure's and its reruns' range, no kind's band


SAME_AT_EDGES = " (the same at its chips' band edges)"
"""A tokens/s per chip band whose ends read as one (`reads_alike`): it serves the load either way."""


def reads_alike(band: Sequence[float] | None, fmt: str) -> bool:
    """Whether a band's two ends read the same in `fmt` ('416 (416 to 416)'): the Planner page, its table
    and `plan` then say so or show none, by this one rule."""
    if not band:
        return False
    return format(band[0], fmt) == format(band[1], fmt)


def rises_only(band: Sequence[float] | None, figure: float | None, fmt: str) -> bool:
    """Whether a band's low end reads as its `figure` in `fmt` and its top lies above it: a latency with no
    faster run and no band of its kind, which `plan`, the verdict's sentence and its table say as '(up to
    877)' ('463 ms (463 to 877)' read as if the figure could not be lower: a review)."""
    if not band or figure is None:
        return False
    return format(band[0], fmt) == format(figure, fmt) and band[1] > figure


def bands(
    quoted: dict[str, Any], edges: list[dict[str, Any]], same: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The quoted row's bands (`<figure>_band`, and per class `classes_at_slo`), each latency band
    taking in the latencies of its runs at the bands' pessimistic edge (`edges`: over the quoted
    window and over the planning window, a range never leaves out what the plan itself ran). Their
    costs stay the figure's own (a shorter window's drain weighs more in them), and so do tokens per
    chip but where `same`, the edge run over the quoted run's own window, served them: its rate is
    the band's low end (`tokens_band` reads the margin's reruns so). A latency that grows with the
    run's length is no edge (a TPOT that stays level is: `steady`)."""
    out: dict[str, Any] = {
        f"{k}_band": take_in(
            cut_band(quoted, k),
            *(e.get(k) for e in steady(edges, k.removesuffix("_ms_at_slo"))) if k in LATENCIES else (),
            figure=quoted.get(k) if k in LATENCIES else None,
        )
        for k in FIGURES
    }
    per: dict[str, dict[str, Any]] = {n: dict(c) for n, c in quoted["classes_at_slo"].items()}
    out["classes_at_slo"] = per  # copies: the run rows keep theirs
    for n, c in per.items():
        for fig in ("ttft", "tpot"):
            slowed = [e.get("classes_at_slo", {}).get(n, {}) for e in steady(edges, fig)]
            band = band_of({**quoted, f"{fig}_ms_at_slo": c[f"{fig}_ms"]}, f"{fig}_ms_at_slo")
            c[f"{fig}_own_band"] = (
                band  # its kind's alone, before the edge runs: what `past_target` calls its error
            )
            c[f"{fig}_band"] = take_in(band, *(x.get(f"{fig}_ms") for x in slowed), figure=c[f"{fig}_ms"])
    tokens, rate = out["output_tokens_per_s_per_chip_band"], quoted.get("output_tokens_per_s_per_chip")
    edge = same.get("output_tokens_per_s_per_chip") if same is not None and same.get("passes") else None
    if tokens and rate and edge is not None and math.isfinite(edge):
        # a plan without its margin read '517 (391 to 517)' where its slowed full-length run served the load
        # at 517, and with the margin '517 (the same at its chips' band edges)' (an infrastructure engineer)
        out["output_tokens_per_s_per_chip_band"] = [min(edge, rate), max(tokens[1], rate)]
    return out


LIMITS = "_limits"
"""The key under which a full-length run's row keeps its open loop's `limits` (not a table column)."""
BOUNDED = {
    "output_tokens_per_s_per_chip": "throughput_rps",
    "usd_per_request": "usd_per_request",
    "usd_per_million_output_tokens": "usd_per_million_output_tokens",
}
"""The verdict's figures an open loop's load bounds, by the `limits` key that bounds each."""


def cut_band(row: dict[str, Any], column: str) -> list[float] | None:
    """`band_of`, cut where the run's load says the figure cannot go (its `limits`, kept by a
    full-length run: an open loop that served every request it was offered cannot serve more, as
    Results and the CLI cut the same run's bands); a planning-window row keeps its band whole."""
    band, bound = band_of(row, column), row.get(LIMITS, {}).get(BOUNDED.get(column, ""))
    v = row.get(column)
    if band is None or not bound or not v:
        return band
    fall, rise = cut((band[0] / v - 1.0, band[1] / v - 1.0), bound)
    return [v * (1.0 + fall), v * (1.0 + rise)]


def class_bands(chosen: dict[str, Any], reruns: tuple[Any, ...] = ()) -> dict[str, tuple[Any, Any]]:
    """Per class of the choice, its TTFT and TPOT bands at its SLO percentile; with one class,
    widened to hold the margin's reruns of the choice (`reruns`: its checks with slowed and faster
    chips, `engine.planning.margin.Check`; those whose latencies grow with the run's length left
    out: `steady`), so the range never leaves out a figure the margin prints under it. The Planner
    page and `plan` read them from here (the page once widened them and the CLI not: TPOT p90 19.7
    ms (14.1 to 27.9) on the page, (14.7 to 27.9) in the CLI, for one plan). With two classes or
    more, each takes its own figures in the reruns (`Check.classes`): it took none, and a class's TTFT
    read "779 ms (779 to 1,186)" above a faster rerun at 574 ms (a review)."""
    one = len(chosen["classes_at_slo"]) == 1
    ttft, tpot = steady(reruns, "ttft"), steady(reruns, "tpot")

    def seen(runs: list[Any], name: str, kind: str) -> list[float | None]:
        if one:
            return [getattr(r, f"{kind}_ms_at_slo", None) for r in runs]
        return [((getattr(r, "classes", None) or {}).get(name) or {}).get(f"{kind}_ms") for r in runs]

    return {
        name: (
            take_in(k.get("ttft_band"), *seen(ttft, name, "ttft"), figure=k["ttft_ms"]),
            take_in(k.get("tpot_band"), *seen(tpot, name, "tpot"), figure=k["tpot_ms"]),
        )
        for name, k in chosen["classes_at_slo"].items()
    }


PAST_TARGET_WHY = (
    "it held with every chip slowed to its throughput band's edge, but that latency's own error allows worse"
)
"""What a latency band past its target means (`past_target`), said by the Planner page and `plan`."""


def past_target(chosen: dict[str, Any], reruns: tuple[Any, ...] = ()) -> list[tuple[str, str, float, float]]:
    """(class, 'TTFT' or 'TPOT', the band's far end, the target), ms, for each latency of the choice
    whose band (`class_bands`) reaches past its target. The choice holds with every chip at its
    throughput band's edge, yet a latency's own band is wider: "TPOT p90 42.9 ms (30.6 to 64.8)"
    beside a 60 ms target read as a contradiction of "even with every chip at the pessimistic edge"
    (a review); the verdict says it instead. Nothing for a choice that did not hold slowed (the
    fallback where none of the search does): the sentence would say it held."""
    if chosen.get("holds_slowed") is not True:
        return []
    out = []
    bands = class_bands(chosen, reruns)
    for name, k in chosen["classes_at_slo"].items():
        for kind, band, target in zip(
            ("TTFT", "TPOT"), bands[name], (k["ttft_target_ms"], k["tpot_target_ms"]), strict=True
        ):
            # only the band of the latency's kind is its 'own error': past the target by the reruns alone (no
            # band of its kind, or one within the target) is what the slowed runs gave, which the margin
            # says (the sentence gave a false reason: two reviews)
            own = k.get(f"{kind.lower()}_own_band", k.get(f"{kind.lower()}_band"))
            if own is None or not target or float(own[1]) <= float(target):
                continue
            if band and float(band[1]) > float(target):
                out.append((str(name), kind, float(own[1]), float(target)))
    return out


def steady(reruns: Sequence[Any], kind: str = "ttft") -> list[Any]:
    """The runs (rows, or the margin's checks of the choice) whose latency of `kind` (``ttft`` or
    ``tpot``) a range may take in: those made, and where that latency does not grow with the run's
    length (`grows_rps`; a TPOT or TTFT by its own `tpot_grows_rps` or `ttft_grows_rps` where the run
    has it: one that stays level while the backlog grows is a figure the margin prints,
    `Shortfall.steady`)."""

    def get(r: Any, key: str, default: Any = None) -> Any:
        return r.get(key, default) if isinstance(r, dict) else getattr(r, key, default)

    def grows(r: Any) -> bool:
        g = (
            get(r, f"{kind}_grows_rps", get(r, "grows_rps"))
            if kind in ("tpot", "ttft")
            else get(r, "grows_rps")
        )
        return g is not None and g == g  # (NaN, as a plan's runs frame reads none: not growing)

    return [r for r in reruns if r is not None and not grows(r)]


def holds_words(holds: bool | None, full_length: bool, window_s: float) -> str:
    """A row's 'holds slowed' in words: 'yes' where its run of the quoted length held with every chip
    at its band's pessimistic edge; 'yes over 120 s' where only the planning window's check ran (the
    would-be winner alone is checked over its full length, docs/planner.md "Verified": a review read
    'yes' beside an H200 row whose full-length run at the edge missed TPOT, 30.6 ms against 30);
    'no'; 'not checked' where the risk-aware checks never reached it."""
    if holds is None:
        return "not checked"
    if not holds:
        return "no"
    return "yes" if full_length else f"yes over {window_s:g} s"


def edge_premium_note(table: pd.DataFrame, objective: str, said_run: int | None = None) -> str:
    """Under a verdict's table: the rows whose pick holds with every chip slowed only past their group's
    cheapest as modelled, each with that pick and the premium, both over the planning window ('' where
    none). A MoE plan's MI300X row read $224.00/h (4P:12D, held slowed) with nothing to say that as
    modelled 4P:1D passed at $64.00/h (an infrastructure engineer's review): the row's cost was almost all
    margin. The chosen row whose nominal pick is the verdict's (`said_run`: the nominal run its premium
    line compares over the full-length runs) is left to that line: the choice's full-length $5.34 per M
    against the nominal's planning-window $4.24 read 26% under a premium of +98% (a strategist's review)."""
    from engine.planning.objective import best, value_text

    said = []
    for r in table.to_dict(orient="records"):
        v, n = r.get("planning_value", r.get("objective_value")), r.get("nominal_value")
        if r.get("from_nominal", True) or v is None or not n or v != v or n != n or v <= n * (1 + 1e-9):
            continue
        if said_run is not None and r.get("winner") and r.get("nominal_run") == said_run:
            continue
        said.append(
            f"{r['group']}'s row, {r['split']} at {value_text(v, objective)} over the planning window, is "
            f"{v / n - 1:.0%} above the {best(objective)} that passed there as modelled ({r['nominal_shape']} "
            f"{r['nominal_split']} at {value_text(n, objective)}), which does not hold with the chips slowed"
        )
    # one clause per row, each saying which is which: "held with every chip at its band's pessimistic edge
    # only past the cheapest that passed as modelled ...: h100-sxm $24.90/h (3P:2D), as modelled ..." was
    # hard to parse (a browser review)
    return "; ".join(said) + " (the rows hold with every chip at its band's pessimistic edge)" if said else ""


def holds_note(texts: Iterable[str], risk_aware: bool = True) -> str:
    """Under a verdict's table where a row held slowed over the planning window only ('' elsewhere):
    what that 'yes' rests on and how to have the row checked over its full length; with the risk-aware
    choice off, why the rows read 'not checked' (eight of nine did, nothing said why: a review)."""
    texts = list(texts)
    if not risk_aware and "not checked" in texts:
        return (
            "'not checked': with the risk-aware choice off no row is rerun with its chips slowed; the choice's "
            "margin, where checked, gives its own row"
        )
    window = next((t.removeprefix("yes over ") for t in texts if t.startswith("yes over ")), None)
    if window is None:
        return ""
    return (
        f"'yes over {window}': it held with every chip slowed over the {window} planning window; only the "
        "choice is rerun slowed over its full length, where a row may still fail (plan with that chip alone "
        "to have it checked so)"
    )


def own_slowdowns(slowdown: Mapping[str, float], table: pd.DataFrame, run: int | None) -> str:
    """'b200 +29% time': the slowdowns of the chips of the deployment a verdict's `run` (its nominal
    cheapest) uses, as its table's rows name them (an all-B200 pick listed the H100's and the H200's
    too: a review); every chip's where the table does not name the run's shape."""
    rows = table.to_dict("records") if len(table) else []
    words = " ".join(str(r.get("nominal_shape", "")) for r in rows if r.get("nominal_run") == run).split()
    said = ", ".join(f"{c} {e:+.0%} time" for c, e in slowdown.items() if c in words or not words)
    return said or "no chip has a band"


def with_rerun_bands(table: pd.DataFrame, reruns: Sequence[Any] = ()) -> pd.DataFrame:
    """The verdict's table with the choice's bands holding the margin's reruns of it (`class_bands`,
    `tokens_band`), as the Planner page and `plan`'s text read them: `plan --json` gave the choice's
    TPOT [14.45, 28.92] where both read (13.8 to 28.9) (a review)."""
    runs = tuple(r for r in reruns if r is not None)
    if not runs or "winner" not in table or not table["winner"].astype(bool).any():
        return table
    out = table.copy()
    rows: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in out.to_dict(orient="records")]
    for r in rows:
        if not r["winner"]:
            continue
        cb = class_bands(r, runs)
        r["classes_at_slo"] = {
            n: {**c, "ttft_band": cb[n][0], "tpot_band": cb[n][1]} for n, c in r["classes_at_slo"].items()
        }
        r["output_tokens_per_s_per_chip_band"] = tokens_band(r, runs)
        if len(cb) == 1:
            ((ttft, tpot),) = cb.values()
            r["ttft_ms_at_slo_band"], r["tpot_ms_at_slo_band"] = ttft, tpot
    for col in (
        "classes_at_slo",
        "output_tokens_per_s_per_chip_band",
        "ttft_ms_at_slo_band",
        "tpot_ms_at_slo_band",
    ):
        if col in out:
            out[col] = pd.Series([r.get(col) for r in rows], index=out.index, dtype=object)
    return out


def holds_with_margin(table: pd.DataFrame, reruns: Sequence[Any] = ()) -> pd.DataFrame:
    """The verdict's table with the choice's 'holds slowed' from the margin's rerun of it (`reruns`: the
    margin's checks, slowed first) where no risk-aware check reached it: a nominal plan's choice read
    'not checked' above a margin box saying it no longer passes (a review). The margin reruns the
    choice over its quoted run's window with every chip at its band's pessimistic edge, which is what
    the column says."""
    if not reruns or "holds_text" not in table or "winner" not in table:
        return table
    out = table.copy()
    won = out["winner"].astype(bool) & (out["holds_text"] == "not checked")
    passes = bool(reruns[0].passes)
    out.loc[won, "holds_text"] = holds_words(passes, True, 0.0)  # over the quoted run's whole window
    out.loc[won, "holds_slowed"] = passes
    return out
