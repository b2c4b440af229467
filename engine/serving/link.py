"""The KV link between prefill and decode pools: how long a hand-off's transfer takes.

A prefilled prompt's KV cache crosses the link from the prefill instance to the decode instance
the router chose. The link's bandwidth is the scenario's (or, unset, the sending instance's
scale-out bandwidth across its chips), scaled by any link fault on the sending pool
(`link_factor`), and never above a shared fabric that every hand-off also crosses. A transfer
may overlap the prefill layer by layer (`exposed_transfer_time`); each sender's NIC sends one
transfer at a time, and the shared fabric's capacity is spent in arrival order (a fluid FIFO
queue), so a transfer can start late behind others. A link that is down (a link fault with
`link_factor = 0`) sends nothing: hand-offs wait for it or fail, per the fault (`refusal`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.costmodel.iteration import exposed_transfer_s, kv_transfer_s
from engine.serving.ledger import LINK_DOWN

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved
    from engine.serving.instance import Server


class KvLink:
    """The link's settings and state: per-pool fault factors and when the shared fabric is free."""

    def __init__(self, resolved: Resolved) -> None:
        link = resolved.scenario.deployment.link
        self.latency_s = link.latency_ms / 1000.0
        self.overlap = link.overlap
        self.gb_s = link.bandwidth_gb_s
        self.factor: list[float] = [1.0] * len(resolved.pools)  # link faults degrade a pool's link
        # per pool: link faults that have it down now, and whether a hand-off then fails or waits
        self.down: list[int] = [0] * len(resolved.pools)
        self.rejects: list[int] = [0] * len(resolved.pools)  # of `down`, those whose hand-offs fail
        self.forever: list[bool] = [False] * len(resolved.pools)  # down for good
        # a fabric every hand-off also crosses, and when it is next free (FIFO)
        self.shared_bytes_s = link.shared_gb_s * 1e9 if link.shared_gb_s else 0.0
        self.shared_free_s = 0.0
        # per pool, read at every hand-off (settings' attributes are lookups by name, compiled or not):
        # its instances' own scale-out bandwidth across their chips, GB/s, and the model's layers
        self.own_gb_s: list[float] = [0.0] * len(resolved.pools)
        self.layers: list[int] = [0] * len(resolved.pools)
        for p in resolved.pools:
            self.own_gb_s[p.index] = p.hardware.scale_out_gb_s * p.instance.tp
            self.layers[p.index] = p.instance.model.layers
        # per sending server (by its index), the hand-offs of the prompts one iteration finished: when
        # they were sent, their tokens and bytes so far, the bytes a token all of them carry (-1.0 once
        # receivers of different copies mix), and when its NIC was free before them (`send`)
        self.group_at: dict[int, float] = {}
        self.group_tokens: dict[int, float] = {}
        self.group_bytes: dict[int, float] = {}
        self.group_kvb: dict[int, float] = {}
        self.group_free: dict[int, float] = {}

    def take_down(self, pool: int, reject: bool, forever: bool) -> None:
        """A link fault takes the pool's link down (faults may overlap)."""
        self.down[pool] += 1
        self.rejects[pool] += int(reject)
        self.forever[pool] = self.forever[pool] or forever

    def bring_up(self, pool: int, reject: bool) -> None:
        """A link fault that took the pool's link down ends."""
        self.down[pool] -= 1
        self.rejects[pool] -= int(reject)

    def refusal(self, srv: Server) -> str:
        """Why a hand-off from `srv` fails now ('' when it may be sent, or may wait for the link)."""
        pool = srv.pool_index
        return LINK_DOWN if self.down[pool] and (self.rejects[pool] or self.forever[pool]) else ""

    def send(
        self, srv: Server, tokens: float, kvb: float, now: float, prefill_s: float, fresh: bool = True
    ) -> tuple[float, float]:
        """Send `tokens` of KV from `srv` now, `kvb` bytes a token (the receiving instance's
        `Server.kv_bytes`: each of its ranks pulls the heads it holds, MLA's latent whole on every
        rank): (when the transfer ends, how long it waited for the sender's NIC and the shared fabric).

        `prefill_s` is how long the prompt's prefill took (the part a layer-by-layer transfer can
        hide behind). The sender's NIC is busy until the end. The wait is counted from when the
        transfer would have started on a free link (`now` less its hidden part), so a transfer
        whose hidden part the NIC's backlog ate waited for it too.

        With overlap, the prompts one iteration finished stream their layers as the iteration makes
        them, through the one NIC together: each hand-off of the group ends when the group's tokens so
        far have crossed, hidden behind the prefill as one transfer of them would be. Sent one after
        the other from the iteration's end, only the first hid behind it, and each later one paid its
        whole wire time after it (a review: three 2,048-token prompts over 5 GB/s, 67 ms each, the
        third's TTFT 135 ms late with the link 27% busy). Behind a shared fabric they go one by one.
        """
        pool = srv.pool_index
        bw = (self.gb_s or self.own_gb_s[pool]) * self.factor[pool]
        if self.shared_bytes_s:  # no faster than the shared fabric either
            bw = min(bw, self.shared_bytes_s / 1e9)
        free = srv.nic_free_s
        sent = tokens
        mixed = False  # a group whose receivers hold different copies (decode pools of other TPs)
        if self.overlap and fresh and not self.shared_bytes_s:  # (a parked hand-off goes alone)
            i = srv.idx
            if self.group_at.get(i, -1.0) != now:  # the first hand-off of this iteration's prompts
                self.group_at[i] = now
                self.group_tokens[i] = 0.0
                self.group_bytes[i] = 0.0
                self.group_kvb[i] = kvb
                self.group_free[i] = free
            sent = self.group_tokens[i] + tokens
            self.group_tokens[i] = sent
            self.group_bytes[i] += kvb * tokens
            if self.group_kvb[i] != kvb:
                self.group_kvb[i] = -1.0
            mixed = self.group_kvb[i] < 0.0
            free = self.group_free[i]
        if mixed:
            # the group's bytes as each receiver pulls them (priced at this one's, a TP4 decode pool's
            # prompts crossed at a TP8 one's copies: a review)
            full = kv_transfer_s(1.0, self.group_bytes[srv.idx], bw, self.latency_s)
        else:
            full = kv_transfer_s(kvb, sent, bw, self.latency_s)
        exposed = exposed_transfer_s(full, prefill_s, self.layers[pool], self.overlap, self.latency_s)
        # (two-value max written out: the builtin parses its arguments as keywords on Python 3.11,
        # about 700 instructions a call, and this runs every hand-off)
        ideal = start = now - (full - exposed)
        start = free if free > start else start
        if self.shared_bytes_s:
            # the fabric's capacity is spent in arrival order: each transfer uses its bytes' worth
            # of fabric time, and starts late by the backlog others left (a fluid FIFO queue)
            start = max(start, self.shared_free_s)
            self.shared_free_s = start + kvb * tokens / self.shared_bytes_s
        end = start + full
        end = now if now > end else end
        if sent != tokens and srv.nic_free_s > end:  # never before the group's earlier prompts (FIFO)
            end = srv.nic_free_s
        srv.nic_free_s = end
        if sent == tokens:
            return end, start - ideal
        # behind the group's earlier prompts' last layers too: what this one's bytes add is its own
        # exposed time (the link's part of the bill counts that, `breakdowns`), the rest is waiting
        own = exposed_transfer_s(
            kv_transfer_s(kvb, tokens, bw, self.latency_s),
            prefill_s,
            self.layers[pool],
            self.overlap,
            self.latency_s,
        )
        return end, end - now - own
