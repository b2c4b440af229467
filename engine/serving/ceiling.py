"""The client's ceiling on requests in flight (`Arrival.max_in_flight`).

A benchmark client run at a rate with a concurrency beside it (vLLM's ``bench serve
--request-rate R --max-concurrency C``, a gateway's in-flight limit) keeps the rate's schedule but
never has more than C requests unanswered: a request due while C are in flight waits at the client,
in the order it fell due, until one of them ends, and is sent then. The server sees it from then
on, and the benchmark times its TTFT and E2E from then (vLLM takes a request's start time once it
holds the semaphore), so the run's records do too; each request's wait at the client is kept
beside them (`Records.client_wait_s`), and the saturation test counts a held request as queued
from when it fell due (`engine.serving.saturation`): a ceiling moves a backlog to the client, it
does not remove it.

Every request the front door sends passes here (an open loop's, a session's later turns, an
offline batch's: ``--request-rate inf`` with a concurrency is C requests at a time); a slot is
freed when a request ends, however it ends (completed, rejected, failed), and passed straight to
the longest-held request, if any.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.serving.host import Clock


class ClientCeiling:
    """The slots of a ceiling of `cap` requests in flight, the requests held for one, and each
    request's wait at the client (seconds, 0 for one sent when it fell due)."""

    __slots__ = ("cap", "due", "env", "held", "in_flight", "send", "wait")

    def __init__(self, cap: int, n: int, env: Clock, send: Callable[[int], None]) -> None:
        self.cap = cap
        self.env = env
        self.send = send  # the front door's: the request goes out now (`FrontDoor.send_held`)
        self.in_flight = 0
        self.held: deque[int] = deque()
        self.due: dict[int, float] = {}  # a held request -> when it fell due
        self.wait = [0.0] * n

    def admit(self, rid: int) -> bool:
        """True: `rid` takes a slot and is sent now; False: it is held until one frees."""
        if self.in_flight < self.cap:
            self.in_flight += 1
            return True
        self.held.append(rid)
        self.due[rid] = self.env.now
        return False

    def ended(self, now: float) -> None:
        """A request ended (the ledger's "ended"): its slot goes to the longest-held request, sent at
        once as its own event (not inside the ending request's call), or is freed."""
        if self.held:
            rid = self.held.popleft()
            self.wait[rid] = now - self.due.pop(rid)
            self.env.after(0.0, self.send, rid)
        else:
            self.in_flight -= 1


def due_s(arrival: Any, wait: Any) -> Any:
    """When each request fell due at the client: sent at `arrival`, after waiting `wait` there for a
    slot (None: no ceiling, so each was sent when it fell due). Arrays or Series, element-wise."""
    return arrival if wait is None else arrival - wait


__all__ = ["ClientCeiling", "due_s"]
