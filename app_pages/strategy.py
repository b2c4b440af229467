"""Disaggregation strategy: pools and their parallelism, KV link, batching, speculative decoding,
cache tiers, scheduling policies, failure drills."""

import streamlit as st

from engine.calibration import calibration, level_choice, level_effect
from engine.core import MAX_POOLS, ScenarioError
from engine.costmodel import MATURITIES, SERVING_STACKS, STACK_NAMES
from engine.explain import (
    chip_options,
    fitting_eps,
    pool_marks,
    pool_memory,
    pool_summary,
    removal_effects,
    with_edge_site,
    with_mode,
    with_pool_added,
    with_pool_removed,
    without_edge_site,
)
from engine.scenario import (
    Batching,
    Cache,
    Deployment,
    Edge,
    KvLink,
    Pool,
    RequestClass,
    Scenario,
    Scheduler,
    preset_names,
    scenario_catalog,
    vendor_crossing_note,
)
from ui import faults, layout, marks, state
from ui.autoscale import pool_autoscale
from ui.bound import bound, current, key_of, names, number, select, slider, toggle
from ui.forms import defaulted_form, model_form, per_chip
from ui.parallelism import ep_choices, experts_form, speculative_form, split_widgets
from ui.shapes import field_shape
from ui.text import plain

# a pool's most instances, as the scenario allows (the Instances slider ends at 32; the box beside it goes on)
COUNT_HI = field_shape(Pool, "count").hi

POWER_HELP = (
    "The site's power cap is the total its data-centre pools' chips may draw: a pool with a cap of its own "
    "keeps it, and the other pools share the rest, each chip held to the same share of its TDP (a power "
    "limit, as nvidia-smi -pl sets); an edge site has its own budget. Empty: no site cap."
)
POOL_FIELDS = {
    "name",
    "role",
    "hardware",
    "tp",
    "pp",
    "dp",
    "ep",
    "count",
    "profile",
    "maturity",
    "sends_to",
    "tier",
    "autoscale",
}
SHOWN = {
    "name",
    "description",
    "lesson",
    "counterpart",
    "version",
    "seed",
    "duration_s",
    "warmup_s",
    "resolution_s",
    "cost",
    "model",
    "workload",
    "deployment",
    "cache",
    "scheduler",
    "faults",
    "custom_hardware",
    "custom_models",
}

layout.page(
    "Disaggregation strategy",
    "How the work is split across chips, how requests are scheduled, and what breaks.",
)
sc = state.scenario()
cat = scenario_catalog(sc)
stack = STACK_NAMES[sc.deployment.stack]
calibrations = {m.pool: m.calibration for m in pool_marks(sc)}  # the profile each pool runs with, and why
moe = cat.models[sc.model.id].moe if sc.model.id in cat.models else None
try:  # the session's scenario always resolves; say so rather than fail if it ever does not
    memory = {m.pool: m for m in pool_memory(sc)}
except ScenarioError as exc:
    memory = {}
    st.error(plain(exc), icon=":material/error:")


def mode_changed() -> None:
    """Switch between colocated and disaggregated pools, keeping the chips (`with_mode`): the split
    the user had comes back with the switch back, and a split made anew is said."""
    now, mode, before = (
        state.scenario(),
        st.session_state["fg:mode"],
        st.session_state.get(state.SPLIT_BEFORE),
    )
    try:
        new = with_mode(now, mode, before)
    except (ScenarioError, ValueError) as exc:
        state.notify(f"deployment.mode: not switched: {exc}")
        return
    if not state.commit(new, "mode"):
        return
    # the deployment before every switch, either way: the switch back restores it (`with_mode`), two chips'
    # split and pinned classes' pools included (they came back split or kept anew: a browser review)
    st.session_state[state.SPLIT_BEFORE] = now
    back = before is not None and new.deployment.pools == before.deployment.pools
    if mode == "colocated":
        if back:  # said, replacing the disaggregated notice, which stood under a colocated deployment
            state.notify("Colocated: the pools you had.", kind="info", key="mode")
            return
        state.dismiss("mode")
        if gone := len(now.faults) - len(new.faults):  # they come back with the split
            them = "it" if gone == 1 else "them"
            state.notify(
                f"Colocated: {_faults(gone)} of the split pools set aside; switching back to disaggregated with "
                f"the same chips restores {them}.",
                kind="info",
                key="mode",
            )
        return
    counts = ", ".join(f"{p.name} {p.count}" for p in new.deployment.pools if p.tier != "edge")
    there = {p.name for p in new.deployment.pools}
    dropped = sum(1 for f in now.faults if f.pool not in there)  # its pool gone
    said = [f"Disaggregated: {counts} instances"]
    said += (
        [f"the split you had{f', with its {_faults(len(new.faults))}' if new.faults else ''}"]
        if back
        else ["set each pool's count below"]
    )
    said += [f"{_faults(dropped)} of the colocated pool dropped (its pool is gone)"] if dropped else []
    state.notify("; ".join(said) + ".", kind="info", key="mode")


def _faults(n: int) -> str:
    return f"{n} fault{'' if n == 1 else 's'}"


def hardware_changed(path: str, key: str) -> None:
    """A pool's chip changed: its calibration profile goes back to the serving stack's rule."""
    state.override({f"{path}.hardware": st.session_state[key], f"{path}.profile": None})


if st.session_state.get("fg:mode") != sc.deployment.mode:
    st.session_state["fg:mode"] = sc.deployment.mode
# a row that wraps: in a narrow window the stack goes under the deployment rather than clipping it
top = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
top.segmented_control(
    "Deployment",
    ["colocated", "disaggregated"],
    key="fg:mode",
    on_change=mode_changed,
    required=True,
    format_func={
        "colocated": "Colocated: one pool does both",
        "disaggregated": "Disaggregated: prefill and decode pools",
    }.get,
    help="Colocated instances run prefill and decode in the same iterations (chunked prefill). Disaggregated ones "
    "specialise; each prompt's KV cache crosses the link to a decode instance.",
)
with top.container(width=260):
    select(
        "deployment.stack",
        list(SERVING_STACKS),
        "Serving stack",
        format_func=lambda s: STACK_NAMES.get(s, s),
        help=f"The serving software every instance runs ({', '.join(STACK_NAMES[s] for s in SERVING_STACKS)}). It picks each chip's calibration "
        "profile (the one fitted to that chip under this stack, or one chosen by a rule and marked uncalibrated) and the "
        "defaults of batching and KV-cache precision that you do not set yourself.",
    )


def pool_added(role: str) -> None:
    if state.commit(with_pool_added(state.scenario(), role), "add a pool"):
        state.dismiss("mode")  # 'prefill 3, decode 3 instances; the split you had' stood over three pools


def pool_removed(index: int) -> None:
    sc = state.scenario()
    effects = removal_effects(sc, index)
    try:
        done = state.commit(with_pool_removed(sc, index), "remove a pool")
    except (ScenarioError, ValueError) as exc:
        state.notify(str(exc))
        return
    if done:
        state.dismiss("mode")  # the switch's notice counted the pools before this
    if done and effects:
        state.notify(
            f"Removed pool {sc.deployment.pools[index].name} and with it: {', '.join(effects)}.", kind="info"
        )


def edge_site(add: bool) -> None:
    try:
        state.commit(
            with_edge_site(state.scenario()) if add else without_edge_site(state.scenario()), "edge site"
        )
    except (ScenarioError, ValueError) as exc:
        state.notify(f"deployment.edge: {exc}")


chips = chip_options(cat)


def maturity_select(pool: Pool, path: str) -> None:
    """The pool's software maturity: short options with their effect, and under them what the chosen
    level does to this pool's numbers (`engine.calibration.level_effect`)."""
    select(
        f"{path}.maturity",
        [None, *MATURITIES],
        "Software maturity",
        format_func=level_choice,
        help=f"How mature {stack} is on this chip. As calibrated: no change, the chip's own calibration rule. "
        "Measured: you assert a mature stack with a measured profile; the numbers stay as calibrated, no porting "
        "cost. Vendor: compute x0.8, bandwidth x0.85, overhead x1.5, band x1.25 each side, 6 engineer-months of "
        "porting. Port: x0.5, x0.6, x2, band x1.5, 24 engineer-months. Porting is billed in own mode (SLO "
        "page's cost basis); docs/calibration.md, Software maturity.",
    )
    if pool.hardware not in cat.hardware:
        return
    hw, custom = cat.hardware[pool.hardware], any(h.id == pool.hardware for h in sc.custom_hardware)
    prof, cal = calibration(hw, sc.deployment.stack, cat, pool.profile, moe=moe is not None, custom=custom)
    st.caption(plain(level_effect(prof, cal, pool.maturity, stack, sc.cost.usd_per_engineer_month)))


def pool_editor(i: int, pool: Pool, path: str) -> None:
    """One pool's chip, profile, count and autoscaling, parallelism and hand-off routes."""
    st.caption(plain(pool_summary(pool, cat, sc.cost)))
    if pool.name in calibrations:
        marks.pool_mark(calibrations[pool.name])
    key = f"fg:{path}.hardware"
    if st.session_state.get(key) != pool.hardware:
        st.session_state[key] = pool.hardware
    st.selectbox(
        "Chip",
        chips if pool.hardware in chips else [*chips, pool.hardware],
        key=key,
        on_change=hardware_changed,
        args=(path, key),
        format_func=lambda c: f"{c} · {cat.hardware[c].name.split(' (')[0]}" if c in cat.hardware else c,
        help="Catalog chips and the scenario's custom ones, by id and name without its parenthesis "
        "(the whole name and the specs: Hardware catalog page).",
    )
    profiles = sorted(cat.hardware[pool.hardware].profiles) if pool.hardware in cat.hardware else []
    select(
        f"{path}.profile",
        [None, *profiles],
        "Calibration profile",
        format_func=lambda p: f"automatic ({stack})" if p is None else str(p),
        key=f"{key_of(f'{path}.profile')}:{stack}",  # its first label names the stack (`select`)
        help=f"Achievable fractions (compute: of the BF16 peak; bandwidth: of HBM) fitted to a serving stack (see About & validation). Automatic: "
        f"the profile fitted to this chip under {stack}, else one borrowed from the same silicon, another "
        "stack or a conservative transfer, and then marked uncalibrated. A named profile is used as it is.",
    )
    maturity_select(pool, path)
    scaled = pool.autoscale is not None  # then the count is the most the autoscaler may start
    what = "Max instances" if scaled else "Instances"
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        slider(
            f"{path}.count",
            1,
            32,
            what,
            integer=True,
            help="The most instances the autoscaler may run (Min and Initial instances below)."
            if scaled
            else "Instances of this pool, each of the chips above.",
        )
    with right:  # past the slider's 32, as the engine allows (40 decode instances could not be set: a review)
        number(
            f"{path}.count",
            "Exact",
            key=f"{key_of(f'{path}.count')}-typed",
            integer=True,
            lo=1,
            hi=COUNT_HI,
            what=what,
            help=f"Any count from 1 to {COUNT_HI:g}, typed.",
        )
    mem = memory.get(pool.name)  # the count above is its most; its weights set the cold start's load
    pool_autoscale(pool, path, mem.weights_gb_per_chip * mem.chips_per_instance if mem else None)
    eps = fitting_eps(sc, i, ep_choices(pool.tp * pool.dp, moe.experts)) if moe else None  # the ones it holds
    split_widgets(i, pool, moe.experts if moe else 0, memory.get(pool.name), eps)
    extra = [n for n in Pool.model_fields if n not in POOL_FIELDS]
    if extra:  # a lone field the pool's width (in half of it a cap of 12.25 kW read '12.': a browser review)
        model_form(path, Pool, only=extra, columns=min(2, len(extra)))
    if pool.role == "prefill" and len(decode_pools) > 1:
        names(
            f"{path}.sends_to",
            decode_pools,
            "Hands prompts to",
            placeholder="any decode pool",
            help="The decode pools this pool's prompts go to (none chosen: any). Pair a premium prefill pool with "
            "its own decode pool, or keep a slow link's pools apart. A class pinned to decode pools goes to its "
            "own pools where this choice shares none of them.",
        )


dc_roles = [p.role for p in sc.deployment.pools if p.tier == "datacenter"]
decode_pools = [p.name for p in sc.deployment.pools if p.role == "decode"]
# a pool card's width in pixels: the cards wrap, as many to a row as the window holds (two at
# 1,400 px, one under 1,000), so a chip's name and the parallelism boxes are never squeezed
POOL_WIDTH = 300
with st.container(horizontal=True, gap="small"):
    for i, pool in enumerate(sc.deployment.pools):
        path = f"deployment.pools[{i}]"
        with st.container(border=True, width=POOL_WIDTH):
            head, rm = st.columns([5, 1], vertical_alignment="center")
            kind = "Edge" if pool.tier == "edge" else pool.role.capitalize()
            # not "Prefill pool prefill"
            name = "" if pool.name.lower() == kind.lower() else f" {plain(pool.name)}"
            head.markdown(f"**{kind} pool**{name}", help=(Pool.__doc__ or "").strip())
            rm.button(
                "",
                key=f"fg:rm-pool:{i}",
                on_click=pool_removed,
                args=(i,),
                icon=":material/delete:",
                disabled=pool.tier != "edge" and dc_roles.count(pool.role) < 2,
                help=f"Remove this pool and the class pins, faults and routes that name it (a deployment keeps "
                f"one {pool.role} pool at least)",
            )
            pool_editor(i, pool, path)
if len(sc.deployment.pools) >= MAX_POOLS:
    st.caption(f"{MAX_POOLS} pools: the most a deployment has (docs/bounds.md). Remove one to add another.")
else:
    add_roles = ["prefill", "decode"] if sc.deployment.mode == "disaggregated" else ["mixed"]
    row = st.container(horizontal=True, gap="small")  # each button its label's width (a quarter cut it)
    for role in add_roles:
        row.button(
            f"Add a {role} pool" if role != "mixed" else "Add a pool",
            key=f"fg:add-pool:{role}",
            on_click=pool_added,
            args=(role,),
            icon=":material/add:",
            help="Another pool of this role (a copy of the last one, one instance): several kinds of chips "
            "can share a role, and the router spreads work by their speed (or price, with cost_aware).",
        )
with st.container(border=True):  # beside the pools' caps (it stood in the Batching box: a browser review)
    st.markdown("**Power**", help=POWER_HELP)
    model_form("deployment", Deployment, only=["power_cap_kw"], columns=3)
    st.caption(POWER_HELP)
left, right = st.columns(2)
with left, st.container(border=True):
    st.markdown("**Batching**", help=(Batching.__doc__ or "").strip())
    limits = sc.batching()  # what the run uses: the values set here, else the stack's defaults
    first = sc.deployment.pools[0].hardware
    each = {p.hardware: sc.pool_batching(p) for p in sc.deployment.pools}  # as `ResolvedPool.limits`
    defaulted_form("deployment.batching", Batching, per_chip(limits.model_dump(), each), f"{stack}'s")
    st.caption(  # each pool takes the stack's defaults on its own chip
        plain(
            f"Empty fields take {stack}'s defaults on {first}: {limits.source}."
            if len(each) < 2
            # the limits each pool runs with, set fields and defaults together: "defaults" listed a
            # budget the scenario sets (a review)
            else f"Empty fields take {stack}'s defaults on each pool's chip; the pools run with "
            + "; ".join(
                f"{c}, {b.max_batch:,} sequences and {b.token_budget:,} tokens" for c, b in each.items()
            )
            + "."
        )
    )
    # (not "HBM": an SRAM chip's memory is its SRAM, a tiered one's every tier)
    slider("deployment.mem_fraction", 0.5, 0.98, "Memory usable for weights, activations + KV", step=0.01)
    extra = [
        n
        for n in Deployment.model_fields
        if n
        not in {
            "mode",
            "stack",
            "pools",
            "batching",
            "link",
            "mem_fraction",
            "speculative",
            "expert_imbalance",
            "fallback",
            "degrade",
            "edge",
            "power_cap_kw",
        }
    ]
    if extra:  # two a row: three read 'E…' for Eager mode at 1,100 px (a review)
        model_form("deployment", Deployment, only=extra, columns=2)
with right, st.container(border=True):
    st.markdown("**KV link** (prefill → decode)", help=(KvLink.__doc__ or "").strip())
    if sc.deployment.mode == "disaggregated":
        model_form("deployment.link", KvLink, columns=2)  # three read 'O…' for Overlap at 1,100 px
        # here, where the chips are picked (Results alone said it: a review)
        if crossing := vendor_crossing_note(sc):
            st.info(plain(crossing), icon=":material/swap_horiz:")
    else:
        st.caption("Colocated instances keep the KV cache where it was computed: no transfer.")
with right, st.container(border=True):
    speculative_form(sc, cat)
if moe:
    with left, st.container(border=True):
        experts_form(sc)

st.subheader("Prefix cache", help=(Cache.__doc__ or "").strip())
if sc.cache.enabled:
    model_form("cache", Cache, columns=4)
else:  # its tiers would read as in use ("Cache in HBM" on) while nothing is cached
    toggle(
        "cache.enabled",
        "Reuse cached prefixes",
        help="Reuse the KV blocks of prompts seen before (shared "
        "prefixes, earlier turns): their prefill is skipped, their KV loaded from the tier that holds them.",
    )
    st.caption(
        "Off: every prompt is prefilled in full. Turn it on to choose the tiers that hold reused blocks."
    )

st.subheader(
    "Scheduling",
    help="Routing across instances, queue order, admission control, preemption and more. "
    "Each policy's fields are its knobs; policies added to the engine appear here by themselves.",
)
model_form("scheduler", Scheduler, columns=3)

entry_pools = [
    p.name for p in sc.deployment.pools if p.role in ("mixed", "prefill") and p.tier == "datacenter"
]
if len(entry_pools) > 1 or len(decode_pools) > 1:
    st.subheader(
        "Traffic isolation", help=(RequestClass.model_fields["pools"].description or "").strip() or None
    )
    st.caption(
        "Pin a class to the pools it may enter, and to the decode pools its prompts go to (none chosen of a kind: "
        "any), and say what happens when its entry pools are full."
    )
    for i, c in enumerate(sc.workload.classes):
        path = f"workload.classes[{i}]"
        c1, c2, c3 = st.columns([3, 2, 2], vertical_alignment="bottom")
        with c1:
            names(
                f"{path}.pools",
                entry_pools + decode_pools,
                f"{c.name}: pools",
                placeholder="any pool",
                help="The entry pools (mixed or prefill) this class's requests may enter and the decode pools "
                "its prompts are handed to; none chosen of a kind: any.",
            )
        with c2:
            select(
                f"{path}.overflow",
                ["wait", "spill", "reject"],
                "When they are full",
                help="Wait for the class's pools, spill to the others, or reject with reason isolation_full.",
            )
        with c3:
            number(
                f"{path}.spill_queue",
                integer=True,
                lo=1,
                hi=1_000_000,
                label="Full at (waiting per instance)",
            )

faults.failure_drills(sc)  # the faults, what a lost pool does, and each fallback on them (ui/faults.py)

st.subheader("Edge site", help=(Edge.__doc__ or "").strip())
if sc.deployment.edge is None:
    st.caption(
        "No edge site: every request goes to the data centre. An edge site serves what its rule allows on "
        "its own chips under a power budget and offloads the rest over the WAN."
    )
    st.button(
        "Add an edge site",
        key="fg:add-edge",
        on_click=edge_site,
        args=(True,),
        icon=":material/add:",
        help="Two edge NPUs (change the chip on the pool) and the site's default rule and 200 W budget.",
    )
else:
    with st.container(border=True):
        model_form("deployment.edge", Edge, skip=("classes",), columns=3)
        names(
            "deployment.edge.classes",
            [c.name for c in sc.workload.classes],
            "Classes served at the edge",
            placeholder="every class",
        )
        st.button(
            "Remove the edge site",
            key="fg:rm-edge",
            on_click=edge_site,
            args=(False,),
            icon=":material/delete:",
        )

others = [n for n in Scenario.model_fields if n not in SHOWN]
if others:
    st.subheader("Other settings")
    model_form("", Scenario, only=others)

with st.expander("Scenario name and description", icon=":material/edit_note:"):
    bound(st.text_input, "name", "Name", max_chars=80)
    bound(st.text_area, "description", "Description", max_chars=4000)
    bound(
        st.text_area,
        "lesson",
        "Lesson",
        max_chars=600,
        help="What the scenario demonstrates, with the figure that shows it; the Results page opens with it.",
    )
    select(
        "counterpart",
        [None, *preset_names()],
        "Counterpart preset",
        format_func=lambda p: "none" if p is None else str(p),
        help="The preset this scenario is measured against; the Results page links to Compare with it.",
    )
    st.caption(f"{len(current('custom_hardware', []) or [])} custom chip(s) in this scenario.")
