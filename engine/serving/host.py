"""What an instance and the disruptions may see and call of the running simulation.

The simulation (`engine.serving.sim.Simulation`) wires the actors that own every request's state
(the request ledger, the fleet, the KV ledger, the front door) and its life cycle;
an instance (`engine.serving.instance.Server`) runs iterations and reports what happened (a
prefill finished, a request completed, memory ran out) through the few calls declared here, and
reads the per-request state it needs. Faults and elastic role switches (`disruptions`) take a
little more: the servers, the parked hand-offs and the calls that end or retry requests. Both
are Protocols over the instance type, so neither module imports the simulation and this one never
names the instance: the simulation satisfies them, and mypy checks that it does where it hands
itself to its instances. The simulation also names `Host` as its base: mypyc compiles a Protocol
as a trait, and reaches a trait's attributes and methods natively only in classes that name it
(in a class that merely satisfies it, by name, as Python does).

`Clock` is simpy's environment with the simulator's cheap timed calls (`after`).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import simpy

# (Final: the compiled build keeps them in C statics, not read from the module's dict at every call)
_NORMAL: Final = simpy.events.NORMAL
_push: Final[Callable[[list[Any], Any], None]] = heapq.heappush

Srv = TypeVar("Srv")
SrvIn = TypeVar("SrvIn", contravariant=True)
"""The instance type (`engine.serving.instance.Server`): a parameter, so this module never names it
and the instance module and this one do not import each other, even for type checking."""

if TYPE_CHECKING:
    from engine.scenario.model import Scenario
    from engine.scenario.resolve import Resolved
    from engine.serving.rows import RowLog
    from engine.serving.workload import Requests


class Host(Protocol[SrvIn]):
    """The simulation as an instance sees it: per-request state, batching settings, and its calls."""

    env: Clock
    scenario: Scenario
    reqs: Requests
    # per-request state, indexed by request id (Python lists: the hot path reads them constantly)
    arrival: list[float]
    prompt: list[int]
    output: list[int]
    pf_target: list[int]
    prefilled: list[int]
    context: list[int]
    priority: list[int]
    resume: list[int]
    prefill_start: list[float]
    # scheduling settings (each instance's batching limits are its pool's: `ResolvedPool.limits`)
    mix: bool
    preempt: bool
    swap: bool
    cache_on: bool
    by_priority: bool
    # token accounting
    tokens_emitted: int
    tokens_discarded: int
    segments: RowLog  # one row per iteration or decode jump (`ledger.SEGMENT_COLUMNS`), added by instances

    def reserve_tokens(self, rid: int, role: str) -> int:
        """KV tokens a request reserves on admission to an instance of a role."""

    def use_cache(self, srv: SrvIn, rid: int) -> float:
        """Look a request's prompt up in the cache tiers; the seconds its hit takes to load."""

    def hbm_share(self, srv: SrvIn, rid: int, room: int) -> tuple[list[Hashable], int, int] | None:
        """The HBM-cached blocks a request admitted to `srv` would read, the prompt tokens they save
        and the tokens of those not pinned yet (None without an HBM hit)."""

    def share(self, srv: SrvIn, rid: int, share: tuple[list[Hashable], int, int]) -> int:
        """Pin the HBM blocks an admitted request reads; the tokens it pinned first less those counted."""

    def swap_time(self, srv: SrvIn, tokens: int) -> float:
        """Seconds to move `tokens` of KV between HBM and host memory."""

    def prefill_done(self, srv: SrvIn, rid: int) -> None:
        """A request's prompt is fully prefilled on `srv`."""

    def complete(self, srv: SrvIn, rid: int) -> None:
        """A request produced its last token on `srv`."""

    def preempt_request(self, srv: SrvIn, rid: int) -> None:
        """`srv` ran out of KV memory and takes `rid` off its batch."""

    def roles_changed(self) -> None:
        """An instance went down, came back or switched roles."""

    def rejoined(self, srv: SrvIn, rid: int) -> None:
        """A preempted request rejoins `srv`'s batch (swapped in or recomputed)."""


class DisruptionHost(Host[Srv], Protocol[Srv]):
    """The simulation as faults and elastic role switches see it."""

    resolved: Resolved
    servers: list[Srv]
    fault_policy: str
    counters: dict[str, float]
    link_factor: list[float]  # per pool: the share of its KV link's bandwidth a link fault leaves
    fallen: list[Srv]  # decode instances serving whole requests while no prefill instance is up

    @property
    def pending_handoff(self) -> list[tuple[Srv, int]]:
        """Prefilled prompts waiting for decode memory."""

    @property
    def issued(self) -> int:
        """Requests sent so far."""

    @property
    def ended(self) -> int:
        """Requests closed so far."""

    def servers_of(self, role: str) -> list[Srv]:
        """Live servers currently in a role."""

    def lost(self, rid: int, policy: str | None = None) -> None:
        """A request's instance was lost: retry it from the start or fail it."""

    def service_lost(self) -> None:
        """A role lost capacity: end at once what nothing can serve any more."""

    def retry_handoffs(self) -> None:
        """Try the parked prefill-to-decode hand-offs again."""

    def link_down(self, pool: int, reject: bool, forever: bool) -> None:
        """A pool's KV link goes down: its hand-offs fail (`reject`, or `forever`) or wait."""

    def link_up(self, pool: int, reject: bool) -> None:
        """A pool's KV link is back (from a fault that went down with `reject`)."""

    def strand_handoffs(self) -> list[int]:
        """Forget the parked hand-offs whose prefill instance is down; return their requests."""


class Clock(simpy.Environment):
    """simpy's environment with a cheaper path for the simulator's own timed calls.

    Processes (faults, elastic role switches) and their events run as in simpy. The state
    machines' timed calls go on the same queue, in the order a Timeout would take (its time,
    normal priority, the next event id), but as a bare function and its arguments, in the entry
    itself, that `run_all` calls directly: no Event object and no callback list for most of a run's
    events. Every entry is (time, priority, id, function or event, arguments or None), simpy's
    events too (`schedule`), so `run_all`, not simpy's `step` or `run`, runs the queue.

    The state machines read the time at nearly every step, so `now` is a plain attribute here
    rather than simpy's property; simpy's own `_now` is an alias of it.
    """

    now: float = 0.0
    calls = 0  # timed calls scheduled so far (`after`): a run's count of events

    def __init__(self) -> None:
        super().__init__()
        self._soon: deque[tuple[int, Any, tuple[Any, ...]]] = deque()  # calls due now (`after`)
        self._soon_add = self._soon.append  # (bound once: compiled, a deque's method is called by name)
        # simpy's queue (the same list) and its event ids (for `next(self._eid)`, which only
        # `schedule` read), as this class's own attributes: compiled, read without a lookup by name
        self._heap: list[Any] = self._queue
        self._ids = 0

    @property
    def _now(self) -> float:
        return self.now

    @_now.setter
    def _now(self, value: float) -> None:
        self.now = value

    def after(self, delay: float, fn: Any, *args: Any) -> None:
        """Call `fn(*args)` after `delay` seconds (at once if `delay` is not positive)."""
        self.calls += 1
        eid = self._ids
        self._ids = eid + 1
        if delay > 0.0:
            _push(self._heap, (self.now + delay, _NORMAL, eid, fn, args))
        else:  # due now: in the order the queue would take it, without the heap (`run_all`)
            self._soon_add((eid, fn, args))

    def schedule(
        self, event: simpy.Event, priority: simpy.events.EventPriority = _NORMAL, delay: float = 0
    ) -> None:
        """simpy's `schedule`, its entry in the queue shaped as `after`'s (no arguments: an event)."""
        eid = self._ids
        self._ids = eid + 1
        _push(self._heap, (self.now + delay, priority, eid, event, None))

    def call_later(self, delay: float, fn: Any, args: tuple[Any, ...]) -> None:
        """`after`, with the arguments as one tuple."""
        self.after(delay, fn, *args)

    def run_all(self) -> None:
        """Process every scheduled event (simpy's `run()` without `until`).

        A call due now (`after` with no delay: an instance forming its next batch, a fifth of a
        run's events) waits in `_soon`, first in first out, rather than in the heap; it runs
        where the heap would have put it: after every queued event of an earlier time, or of the
        same time with a higher priority or an earlier id, and before all others.
        """
        queue = self._heap
        soon = self._soon
        pop, first = heapq.heappop, soon.popleft
        args: tuple[Any, ...] | None  # None for a simpy event (typed so: mypyc checks the type it infers)
        while queue or soon:
            if soon:
                head = queue[0] if queue else None
                # (`(head[1], head[2]) > (_NORMAL, soon[0][0])`, without building the two tuples)
                if (
                    head is None
                    or head[0] != self.now
                    or head[1] > _NORMAL
                    or (head[1] == _NORMAL and head[2] > soon[0][0])
                ):
                    _, fn, args = first()
                    fn(*args)
                    continue
            self.now, _, _, event, args = pop(queue)
            if args is not None:  # a timed call (`after`)
                event(*args)
                continue
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                raise event._value


class ScalingHost(DisruptionHost[Srv], Protocol[Srv]):
    """The simulation as the autoscalers see it: a disruption host whose iterations can be read back
    (`segments`)."""

    def arrived(self, now: float) -> int:
        """Requests sent by `now` (the autoscalers' demand)."""
