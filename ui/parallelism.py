"""The Strategy page's parallelism widgets: each pool's split over its chips, speculative decoding, experts.

Per pool, `split_widgets` offers tensor parallelism, pipeline stages, attention data parallelism
and, for a MoE model, expert parallelism (only the degrees that divide tp x dp), then says what
the split gives (chips per instance, weights per chip, KV capacity, from
`engine.explain.previews.pool_memory`). A split the engine refuses (ep no longer dividing tp x dp,
weights that no longer fit) snaps back and its reason stays under the pool's widgets until
something changes. `speculative_form` switches speculative decoding on and off and edits it;
`experts_form` edits the expert imbalance of expert-parallel pools.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from engine.catalog import Catalog
from engine.core import MAX_PP, MAX_TP
from engine.costmodel import Speculation
from engine.explain import PoolMemory, default_speculation, draft_models
from engine.scenario import Pool, Scenario, Speculative
from ui import state
from ui.bound import bound, current, key_of, local_problem, number, select
from ui.text import plain

TP_CHOICES = [1, 2, 4, 8, 16, 32, 64]
PP_CHOICES = [p for p in (1, 2, 4, 8, 16) if p <= MAX_PP]
DP_CHOICES = [1, 2, 4, 8, 16, 32, 64]
"""Attention data-parallel ranks offered: powers of two while tp x dp stays within MAX_TP chips a stage."""
SPEC = "deployment.speculative"
METHODS = {"mtp": "MTP head (multi-token prediction)", "draft": "Small draft model"}
IMBALANCE_HELP = (
    "Tokens routed to the busiest expert-parallel rank over the mean. Each MoE layer waits for that rank, so "
    "1.0 is a perfectly balanced router and 2.0 doubles the expert time. 1.4, the default, is the middle of the "
    "1.2-1.8 range reported for real workloads without expert replication."
)


def ep_choices(stage_chips: int, experts: int) -> list[int]:
    """Expert-parallel degrees a pool may take: divisors of its tp x dp, at most the model's experts."""
    return [e for e in range(1, stage_chips + 1) if stage_chips % e == 0 and e <= max(experts, 1)]


def tokens(n: int) -> str:
    """A token count in a sentence: 9.74M, 512k, 4,096."""
    if n >= 1_000_000:
        return f"{n / 1e6:,.3g}M"
    return f"{n / 1e3:.3g}k" if n >= 10_000 else f"{n:,}"


def gib(value_gb: float) -> str:
    """Gigabytes (10^9 bytes, as the engine reports them) in a sentence in GiB, the catalog's unit for
    a chip's memory: '72.0 GiB usable (0.9 of 80 GiB)' adds up where '77.3 GB usable (0.9 of 80 GiB)'
    read as two units (a review). One decimal, three significant figures below 1 GiB (an SRAM chip's
    0.19 GiB usable read '0.2', beside weights and activations of '0.1' each)."""
    value = value_gb * 1e9 / 2**30
    return f"{value:,.1f} GiB" if value >= 1.0 else f"{value:.3g} GiB"


def memory_text(m: PoolMemory) -> str:
    """What one chip of a pool holds, and the instance's KV cache."""
    kv = f"KV cache {tokens(m.kv_capacity_tokens)} tokens per instance"
    if m.dp > 1:
        kv += f" ({tokens(m.kv_tokens_per_rank)} per DP rank)"
    heaviest = m.heaviest_stage_gb_per_chip
    stage = f" on average ({gib(heaviest)} on the most loaded stage's chips)" if heaviest else ""
    return (
        f"{m.layout}: {m.chips_per_instance} chip{'' if m.chips_per_instance == 1 else 's'} per instance; weights "
        f"{gib(m.weights_gb_per_chip)}{stage} and activations {gib(m.activations_gb_per_chip)} per chip of "
        f"{gib(m.usable_gb_per_chip)} usable ({m.mem_fraction:g} of {m.chip_memory_gib:,.4g} GiB); {kv}."
    )


def split_widgets(
    index: int, pool: Pool, experts: int, memory: PoolMemory | None, eps: list[int] | None = None
) -> None:
    """TP, PP, DP and (for a MoE model, `experts` > 0) EP of one pool, what they give, and why a split was refused."""
    path = f"deployment.pools[{index}]"
    slot = f"split:{index}"  # a refused split is said under these widgets
    # a MoE pool's four two to a row: a pool card is a third of the page, and four boxes abreast clipped
    # "16" to "1"; a dense pool's three in one row (two to a row left DP alone on a line of its own)
    cols = [*st.columns(2), *st.columns(2)] if experts else st.columns(3)
    with cols[0]:
        select(f"{path}.tp", TP_CHOICES, "TP", slot=slot)
    with cols[1]:
        select(f"{path}.pp", PP_CHOICES, "PP", slot=slot)
    with cols[2]:
        select(f"{path}.dp", [d for d in DP_CHOICES if pool.tp * d <= MAX_TP], "DP", slot=slot)
    if experts:
        with cols[3]:
            select(
                f"{path}.ep",
                ep_choices(pool.tp * pool.dp, experts) if eps is None else eps,
                "EP",
                slot=slot,
                help="Expert-parallel ranks: the routed experts spread over them. Offered: the degrees that divide "
                "tp x dp and that this pool's chips hold (with fewer, each group keeps a whole copy of the experts).",
            )
    problem = local_problem(slot)
    if problem:
        st.warning(plain(problem), icon=":material/block:")
    if memory is not None:
        st.caption(plain(memory_text(memory)))


def _method_changed(key: str, draft: str | None) -> None:
    """A new method starts from its own defaults (tokens and acceptance unset)."""
    method = st.session_state[key]
    value: dict[str, Any] = {"method": method}
    if method == "draft":
        value["draft_model"] = current(f"{SPEC}.draft_model") or draft
    state.override({SPEC: value}, what="Speculative decoding method")


def speculative_form(sc: Scenario, cat: Catalog) -> None:
    """Speculative decoding: off, or a method with its drafted tokens, acceptance and draft model."""
    st.markdown("**Speculative decoding**", help=(Speculative.__doc__ or "").strip())
    start = default_speculation(cat, sc.model.id) if sc.model.id in cat.models else {"method": "mtp"}
    bound(
        st.toggle, SPEC, "Speculate on decode steps",
        to_ui=lambda v: v is not None, from_ui=lambda on: start if on else None,
        help="Off by default. On, every decode step verifies drafted tokens in one pass of the model and keeps "
        "those accepted, so a step yields more than one token. It starts with "
        + (f"{start['draft_model']} drafting" if start["method"] == "draft" else "an MTP head") + ".",
    )  # fmt: skip
    spec = sc.deployment.speculative
    if spec is None:
        st.caption("Each decode step yields one token.")
        return
    drafts = draft_models(cat, sc.model.id) if sc.model.id in cat.models else []
    methods = [m for m in METHODS if m != "draft" or drafts or spec.method == "draft"]
    key = key_of(f"{SPEC}.method")
    if st.session_state.get(key) != spec.method:
        st.session_state[key] = spec.method
    k, a = spec.resolved()
    default_k, default_a = Speculative.DEFAULTS[spec.method]
    top = st.columns(2) if spec.method == "draft" else [st.container()]
    top[0].selectbox(
        "Method", methods, key=key, format_func=METHODS.__getitem__, on_change=_method_changed,
        args=(key, drafts[0] if drafts else None),
        help="An MTP head (multi-token prediction, as DeepSeek-V3 ships) drafts each token for about one layer's "
        "worth of a target step; a draft model (a small model of the same family) runs its own decode steps on "
        "the same chips. Changing the method goes back to its default tokens and acceptance.",
    )  # fmt: skip
    if spec.method == "draft":
        with top[1]:
            select(f"{SPEC}.draft_model", drafts, "Draft model",
                   help="The catalog model that drafts, on the same chips as the served model: models at most a "
                   "quarter of its size, its own family first.")  # fmt: skip
    c1, c2 = st.columns(2)
    with c1:
        number(f"{SPEC}.tokens", "Drafted tokens", integer=True, lo=1, hi=16, optional=True,
               placeholder=f"{default_k} (default)",
               help="Tokens drafted per step, verified together with the next one. Empty: the method's default "
               f"({Speculative.DEFAULTS['mtp'][0]} for MTP, {Speculative.DEFAULTS['draft'][0]} for a draft model).")  # fmt: skip
    with c2:
        number(f"{SPEC}.acceptance", "Acceptance", lo=0.0, hi=1.0, step=0.01, optional=True,
               placeholder=f"{default_a:.2f} (default)",
               help="Chance that each drafted token is accepted (given the ones before it were). Empty: the method's "
               f"default ({Speculative.DEFAULTS['mtp'][1]:.0%} for MTP, per DeepSeek-V3's report; "
               f"{Speculative.DEFAULTS['draft'][1]:.0%} for a draft model, the middle of Leviathan et al.'s range).")  # fmt: skip
    per_step = Speculation(k, a).tokens_per_step
    st.caption(
        plain(
            f"Each decode step drafts {k} token{'' if k == 1 else 's'} and yields {per_step:.2f} on average "
            f"((1 − a^(k+1)) / (1 − a) at a = {a:.2f}). Prefill pools, and decode steps that share an "
            "iteration with prompt chunks, run without it."
        )
    )


def experts_form(sc: Scenario) -> None:
    """The expert imbalance of a MoE model's expert-parallel pools."""
    st.markdown("**Experts** (mixture of experts)", help=IMBALANCE_HELP)
    number("deployment.expert_imbalance", "Expert imbalance", lo=1.0, hi=64.0, step=0.1, help=IMBALANCE_HELP)
    spread = [p.name for p in sc.deployment.pools if p.ep > 1]
    st.caption(
        plain(
            f"Applies to the pools with EP above 1: {', '.join(spread)}."
            if spread
            else "Applies to pools with EP above 1; none has it now (their experts are split by tensor parallelism)."
        )
    )
