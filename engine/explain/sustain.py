"""How an unsustainable run is said: its shortfall in one line, and its latency figures marked.

A run whose backlog grows through its window (`engine.serving.saturation`) has latency percentiles
set by how long it ran, so no page, table or command prints one of them bare: each carries
`GROWS` (``"26,317 ms, grows with run length"``; in a headline tile ``"≥ 26.3 s"`` over it).
TTFT and E2E always do where the queue before the first token grows; a decode latency (TPOT, the
token gaps) that stays level while it grows (`Shortfall.steady`), or a TTFT that stays level while
the requests decoding pile up (`Shortfall.backlog`), carries `LEVEL` instead
(``"22.0 ms, at saturation"``), and the run's line (`line`) says which latencies grow and which stay level.
Throughput, cost and attainment stay as they are: they describe the run that was simulated.
The shortfall itself is read with `engine.serving.summary.shortfall_rps`; whether the latencies
grow with it with `latency_shortfall` (under a client's ceiling on requests in flight the backlog
may wait at the client, and the latencies, timed from the send, stay bounded).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.serving.summary import LatencyKind, latency_shortfall
from engine.serving.work_load import session_ramp

if TYPE_CHECKING:
    from engine.scenario.model import Scenario

GROWS = "grows with run length"
"""What an unsustainable run's latency percentile says instead of standing alone."""


HEADROOM = "no headroom: may grow with a longer run"
"""What a TTFT or E2E of a run at its capacity, or whose queue still rose at the window's end (not
called unsustainable), says in place of a band: no steady figure (`rising_line`)."""


LEVEL = "at saturation"
"""What a decode latency of an unsustainable run says where it stays level while the queue grows
(`Shortfall.steady`): the pace of batches the backlog keeps full, a figure of the deployment at its
limit that does not grow with the run's length, and no figure of the load offered."""


def latency(text: str, shortfall: float | None, level: bool = False) -> str:
    """A latency figure's text, marked when its run is unsustainable: '26,317 ms, grows with run
    length' where it grows (`shortfall` given), '22.0 ms, at saturation' where it stays `level`."""
    if shortfall is not None:
        return f"{text}, {GROWS}"
    return f"{text}, {LEVEL}" if level else text


def level(summary: Mapping[str, Any], kind: LatencyKind) -> bool:
    """Whether a latency of `kind` stays level in a run whose other latencies grow (`Shortfall.steady`)."""
    return latency_shortfall(summary) is not None and latency_shortfall(summary, kind) is None


def marked(text: str, summary: Mapping[str, Any], kind: LatencyKind) -> str:
    """`latency` of a figure of `kind` of the run `summary`: marked as growing, as level, or bare."""
    return latency(text, latency_shortfall(summary, kind), level(summary, kind))


def at_least(text: str, shortfall: float | None) -> str:
    """A headline tile's value: '≥ 26.3 s' when its run is unsustainable (the figure only grows)."""
    return text if shortfall is None or text in ("", "—", "n/a") else f"≥ {text}"


def _judged_span(mark: Mapping[str, Any]) -> str:
    """'the window's second half', or the half after (or before) a loss that failed the queued requests,
    or the half after one that failed none (the smaller deployment it left)."""
    after, before = mark.get("after_loss_s"), mark.get("before_loss_s")
    if before is not None:
        return (
            f"the second half of the span before the instance loss at {before:,.0f} s (it failed the queue)"
        )
    if after is None:
        return "the window's second half"
    # 'from', not 'ended at': a pool lost for good never comes back (it read 'the loss that ended at 100 s': a review)
    if mark.get("handed_on"):
        return f"the second half of the span from {after:,.0f} s, after the instance loss (what it left)"
    return f"the second half of the span from {after:,.0f} s, after the instance loss that failed the queue"


def line(summary: Mapping[str, Any]) -> str | None:
    """One sentence on an unsustainable run (None for one that keeps up)."""
    mark = summary.get("unsustainable")
    if not mark:
        return None
    rates = (
        f"Unsustainable: {_sig(mark['offered_rps'], 3)} req/s offered, {sustained_text(mark)} "
        f"sustained (short by {_sig(mark['shortfall_rps'], 2)} req/s; both over {_judged_span(mark)}, "
        "where the arrivals drawn may differ a little from the rate set). "
    )
    if mark.get("at_client"):  # a client's ceiling holds the backlog: the servers' queue stays bounded
        return rates + _held(summary)
    grows = (
        "The requests decoding pile up through the window (the batches grow and each step takes longer; "
        "no queue forms before the first token)"
        if mark.get("backlog") == "decoding"
        else "The queue grows through the window"
    )
    return rates + f"{grows}, so {_which_grow(mark)}. No plan or capacity search counts this run as passing."


def rising_line(summary: Mapping[str, Any]) -> str | None:
    """One sentence on a run whose queue was still rising at the window's end, too late in it to be
    called unsustainable (`Summary.queue_rising`), or that never emptied (`Summary.at_capacity`);
    None otherwise."""
    rise = summary.get("queue_rising")
    if summary.get("unsustainable"):
        return None
    if not rise:
        return capacity_line(summary)
    return (
        "The queue before the first token (prompts waiting for a prefill or for decode memory) was still "
        f"rising at the window's end: it rose by about {rise['risen_requests']:,.0f} requests over the "
        f"window's second half ({_sig(rise['rise_rps'], 2)} req/s of the {_sig(rise['offered_rps'], 3)} req/s "
        "offered) without draining. It began rising within that half, too late for the saturation rule to "
        "call the run unsustainable (a burst at the window's end looks alike): if the load outgrows the "
        "deployment, the TTFT and E2E percentiles are set by the run's length, and a longer run tells."
    )


def saturated(summary: Mapping[str, Any]) -> bool:
    """Whether a run's costs are those of batches a queue keeps full (`LEVEL`): unsustainable, at
    capacity or its queue still rising. Cheaper per request than any load it serves within SLO and no
    better: chat-disaggregated at 30 req/s, 1.1% within SLO at capacity, read its lowest $ per request
    bare, the live strip's arrow down beside it (a browser review)."""
    return bool(summary.get("unsustainable")) or rising_line(summary) is not None


def capacity_line(summary: Mapping[str, Any]) -> str | None:
    """One sentence on a run whose queue never emptied through the window's second half (`Summary.at_capacity`)."""
    stood = summary.get("at_capacity")
    if not stood or summary.get("unsustainable"):
        return None
    return (
        "At capacity: the queue before the first token never fell below "
        f"{stood['standing_requests']:,.0f} requests in the window's second half ({_sig(stood['standing_s'], 2)} s "
        f"of arrivals at the {_sig(stood['offered_rps'], 3)} req/s offered), so the deployment has no headroom: its "
        "TTFT and E2E percentiles are set by how far the queue wandered and grow with a longer run, and a "
        "little more load makes it unsustainable. No plan or capacity search counts this run as passing."
    )


FEW_SHARE = 0.05
"""The share of the offered rate under which the sustained rate is said as a bound, not a figure."""


def sustained_text(mark: Mapping[str, Any]) -> str:
    """'about 17.0', or 'under 0.39' where the run sustains under 5% of what it is offered: the figure
    is the offered rate less the queue's growth, whose error is a share of the offered rate, so a
    tiny remainder has no digits to give (7.86 offered read 'about 0.0866 sustained' where 0.027 a
    second completed: a review)."""
    offered, sustained = float(mark["offered_rps"]), float(mark["sustained_rps"])
    if sustained >= FEW_SHARE * offered:
        return f"about {_sig(sustained, 3)}"
    return f"under {_sig(FEW_SHARE * offered, 2)}"


def _sig(x: float, digits: int) -> str:
    """A rate or a time to `digits` significant figures, never in exponent form (1,234.5 req/s read
    '1.23e+03' at three: a review): whole numbers from there up, thousands separated."""
    return f"{x:,.0f}" if abs(x) >= 10 ** (digits - 1) else f"{x:,.{digits}g}"


_DECODE_SAID = {"tpot": "TPOT", "max_tbt": "longest token gap", "tbt": "token gaps"}


def _which_grow(mark: Mapping[str, Any]) -> str:
    """Which latency percentiles of an unsustainable run grow (`Shortfall.steady`), as a clause."""
    steady = mark.get("steady", ())
    if mark.get("backlog") == "decoding":  # every latency may grow; the first token may not
        said = {"ttft": "TTFT", **_DECODE_SAID}
        level = [said[k] for k in said if k in steady]
        grow = ["E2E"] + [said[k] for k in said if k not in steady]
        verb = "stay" if len(level) > 1 else "stays"
        return f"the percentiles of its {_listed(grow)} grow with the run's length" + (
            f"; its {_listed(level)} {verb} level ('{LEVEL}')" if level else ""
        )
    level = [_DECODE_SAID[k] for k in _DECODE_SAID if k in steady]
    if not level:
        return "its latency percentiles grow with the run's length"
    grow = [_DECODE_SAID[k] for k in _DECODE_SAID if k not in steady]
    verb = "stay" if len(level) > 1 else "stays"
    also = f", and so {'do' if len(grow) > 1 else 'does'} its {_listed(grow)}" if grow else ""
    return (
        f"its TTFT and E2E percentiles grow with the run's length (the backlog waits before the first "
        f"token){also}; its {_listed(level)} {verb} level, the pace of batches the backlog keeps full ('{LEVEL}')"
    )


def _listed(names: list[str]) -> str:
    """'TTFT', 'TTFT and E2E', 'TTFT, E2E and TPOT'."""
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


ANSWERED_SAID = 0.99
"""Below this share of the window's requests completed, a latency percentile says it is of those answered."""


def answered_share(summary: Mapping[str, Any]) -> float:
    """The share of the window's requests that completed (1 where it had none)."""
    req = summary.get("requests") or {}
    total = float(req.get("total") or 0)
    return float(req.get("completed") or 0) / total if total else 1.0


def answered_note(summary: Mapping[str, Any]) -> str | None:
    """'of the 85% answered' where under `ANSWERED_SAID` of the requests completed (their latency
    percentiles are of those alone: prefill-loss-nofallback's 'TTFT p99 1,057 ms' stood bare where 15%
    never had a first token, a browser review), else None."""
    share = answered_share(summary)
    return f"of the {share:.0%} answered" if share < ANSWERED_SAID else None


def within_only(summary: Mapping[str, Any], target: str = "target") -> str:
    """How a class within its `target` in an unsustainable run is said (it does not pass: the run
    falls behind its load): over this run only where its latencies grow with the run's length; for
    the requests sent where a client's ceiling holds the backlog (they do not grow)."""
    mark = summary.get("unsustainable") or {}
    if mark.get("at_client"):
        return f"is within {target} for the requests sent, while the client's ceiling holds the rest back"
    return f"is within {target} over this run only"


def _held(summary: Mapping[str, Any]) -> str:
    """What an unsustainable run whose backlog waits at its client says after its rates: where the
    backlog is, and (Little's law: requests in flight = rate x time each is in flight) how many in
    flight the offered rate would need at the latencies seen, against the ceiling: the run cannot
    tell whether the deployment holds that many, only that the ceiling lets fewer through."""
    said = (
        "The backlog waits at the client, behind its ceiling on requests in flight: the wait before "
        "each send grows with the run's length, the latencies timed from the send do not, and no plan "
        "or capacity search counts this run as passing."
    )
    client, e2e = summary.get("client"), summary["latency_ms"]["e2e"]["mean"]
    if client and e2e:
        cap, offered = client["max_in_flight"], summary["unsustainable"]["offered_rps"]
        needed = offered * e2e / 1e3
        said += (
            f" The offered {_sig(offered, 3)} req/s at a mean E2E of {_sig(e2e / 1e3, 3)} s would keep about "
            f"{needed:,.0f} requests in flight, where the ceiling allows {cap:,}: rerun with it at {needed:,.0f} "
            "or more to see whether the deployment holds that many (its latencies would rise)."
        )
    return said


RAMP_SAID = 0.95
"""A run whose window carries less of its sessions' steady load than this says so (`ramp_line`)."""


def mean_e2e_s(summary: Mapping[str, Any]) -> float | None:
    """A run's mean E2E latency in seconds (None where nothing completed)."""
    mean = summary["latency_ms"]["e2e"]["mean"]
    return None if mean is None or mean != mean else mean / 1000.0


def ramp_line(scenario: Scenario, latency_s: float | None) -> tuple[str, float] | None:
    """One sentence on a multi-turn session run whose window is measured while its sessions still
    ramp up from none (`engine.serving.work_load.session_ramp`, each turn at `latency_s`, the run's
    mean E2E), with the window's mean share of the steady load; None where the window carries at
    least `RAMP_SAID` of it."""
    ramp = session_ramp(scenario, latency_s)
    share = ramp.load_share(scenario.warmup_s, scenario.duration_s)
    if share >= RAMP_SAID:
        return None
    more = ramp.wanted_s - scenario.warmup_s
    at = "" if latency_s is None else f" (each turn at this run's mean E2E latency, {_sig(latency_s, 3)} s)"
    return (
        f"Multi-turn sessions start from none at t = 0 and take about {ramp.wanted_s:,.0f} s to send 95% of "
        f"their steady load{at}; this run measures from {scenario.warmup_s:g} s, so its window carries about "
        f"{share:.0%} of it. To measure the steady state, set warmup_s to {ramp.wanted_s:g} and lengthen "
        f"duration_s by {more:g} s, to {scenario.duration_s + more:g} (the planner does so itself).",
        share,
    )


def figure_notes(summary: Mapping[str, Any], figures: list[str]) -> list[str] | None:
    """Per flattened summary key, the mark of a latency of a run whose latencies grow (`GROWS`, or
    `LEVEL` where it stays level; '' for a figure that is no latency); None for a run whose do not."""
    if latency_shortfall(summary) is None:
        return None
    notes: dict[str, str] = {k: GROWS if latency_shortfall(summary, k) is not None else LEVEL for k in _KINDS}
    return [notes.get(_latency_kind(f), "") for f in figures]


_KINDS: tuple[LatencyKind, ...] = ("ttft", "tpot", "e2e", "max_tbt", "tbt")


def _latency_kind(figure: str) -> str:
    """The latency kind of a flattened summary key: 'latency_ms.tpot.p99' and
    'classes.chat.tpot_ms_at_percentile' are tpot, 'edge.ttft_ms.edge.p99' (TTFT by site) ttft; ''
    for a figure that is no latency."""
    parts = figure.split(".")
    if parts[0] == "latency_ms" and len(parts) > 1:
        return parts[1]
    if (parts[0] == "edge" and len(parts) > 1 and parts[1] == "ttft_ms") or figure == "way_in.ttft_ms_mean":
        return "ttft"
    if parts[0] == "classes" and parts[-1].endswith("_ms_at_percentile"):
        return parts[-1].removesuffix("_ms_at_percentile")
    return ""


def sweep_line(frame: Any) -> str | None:
    """Under a sweep's table, how many of its runs did not sustain their load (None where all did): its
    rows otherwise read as figures of the load offered, a saturated run's cost per request the cheapest
    (a review: `sweep` printed only what it wrote, at 30 and 40 req/s past what the chips sustain)."""
    import pandas as pd  # (loaded with the sweep's table; not at this module's import)

    def rows(column: str) -> Any:  # the runs a summary's key marks (none where no run has the key)
        return frame[column].notna() if column in frame.columns else pd.Series(False, index=frame.index)

    short = rows("unsustainable.shortfall_rps")
    rising = rows("queue_rising.rise_rps") & ~short
    standing = rows("at_capacity.standing_requests") & ~short & ~rising
    if not (short.any() or rising.any() or standing.any()):
        return None
    parts = []
    if short.any():
        most = float(frame.loc[short, "unsustainable.shortfall_rps"].max())
        parts.append(
            f"{int(short.sum())} unsustainable (short by up to {most:,.1f} req/s)"
        )  # (,.2g: 1.2e+02)
    if rising.any():
        parts.append(f"{int(rising.sum())} with the queue still rising at the window's end")
    if standing.any():
        parts.append(f"{int(standing.sum())} at capacity (no headroom)")
    grow = "grow" if not (rising.any() or standing.any()) else "grow, or may grow,"
    # costs at saturation only where a run is unsustainable, as a single run's text marks them
    costs = "" if not short.any() else f", the unsustainable runs' costs {LEVEL}"
    return (
        f"of the {len(frame)} runs, {', '.join(parts)}: their latencies {grow} with the run's length{costs}, "
        "not figures of the load offered (columns unsustainable.*, queue_rising.*, at_capacity.*)"
    )
