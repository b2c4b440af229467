"""The human report of one run (``run`` without ``--json``): figures with their calibration bands.

Each figure carries the band of its pools' calibration (`engine.explain.confidence`), which reads
the calibration tables; so this module loads only when a report is printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from engine.core.numbers import count3, figures, plain
from engine.explain import confidence, run_bands, run_notes, sustain
from engine.explain.bill import assumed_said, billed_said, listed_said
from engine.explain.edge_findings import band_tops_over
from engine.explain.power_line import mean_power_text, power_cap_line
from engine.explain.presentation import edge_line, scheduler_figures
from engine.explain.scaled import autoscale_line
from engine.explain.software import porting_lines
from engine.explain.way_in import client_line, ignored_ceiling, way_in_line
from engine.scenario.model import Scenario
from engine.serving.summary import (
    AtPercentile,
    LatencyKind,
    latency_shortfall,
    shortfall_rps,
    unbounded,
    within_target,
)

if TYPE_CHECKING:
    from engine.explain.margin import RunMargin, RunSpread
    from engine.serving.summary import Summary


def _parts_lines(c: dict[str, Any]) -> list[str]:
    """The bill per 1k requests by part (and, owned, by kind), each to three significant figures so that
    they add up to it by hand (rent-vs-own's kinds read 0.20 + 0.02 + 0.07 beside $0.28: 0.198 + 0.0171 +
    0.0697, a review)."""
    out = []
    if c["usd_per_request"] is not None:
        parts = ", ".join(f"{k} {_part(v)}" for k, v in c["usd_per_request_by_part"].items())
        out.append(f"  per 1k requests by part ($, {_part(c['usd_per_request'])} in all): {parts}")
    if c.get("usd_by_kind"):  # an owned deployment: its basis and the bill by kind
        kinds = ", ".join(f"{k} {_part(v)}" for k, v in c["usd_per_request_by_kind"].items())
        out.append(f"  {c['basis']}; per 1k requests by kind ($): {kinds}")
    return out


def _part(v: Any) -> str:
    """A part of the bill per 1k requests to three significant figures, trailing zeros kept ('0.198',
    '0.0171', '1.70', '0'; '-' for none): '1.7' beside '0.397' read as one figure short (a review)."""
    return "-" if v is None else figures(v * 1000, 3)


def _fmt(v: Any, unit: str = "", scale: float = 1.0) -> str:
    return "-" if v is None else f"{v * scale:,.2f}{unit}"


def _pm(
    marks: Sequence[confidence.PoolMark], source: confidence.Source, bound: tuple[float, float] | None = None
) -> str:
    """' (−30% to +17%)': a figure's band from its pools' calibration ('' when none is shown), cut
    by the run's `bound` (`confidence.limits`): ' (−36% to +0%)'."""
    r = confidence.figure_range(marks, source)
    return "" if r is None else confidence.band_text("", r, bound)


def headline_bands(doc: dict[str, Any], scenario: Scenario, moves: Any = None) -> dict[str, dict[str, Any]]:
    """The bands `print_summary` prints beside the headline figures, as numbers for `run --json`: per
    figure (`ttft_p99_ms`, `tpot_p99_ms`, `e2e_p99_ms`: the band of the latency's line; the throughput, the
    goodput with a spread, the costs) its `low` and `high` change relative to the figure and the `text`
    printed; a figure the text shows bare is absent. A script read only the raw spread's moves, which a
    printed band can be wider than (a cost never narrower than its kind's band: a review)."""
    marks, bounds = confidence.pool_marks(scenario, doc), confidence.limits(doc, scenario)
    c = doc["cost"]
    figures = {
        "throughput_rps": doc["throughput_rps"],
        "usd_per_request": c["usd_per_request"],
        "usd_per_million_output_tokens": c["usd_per_million_output_tokens"],
    }
    if moves is not None:
        figures["goodput_rps"] = doc["goodput_rps"]
    out: dict[str, dict[str, Any]] = {}
    for name, lat in doc["latency_ms"].items():  # as `_latency_lines` shows them
        if name not in LATENCY_SOURCES or lat["p99"] is None or _no_steady_figure(doc, name):
            continue
        key = f"{name}_p99_ms"
        r = (
            run_bands.figure_range(f"{lat['p99']:.6g}", marks, key, moves, bounds)
            if moves is not None
            else confidence.figure_range(marks, LATENCY_SOURCES[name])
        )
        if r is not None:
            out[key] = {"low": r[0], "high": r[1], "text": confidence.signed_text(*r)}
    for key, value in figures.items():
        text = "-" if value is None else f"{value:.6g}"
        if (r := run_bands.figure_range(text, marks, key, moves, bounds)) is not None:
            out[key] = {"low": r[0], "high": r[1], "text": confidence.signed_text(*r)}
    return out


def _headline_band(
    marks: Sequence[confidence.PoolMark], moves: Any, bounds: Any, key: str, value: Any
) -> str:
    """' (−87% to +5%)': a headline figure's band (`run_bands.figure_band`: the run's spread where
    `moves` gives it, else its kind's, a cost's turned round); '' on a zero or missing figure."""
    text = "-" if value is None else f"{value:.6g}"
    return confidence.with_band("", run_bands.figure_band(text, marks, key, moves, bounds))


LATENCY_SOURCES: dict[str, confidence.Source] = {
    "ttft": confidence.HEADLINE_SOURCES["ttft_p99_ms"],
    "tpot": confidence.HEADLINE_SOURCES["tpot_p99_ms"],
    "e2e": confidence.COMPARED_SOURCES["E2E p99"],
}


def _band_note(marks: Sequence[confidence.PoolMark], moves: Any) -> None:
    """What a band is, where any is printed; without the run's spread, that these are each kind's bands,
    not how this run itself moves (what Results shows, and `--margin`)."""
    if not any(m.calibration.band for m in marks):
        return
    print(confidence.BAND_NOTE)
    if any(m.calibration.real_band("ttft") for m in marks) and (note := confidence.e2e_band_note()):
        print(note)  # (measured where E2E's envelope holds a TTFT band: MoE pools)
    if moves is not None:  # as Results' caption says it
        print(
            "With --margin, the p99 TTFT, TPOT and E2E, goodput, throughput and cost bands above, where shown, "
            "are this run's spread: how each moves when the same requests run with every chip at either edge of "
            "its throughput band (the latencies and the costs never narrower than their kind's band); the other "
            "lines keep their kind's band."
        )
    else:
        print(
            "These are each kind of figure's band; how this run itself moves with its chips at their "
            "bands' edges (what Results shows) is --margin's spread, which alone bands SLO attainment and "
            "goodput: they move with the queues, near a cliff by far more than any kind's band."
        )


def _no_steady_figure(doc: dict[str, Any], name: LatencyKind) -> bool:
    """Whether a latency has no steady figure, so no band: it grows with the run's length, or (TTFT, E2E) the
    run is at capacity or still rising. The text's lines and `headline_bands` ask alike."""
    rising = name in ("ttft", "e2e") and sustain.rising_line(doc) is not None
    return latency_shortfall(doc, name) is not None or rising


def _latency_lines(doc: dict[str, Any], marks: Sequence[confidence.PoolMark], spread: Any) -> list[str]:
    """Each latency's p50, p90 and p99 with its kind's band, or with `spread` (`run --margin`) the
    p99 TTFT's and TPOT's spread as Results' cards read them; marked where it grows with the run's
    length (then with no band: a floor has none) or stays level (`sustain.latency`)."""
    out = []
    for name, lat in doc["latency_ms"].items():
        err = _pm(marks, LATENCY_SOURCES.get(name, ()))
        if spread is not None and name in ("ttft", "tpot", "e2e"):
            err = spread(f"{name}_p99_ms", lat["p99"])
        grows = latency_shortfall(doc, name)
        figures = f"p50 {_fmt(lat['p50'])}  p90 {_fmt(lat['p90'])}  p99 {_fmt(lat['p99'])}"
        err = err if lat["p99"] is not None else ""  # no figure, no band beside its dash (a review)
        if grows is None and _no_steady_figure(doc, name):
            err = f", {sustain.HEADROOM}"  # at capacity or still rising: no steady figure, no band (as Results' card)
        out.append(
            f"  {name:5} ms  {sustain.latency(figures + ('' if grows else err), grows, sustain.level(doc, name))}"
        )
    if out and (said := sustain.answered_note(doc)) is not None:  # (as Results' TTFT card says it)
        out.append(f"  (latencies {said}: a failed or rejected request has none)")
    if (kv := doc.get("kv_transfer_ms")) and kv["p99"] is not None:  # disaggregated: the KV cache's move
        # the part the prefill does not hide: a 70B prompt's KV is megabytes, milliseconds to send whole, and
        # '0.07 ms' read as the whole move (a review)
        each = (
            "(prefill to decode, per request, beyond what a layer-by-layer overlap with the prefill hid; its wait "
            "for the link included)"
        )
        out.append(f"  kv transfer ms  mean {_fmt(kv['mean'])}  p99 {_fmt(kv['p99'])} {each}")
    return out


def _before_figures(doc: dict[str, Any], scenario: Scenario | None, window: Any = None) -> list[str]:
    """The lines that qualify a run's figures, said before them: a fault that never fired or took fewer
    instances than it names, how a trace's file met the window (`window`), a queue that grows or still
    rose, a window measured while sessions ramp up."""
    out = run_notes.scenario_notes(scenario, doc, window) if scenario is not None else []
    # what overload protection, faults and preemption did, as Results lists it: attainment read with
    # 690 answers cut to 128 tokens unsaid (a review)
    if did := scheduler_figures(doc):
        # the label's capital only ("kV link faults", "ttft predicted to miss its target" read as codes)
        words = [(k if k[:2].isupper() else k[:1].lower() + k[1:], v) for k, v, _ in did]
        out.append("  " + "; ".join(f"{k} {v}" for k, v in words))
    return out + run_notes.load_notes(scenario, doc)


def _drain_said(doc: dict[str, Any], warmup_s: float = 0.0) -> str:
    """', billed to its end: the 32 s drain after the window included' where the run outlasted its window: the
    per-request and per-token costs divide that bill (a review read $2.10 per M where $/h over the window's
    tokens gives $2.00)."""
    window = float(doc.get("window_s") or 0.0)
    # from the window's end, after its warm-up: agentic-cache's 300 s warm-up read as a 321 s drain (a review)
    drain = float(doc.get("drain_end_s") or 0.0) - window - warmup_s
    if drain < 0.5:
        return ""
    said = f", billed to its end: the {drain:,.0f} s drain after the window included"
    # a drain of a twentieth of the window or more moves the costs per token: the window's own said beside
    # them, since a 60 s run read $3.08 per M where an hour's read $2.07 (a review); not for a run that
    # falls behind, whose token rate is over the span it served
    tokens = (doc.get("throughput_tokens_per_s") or {}).get("output")
    if drain >= DRAIN_SAID_SHARE * window and tokens and not sustain.saturated(doc):
        per_m = doc["cost"]["usd_per_hour"] / (tokens * 3600.0) * 1e6
        said += (
            f"; over the window alone ${figures(per_m, 3)} per million output tokens, as a longer run nears"
        )
    return said


DRAIN_SAID_SHARE = 0.05
"""A drain this share of the window or longer has the window's own cost per token said beside the bill's
(assumption: under a twentieth it moves the cost per token by under 5%)."""


def _price_lines(c: dict[str, Any]) -> list[str]:
    """What the bill's prices rest on: prices the catalog assumes (a bill to check against a quote), and
    list prices where the GPUs are on the neocloud basis."""
    out = (
        [f"  billed at {assumed_said(c['assumed_prices'], c.get('mode') == 'own')}"]
        if c.get("assumed_prices")
        else []
    )
    return out + ([f"  billed at {listed_said(c['list_prices'])}"] if c.get("list_prices") else [])


def _cache_line(cache: dict[str, Any] | None) -> str:
    """'prefix cache: 36.3% of the prompt tokens found (hbm 6.0%, host 3.0%, pooled 27.3%)', of the
    requests not rejected ('' where the cache is off)."""
    if not cache or not cache.get("enabled"):
        return ""
    tiers = ", ".join(f"{t} {v:.1%}" for t, v in cache.get("hit_rate_by_tier", {}).items() if v)
    return f"prefix cache: {cache['hit_rate']:.1%} of the prompt tokens found" + (
        f" ({tiers})" if tiers else ""
    )


def _attained(doc: dict[str, Any]) -> str:
    """The run's SLO attainment; with no request in the window nothing to judge, as a class with none is
    not (it read "0.0%" above "class chat: no request in the window, not judged": a review)."""
    return (
        f"{doc['slo_attainment']:.1%}"
        if doc["slo_attainment"] is not None
        else "not judged (no request in the window)"
    )


def _throughput_line(doc: dict[str, Any], thr: Any) -> str:
    """The token rates with their band; an unsustainable run's run over its drain, where the backlog's
    last batches thin out: below what it sustains, which its first line says (a review read 13,538 tokens/s
    as the capacity of a run sustaining about 62 req/s of 400 tokens)."""
    t = doc["throughput_tokens_per_s"]
    over = ", at saturation: over the window and the drain, where the backlog's batches thin out"
    return (
        f"throughput: {t['input']:,.0f} input and {t['output']:,.0f} output tokens/s"
        f"{thr('throughput_rps', doc['throughput_rps'])}{over if doc.get('unsustainable') else ''}"
    )


def print_summary(
    doc: dict[str, Any], scenario: Scenario | None = None, moves: Any = None, window: Any = None
) -> None:
    """A human summary of one run; with its scenario, each pool's calibration and each figure's error:
    its run's spread where `moves` gives it (`run --margin`, as Results shows it), else its kind's band."""
    marks = confidence.pool_marks(scenario, doc) if scenario is not None else ()
    bounds = confidence.limits(doc, scenario) if scenario is not None else {}
    thr = partial(_headline_band, marks, moves, bounds)
    r = doc["requests"]
    print(
        f"requests: {r['total']:,} in the window; {r['completed']:,} completed, {r['rejected']:,} rejected, "
        f"{r['failed']:,} failed"
    )
    for note in _before_figures(doc, scenario, window):
        print(note)
    short = latency_shortfall(doc)  # latencies that grow with the run's length (of each kind: `steady`)
    for line in _latency_lines(doc, marks, thr if moves is not None else None):
        print(line)
    if (way := way_in_line(doc)) is not None:  # network and control plane, as shares of TTFT
        print(f"  {way}")
    if (held := client_line(doc)) is not None:  # a client's ceiling: the wait before the send
        print(held)
    if scenario is not None and (unused := ignored_ceiling(scenario.workload)):  # a closed loop's ceiling
        print(unused)
    # goodput counts the requests within their targets: without the run's spread its band is not the
    # throughput kind's (chat-colocated read '15.28 req/s (−24% to +6%)' where its spread falls by 92%, a
    # review); with --margin, the spread's
    good = thr("goodput_rps", doc["goodput_rps"]) if moves is not None else ""
    print(f"SLO attainment {_attained(doc)}; goodput {doc['goodput_rps']:.2f} req/s{good}")
    for line in _class_lines(doc, short, scenario, marks if moves is None else ()):
        print(line)
    print(_throughput_line(doc, thr))
    if line := _cache_line(doc.get("cache")):  # in --json only: a cache preset's headline (a review)
        print(line)
    c = doc["cost"]
    # an unsustainable run's bill is over batches a backlog keeps full, served late: cheaper per request,
    # and no better (as Results marks it; a review read "$0.26 per 1k" bare beside a baseline's $0.55)
    full = f", {sustain.LEVEL}" if sustain.saturated(doc) else ""  # at capacity too
    # nothing completed: no figure to divide ('$- per 1k requests': a review)
    run = f"${c['usd_total']:,.2f} for the run{_drain_said(doc, scenario.warmup_s if scenario is not None else 0.0)}"
    if c["usd_per_request"] is None:
        print(f"cost: ${c['usd_per_hour']:,.2f}/h ({run}); no request completed")
    else:
        print(
            f"cost: ${c['usd_per_hour']:,.2f}/h ({run}); "
            f"${figures(c['usd_per_request'] * 1000, 3)} per 1k requests{thr('usd_per_request', c['usd_per_request'])}"
            f"{full}; ${figures(c['usd_per_million_output_tokens'], 3)} per million output tokens"
            f"{thr('usd_per_million_output_tokens', c['usd_per_million_output_tokens'])}{full}"
        )
    for line in _price_lines(c):
        print(line)
    if billed := billed_said(doc):  # a warm-up's requests in the count the bill is divided over
        print(f"  {billed}")
    for line in _parts_lines(c):
        print(line)
    for line in porting_lines(scenario) if scenario is not None else ():
        print(f"  porting: {line}")
    for line in _pool_lines(doc, c):
        print(line)
    for m in marks:
        print(f"pool {m.pool} on {m.hardware}: {confidence.describe(m.calibration)}")
    _band_note(marks, moves)
    for line in _fleet_lines(doc, marks):
        print(line)
    if "sim" in doc:
        s = doc["sim"]
        print(
            f"simulated in {s['wall_s']:.2f} s with {s['events']:,} events ({s['events_per_request']:.1f} per request)"
        )


def _fleet_lines(doc: dict[str, Any], marks: Sequence[confidence.PoolMark]) -> list[str]:
    """The autoscaler's line, the edge site's (as Results says it: run printed nothing of the edge, a
    review), the energy with the chips' mean power, and the power caps', where each applies."""
    e = doc["energy"]["joules_per_output_token"]
    energy_error = _pm(marks, confidence.HEADLINE_SOURCES["joules_per_output_token"])
    energy = (
        f"energy: {_fmt(e)} J per output token{energy_error}" if e is not None else "energy: no output token"
    )
    lines = [autoscale_line(doc), edge_line(doc), energy + mean_power_text(doc), power_cap_line(doc)]
    return [line for line in lines if line is not None]


def _pool_lines(doc: dict[str, Any], c: dict[str, Any]) -> list[str]:
    """Each pool's utilisation and share of the bill, then the share no pool's chips carry (the cache tiers')."""
    out: list[str] = []
    bills = c.get("usd_by_pool", {})
    for pool, u in doc["utilization"].items():
        share = (
            f", {bills[pool] / c['usd_total']:.1%} of the bill"
            if pool in bills and c.get("usd_total")
            else ""
        )
        out.append(
            f"pool {pool}: compute {u['compute']:.1%}, bandwidth {u['bandwidth']:.1%}, busy {u['busy']:.1%}, "
            f"KV memory {u['kv_memory']:.1%}{share}"
        )
    rest = (c.get("usd_total") or 0.0) - sum(bills.values())  # the pools' shares left 4.9% unsaid (a review)
    if bills and c.get("usd_total") and rest > 1e-9 * c["usd_total"]:
        cache = c.get("usd_by_part", {}).get("cache", 0.0)
        what = (
            "the cache tiers (host, pooled)"
            if abs(rest - cache) <= 1e-6 * c["usd_total"]
            else "outside the pools"
        )
        out.append(f"{what}: {rest / c['usd_total']:.1%} of the bill (${rest:,.2f})")
    return out


def _at(c: dict[str, Any], key: AtPercentile) -> str:
    """A class's latency at its percentile: ∞ where it falls on rejected or failed requests (a '-' read
    as no data beside an attainment of 84.7%: a review), '-' where no request has one (single-token
    answers have no TPOT; `unbounded` tells them apart)."""
    v = c[key]
    if v is not None:
        return f"{v:,.2f} ms"
    return (
        "∞ (rejected or failed requests)" if unbounded(c, key) or key == "ttft_ms_at_percentile" else "- ms"
    )


def _e2e_text(c: dict[str, Any]) -> str:
    """A class's E2E at its percentile: '10,123 ms', or ∞ where it falls on requests never answered."""
    v = c.get("e2e_ms_at_percentile")
    return "∞" if v is None else f"{v:,.0f} ms"


def _broken(c: dict[str, Any], slo: Any) -> str:
    """What a failing class misses at its percentile: ' on TTFT', ' on TPOT and E2E' (its targets'
    `slo`; an E2E-only failure read 'FAILS' beside a TTFT and TPOT within target: a review)."""
    broken = [
        name
        for name, missed in (
            ("TTFT", not within_target(c, "ttft_ms_at_percentile", slo.ttft_ms)),
            ("TPOT", not within_target(c, "tpot_ms_at_percentile", slo.tpot_ms)),
            (
                "largest token gap",
                bool(slo.tbt_ms) and not within_target(c, "max_tbt_ms_at_percentile", slo.tbt_ms),
            ),
            (  # at its percentile, where the summary has it ('FAILS on largest token gap' alone: a review)
                f"E2E (p{c['percentile']:g} {_e2e_text(c)} against its {getattr(slo, 'e2e_ms', 0) or 0:,.0f} ms)",
                bool(getattr(slo, "e2e_ms", None))
                and "e2e_ms_at_percentile" in c
                and not within_target(c, "e2e_ms_at_percentile", slo.e2e_ms),
            ),
        )
        if missed
    ]
    if broken:
        return f" on {' and '.join(broken)}"
    # its deadline, at least: 'FAILS on E2E' stood without a figure (a review); the class has no E2E figure
    # at its percentile, each request being held to the deadline, which its attainment above counts
    e2e = getattr(slo, "e2e_ms", None)
    return " on E2E" + (f" (its {e2e:,.0f} ms deadline)" if e2e else "")


def _band_over(c: dict[str, Any], slo: Any, marks: Sequence[confidence.PoolMark]) -> str:
    """'; at its bands' top TPOT reads 31.3 ms, over its target (...)' for a passing class whose latency's band
    reaches past its target: 'passes' beside a TPOT of 28.2 ms against 30, its band up to +11%, read as a
    margin the band does not promise (a CLI review; `advise` said it misses at the band's edge)."""
    if not (over := band_tops_over(c, slo, marks)):
        return ""
    return (
        f"; at its band's top {' and '.join(over)}, over its target (run --margin reruns it with the chips at "
        "their bands' pessimistic edge)"
    )


def _class_lines(
    doc: dict[str, Any],
    short: float | None,
    scenario: Scenario | None = None,
    marks: Sequence[confidence.PoolMark] = (),
) -> list[str]:
    """Each class at its SLO percentile and its verdict (with `scenario`, what a failing one misses, and with
    `marks` where a passing one's band reaches past its target): a class within target in a run that falls
    behind its load does not pass (as the pages say); `short`: the shortfall its latencies grow with."""
    behind = shortfall_rps(doc)
    slos = {c.name: c.slo for c in scenario.workload.classes} if scenario is not None else {}
    out = []
    for cls, c in doc["classes"].items():
        if c["slo_attainment"] is None:  # no request in the window: nothing to judge
            out.append(f"  class {cls}: no request in the window, not judged")
            continue
        verdict = "FAILS" if not c["passes"] else "passes" if behind is None else sustain.within_only(doc)
        if not c["passes"] and cls in slos:
            verdict += _broken(c, slos[cls])
        elif verdict == "passes" and cls in slos:
            verdict += _band_over(c, slos[cls], marks)
        ttft = sustain.marked(_at(c, "ttft_ms_at_percentile"), doc, "ttft")
        tpot = sustain.marked(_at(c, "tpot_ms_at_percentile"), doc, "tpot")
        if (slo := slos.get(cls)) is not None:  # its targets beside it, so a pass can be checked (a review)
            ttft += f" (target {plain(slo.ttft_ms)} ms)"
            tpot += f" (target {plain(slo.tpot_ms)} ms)"
        out.append(
            f"  class {cls}: p{c['percentile']:g} TTFT {ttft}{'; ' if short is not None else ', '}TPOT {tpot}, "
            f"attainment {c['slo_attainment']:.1%}: {verdict}"
        )
    return out


def print_spread(summary: Summary, scen: Scenario, edge: RunMargin, spread: RunSpread) -> None:
    """`run --margin`'s text: the run at its chips' pessimistic edges, then each figure's spread."""
    from engine.explain.margin import figure_text

    slow = ", ".join(f"{chip} {e:+.0%}" for chip, e in edge.slowdown.items()) or "no chip has a band"
    print(
        f"margin: the same requests with every chip at its throughput band's pessimistic edge ({slow} time)"
    )
    for name, a, b in edge.rows():
        (short_a, short_b), (level_a, level_b) = edge.growing(name), edge.level(name)
        print(
            f"  {name:18} {figure_text(name, a, short_a, level_a):>12} -> {figure_text(name, b, short_b, level_b):>12}"
        )
    for name, a, b in edge.classes():
        why = "" if b else f" ({edge.why(name)})"
        print(f"  class {name}: {'passes' if a else 'FAILS'} -> {'passes' if b else 'FAILS'}{why}")
    for name in edge.unjudged():
        print(f"  class {name}: no request in the window, not judged")
    fast = ", ".join(f"{chip} {e:+.0%}" for chip, e in spread.speedup.items())
    print(
        f"spread: how each headline figure moves with every chip at either edge of its band (optimistic: {fast} "
        "time); latencies and costs never narrower than their kind's band"
    )
    for line in spread_lines(summary, scen, spread.moves()):
        print(f"  {line}")
    for note in spread.band_notes(scen, summary.get("slo_attainment"), "the margin above"):
        print(f"  {note}")  # the bands left off, and why a steep one reaches so far (as Results says)


SPREAD_NAMES = {
    "ttft_p99_ms": "TTFT p99",
    "tpot_p99_ms": "TPOT p99",
    "e2e_p99_ms": "E2E p99",
    "slo_attainment": "SLO attainment",
    "usd_per_request": "$ / request",
    "usd_per_million_output_tokens": "$ / 1M output tokens",
    "goodput_rps": "goodput",
    "goodput_per_usd": "goodput per $",
    "throughput_rps": "throughput",
}
"""The spread's figures by the names the margin's lines above them use (they read 'slo_attainment
0.95972' and 'goodput_per_usd 1258.1', the JSON's keys and fractions: a review)."""


def _spread_value(key: str, v: float) -> str:
    """A spread figure in its unit, as the margin's lines write theirs (`figure_text`)."""
    from engine.explain.margin import figure_text  # (loaded only where a margin is asked)

    if key == "goodput_per_usd":  # as Results' card reads it ('28 requests' beside its 27.7 req/$: a review)
        return f"{count3(v)} req/$"
    if key == "throughput_rps":
        return f"{v:,.2f} req/s"
    return figure_text(SPREAD_NAMES.get(key, key), v)


def spread_lines(summary: Summary, scenario: Scenario, moves: Any) -> list[str]:
    """'TTFT p99  810 ms  −22% to +39%': each headline figure of a run with its spread's band."""
    from engine.explain.presentation import headline  # pandas: loaded only when asked

    marks = confidence.pool_marks(scenario, summary)
    bounds = confidence.limits(summary, scenario)  # cut where the bill cannot go, as the headline's are
    head = headline(summary)
    lat = {k: head.pop(k) for k in ("ttft_p99_ms", "tpot_p99_ms")}  # E2E's beside them
    e2e = summary["latency_ms"].get("e2e", {}).get("p99")
    figures = {**lat, "e2e_p99_ms": e2e, **head, "throughput_rps": summary["throughput_rps"]}
    out = []
    for key, v in figures.items():
        if v is None or key not in moves:
            continue
        band = run_bands.figure_band(f"{v:.6g}", marks, key, moves, bounds)
        kind = key.rsplit("_p", 1)[0] if key.endswith("_ms") else None  # 'ttft_p99_ms': ttft
        shown = _spread_value(key, v)
        text = sustain.marked(shown, summary, kind) if kind else shown  # type: ignore[arg-type]
        out.append(f"{SPREAD_NAMES.get(key, key):22} {text:>14}  {band or ''}")
    return out
