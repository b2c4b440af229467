"""Replications in the dashboard: N seeds of a scenario, run in the background, shown as intervals.

Choosing N > 1 seeds (`picker`) makes `run` start one background job per scenario: a daemon
thread simulates seeds ``seed, seed+1, ...`` through `ui.sim.cached` (the one simulate cache: the
page's own seed is a cache hit, and every seed stays cached for later reruns), then
`engine.explain.replicas.summarize` brings them together. Jobs live in a server-wide registry
(`st.cache_resource`) keyed by N and the scenario's JSON, so a rerun, the other page or another
session asking for the same replication finds it running or done instead of starting it again.

Streamlit's element and session APIs belong to the script thread, so the job's thread calls none:
it only computes. The page polls it with a fragment that reruns every `POLL_S` seconds
(`st.fragment(run_every=...)`) while the job runs, drawing a progress bar, and reruns the whole
page when the job ends, which then draws the intervals. Until then the page shows its own seed and
stays usable. A job the session stops asking for (the scenario or N changed), or that no page has
looked at for `STALE_S`, is cancelled between two seeds; what it finished stays cached. At most
`MAX_ALIVE` jobs wait or run per server and `WORKERS` simulate at once, so sessions asking for many
replications cannot queue unbounded work (docs/bounds.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st
from streamlit import column_config as cc

from engine.explain import Interval, Replicas, seed_scenarios, summarize, usd_decimals
from engine.scenario import SEED_COUNTS, SEEDS_NOTE, SEEDS_PAGES, Scenario
from ui import sim
from ui.text import plain

OPTIONS = SEED_COUNTS
"""The replication counts offered; 1 is the page as it always was (one seed, no background job)."""

SETTING = "fg_replications"
"""Session key of the chosen count, kept across pages (widget state is dropped on a page switch)."""

ACTIVE = "fg_replica_jobs"
"""Session key of the job keys the session's last run asked for."""

POLL_S = 0.5
"""How often the progress fragment looks at a running job."""

MAX_JOBS = 32
"""Finished jobs the registry keeps (oldest dropped first); their seeds stay in the simulate cache."""

WORKERS = 2
"""Jobs that simulate at once per server (the rest wait their turn)."""

MAX_ALIVE = 8
"""Jobs waiting or running at once per server (a thread each); past it a page shows one seed and says why."""

STALE_S = 30.0
"""A job no page has looked at for this long (its tab closed, its session moved on) is cancelled."""


class Busy(Exception):
    """The server already runs `MAX_ALIVE` replications: the page shows its one seed meanwhile."""


HELP = (
    "Run the scenario with this many seeds (seed, seed + 1, …) in the background, then show each headline "
    "figure as its mean ± a 95% confidence interval (Student t over the seeds) and each latency CDF as the "
    "mean curve with the seeds' range shaded. The page shows your seed meanwhile. 1: this seed only."
)


class Job:
    """One replication computing on its own thread: progress, then a `Replicas` or an error."""

    def __init__(self, scenarios: list[Scenario]) -> None:
        self.scenarios = scenarios
        self.total = len(scenarios)
        self.done = 0
        self.result: Replicas | None = None
        self.error: str | None = None
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self.seen = time.monotonic()

    def touch(self) -> None:
        """A page is still waiting for (or showing) this job."""
        self.seen = time.monotonic()

    @property
    def finished(self) -> bool:
        """Whether the thread has ended (with a result, an error, or cancelled)."""
        return self._finished.is_set()

    @property
    def cancelled(self) -> bool:
        """Whether the job was asked to stop."""
        return self._cancel.is_set()

    @property
    def reusable(self) -> bool:
        """Whether a page may show or wait for this job: not cancelled before it had a result or an error."""
        return not (self.cancelled and self.result is None and self.error is None)

    def cancel(self) -> None:
        """Stop before the next seed (a seed already simulating finishes and stays cached)."""
        self._cancel.set()

    def start(self, slots: threading.Semaphore) -> None:
        """Run on a daemon thread, waiting for one of the server's `slots`."""
        threading.Thread(target=self._work, args=(slots,), name="fg-replicas", daemon=True).start()

    def _work(self, slots: threading.Semaphore) -> None:
        try:
            with slots:
                results = []
                for scenario in self.scenarios:
                    if self._cancel.is_set():
                        return
                    results.append(sim.cached(scenario))
                    self.done += 1
                self.result = summarize(results)
        except Exception as exc:  # shown by the page that polls; the thread must not die silently
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._finished.set()


@dataclass
class _Registry:
    jobs: OrderedDict[str, Job] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    slots: threading.Semaphore = field(default_factory=lambda: threading.BoundedSemaphore(WORKERS))


@st.cache_resource(show_spinner=False)
def _registry() -> _Registry:
    return _Registry()


def _key(scenario: Scenario, n: int) -> str:
    return f"{n}:{scenario.model_dump_json()}"


def job(scenario: Scenario, n: int) -> Job:
    """The server's job for `n` seeds of `scenario`, started if none is running or done."""
    reg, key = _registry(), _key(scenario, n)
    with reg.lock:
        found = reg.jobs.get(key)
        if isinstance(found, Job) and found.reusable:
            reg.jobs.move_to_end(key)
            return found
        if found is not None:  # cancelled, or made before Streamlit reloaded the app's modules
            found.cancel()  # (a source file changed): its thread runs old classes, which no longer pickle
        now = time.monotonic()
        alive = [j for j in reg.jobs.values() if not j.finished]
        for j in alive:
            if now - j.seen > STALE_S:
                j.cancel()  # nobody is waiting for it any more
        if len(alive) >= MAX_ALIVE:
            raise Busy(f"the server is running {len(alive)} other replications")
        new = reg.jobs[key] = Job(seed_scenarios(scenario, n))
        idle = [k for k, j in reg.jobs.items() if j.finished]
        for old in idle[: max(len(reg.jobs) - MAX_JOBS, 0)]:
            del reg.jobs[old]
    new.start(reg.slots)
    return new


PAGES = SEEDS_PAGES
"""The pages with a seeds picker (`picker`'s `page`): the engine's, which `scenario --link` reads too."""
PARAM = "seeds"
"""The share link's query parameter of the count (left out at one seed): a colleague opening a link
saw one seed's figures where the sender read the mean of five (a review)."""
LINKED = "fg_replications_linked"
"""Session key: the link's count last applied (a link applies once; the picker then rules)."""
NOTE = SEEDS_NOTE
"""How a scenario file's first comment opens where its figures were the mean of several seeds,
the count next (`ui.state.scenario_toml` writes it, `ui.state.seeds_of_file` reads it back)."""


def offered(raw: object) -> int | None:
    """The seeds count `raw` (a link's text, a file's) names, where it is one of `OPTIONS`; else None."""
    return next((n for n in OPTIONS if str(n) == str(raw)), None)


def widget_key(page: str) -> str:
    """The seeds picker's widget key on a page (one of `PAGES`)."""
    return f"fg:replications-{page}"


def _from_link(widget: str) -> None:
    """Apply a link's `PARAM` once (`ui.state.sync_link` dropped one the picker does not offer)."""
    ss, raw = st.session_state, st.query_params.get(PARAM)
    if raw is None or raw == ss.get(LINKED) or (n := offered(raw)) is None:
        return
    ss[LINKED] = raw
    ss[SETTING] = ss[widget] = n


def picker(page: str) -> int:
    """The replications selectbox (one per page, one setting per session, carried by the share link
    as `PARAM`); the chosen count."""
    widget = widget_key(page)
    ss = st.session_state
    if widget not in ss:
        ss[widget] = ss.get(SETTING, OPTIONS[0])
    _from_link(widget)

    def keep() -> None:
        ss[SETTING] = ss[widget]
        if ss[widget] > 1:
            st.query_params[PARAM] = str(ss[widget])
        elif PARAM in st.query_params:
            del st.query_params[PARAM]
        ss[LINKED] = st.query_params.get(PARAM)

    n = st.selectbox(
        "Seeds",
        OPTIONS,
        key=widget,
        on_change=keep,
        help=HELP,
        width=130,
        format_func=lambda k: "1 (this seed)" if k == 1 else f"{k} seeds",
    )
    return int(n or 1)


def run(scenarios: Sequence[Scenario], n: int) -> list[Replicas] | None:
    """Each scenario's replication over `n` seeds once done; until then a progress bar, and None.

    With ``n == 1`` nothing starts and None comes back at once (the page's single-seed path).
    Jobs this session asked for before and no longer does are cancelled.
    """
    ss = st.session_state
    wanted = {_key(s, n) for s in scenarios} if n > 1 else set()
    before: set[str] = ss.get(ACTIVE, set())
    if before - wanted:
        reg = _registry()
        with reg.lock:
            for k in before - wanted:
                if k in reg.jobs and not reg.jobs[k].finished:
                    reg.jobs[k].cancel()
    ss[ACTIVE] = wanted
    if n <= 1:
        return None
    if any(s.workload.trace is not None for s in scenarios):  # `engine.serving.run.replicate` refuses it too
        st.caption(
            "Seeds: a trace's requests are the same whatever the seed, so seeds would repeat one run; showing it."
        )
        return None
    try:
        jobs = [job(s, n) for s in scenarios]
    except Busy as exc:
        st.info(f"Seeds: {plain(exc)}; showing one seed. Try again in a minute.", icon=":material/hourglass:")
        return None
    for j in jobs:
        j.touch()
    errors = [j.error for j in jobs if j.error]
    if errors:
        st.warning(f"The replications could not run: {plain(errors[0])}", icon=":material/warning:")
        return None
    done = [j.result for j in jobs]
    if all(r is not None for r in done):
        return [r for r in done if r is not None]
    _progress(jobs, n)
    return None


def _progress(jobs: list[Job], n: int) -> None:
    @st.fragment(run_every=POLL_S)
    def poll() -> None:
        for j in jobs:
            j.touch()
        if all(j.finished for j in jobs):
            st.rerun()  # the whole page, which now finds the results
        done, total = sum(j.done for j in jobs), sum(j.total for j in jobs)
        st.progress(
            done / total,
            text=f"Running {n} seeds in the background: {done} of {total} runs done. "
            "Until they finish, the figures below are from one seed.",
        )

    poll()


def _decimals(key: str, mean: float) -> int:
    if key.endswith("_ms"):
        return 0 if abs(mean) >= 100 else 1
    if key.startswith("usd"):
        return usd_decimals(abs(mean))  # as one seed's figure reads
    return 2


def _showing(half: float, decimals: int, most: int = 3) -> int:
    """Decimals enough for a nonzero half-width to show a digit (up to `most` more): '20.12 ±
    0.04 ms' rather than '20.1 ± 0.0 ms', which reads as no spread at all."""
    d = decimals
    while half > 0 and round(half, d) == 0 and d < decimals + most:
        d += 1
    return d


def pm(key: str, iv: Interval | None) -> str:
    """A headline figure as ``mean ± half-width`` with its unit, e.g. ``824 ± 36 ms`` or ``97.1 ± 0.8%``."""
    if iv is None or not math.isfinite(iv.mean):
        return "–"
    half = iv.half_width
    if key == "slo_attainment":
        if not math.isfinite(half):
            return f"{iv.mean:.1%}"
        d = _showing(half * 100, 1)
        return f"{iv.mean * 100:.{d}f} ± {half * 100:.{d}f}%"
    d = _decimals(key, iv.mean)
    if math.isfinite(half):
        d = _showing(half, d)
    if key.startswith("usd"):
        return f"${iv.mean:,.{d}f}" + (f" ± {half:,.{d}f}" if math.isfinite(half) else "")
    unit = " ms" if key.endswith("_ms") else " req/s"
    return f"{iv.mean:,.{d}f}" + (f" ± {half:,.{d}f}" if math.isfinite(half) else "") + unit


def metric_value(rep: Replicas | None, key: str, value: str) -> str:
    """A headline metric's text: `value` (one seed) or the mean ± 95% interval over the seeds."""
    return value if rep is None else pm(key, rep.headline.get(key))


def seeds_text(rep: Replicas) -> str:
    """Which seeds a replication ran, e.g. ``seeds 1–3``."""
    s = rep.seeds
    return (
        f"seeds {s[0]}–{s[-1]}"
        if list(s) == list(range(s[0], s[0] + len(s)))
        else f"seeds {', '.join(map(str, s))}"
    )


def seed_words(seed: int, rep: Replicas | None) -> str:
    """The run caption's seed: ``seed 1``, and with several seeds which of them the ± figures average
    (the requests, events and time before it are the one seed's run)."""
    return f"seed {seed}" if rep is None else f"this run: seed {seed}; the ± figures: {seeds_text(rep)}"


def caption(rep: Replicas, rest: str) -> None:
    """Say what the ± figures are and what the rest of the page shows."""
    st.caption(
        f"Figures with ± are the mean and 95% confidence interval over {rep.n} runs ({seeds_text(rep)}); the "
        f"latency CDFs show the mean curve over the range of the seeds (shaded). {rest}"
    )


COMPARE_COLUMNS: dict[str, Any] = {
    "a": cc.NumberColumn("A", width=100, help="Mean over the seeds."),
    # wide enough for a cost's half-width, '0.0000086', which a narrow column cut to ').0000086' (a review)
    "a_ci95": cc.NumberColumn(
        "A ±", width=96, help="Half-width of A's 95% confidence interval over the seeds."
    ),
    "b": cc.NumberColumn("B", width=100, help="Mean over the seeds."),
    "b_ci95": cc.NumberColumn(
        "B ±", width=96, help="Half-width of B's 95% confidence interval over the seeds."
    ),
    "better": cc.TextColumn(
        "better",
        width=150,  # as the one-seed table's: at its default width 'within noise' read 'within noi'
        help="Which scenario does better on this figure (same: within 0.5%, unless the seeds say the difference "
        "is real, when the side it favours is named; within noise: the seeds alone could explain the difference: "
        "on the same requests, the 95% interval of the seeds' differences B − A holds 0; on other requests, the "
        "two sides' 95% intervals overlap).",
    ),
    "unit": cc.TextColumn("unit", width="small"),
    "change": None,  # B − A: the relative change says it, and the ± columns need the room
    "within_noise": None,  # `better` says it; the page reads the column for its metrics
}
"""Column settings the Compare table adds (or changes) when it lines up replications."""
