"""The margin for the model's error on the Results and Compare pages (`engine.explain.margin`).

The Results and Compare pages run each scenario's spread once drawn (`spread`: the same requests
with every chip at the pessimistic and at the optimistic edge of its throughput band), which gives the headlines
their bands and the Results margin panel its slower run. Compare's margin panel runs nothing
until asked: one button shows both scenarios with slower chips (alone and together, where their
chips differ; the spreads' slower runs, so nothing more is simulated), and what it shows stays
until the scenario changes.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from engine.core import ScenarioError, rate2
from engine.explain import BOTH_FAIL, GROWS, CompareMargin, RunMargin, RunSpread, figure_text, run_spread
from engine.scenario import Scenario
from engine.serving import SimResult
from ui import tables
from ui.text import plain

MARGIN_FOR = "fg_margin_for"
"""The scenario (JSON) whose margin the user asked for: it stays shown until the scenario changes."""


@st.cache_data(max_entries=16, show_spinner=False)
def _run_spread(scenario_json: str, _summary: dict[str, Any]) -> RunSpread:
    return run_spread(Scenario.model_validate_json(scenario_json), _summary)


def _run_margin(scenario_json: str, _summary: dict[str, Any]) -> RunMargin:
    """The run's margin: the slower half of its spread (one cache for both)."""
    return _run_spread(scenario_json, _summary).margin(Scenario.model_validate_json(scenario_json))


PROVISIONAL = (
    "Bands for now: each figure's kind's calibration band; SLO attainment and goodput get theirs from this "
    "run's own spread (the same requests with its chips at their bands' edges), which is being simulated and "
    "then replaces them all."
)
"""What a page's first bands are until the run's spread replaces them, seconds later: a reader saw the
numbers change unannounced (a browser review)."""


def spread(result: SimResult) -> RunSpread | None:
    """The run's spread (`engine.explain.margin.run_spread`): the same requests with every chip
    at the pessimistic and at the optimistic edge of its throughput band; None where the engine refuses
    it (it shares the run's requests and work bound, so only defensively), the figures then keeping
    their kinds' bands."""
    try:
        with st.spinner("Checking how far the model's error moves each figure…"):
            return _run_spread(result.scenario.model_dump_json(), result.summary)
    except ScenarioError:
        return None


def _chips(sp: RunSpread) -> str:
    """'h100-sxm +32% / −19%': the edges each chip of a spread was moved to ('' where none has a band)."""
    return ", ".join(
        f"{chip} {_pct(sp.slowdown[chip])} / {_pct(sp.speedup.get(chip, 0.0))}" for chip in sp.slowdown
    )


def _pct(x: float) -> str:
    """'+32%', '−25%': with the bands' minus sign ('+32% / -25%' stood beside '−25% to +32%': a browser check)."""
    return f"{x:+.0%}".replace("-", "\u2212")


def spread_caption(sp: RunSpread, whose: str = "") -> str:
    """What the headline bands are, with the edges each chip was moved to (`whose`: ' (A and B)')."""
    chips = _chips(sp)
    if not chips:
        return f"No chip of this run{whose} has a band: its figures carry none."
    return _caption(whose, chips)


def pair_caption(a: RunSpread, b: RunSpread) -> str:
    """`spread_caption` of Compare's two sides, the explanation once with each side's chips: it read twice,
    about eighty words each, where only the chips differed (a browser review)."""
    ca, cb = _chips(a), _chips(b)
    if ca and cb:
        return _caption(" (A and B)", f"A: {ca}; B: {cb}")
    return f"{spread_caption(a, ' (A)')} {spread_caption(b, ' (B)')}"


def _caption(whose: str, chips: str) -> str:
    return (
        f"Bands{whose}: how each figure moves when the same requests run with every chip at the pessimistic "
        f"and at the optimistic edge of its throughput band (iteration time {chips}); TTFT and TPOT keep at least "
        "their own kind's band. A cost's band is not this deployment's bill, which barely moves with the chips' "
        "speed, but what a deployment sized to hold the same SLO would bill at the band's edges (throughput's "
        "band turned round, cut where a bill cannot go), as the planner quotes a choice's. SLO attainment moves "
        "in points."
    )


def margin_panel(result: SimResult) -> None:
    """On request, the run again on the same requests with every chip at the pessimistic edge of its
    throughput band (`engine.explain.margin.run_margin`): does the verdict hold?"""
    sc = result.scenario
    js = sc.model_dump_json()
    with st.container(key="fg-run-margin"):
        st.subheader(
            "Margin for the model's error",
            help="Every figure here carries its band (about two in three real deployments land inside). This "
            "reruns the scenario on the same requests with every chip at the pessimistic edge of its throughput "
            "band (every iteration 1 + e times as long) and shows what moves: whether the verdict "
            "holds if the model is as wrong as its band says it may be (docs/planner.md, Margin).",
        )
        if st.button(
            "Rerun with the chips as slow as the model's error allows",
            key="fg-run-margin-go",
            icon=":material/shield:",
        ):
            st.session_state[MARGIN_FOR] = js
        if st.session_state.get(MARGIN_FOR) != js:
            return
        try:
            m = _run_margin(js, result.summary)
        except ScenarioError as exc:
            st.error(f"The margin could not be computed: {plain(exc)}", icon=":material/error:")
            return
        slow = plain(
            ", ".join(f"{chip} {e:+.0%} time" for chip, e in m.slowdown.items()) or "no chip has a band"
        )
        before = m.passes[0]
        moved = [
            f"class {plain(n)} {'now passes' if b else f'now fails ({m.why(n)})'}"
            for n, a, b in m.classes()
            if a != b
        ]
        short_a, short_b = m.shortfalls
        if short_b is not None and short_a is None:  # its classes' verdicts no longer mean passing
            moved.append(f"the run falls behind its load (unsustainable, short by {rate2(short_b)} req/s)")
        head = f"With every chip at the pessimistic edge of its throughput band ({slow}),"
        if not moved:
            fails = [plain(n) for n, _, b in m.classes() if not b]
            still = (
                f"class {fails[0]} still fails"
                if len(fails) == 1
                else f"classes {', '.join(fails)} still fail"
            )
            verdict = "every class still passes" if before else f"the verdict stands: {still}"
            st.info(f"{head} {verdict}.", icon=":material/shield:")
        else:
            st.warning(f"{head} {'; '.join(moved)}.", icon=":material/gpp_maybe:")

        def shown(n: str, v: float | None, side: int) -> str:  # a latency that grows, or stays level, marked
            return figure_text(n, v, m.growing(n)[side], m.level(n)[side])

        frame = pd.DataFrame(
            [(n, shown(n, a, 0), shown(n, b, 1)) for n, a, b in m.rows()],
            columns=["figure", "as modelled", "chips slower"],
        )
        st.dataframe(frame, hide_index=True, width="content")


COMPARE_FOR = "fg_compare_margin_for"
"""The pair of scenarios (JSON) whose comparison margin the user asked for."""

VERDICT_TEXT = {
    "A": "A in every case",
    "B": "B in every case",
    "same": "the same",
    "A or same": "A, or the same",
    "B or same": "B, or the same",
    "same or both fail": "the same, or both fail their SLO",
    "A or both fail": "A, or both fail their SLO",
    "B or both fail": "B, or both fail their SLO",
    "depends": "depends on the model's error",
    "A unsustainable": "none: A is unsustainable",
    "B unsustainable": "none: B is unsustainable",
    "A and B unsustainable": "none: A and B are unsustainable",
}
"""Each verdict of `CompareMargin.verdicts` in words; an unsustainable side's latencies grow with
run length in some case, so they have no better side."""


def verdict_text(verdict: str) -> str:
    """A verdict of `CompareMargin.verdicts` in words, with where a cheaper side misses its SLO: 'B in
    every case, but B misses its SLO in some case'."""
    base, _, missing = verdict.partition("; ")
    text = VERDICT_TEXT.get(base, "")
    return f"{text}, but {missing}" if missing and text else text


def _compare_margin(a_json: str, _a: dict[str, Any], b_json: str, _b: dict[str, Any]) -> CompareMargin:
    """A's and B's margins: the slower halves of their spreads, which the page's bands already ran
    (`engine.explain.margin.compare_margin` would run them again)."""
    return CompareMargin(_run_margin(a_json, _a), _run_margin(b_json, _b))


def _cell(row: Any) -> str:
    text = tables.minus(tables.change_text(row["change_pct"], row["change_points"]) or "–")
    better = row["better"]
    if better == GROWS:
        return better
    if better == BOTH_FAIL:  # neither meets its SLO in this case: no better side
        return f"{text} (both fail)"
    return f"{text} ({better})" if better in ("A", "B") else f"{text} (same)" if better == "same" else text


def compare_panel(a: SimResult, b: SimResult) -> None:
    """On request, A and B each with slower chips: does B's lead (or A's) hold in every case?"""
    aj, bj = a.scenario.model_dump_json(), b.scenario.model_dump_json()
    with st.container(key="fg-compare-margin"):
        st.subheader(
            "Does the comparison hold against the model's error?",
            help="Each side is rerun on its requests with every chip at the pessimistic edge of its throughput band. "
            "Where A and B run on the same chips under the same stack their errors move together, so the cases "
            "are both as modelled and both slower; where their chips differ, either may be the one the model "
            "flatters, so each side slower alone is a case too. A figure whose better side is the same in every "
            "case holds (docs/planner.md, Margin).",
        )
        if st.button(
            "Check the comparison against the model's error",
            key="fg-compare-margin-go",
            icon=":material/shield:",
        ):
            st.session_state[COMPARE_FOR] = (aj, bj)
        if st.session_state.get(COMPARE_FOR) != (aj, bj):
            return
        try:
            m = _compare_margin(aj, a.summary, bj, b.summary)
        except ScenarioError as exc:
            st.error(f"The margin could not be computed: {plain(exc)}", icon=":material/error:")
            return
        long = m.table()
        if long.empty:
            return
        long["cell"] = long.apply(_cell, axis=1)
        order = [c for c, _, _ in m.cases()]
        wide = long.pivot(index="figure", columns="case", values="cell").reindex(columns=order)
        wide = wide.reindex([f for f in dict.fromkeys(long["figure"])])
        verdicts = m.verdicts()
        wide["verdict"] = [verdict_text(verdicts.get(f, "")) for f in wide.index]
        turns = [f for f, v in verdicts.items() if v.partition("; ")[0] == "depends"]
        slow_a = plain(", ".join(f"{c} {e:+.0%}" for c, e in m.a.slowdown.items()) or "none")
        slow_b = plain(", ".join(f"{c} {e:+.0%}" for c, e in m.b.slowdown.items()) or "none")
        how = (
            f"A and B share their chips, so they slow together ({slow_a})."
            if m.shared
            else f"A's chips slower: {slow_a}; B's: {slow_b}."
        )
        grows = m.unsustainable()
        if grows:
            st.warning(
                f"{grows} {'are' if ' and ' in grows else 'is'} unsustainable in some case: "
                f"{'their' if ' and ' in grows else 'its'} latencies that {GROWS.replace('grows', 'grow')} "
                f"(E2E at least) have no better side. {how}",
                icon=":material/gpp_maybe:",
            )
        fail = [f for f, v in verdicts.items() if v.endswith("both fail")]
        if fail:  # a case where neither meets its SLO orders neither on them
            st.warning(
                f"A and B both miss their SLO in some case: {' and '.join(fail)} have no better side there. {how}",
                icon=":material/gpp_maybe:",
            )
        if turns:
            st.warning(
                f"The model's error can turn the order of {', '.join(turns)}. {how}",
                icon=":material/gpp_maybe:",
            )
        elif not grows and not fail:
            st.info(f"Every figure keeps its better side in every case. {how}", icon=":material/shield:")
        st.dataframe(wide.reset_index(), hide_index=True, width="stretch")
