"""Which trace format an uploaded file is in, and why one is not a trace Fengong reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.core.text import clipped

if TYPE_CHECKING:
    from engine.scenario.model import Scenario
    from engine.serving.traces import TraceRequests, TraceWindow

IDLE_TAIL_SHARE = 0.2
"""The share of a window after a trace's last arrival past which the idle tail is said."""

CSV_COLUMNS = ("arrival_s", "input_tokens", "output_tokens")
"""The columns a plain CSV trace must have (`class` may follow)."""
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
"""The columns of Azure's LLM inference traces."""


GAP_FIELD = "workload.trace.max_gap_s"
"""The field that cuts an agentic session's pauses (the Workload page's Max gap box)."""
JSON_SUFFIXES = (".jsonl", ".json")
"""The names of files a JSON trace comes in: Mooncake's JSON Lines, agentic sessions (one document or many)."""


def trace_format(file_name: str, first_line: str) -> str | None:
    """The trace format a file is in, from its name and first line (None: not a trace Fengong reads).

    A JSON file's first line may be given with what follows it (an agentic session pretty-printed opens
    with a lone brace): a session holds ``requests``, a Mooncake line ``input_length``."""
    head = first_line.strip()
    if file_name.endswith(JSON_SUFFIXES) and head.startswith("{"):
        if '"requests"' in head:  # kv-cache-tester's agentic sessions (the shipped sample's format)
            return "agentic"
        if "input_length" in head and file_name.endswith(".jsonl"):
            return "mooncake"
    if file_name.endswith(".csv"):
        cols = {c.strip() for c in head.split(",")}
        if set(AZURE_COLUMNS) <= cols:
            return "azure"
        if set(CSV_COLUMNS) <= cols:
            return "csv"
    return None


def trace_problem(file_name: str, first_line: str) -> str:
    """Why a file is not a trace Fengong reads, naming what each format needs: "not a trace Fengong
    reads (see the help)" sent a user whose CSV said time,prompt,completion to look elsewhere (a
    walkthrough)."""
    if file_name.endswith(JSON_SUFFIXES):
        return (
            "not a JSON trace Fengong reads: a Mooncake trace's first line is a JSON object with timestamp "
            "(ms), input_length and output_length; an agentic session file's documents hold block_size and "
            "requests (each with t, in, out and hash_ids)"
        )
    # each name cut (a 40 MB first line was quoted whole: a browser review)
    head = [clipped(c.strip()) for c in first_line[:4096].strip().split(",") if c.strip()][:8]
    got = f"its header has {', '.join(head)}" if head else "it has no header"
    return (
        f"not a CSV trace Fengong reads: {got}; a trace needs the columns {', '.join(CSV_COLUMNS)} "
        f"(and optionally class), or Azure's {', '.join(AZURE_COLUMNS)}"
    )


def kept_text(
    reqs: TraceRequests | TraceWindow,
    duration_s: float,
    start_s: float = 0.0,
    fmt: str = "",
    gap_s: float | None = None,
) -> str:
    """'1,666,666 requests in the window' and, where the file holds more, where the rest went: past
    `max_requests`, before the window's start, at or past its end (with the file's last arrival, and a
    hint where that looks like milliseconds read as seconds). An upload said '3 requests in the window'
    of a 3,000-row file stamped in milliseconds, the rest dropped unsaid (a review). Agentic sessions
    (`fmt`) are in seconds, their gaps a user's pauses: the hint names the gap cut instead, or the cut
    set (`gap_s`, the trace's `max_gap_s`: the advice stood after it was followed, a browser review)."""
    said = f"{len(reqs):,} request{'' if len(reqs) == 1 else 's'} in the window"
    if reqs.rows <= len(reqs):
        return said
    parts = []
    if reqs.cut:
        parts.append(f"{reqs.cut:,} past the trace's max requests, which keeps the earliest")
    if reqs.before:
        parts.append(f"{reqs.before:,} before its start at {start_s:,.0f} s")
    if reqs.after:
        far = reqs.after > len(reqs) and reqs.last_s > 100.0 * (start_s + duration_s)
        hint = " (if its times are in milliseconds, set the trace's time scale to 1,000)" if far else ""
        runs = f"the file runs to {reqs.last_s:,.0f} s"
        if fmt == "agentic" and gap_s is not None:  # seconds from each session's start: no unit to doubt
            hint, runs = "", f"{runs}, its sessions' pauses cut to {gap_s:,.4g} s"
        elif fmt == "agentic":  # hours apart where its user paused
            hint, runs = (
                "",
                f"{runs}; its sessions pause for hours in places: Max gap ({GAP_FIELD}) cuts each pause",
            )
        parts.append(f"{reqs.after:,} at or past its end at {start_s + duration_s:,.0f} s ({runs}){hint}")
    return f"{said} of the file's {reqs.rows:,}: {'; '.join(parts)}"


def idle_tail(arrivals_s: Sequence[float], duration_s: float, after: int = 0) -> str:
    """Where a trace's arrivals end well before the window does, what that means ('' where they run
    on into the window's last fifth): the rest of the window is idle, billed all the same. A 120 s
    trace in a 600 s window showed its cost per million tokens 15 times the generated run's with
    nothing said (a walkthrough)."""
    if not len(arrivals_s) or duration_s <= 0 or after:  # rows past the window: it does not end, it is cut
        return ""
    last = float(max(arrivals_s))
    if last >= (1.0 - IDLE_TAIL_SHARE) * duration_s:
        return ""
    return (
        f"The trace's arrivals end at {last:,.0f} s of the {duration_s:,.0f} s window: the last "
        f"{duration_s - last:,.0f} s serve nothing new, and the chips are billed for them (cost per request "
        f"and per token count that idle time). A window of about {last:,.0f} s measures the trace alone."
    )


DENSE_RPS = 1000.0
"""A trace's mean arrival rate over its file (time-scaled) past which its times are said to look like
another unit: real serving traces run at a few to a few hundred requests a second (Mooncake's
conversation trace 3.4, Azure's 2-7)."""

UNIT_HINTS = {
    "mooncake": "Mooncake's timestamp is in milliseconds: if the file's are seconds, set "
    "workload.trace.time_scale to 0.001",
}
"""Per format, what a trace whose arrivals look too dense may have got wrong, and the setting that mends it."""


def dense_note(reqs: TraceRequests | TraceWindow, fmt: str, time_scale: float) -> str:
    """Where a trace's file arrives faster than `DENSE_RPS` on average, that it may be read in the wrong
    unit ('' where not, for a file of under 100 requests, and for one whose requests all arrive at once, a
    batch): a Mooncake file stamped in seconds replayed
    its 12,031 requests in 3.5 s, 0% attainment, and nothing said (a review)."""
    if reqs.rows < 100 or reqs.last_s <= 0:  # all at one instant: a batch, not a unit (a code review)
        return ""
    if reqs.rows / reqs.last_s <= DENSE_RPS:
        return ""
    span = f"within {reqs.last_s:,.3g} s"
    paced = f" at time scale {time_scale:g}" if time_scale != 1.0 else ""
    # a time scale set already is what to check first: the unit's hint told one set to 1,000 to set 0.001
    hint = (
        UNIT_HINTS.get(fmt, "check the unit of its times (workload.trace.time_scale rescales them)")
        if time_scale == 1.0
        else f"workload.trace.time_scale ({time_scale:g}) replays it that many times as fast; lower it if that "
        "is not meant"
    )
    return (
        f"The trace's file arrives {reqs.rows:,} requests {span}{paced}, over {DENSE_RPS:,.0f} req/s, where "
        f"real serving traces run far slower: {hint}."
    )


def over_context_text(requests: Any, max_context: int) -> str:
    """Where a replay's window holds requests longer than the model's context (prompt and output together),
    how many and the longest ('' where none): the run rejects them, and the Workload page showed prompts at
    p99 137,056 tokens past a 131,072-token context with no word, the rejections said on Results alone (a
    browser review). `requests`: a run's per-request table (`SimResult.requests`)."""
    from engine.serving.ledger import OVER_CONTEXT

    over = requests[requests["reason"] == OVER_CONTEXT]
    if over.empty:
        return ""
    longest = int((over["prompt_tokens"] + over["output_tokens"]).max())
    return (
        f"{len(over):,} of the window's {len(requests):,} requests are longer than the model's context "
        f"({max_context:,} tokens, prompt and output together; the longest {longest:,}): the run rejects them, "
        "and they count as SLO misses."
    )


def trace_notes(win: TraceWindow, scenario: Scenario) -> list[str]:
    """What a trace replay should say of how its file met the window (`TraceRequests.window`), as the
    Workload page says it: where the rest of the file went (`kept_text`), an idle tail (`idle_tail`),
    arrivals too dense for their unit (`dense_note`). The command line said none of them: a CSV in
    milliseconds replayed 26 of its 12,031 rows, with exit 0 (a review)."""
    tr = scenario.workload.trace
    assert tr is not None
    kept = kept_text(win, scenario.duration_s, tr.start_s, tr.format, tr.max_gap_s)
    out = [kept + "."] if " of the file's " in kept else []
    arrivals = [win.last_arrival_s] if win.kept else []
    out += [x for x in (idle_tail(arrivals, scenario.duration_s, win.after),) if x]
    out += [x for x in (dense_note(win, tr.format, tr.time_scale),) if x]
    return out
