"""Where a plan's simulations run: in this process, or on an executor (a Dask cluster) ahead of need.

The planner's search is sequential branch and bound: which deployment it simulates next depends
on the verdicts so far. To use a cluster without changing a single decision, the search asks a
*runner* for each result in its own order (`Runner.result`), and may tell it beforehand which
results it will most likely ask for next (`Runner.ahead`): the lower-bound counts of the next live
shapes, the next gallop or bisection step of a colocated shape, the pools a disaggregated shape
may grow. `LocalRunner` ignores the hints and simulates when asked; `ClusterRunner` submits each
hint to its executor (at most `ahead` pending at once), keeps the results by key (shape, counts),
and when asked for one returns the finished result or waits for it, submitting it first if no
hint named it. A simulation is deterministic (the same requests, the same scenario), so a result
computed ahead equals the one computed on demand, and the plan (its runs, candidates and choice)
is the local plan's; hints never consumed only cost cluster time. docs/planner.md, "On a cluster".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future
from typing import Any, Protocol

DEFAULT_AHEAD = 8
"""Simulations a `ClusterRunner` keeps pending ahead of the search, by default."""


class Runner(Protocol):
    """What the search asks of wherever simulations run."""

    speculates: bool
    """True when hints are used (the search then builds their scenarios; otherwise it skips them)."""

    def result(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)`, computed now or ahead of time under `key`."""

    def ahead(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> None:
        """A hint: `result(key, fn, *args)` will likely be asked for soon."""

    def close(self) -> None:
        """Drop what was computed ahead and never asked for."""


class LocalRunner:
    """Simulations in this process, one at a time, when asked; hints are ignored."""

    speculates = False

    def result(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    def ahead(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> None:
        return None

    def close(self) -> None:
        return None


class ClusterRunner:
    """Simulations on an executor (`distributed.Client.get_executor()`, or a local process pool),
    submitted ahead of the search from its hints and kept by key until asked for."""

    speculates = True

    def __init__(self, executor: Executor, ahead: int = DEFAULT_AHEAD) -> None:
        if ahead < 0:
            raise ValueError(f"ahead: must be at least 0 (got {ahead})")
        self.executor, self.most = executor, ahead
        self.futures: dict[Hashable, Future[Any]] = {}
        self.submitted = 0
        """Simulations submitted in all, hints and demands (`submitted - used`: hints never asked for)."""
        self.used = 0
        self.ready = 0
        """Results asked for that a hint had submitted before (`ready / used`: how well the hints guess)."""

    def pending(self) -> int:
        """Simulations submitted ahead that have not finished."""
        return sum(not f.done() for f in self.futures.values())

    def result(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> Any:
        fut = self.futures.pop(key, None)
        self.ready += fut is not None
        if fut is None:
            fut = self._submit(fn, args)
        self.used += 1
        return fut.result()  # a task's exception (a refused run) is raised here, when it is asked for

    def ahead(self, key: Hashable, fn: Callable[..., Any], *args: Any) -> None:
        if key in self.futures or self.pending() >= self.most:
            return
        self.futures[key] = self._submit(fn, args)

    def _submit(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Future[Any]:
        self.submitted += 1
        return self.executor.submit(fn, *args)

    def close(self) -> None:
        for fut in self.futures.values():
            fut.cancel()
        self.futures.clear()
