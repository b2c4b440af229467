"""A run's spread as the bands of its headline figures.

With every chip at the pessimistic and the optimistic edge of its throughput band a run moves each
figure (`engine.explain.margin.RunSpread.moves`); this module turns those moves into the band a
figure carries (`figure_band`: its run's spread where known, else its kind's band,
`engine.explain.confidence`), and into the lines that stand for the bands a spread leaves off: an
SLO attainment spanning 0-100%, a count that falls to nothing (`cliff_notes`).

Plain data only, no pandas: the command line's ``run`` imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.explain.confidence import (
    HEADLINE_SOURCES,
    PoolMark,
    Range,
    bears_error,
    headline_range,
    signed_text,
)
from engine.serving.speed_limits import Limits, cut

Moves = Mapping[str, tuple[float, float]]
"""Per headline key, the change of the figure with every chip at the slow and at the fast edge of
its throughput band (`engine.explain.margin.RunSpread.moves`): relative, or in points
(fractions of 1) for SLO attainment."""

LATENCIES = ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms")
"""Headline figures whose own kind of error (TTFT, TPOT) was measured apart from the chips' speed."""
COSTS = ("usd_per_request", "usd_per_million_output_tokens", "goodput_per_usd")
"""Figures of the bill that keep at least their kind's band in a run's spread (`spread_band`): the
costs (throughput's band turned round) and goodput per $ (throughput's) where its goodput or cost
spread is not known; where both are, goodput per $ takes the band of their ratio (`_per_usd`)."""


def _points(change: float) -> str:
    """A change of a share in points, one decimal: '−4.8', '+2.1', and '+0.0' for nothing."""
    text = f"{abs(change) * 100:.1f}"
    return f"+{text}" if text == "0.0" or change > 0 else f"−{text}"


def spread_band(key: str, r: Range | None, move: tuple[float, float]) -> str:
    """A figure's band from its run's spread: '± 9%', '−9% to +38%', or for SLO attainment
    '−4.8 to +2.1 pts'.

    With chips at the pessimistic and the optimistic edge of their throughput band the run moves
    each figure; that is the band of the figures the chips' speed carries (goodput, throughput,
    cost). A latency keeps at least its own kind's band (`r`, measured on rows at their own loads)
    and takes the spread where the run's queues make it wider. So does a cost (`COSTS`): at the run's
    fixed load and deployment the bill per request barely moves with the chips' speed (a run read
    '$0.36 ± 0%') while the SLO it buys does; its kind's band (throughput's, turned round) is what
    the bill of a deployment sized to hold it moves by, as the planner's verdict quotes it ('0.36 to
    0.47' for the same choice: a review)."""
    if key == "slo_attainment":
        lo, hi = min(0.0, *move), max(0.0, *move)
        # moves that round to nothing both ways ('+0.0 to +0.0 pts' beside goodput's '± 0%': a browser review)
        if _points(lo) == _points(hi) == "+0.0":
            return "± 0 pts"
        return f"{_points(lo)} to {_points(hi)} pts"
    return signed_text(*spread_range(key, r, move))


def spread_range(key: str, r: Range | None, move: tuple[float, float]) -> Range:
    """A figure's (fall, rise) from its run's spread, a latency's and a cost's never narrower than
    their kind's band `r` (`spread_band`). The band holds the figure itself: where both edges move it
    the same way (a fault's timing against the traffic, admission control shedding), kv-link-fault
    printed 'E2E p99 24,095 (+30% to +34%)' and 'goodput 14.57 req/s (−4% to −1%)', a band that excludes
    the modelled run, the likeliest outcome (a review); `one_sided_notes` says why it moves so."""
    lo, hi = min(0.0, *move), max(0.0, *move)
    if (key in LATENCIES or key in COSTS) and r is not None:
        lo, hi = min(lo, r[0]), max(hi, r[1])
    return lo, hi


SPANS_ALL_PTS = 0.9
"""A band of SLO attainment this wide (90 points) says nothing: 3% (−2 to +97 pts) reads as 'anywhere
from 0% to 100%'; such a band is left off and `slo_band_note` says why (assumption: past nine tenths
of the range no reader learns from the edges)."""


def spans_all(move: tuple[float, float]) -> bool:
    """Whether SLO attainment's move (in fractions of 1) spans nearly the whole 0-100% range."""
    return max(0.0, *move) - min(0.0, *move) >= SPANS_ALL_PTS


RERUN = "Margin for the model's error"
"""Where a page's reader finds the run at the pessimistic edge (the section of Results and Compare);
the CLI names its own margin lines instead."""


def slo_band_note(moves: Moves | None, attainment: float | None, rerun: str = RERUN) -> str | None:
    """The line that stands for SLO attainment's band where it spans nearly everything (`spans_all`):
    'SLO attainment shows no band: with every chip at the edges of its throughput band it runs
    from 0% to 100% ...'; None where the band is shown (or unknown). `rerun` names where the
    reader finds the run at the pessimistic edge."""
    move = (moves or {}).get("slo_attainment")
    if move is None or attainment is None or not spans_all(move):
        return None
    lo = min(max(attainment + min(0.0, *move), 0.0), 1.0)
    hi = min(max(attainment + max(0.0, *move), 0.0), 1.0)
    return (
        f"SLO attainment shows no band: with every chip at the edges of its throughput band it runs from "
        f"{lo:.0%} to {hi:.0%}, so this load sits on a cliff where the chips' real speed alone decides "
        f"whether the SLO holds ({rerun} reruns it at the pessimistic edge)."
    )


FLOORED = {"goodput_rps": "goodput", "goodput_per_usd": "goodput per $", "throughput_rps": "throughput"}
"""Figures that count requests served (in time): they cannot fall below nothing, so a fall of nine
tenths or more at the slow edge (`SPANS_ALL_PTS`) gives a band that says only 'from nothing to this'
('−100% to +0%'); it is left off, as an SLO attainment band spanning 0-100%, and `floor_band_note`
says why (docs/decisions.md)."""


def falls_to_nothing(key: str, move: tuple[float, float]) -> bool:
    """Whether a `FLOORED` figure's relative move falls by nine tenths of its value or more."""
    return key in FLOORED and min(move) <= -SPANS_ALL_PTS


def floor_band_note(moves: Moves | None, after_slo: bool = False) -> str | None:
    """The line that stands for the bands `falls_to_nothing` leaves off: 'Goodput and goodput per $
    show no band: with every chip at the pessimistic edge of its throughput band they fall by 100% ...';
    shorter `after_slo` (SLO attainment's line, `slo_band_note`, has said the load sits on a cliff).
    None where every band is shown (or unknown)."""
    gone = [
        (name, min(move))
        for key, name in FLOORED.items()
        if (move := (moves or {}).get(key)) and falls_to_nothing(key, move)
    ]
    if not gone:
        return None
    names = [name for name, _ in gone]
    said = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    one, fall = len(names) == 1, f"{-min(d for _, d in gone):.0%}"
    subject, falls = (
        f"{said[0].upper()}{said[1:]} {'shows' if one else 'show'} no band",
        "it falls" if one else "they fall",
    )
    if after_slo:
        return f"{subject} either: at that pessimistic edge {falls} by {fall}."
    return (
        f"{subject}: with every chip at the pessimistic edge of its throughput band {falls} by {fall}, so a "
        "band would read 'from nothing to this': this load sits on a cliff where the chips' real speed alone "
        "decides how many requests are served in time."
    )


def cliff_notes(moves: Moves | None, attainment: float | None, rerun: str = RERUN) -> list[str]:
    """The lines that stand for the bands a run's spread leaves off: SLO attainment's from 0% to 100%
    (`slo_band_note`, pointing at `rerun`), then a count's from nothing to its value (`floor_band_note`)."""
    slo = slo_band_note(moves, attainment, rerun)
    return [n for n in (slo, floor_band_note(moves, slo is not None)) if n]


def figure_band(
    text: str, marks: Sequence[PoolMark], key: str, moves: Moves | None = None, bounds: Limits | None = None
) -> str | None:
    """The band a headline figure carries: its run's spread where known (`spread_band`: '−22% to
    +39%', '−1.1 to +0.2 pts'), else its kind's band ('−9% to +12%', cut by `bounds`); None for a
    figure without one (a missing or zero figure, the bill, SLO attainment and `SPREAD_ONLY` without a
    spread, a kind whose band's coverage was not measured, a count whose spread falls to nothing)."""
    r = figure_range(text, marks, key, moves, bounds)
    if r is None:
        return None
    return spread_band(key, None, r) if key == "slo_attainment" else signed_text(*r)


def figure_range(
    text: str, marks: Sequence[PoolMark], key: str, moves: Moves | None = None, bounds: Limits | None = None
) -> Range | None:
    """`figure_band`'s band as numbers, (fall, rise) relative to the figure (in points, fractions of 1,
    for SLO attainment): what `run --json` gives beside the text's bands (a script could not check
    the bands a buyer reads: a review)."""
    move = (moves or {}).get(key)
    if key == "slo_attainment":
        return None if move is None or spans_all(move) else (min(0.0, *move), max(0.0, *move))
    if key not in HEADLINE_SOURCES or not bears_error(text):
        return None
    if move is not None:
        if falls_to_nothing(key, move):
            return None
        if key == "goodput_per_usd" and (both := _per_usd(marks, moves or {}, bounds)) is not None:
            return both
        return spread_range(key, spread_floor(marks, key, bounds), move)
    if key in SPREAD_ONLY:
        return None
    r = headline_range(marks, key)
    return None if r is None else cut(r, (bounds or {}).get(key))


SPREAD_ONLY = ("goodput_rps", "goodput_per_usd")
"""Banded by their run's spread alone (they move with the queues: −24% to +6% read where it fell 92%)."""


def _per_usd(marks: Sequence[PoolMark], moves: Moves, bounds: Limits | None) -> Range | None:
    """Goodput per $'s band from the two it is the ratio of, goodput's (its spread) over the cost per
    request's (its spread, never narrower than its kind's band): (1 + goodput's) / (1 + cost's) - 1 at
    each end. Floored alone by throughput's band it read -22% to +17% beside a goodput of -3% to -1%
    and a cost of -5% to +29%, which allow -25% to +4% (a review). None where either is unknown."""
    good, cost = moves.get("goodput_rps"), moves.get("usd_per_request")
    if good is None or cost is None:
        return None
    c_lo, c_hi = spread_range("usd_per_request", spread_floor(marks, "usd_per_request", bounds), cost)
    return (1.0 + min(good)) / (1.0 + c_hi) - 1.0, (1.0 + max(good)) / (1.0 + c_lo) - 1.0


def spread_floor(marks: Sequence[PoolMark], key: str, bounds: Limits | None = None) -> Range | None:
    """The kind's band a run's spread of a figure never reads narrower than (`spread_band`): a
    latency's, and a cost's cut where its run's `bounds` say it cannot go, as its kind's band alone
    is (a 910B's throughput band turned round read -72% where the bill allows -5%: a review); None
    for any other figure."""
    if key not in LATENCIES and key not in COSTS:
        return None
    r = headline_range(marks, key)
    return cut(r, (bounds or {}).get(key)) if r is not None and key in COSTS else r
