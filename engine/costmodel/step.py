"""The simulator's fast path of the iteration cost: scalars in, (seconds, FLOPs, bytes) out.

`StepModel` precomputes an instance's constants once, then prices an iteration from the batch's
sums as plain floats, with the same formulas as `engine.costmodel.iteration.iteration_cost` (a test
holds them equal). A run of decode-only steps with an unchanging batch is summed in closed form
(`decode_run`): the context grows by one token a step, so the memory and compute times are
arithmetic series, and the step at which the binding side changes is solved for.
"""

from __future__ import annotations

import math
from typing import Final

from engine.catalog.specs import BYTES_PER_ELEMENT
from engine.costmodel.perf import ACTIVATION_BYTES, UNHIDDEN_FRACTION, Instance, roof, spans_machines

_NEVER: Final = 1 << 62
"""More decode steps than any run takes (`StepModel.decode_run`: the binding side never changes)."""
_Terms = tuple[float, float, float, float, float, float, float, float, float, int, bool]
"""`StepModel.decode_run`'s terms of a (batch, context sum); the step at which the binding side
changes is an int."""


class StepModel:
    """Scalar fast path of `iteration_cost` for the simulator's inner loop (same formulas).

    Precomputes the per-instance constants once; `cost` takes the batch's sums as plain floats
    and returns (seconds, FLOPs, bytes). A test holds it equal to `iteration_cost`.
    """

    __slots__ = (
        "_apf",
        "_apf_dec",
        "_absorbed",
        "_comm_lat",
        "_comm_per_tok",
        "_dense_bytes",
        "_expert_bytes",
        "_flops_s",
        "_kvb",
        "_lin",
        "_bytes_s",
        "_moe",
        "_overhead",
        "_e",
        "_k_over_e",
        "_last_batch",
        "_last_terms",
        "_batch_terms",
        "_inst",
        "_plain",
        "_draft",
        "_save",
        "_x",
        "_xc",
        "_tile",
        "_routed",
        "_scale",
        "_tiers",
        "_w_s_per_byte",
    )

    def __init__(self, inst: Instance) -> None:
        m = inst.model
        self._lin = 2.0 * m.matmul_params()
        self._apf = m.attention_flops_per_pair()
        self._apf_dec = inst.decode_attention_flops_per_pair  # a decoded token's, as its kernels run
        self._absorbed = self._apf_dec != self._apf  # MLA: decodes cost apart (else the sums as before)
        self._kvb = inst.kv_bytes_held
        self._flops_s = inst.flops_per_s
        self._save = inst.matmul_saving_s_per_flop
        self._bytes_s = inst.bytes_per_s
        self._overhead = inst.overhead_s
        self._dense_bytes = (
            float(inst.weight_bytes_read(0.0))
            if not m.moe
            else float(m.weight_bytes_read(inst.weights, 0.0, inst.attention_weights))
        )
        self._moe = m.moe is not None
        self._e = float(m.moe.experts) if m.moe else 0.0
        self._k_over_e = m.moe.experts_per_token / m.moe.experts if m.moe else 0.0
        self._expert_bytes = m.moe_layers() * m.expert_params() * BYTES_PER_ELEMENT[inst.weights]
        self._x = inst.expert_extra  # the experts' weight streaming, beyond the dense rate
        self._xc = inst.expert_compute_extra  # their math (the same unless the profile splits them)
        # grouped-GEMM work each touched expert costs beyond its tokens, over every MoE layer (FLOPs)
        self._tile = 2.0 * m.moe_layers() * m.expert_params() * inst.expert_tile if m.moe else 0.0
        self._routed = 2.0 * m.moe_layers() * m.moe.experts_per_token * m.expert_params() if m.moe else 0.0
        one = float(inst.comm_time(1.0))
        two = float(inst.comm_time(2.0))
        self._comm_per_tok = two - one
        self._comm_lat = one - self._comm_per_tok
        self._last_batch: tuple[int, float] | None = None  # decode_run's last (batch, context sum)
        # decode_run's terms of its last batch (read only once `_last_batch` is set): typed in full,
        # so that the step at which the binding side changes stays an int when compiled (mypyc)
        self._last_terms: _Terms = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, False)
        self._batch_terms: dict[int, tuple[float, ...]] = {}  # decode_run's terms of each batch size
        self._inst = inst
        self._plain = inst.plain
        spec = inst.speculation
        self._draft = StepModel(spec.draft) if spec is not None and spec.draft is not None else None
        self._scale = inst.time_scale  # the whole iteration, draft and links included
        self._tiers = inst.memory_tiers  # None: one memory, bytes over `_bytes_s`
        self._w_s_per_byte = self._tiers.weight_s_per_byte if self._tiers is not None else 0.0

    def _read_s(self, weight_bytes: float, kv_bytes: float) -> float:
        """Seconds to read an iteration's weights and KV: over the one bandwidth, or tier by tier."""
        if self._tiers is None:
            return (weight_bytes + kv_bytes) / self._bytes_s
        return float(self._tiers.read_s(weight_bytes, kv_bytes))

    # --- pipelines, expert and data parallelism, speculation (the general path) -------------
    # An instance that is not `plain` is timed here: a pass of a micro-batch through every layer
    # (attention and dense layers per data-parallel rank, experts on the busiest expert-parallel
    # rank, the all-to-all between them), pipelined over `pp` stages, with speculative decode
    # steps amortised over the tokens they yield. docs/cost-model.md states the model.

    def _tp_comm(self, tokens: float) -> float:
        inst = self._inst
        if inst.tp <= 1 or tokens <= 0:
            return 0.0
        msg = tokens * inst.model.hidden * ACTIVATION_BYTES
        ring = 2.0 * (inst.tp - 1) / inst.tp * msg / inst.allreduce_bytes_per_s()
        return 2.0 * inst.model.layers * (ring + inst.link_latency_s(reduce=True))

    def _pass(
        self, q: float, pairs: float, k: float, d: float, c_attn: float, c_kv: float, largest: float = 0.0
    ) -> tuple[float, ...]:
        """(seconds, FLOPs, bytes) of one micro-batch through every layer (no hand-off, no overhead)."""
        inst = self._inst
        tokens = q + d
        if tokens <= 0:
            return 0.0, 0.0, 0.0
        kv = self._kvb * (k + c_kv + tokens)
        t_dec, f_dec, c_rest, kv_rest = self._split_decodes(c_attn, c_kv, kv, k + tokens)
        if inst.dp == 1 and inst.ep == 1:
            flops = self._lin * tokens + self._attn(pairs, c_rest)
            wread = self.weight_bytes(tokens)
            nbytes = wread + kv
            compute = flops / self._flops_s - self._lin * tokens * self._save
            memory = self._read_s(wread, kv_rest)
            if self._x or self._xc or self._tile:
                compute, memory = self._expert_extra(tokens, compute, memory)
            t = roof(compute, memory) + t_dec + self._tp_comm(tokens)
            return t, flops + f_dec, nbytes
        m = inst.model
        dp, ep = float(inst.dp), float(inst.ep)
        wb = BYTES_PER_ELEMENT[inst.weights]
        layers_moe = float(m.moe_layers())
        k_e = float(m.moe.experts_per_token) if m.moe else 0.0
        routed_lin = self._routed  # the routed experts' matmul FLOPs per token (0 for a dense model)
        # attention and dense layers: each data-parallel rank runs its own requests, and the
        # busiest sets the layer time (the MoE layers wait for every rank): a share 1/dp of the
        # decodes and of the prompt work, or at least the largest prompt chunk's (a prompt runs on
        # one rank; `largest`, 0 when unknown)
        f_att = (self._lin - routed_lin) * tokens + self._attn(pairs, c_rest)
        busiest = dp > 1 and q > 0 and largest * dp > q
        if busiest:
            sp = min(1.0, largest / q)
            r_tok = q * sp + d / dp
            f_busy = (self._lin - routed_lin) * r_tok + self._attn(pairs * sp, c_rest / dp)
            kv_rank = self._kvb * ((k + q) * sp + ((0.0 if self._absorbed else c_kv) + d) / dp)
            c_att = f_busy / self._flops_s - (self._lin - routed_lin) * r_tok * self._save
        else:  # evenly spread
            r_tok, kv_rank = tokens / dp, kv_rest / dp
            c_att = f_att / dp / self._flops_s - (self._lin - routed_lin) * tokens / dp * self._save
        t_att = roof(c_att, self._read_s(self._dense_bytes, kv_rank)) + t_dec
        if not m.moe:
            flops, nbytes = f_att + f_dec, self._dense_bytes * dp + kv
            return t_att + self._tp_comm(r_tok), flops, nbytes
        # experts: the busiest expert-parallel rank sets the layer time
        routed = tokens * k_e
        load = min(routed, routed / ep * inst.imbalance)
        chips_ep = inst.tp * dp / ep
        per_rank = m.moe.experts / ep
        touched_rank = (
            per_rank * (1.0 - math.pow(1.0 - min(1.0, 1.0 / per_rank), load)) if per_rank > 1 else 1.0
        )
        f_rank = 2.0 * layers_moe * m.expert_params() * load + self._tile * touched_rank
        m_rank = layers_moe * touched_rank * m.expert_params() * wb
        chip_f, chip_b = self._flops_s / inst.tp, self._bytes_s / inst.tp
        c_exp = f_rank / (chips_ep * chip_f) - f_rank * self._save * inst.tp / chips_ep
        m_exp = (
            m_rank / (chips_ep * chip_b)
            if self._tiers is None
            else m_rank * self._w_s_per_byte * inst.tp / chips_ep
        )
        t_exp = self._experts_roof(c_exp, m_exp)
        a2a = 0.0
        if ep > 1:  # dispatch and combine: each token's hidden state to and from its experts' ranks
            # spread evenly over the ranks (timing the busiest rank's own traffic here, on top of an
            # all-to-all not overlapped with compute, made the MoE rows worse: docs/validation.md)
            per_chip = tokens * k_e * m.hidden * ACTIVATION_BYTES * (ep - 1.0) / ep / (dp * inst.tp)
            hw = inst.hardware
            in_domain = not spans_machines(hw, inst.ep)
            link = (
                hw.scale_up_gb_s / 2.0
                if in_domain and hw.scale_up_gb_s
                else hw.scale_out_gb_s or hw.pcie_gb_s
            )
            a2a = 2.0 * layers_moe * (per_chip / (link * 1e9) + inst.link_latency_s(inst.ep))
        touched_all = m.expected_experts_touched(tokens)
        flops = f_att + routed_lin * tokens + f_dec
        nbytes = self._dense_bytes * dp + kv + layers_moe * touched_all * m.expert_params() * wb
        return t_att + t_exp + a2a + self._tp_comm(r_tok), flops, nbytes

    def _split_decodes(
        self, c_attn: float, c_kv: float, kv: float, own_tokens: float
    ) -> tuple[float, float, float, float]:
        """MLA's absorbed decode attention as a kernel of its own, on its own roof (each data-parallel
        rank decoding its share): (its seconds, its FLOPs, the decodes' context the rest of the pass
        still attends, the KV bytes the rest still reads: the prompts' cached and every new token's,
        `own_tokens`). Standard heads: nothing apart (`kv` whole)."""
        if not self._absorbed:
            return 0.0, 0.0, c_attn, kv
        dp = self._inst.dp
        t_dec, f_dec = self._decode_attention(c_attn / dp, c_kv / dp)
        return t_dec, f_dec * dp, 0.0, self._kvb * own_tokens

    def _decode_attention(self, pairs: float, kv_tokens: float) -> tuple[float, float]:
        """(seconds, FLOPs) of MLA's absorbed decode attention over `pairs` (decoded token, cached
        token) pairs reading `kv_tokens` tokens' latent KV: a kernel of its own (FlashMLA), its math
        at the BF16 rate and its reads at the KV's, so the experts' weight streaming does not hide
        it (`Instance.decode_attention_flops_per_pair`)."""
        flops = self._apf_dec * pairs
        return roof(flops / self._flops_s, self._read_s(0.0, self._kvb * kv_tokens)), flops

    def _attn(self, pairs: float, context: float) -> float:
        """Attention FLOPs of prompt pairs and decoded tokens' context (`decode_attention_flops_per_pair`)."""
        if self._absorbed:
            return self._apf * pairs + self._apf_dec * context
        return self._apf * (pairs + context)

    def _experts_roof(self, compute: float, memory: float) -> float:
        """The busiest expert-parallel rank's expert phase at the experts' rates: its math at
        `expert_compute_extra`, its weight reads at `expert_extra` beyond the dense rates."""
        if self._xc == self._x:  # one rate for both (the same operations as before the split)
            return roof(compute, memory) * (1.0 + self._x)
        return roof(compute * (1.0 + self._xc), memory * (1.0 + self._x))

    def _pipelined(
        self,
        q: float,
        pairs: float,
        k: float,
        d: float,
        c_attn: float,
        c_kv: float,
        items: float,
        largest: float = 0.0,
    ) -> tuple[float, float, float]:
        """An iteration over `pp` stages with up to `pp` micro-batches in flight (seconds, FLOPs, bytes).

        With m micro-batches each stage works on every one of them in turn: one step of the whole
        batch takes max(m, pp) / pp passes of a micro-batch (fewer micro-batches than stages leave
        bubbles), plus the activation hand-off at each stage boundary.
        """
        inst = self._inst
        pp = inst.pp
        m = float(max(1, min(pp, int(items)))) if pp > 1 else 1.0
        t, flops, nbytes = self._pass(q / m, pairs / m, k / m, d / m, c_attn / m, c_kv / m, largest)
        t *= max(m, pp) / pp
        if pp > 1:
            msg = (q + d) / m * inst.model.hidden * ACTIVATION_BYTES
            t += (pp - 1) * (msg / inst._link_bytes_per_s(inst.chips) + inst.link_latency_s(inst.chips))
        return t, flops * m, nbytes * m

    def _decode_step(self, batch: float, context_sum: float) -> tuple[float, float, float]:
        """(seconds, FLOPs, bytes) per token of a decode step of `batch` requests (speculation amortised)."""
        spec = self._inst.speculation
        if spec is None:
            t, f, b = self._pipelined(0.0, 0.0, 0.0, batch, context_sum, context_sum, batch)
            return t + self._overhead, f, b
        kk = float(spec.tokens + 1)
        # verify: every request's k drafted tokens and the next one attend its context at once
        t, f, b = self._pipelined(0.0, 0.0, 0.0, batch * kk, context_sum * kk, context_sum, batch)
        t += self._overhead
        if self._draft is not None:  # a draft model: k decode steps of its own
            dt, df, db = self._draft.cost(0.0, 0.0, 0.0, batch, context_sum)
        else:  # an MTP head: a share of one target step per drafted token, its launches included
            dt, df, db = (
                x * spec.draft_share for x in self._pipelined(0.0, 0.0, 0.0, batch, 0.0, 0.0, batch)
            )
            dt += self._overhead * spec.draft_share
        t += spec.tokens * dt
        f += spec.tokens * df
        b += spec.tokens * db
        e = spec.tokens_per_step
        return t / e, f / e, b / e

    def _expert_extra(self, tokens: float, compute: float, memory: float) -> tuple[float, float]:
        """Compute and memory times with the routed experts' extra work (`Instance.expert_extra`)."""
        touched = self._e * (1.0 - math.pow(1.0 - self._k_over_e, tokens))
        routed = self._xc * self._routed * tokens + (1.0 + self._xc) * self._tile * touched
        extra = self._x * touched * self._expert_bytes
        return (
            compute + routed / self._flops_s - routed * self._save,
            memory + (extra / self._bytes_s if self._tiers is None else extra * self._w_s_per_byte),
        )

    @property
    def overhead_s(self) -> float:
        """Fixed overhead of one iteration."""
        return self._overhead

    def weight_bytes(self, tokens: float) -> float:
        """Weight bytes an iteration of `tokens` tokens reads."""
        if not self._moe:
            return self._dense_bytes
        touched = self._e * (1.0 - math.pow(1.0 - self._k_over_e, tokens))
        return self._dense_bytes + touched * self._expert_bytes

    def cost(
        self, q: float, pairs: float, k: float, d: float, c: float, items: int = 0, largest: float = 0.0
    ) -> tuple[float, float, float]:
        """(seconds, FLOPs, bytes) of one iteration from its sums (see `iteration_cost`).

        `items`: the requests in the iteration (prompts and decodes), which bounds how many
        micro-batches a pipeline can split it into (default: the decodes plus one prompt).
        """
        tokens = q + d
        if tokens <= 0:
            return 0.0, 0.0, 0.0
        if not self._plain:
            n = items or int(d) + (1 if q > 0 else 0)
            t, flops, nbytes = self._pipelined(q, pairs, k, d, c, c, n, largest)
            return (t + self._overhead) * self._scale, flops, nbytes
        if self._absorbed:  # MLA: the decodes' attention on a roof of its own (`_decode_attention`)
            return self._cost_absorbed(q, pairs, k, d, c)
        flops = self._lin * tokens + self._apf * (pairs + c)
        wread = self.weight_bytes(tokens)
        kv = self._kvb * (k + c + tokens)
        nbytes = wread + kv
        comm = self._comm_lat + self._comm_per_tok * tokens if self._comm_per_tok else 0.0
        compute = flops / self._flops_s - self._lin * tokens * self._save
        # `roof`, inlined: the simulator's hottest line
        memory = nbytes / self._bytes_s if self._tiers is None else self._read_s(wread, kv)
        if self._x or self._xc or self._tile:
            compute, memory = self._expert_extra(tokens, compute, memory)
        both = (
            compute + UNHIDDEN_FRACTION * memory
            if compute >= memory
            else memory + UNHIDDEN_FRACTION * compute
        )
        t = both + comm + self._overhead
        return t * self._scale, flops, nbytes

    def _cost_absorbed(
        self, q: float, pairs: float, k: float, d: float, c: float
    ) -> tuple[float, float, float]:
        """`cost` of a plain instance of an MLA model: the decodes' attention as a kernel of its own."""
        tokens = q + d
        t_dec, f_dec = self._decode_attention(c, c)
        flops = self._lin * tokens + self._apf * pairs
        wread = self.weight_bytes(tokens)
        kv = self._kvb * (k + tokens)
        comm = self._comm_lat + self._comm_per_tok * tokens if self._comm_per_tok else 0.0
        compute = flops / self._flops_s - self._lin * tokens * self._save
        memory = self._read_s(wread, kv)
        if self._x or self._xc or self._tile:
            compute, memory = self._expert_extra(tokens, compute, memory)
        t = roof(compute, memory) + t_dec + comm + self._overhead
        return t * self._scale, flops + f_dec, wread + kv + self._kvb * c

    def decode_run(self, batch: int, context_sum: float, steps: int) -> tuple[float, float, float]:
        """(seconds, FLOPs, bytes) of `steps` decode steps of an unchanging batch.

        Step i sees a context sum of ``context_sum + i * batch``; compute and memory time are
        both linear in i, so their maximum changes side at most once and each side sums in
        closed form, as does their sum (`roof` is (1 - u) * max + u * (compute + memory)). This
        is what lets the simulator jump over many tokens with one event.
        """
        if steps <= 0 or batch <= 0:
            return 0.0, 0.0, 0.0
        if not self._plain:  # per-step cost at the run's mid context (linear pieces: nearly exact)
            t, f, b = self._decode_step(float(batch), context_sum + batch * (steps - 1) / 2.0)
            return steps * t * self._scale, steps * f, steps * b
        if self._tiers is not None or self._absorbed:  # the KV's read time bends where it spills, or
            # MLA's decode attention runs on a roof of its own: the mid step, as above
            t, f, b = self.cost(0.0, 0.0, 0.0, float(batch), context_sum + batch * (steps - 1) / 2.0, batch)
            return steps * t, steps * f, steps * b
        key = (batch, context_sum)
        if key == self._last_batch:  # the simulator asks again for the same batch (cut jumps)
            f0, f1, m0, m1, a_c, b_c, a_m, b_m, fixed, split_at, compute_late = self._last_terms
        else:
            terms = self._batch_terms.get(batch)
            if terms is None:
                terms = self._batch_terms[batch] = self._decode_terms(batch)
            b, lin_b, lin_b_save, f1, weights, m1, b_c, b_m, fixed, g1 = terms
            f0 = lin_b + self._apf_dec * context_sum
            m0 = weights + self._kvb * (context_sum + b)
            a_c = f0 / self._flops_s - lin_b_save
            a_m = m0 / self._bytes_s
            if self._x or self._xc or self._tile:  # the experts' extra time: the batch's, not the context's
                a_c, a_m = self._expert_extra(b, a_c, a_m)
            # g(i) = compute - memory at step i; compute binds where g(i) >= 0. The step at which
            # the binding side changes (before any cap on the steps), and whether compute binds late.
            g0 = a_c - a_m
            if abs(g1) < 1e-18:
                split_at, compute_late = (0 if g0 >= 0 else _NEVER), True
            elif g1 > 0:  # memory binds first, compute from ceil(-g0/g1) on
                split_at, compute_late = math.ceil(-g0 / g1), True
                split_at = 0 if split_at < 0 else split_at  # max(split_at, 0), as below
            else:  # compute binds first, up to floor(-g0/g1)
                split_at, compute_late = math.floor(-g0 / g1) + 1, False
                split_at = 0 if split_at < 0 else split_at
            self._last_batch = key
            self._last_terms = (f0, f1, m0, m1, a_c, b_c, a_m, b_m, fixed, split_at, compute_late)
        # min(split_at, steps), written out: on Python 3.11 the builtins min and max parse their
        # arguments as keywords, about 700 instructions a call, and this runs every decode jump
        split = steps if steps < split_at else split_at
        # each side's steps summed in closed form: a + slope * i over lo <= i < hi is
        # n * a + slope * (lo + hi - 1) * n / 2 with n = hi - lo
        if compute_late:
            a1, s1, a2, s2 = a_m, b_m, a_c, b_c
        else:
            a1, s1, a2, s2 = a_c, b_c, a_m, b_m
        rest = steps - split
        total = (split * a1 + s1 * (split - 1) * split / 2.0 if split > 0 else 0.0) + (
            rest * a2 + s2 * (split + steps - 1) * rest / 2.0 if rest > 0 else 0.0
        )
        n = float(steps)
        tri = n * (n - 1) / 2.0
        both = n * (a_c + a_m) + (b_c + b_m) * tri
        total = (1.0 - UNHIDDEN_FRACTION) * total + UNHIDDEN_FRACTION * both
        return (total + steps * fixed) * self._scale, n * f0 + f1 * tri, n * m0 + m1 * tri

    def _decode_terms(self, batch: int) -> tuple[float, ...]:
        """decode_run's terms that depend on the batch size alone (the same operations, in the same
        order, as computing them with the context's: the results are the same to the bit)."""
        b = float(batch)
        lin_b = self._lin * b
        f1 = self._apf_dec * b
        weights = self.weight_bytes(b) if self._moe else self._dense_bytes
        m1 = self._kvb * b
        b_c, b_m = f1 / self._flops_s, m1 / self._bytes_s
        fixed = (self._comm_lat + self._comm_per_tok * b if self._comm_per_tok else 0.0) + self._overhead
        return (b, lin_b, lin_b * self._save, f1, weights, m1, b_c, b_m, fixed, b_c - b_m)

    def decode_steps_within(self, batch: int, context_sum: float, budget_s: float, cap: int) -> int:
        """The largest number of decode steps (at most `cap`) that finish within `budget_s`."""
        lo, hi = 0, cap
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.decode_run(batch, context_sum, mid)[0] <= budget_s:
                lo = mid
            else:
                hi = mid - 1
        return lo


def decode_steps_time(inst: Instance, batch: int, context_sum: float, steps: int) -> float:
    """Total seconds of `steps` consecutive decode steps of an unchanging batch."""
    return StepModel(inst).decode_run(batch, context_sum, steps)[0]


def decode_steps_within(inst: Instance, batch: int, context_sum: float, budget_s: float, cap: int) -> int:
    """The largest number of decode steps (at most `cap`) that finish within `budget_s`."""
    return StepModel(inst).decode_steps_within(batch, context_sum, budget_s, cap)
