"""What `make bench` holds each figure to, and how it says a figure missed: the targets in one place.

The targets are issue 36's "Done when" list (fast from a cold start to a million requests) where it
names one, and the earlier issues' where it does not (marked with their issue). A figure over its
target reads SLOW on a quiet machine and "machine busy" when the 1-minute load average is above
the core count, since then the other processes, not the engine, set the time: on the 2-core
reference machine shared by several sessions a run can take three times as long as alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A figure's limit, its unit and where the limit comes from."""

    limit: float
    unit: str
    source: str

    def text(self) -> str:
        """'<= 0.25 s, issue 36'."""
        return f"<= {self.limit:g} {self.unit}, {self.source}"


TARGETS: dict[str, Target] = {
    "import": Target(0.15, "s CPU", "issue 36"),  # `import engine; engine.simulate` in a fresh process
    "process": Target(0.6, "s CPU", "issue 36"),  # python -m engine run <default preset> --json
    "default": Target(0.25, "s", "issue 36"),  # the default preset in-process, ~9,700 requests
    "mooncake_tiers": Target(1.0, "s", "issue 36"),  # the Mooncake replay with its three cache tiers
    "preset": Target(1.0, "s", "issue 4"),  # any other preset
    "mooncake": Target(1.5, "s", "issue 4"),  # the Mooncake replay without its cache
    "everything": Target(1.0, "s", "issue 11"),
    "doubled": Target(0.30, "change", "issue 4"),
    "four_times": Target(1.3, "x", "issue 12"),
    "hundred_k": Target(3.0, "s", "issue 36"),
    "hundred_k_rss": Target(1024.0, "MB", "issue 4"),
    "million": Target(60.0, "s", "issue 36"),
    "million_rss": Target(2048.0, "MB", "issue 36"),
    "day": Target(120.0, "s", "issue 34"),  # a whole day at 10 req/s (~864k requests), CLI process
    "day_rss": Target(2048.0, "MB", "issue 34"),
    "slider_p50": Target(0.5, "s", "issue 36"),
    "slider_max": Target(1.5, "s", "issue 36"),
    "planner": Target(60.0, "s", "issue 7"),
}
"""Every figure `make bench` prints, by key."""


def load_average() -> float | None:
    """The machine's 1-minute load average, or None where the platform has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def machine_load() -> str:
    """'load 3.1 on 2 cores' (the 1-minute load average), for a reader to judge a figure by."""
    one = load_average()
    cores = os.cpu_count() or 1
    return f"{cores} cores, load unknown" if one is None else f"load {one:.1f} on {cores} cores"


def busy() -> bool:
    """Whether the 1-minute load is above the core count: other processes then set the timings."""
    one = load_average()
    return one is not None and one > (os.cpu_count() or 1)


def verdict(within: bool, timed: bool = True) -> str:
    """'ok'; or for a figure over its target 'SLOW' on a quiet machine and 'machine busy (load 3.1 on
    2 cores)' on a busy one. A figure that is not a timing (memory, a ratio of two timings taken
    together) is 'OVER' whatever the load."""
    if within:
        return "ok"
    if not timed:
        return "OVER"
    return f"machine busy ({machine_load()})" if busy() else f"SLOW at {machine_load()}"


def judged(key: str, value: float, timed: bool = True) -> str:
    """'(target <= 0.25 s, issue 36: ok)': a figure's target and whether `value` is within it."""
    t = TARGETS[key]
    return f"(target {t.text()}: {verdict(value <= t.limit, timed)})"
