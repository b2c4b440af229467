"""Portfolios for the planner: one prefill pool, and a decode pool of its own chip for each class.

A single shape gives every class the same decode chip. When classes ask different things of
decode (chat: a tight TPOT target, short answers; batch: a loose target, long answers), each may
be cheapest on a different chip: bandwidth for the tight target, KV capacity for the loose one. A
*portfolio* (`Portfolio`) keeps one prefill kind and gives class i its own decode pool
(``decode-<class>``), the class pinned to it (`workload.classes[i].pools`, docs/scheduling.md).

Sizing per class: the class's own requests (`class_demand`: its rate, its lengths, its targets
alone) give each kind's decode rate (`engine.planning.sizing.instance_rates`), hence the fewest
decode instances of that kind the class needs and their cost. The few cheapest kinds per class
(`decode_choices`) make the candidate portfolios (`portfolio_bounds`), each with a lower bound:
the prefill pool at its starting count plus every class's decode bound. The planner
(`engine.planning.plan`) confirms them with the simulator, cheapest bound first, growing the pool
a failure blames (`grow`): a class that misses TPOT grows its own decode pool, a missed TTFT grows
prefill (and that class's decode pool when its KV memory is half full or more).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from engine.planning.sizing import Demand, InstanceRates, Kind, Mode

DECODE_KINDS_PER_CLASS = 3
"""Decode kinds considered per class: the cheapest by lower bound."""
MAX_PORTFOLIOS = 12
"""Candidate portfolios at most (the cheapest lower bounds of every combination of kinds)."""
MAX_POOLS = 8
"""Pools a deployment may have (engine.scenario.model.Deployment): a prefill pool and 7 classes."""


@dataclass(frozen=True)
class Portfolio:
    """A disaggregated deployment without its counts: one prefill kind, a decode kind per class.

    Counts are ``(prefill, decode of class 0, decode of class 1, ...)``.
    """

    prefill: Kind
    classes: tuple[str, ...]
    decode: tuple[Kind, ...]

    @property
    def mode(self) -> Mode:
        """Always disaggregated."""
        return "disaggregated"

    def label(self) -> str:
        """``h100-sxm tp2 -> chat: h20 tp2 | batch: mi300x tp1``."""
        pools = " | ".join(f"{c}: {k.label()}" for c, k in zip(self.classes, self.decode, strict=True))
        return f"{self.prefill.label()} -> {pools}"

    def split(self, counts: Sequence[int]) -> str:
        """``3P:2D|4D``: prefill instances, then each class's decode instances in class order."""
        return f"{counts[0]}P:" + "|".join(f"{n}D" for n in counts[1:])

    def pool_names(self) -> tuple[str, ...]:
        """Each class's decode pool name: ``decode-<class>`` (``decode-<i>`` when too long)."""
        names = [f"decode-{c}" if len(c) <= 57 else f"decode-{i + 1}" for i, c in enumerate(self.classes)]
        if len(set(names)) < len(names):
            names = [f"decode-{i + 1}" for i in range(len(names))]
        return tuple(names)

    def kinds(self) -> tuple[Kind, ...]:
        """Every kind it uses, prefill first."""
        return (self.prefill, *self.decode)


@dataclass(frozen=True)
class PortfolioBound:
    """A portfolio's starting counts and their cost: a lower bound on its decode pools."""

    portfolio: Portfolio
    counts: tuple[int, ...]
    usd_per_hour: float


def class_demand(d: Demand, c: int) -> Demand:
    """The demand of class `c` alone: its share of the rate, its requests, its targets only."""
    mine = d.cls == c
    return replace(
        d,
        rate_rps=d.rate_rps * float(np.mean(mine)) if len(d.cls) else 0.0,
        prompt_tokens=d.prompt_tokens[mine],
        cached_tokens=d.cached_tokens[mine],
        output_tokens=d.output_tokens[mine],
        cls=np.zeros(int(mine.sum()), dtype=d.cls.dtype),
        ttft_target_s=(d.ttft_target_s[c],),
        tpot_target_s=(d.tpot_target_s[c],),
        percentile=(d.percentile[c],),
    )


def decode_bound(r: InstanceRates, d: Demand) -> tuple[int, float]:
    """The fewest decode instances of a kind a class's demand needs, and their cost (inf: cannot)."""
    if r.decode_problem or r.decode_tokens_per_s <= 0:
        return 0, math.inf
    n = max(1, math.ceil(d.rate_rps * d.mean_output_tokens / r.decode_tokens_per_s - 1e-9))
    return n, n * r.usd_per_hour


def decode_choices(
    rates: dict[Kind, InstanceRates], d: Demand, cap: int, per_class: int = DECODE_KINDS_PER_CLASS
) -> list[tuple[Kind, int, float]]:
    """A class's cheapest decode kinds by lower bound: (kind, instances, $/h), at most `per_class`.

    A kind that cannot decode the class (`decode_problem`) or needs more than `cap` instances is
    left out; at equal cost the simpler layout (fewer of pp, dp, ep above 1), then the name.
    """
    out = []
    for k, r in rates.items():
        n, usd = decode_bound(r, d)
        if math.isfinite(usd) and n <= cap:
            out.append((k, n, usd))
    out.sort(key=lambda x: (x[2], (x[0].pp > 1) + (x[0].dp > 1) + (x[0].ep > 1), x[0].label()))
    return out[:per_class]


def portfolio_bounds(
    prefill: Kind,
    n_prefill: int,
    prefill_usd_per_hour: float,
    classes: Sequence[str],
    choices: Sequence[Sequence[tuple[Kind, int, float]]],
    most: int = MAX_PORTFOLIOS,
) -> list[PortfolioBound]:
    """Every combination of the classes' decode choices, cheapest bound first, at most `most`.

    A combination that gives every class the same kind is left out: a single shape (one shared
    decode pool) already covers it, and sharing pools at least as well as splitting.
    """
    out = []
    for combo in itertools.product(*choices):
        kinds = tuple(k for k, _, _ in combo)
        if len(set(kinds)) < 2:
            continue
        usd = n_prefill * prefill_usd_per_hour + sum(u for _, _, u in combo)
        pf = Portfolio(prefill, tuple(classes), kinds)
        out.append(PortfolioBound(pf, (n_prefill, *(n for _, n, _ in combo)), usd))
    out.sort(key=lambda b: (b.usd_per_hour, b.portfolio.label()))
    return out[:most]


def pool_entry(
    name: str, role: str, kind: Kind, count: int, profiles: dict[str, dict[str, str]]
) -> dict[str, Any]:
    """One pool of a planned deployment as scenario data (the profile and software maturity the scenario
    gave the chip kept: `profiles` maps a chip to those pins)."""
    out: dict[str, Any] = {
        "name": name,
        "role": role,
        "hardware": kind.hardware,
        "tp": kind.tp,
        "count": count,
    }
    out |= {k: v for k, v in (("pp", kind.pp), ("dp", kind.dp), ("ep", kind.ep)) if v > 1}
    return out | profiles.get(kind.hardware, {})


def portfolio_overrides(
    pf: Portfolio, counts: Sequence[int], profiles: dict[str, dict[str, str]]
) -> dict[str, Any]:
    """Scenario overrides (paths) that deploy a portfolio: its pools and each class's decode pin."""
    names = pf.pool_names()
    pools = [pool_entry("prefill", "prefill", pf.prefill, counts[0], profiles)]
    pools += [
        pool_entry(name, "decode", k, n, profiles)
        for name, k, n in zip(names, pf.decode, counts[1:], strict=True)
    ]
    over: dict[str, Any] = {"deployment.mode": "disaggregated", "deployment.pools": pools, "faults": []}
    over |= {f"workload.classes[{i}].pools": [name] for i, name in enumerate(names)}
    return over


def grow(
    counts: tuple[int, ...], ttft_ok: Sequence[bool], tpot_ok: Sequence[bool], kv_memory: Sequence[float]
) -> list[tuple[int, ...]]:
    """The counts to try after a failed run, one pool grown in each: what the failure blames.

    Per class: a missed TPOT grows its decode pool; a missed TTFT grows prefill, and its decode
    pool too when that pool's KV memory is at least half full (finished prompts may be waiting
    for decode memory). Nothing blamed (rejections, E2E): every pool.
    """

    def more(i: int) -> tuple[int, ...]:
        return tuple(n + (j == i) for j, n in enumerate(counts))

    out: list[int] = []
    if not all(ttft_ok):
        out.append(0)
    for c, (t_ok, p_ok, kv) in enumerate(zip(ttft_ok, tpot_ok, kv_memory, strict=True)):
        if not p_ok or (not t_ok and kv >= 0.5):
            out.append(c + 1)
    return [more(i) for i in (out or range(len(counts)))]
