"""What a scenario field is called on screen: its label with its unit, its help text, and how a
message writes the value it was given.

A field's label comes from its name by rule (``capacity_gb`` -> ``Capacity (GB)``: the unit suffix
becomes the unit, known acronyms are upper-cased), except where `LABELS` says otherwise; its help
is the field's own description or, failing that, `HELP`. The bound widgets (`ui.bound`) and the
generated forms (`ui.forms`) use both, so a field reads the same wherever it is drawn.
"""

from __future__ import annotations

from typing import Any

HELP: dict[str, str] = {
    "rate_rps": "Mean arrival rate over the window, in requests per second, as drawn: multi-turn sessions' later "
    "turns included, each sent only once the answer before it is back, so a slow deployment is sent fewer.",
    "share": "This class's share of the traffic; shares are normalised over the classes.",
    "priority": "Higher is more important: served first under the priority queue, shed last by admission control.",
    "ttft_ms": "Time to first token target: arrival to first output token, queueing and KV transfer included.",
    "tpot_ms": "Time per output token target: (completion − first token) / (output tokens − 1).",
    "e2e_ms": "Optional end-to-end deadline: arrival to completion.",
    "tbt_ms": "Optional target on each request's largest gap between two output tokens: a stall breaks it "
    "where the mean time per output token hides it.",
    "percentile": "The class passes when this percentile of its TTFT and of its TPOT is within target.",
    "tp": "Tensor parallelism: chips that split every layer's weights and KV cache, exchanging partial "
    "results twice a layer (all-reduce over the scale-up link). An instance is tp x dp chips per pipeline "
    "stage, times pp stages.",
    "pp": "Pipeline stages per instance: each stage holds 1/pp of the layers on its own tp x dp chips. Up to pp "
    "micro-batches are in flight, one per stage, so a full pipeline multiplies throughput; a lone request "
    "passes the stages one after another (bubbles) plus a hand-off between stages.",
    "dp": "Attention data parallelism: dp ranks of tp chips, each with its own copy of the attention and dense "
    "weights and its own requests' KV cache, so the KV cache is not replicated across tensor-parallel chips. "
    "With expert parallelism the routed experts are spread over all tp x dp chips (DeepSeek's layout).",
    "ep": "Expert parallelism (MoE models): the routed experts are spread over ep ranks, one copy per group of "
    "ep chips. Each MoE layer waits for its busiest rank (see Expert imbalance) and adds an all-to-all "
    "dispatch and combine, over the scale-up link while ep fits its domain, else the scale-out NICs. Must "
    "divide tp x dp.",
    "count": "Instances in the pool.",
    "cv": "Coefficient of variation of the gaps between arrivals: 1 is Poisson, above 1 is bursty.",
    "shape": "How the rate varies over the window; built-in shapes keep rate_rps as the mean.",
    # (it said 'over the mean': the schedule's mean is the rate above, so a factor of 2 on a diurnal
    # day peaks at 1.33 times it, not 2: a review)
    "peak_factor": "Peak rate over the lowest (ramp: end over start; peak: the middle fifth over the rest; "
    "diurnal: the peak over the trough). The rate above stays the mean over the window.",
    "max_batch": "Most requests in one running batch of an instance (of each rank, in a pool with DP ranks).",
    "token_budget": "Most tokens (prefill chunks plus decodes) in one iteration (of each rank, with DP ranks).",
    "chunked_prefill": "Split long prompts into chunks that share iterations with running decodes.",
    "chunk_tokens": "Prefill tokens per chunk when chunked prefill is on.",
    "memory_gb": "Main memory per chip as the vendor states it, which is GiB: 80 GB of HBM is 85.9 GB of 10⁹ "
    "bytes. The Strategy page's usable and weights figures are GiB too.",
    "mem_fraction": "Share of each chip's HBM (in GiB, as vendors state it) usable for weights, one forward pass "
    "of activations and the KV cache.",
    "eager": "The stack runs without CUDA/HIP graphs (vLLM's --enforce-eager): every layer of every iteration "
    'pays a kernel-launch cost, 0.075 ms (docs/calibration.md, "Eager mode").',
    "bandwidth_gb_s": "KV link bandwidth per instance pair in GB/s; empty means the sender's scale-out NICs.",
    "latency_ms": "Fixed latency of one KV transfer.",
    "overlap": "Send layer l's KV while layer l+1 computes: only the part that outlasts the prefill is exposed.",
    "enabled": "Switch this feature on.",
    "capacity_gb": "Capacity of this cache tier (per instance for host memory, in all for the pooled store).",
    "usd_per_gb_hour": "Price of cache capacity per GB-hour (default: server DRAM amortised over three years).",
    "block_tokens": "Tokens per hashed KV block: the unit of prefix reuse.",
    "preemption": "What happens when decode memory runs out: none reserves the whole output up front; "
    "recompute and swap reserve as they go and evict a victim when full.",
    "at_s": "When the fault starts, in seconds from the start of the run.",
    "instances": "Instances of the pool lost.",
    "duration_s": "How long they stay lost (empty: for good).",
    "in_flight": "What happens to requests running on a lost instance: retried elsewhere, or failed.",
    "tokens": "Tokens of every request.",
    "mean": "Mean tokens.",
    "p99": "99th percentile of tokens (must exceed the mean).",
    "max_tokens": "Draws are clipped to this many tokens.",
    "time_scale": "Replay speed: 2 replays the trace twice as fast (twice the load).",
    "max_requests": "Replay at most this many requests of the window, the earliest. Empty: every one.",
    "start_s": "Start this many seconds into the trace.",
    # the only trace box with no help, its empty value unexplained (a browser review)
    "max_gap_s": "Agentic sessions: cut each pause between a session's requests to at most this many seconds (a "
    "user away for hours). Empty: no cut, every pause replayed as recorded.",
    "turns_mean": "Mean turns per session; each later turn's prompt repeats the whole conversation so far.",
    "think_time_s": "Mean pause before the next request (between turns, or of a closed-loop client).",
    "groups": "Distinct shared prefixes (system prompts) requests draw from.",
    "requests": "Requests present at t = 0.",
    "clients": "Clients, each sending its next request when its last one ends.",
    "power_cap_kw": "The most these chips may draw together; over it they run at a lower clock. Empty: no cap.",
    "first_token_ms": "A latency every request pays before its first token, beyond the iterations (the stack's "
    "front end, a prefill launched without CUDA graphs). Empty (auto): for a MoE model the figure fitted to its "
    "stack's one-client TTFTs, 0 for a dense model; 0 switches it off (docs/calibration.md).",
}
"""Help text of scenario fields by name (a field's own description wins when it has one)."""

EMPTY: dict[str, str] = {
    "power_cap_kw": "no cap",
    "first_token_ms": "auto",  # the box is 90 px wide: the help says what auto is
    "max_requests": "all",
    "e2e_ms": "none",  # no target, not a default one (a review)
    "tbt_ms": "none",
    "above_backlog": "never",
    "backhaul_mbps": "no limit",
    "uplink_mbps": "no limit",
    "bandwidth_mbps": "no limit",
}
"""What an optional number box left empty means, shown as its placeholder where "default" would say nothing."""

UNITS: tuple[tuple[str, str], ...] = (
    ("_usd_per_gb_hour", "$/GB-h"),
    ("_gb_s", "GB/s"),
    ("_tb_s", "TB/s"),
    ("_gb", "GB"),
    ("_ms", "ms"),
    ("_rps", "req/s"),
    ("_tokens", "tokens"),
    ("_usd", "$"),
    ("_tflops", "TFLOP/s"),
    ("_w", "W"),
    ("_s", "s"),
    ("_mbps", "Mb/s"),
    ("_us", "µs"),
    ("_kw", "kW"),
)
_ACRONYMS = {
    w: w.upper() for w in ("tp", "pp", "dp", "ep", "cv", "kv", "hbm", "ttft", "tpot", "e2e", "tbt", "rtt")
}


LABELS: dict[str, str] = {
    "eager": "Eager mode",
    "tdp_w": "TDP (W)",
    "idle_w": "Idle power (W)",
    "usd_per_hour": "Price ($/chip-hour)",
    "usd_per_gb_hour": "Price ($/GB-hour)",
    "usd_per_kwh": "Electricity ($/kWh)",
    "pue": "PUE",
    "hosting_usd_per_kw_month": "Hosting ($/kW-month)",
    "amortisation_years": "Amortisation (years)",
    "server_power_factor": "Server power / chip TDP",
    "hbm": "Cache in HBM",
    "turns_mean": "Turns per session (mean)",
    "memory_gb": "Memory (GiB)",  # as vendors state it ("80 GB"), which the pools' lines read in GiB
    # unitless names read as bare numbers ("Threshold 8.0", "Below capacity 0.60": a review)
    "threshold": "Threshold (queued per instance)",
    "below_capacity": "Below capacity (live share)",
    "above_backlog": "Above backlog (waiting per instance)",
}
"""Labels that the name-to-label rule would get wrong."""


PATH_LABELS: dict[str, str] = {"deployment.power_cap_kw": "Site power cap (kW)"}
"""Labels of fields whose name another field shares on the same page: the site's power cap read "Power
cap (kW)" as each pool's does (a browser review)."""
PATH_HELP: dict[str, str] = {
    "deployment.power_cap_kw": "The most every data-centre pool's chips may draw together; over it they run at "
    "a lower clock. A pool with a cap of its own keeps it, and the rest is shared by the others. Empty: no "
    "site cap.",
}
"""Help of the fields `PATH_LABELS` names."""


def label_of(name: str) -> str:
    """A field name as a label with its unit: ``capacity_gb`` -> ``Capacity (GB)``."""
    if name in LABELS:
        return LABELS[name]
    unit = ""
    for suffix, text in UNITS:
        if name.endswith(suffix) and name != suffix.lstrip("_"):
            name, unit = name[: -len(suffix)], text
            break
    words = [_ACRONYMS.get(w, w) for w in name.split("_") if w]
    text = " ".join(words)
    text = text[:1].upper() + text[1:]
    return f"{text} ({unit})" if unit else text


def show_value(value: Any) -> str:
    """A value as a message names it: numbers as `show_number` writes them, anything else as text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return show_number(value)
    return str(value)


def show_number(value: float) -> str:
    """A number as a message shows it: 2000000 -> 2,000,000; 0.25 -> 0.25."""
    v = float(value)
    return f"{int(v):,}" if v.is_integer() and abs(v) < 1e15 else f"{v:,.6g}"
