"""End-to-end checks: open-loop reference rows rerun by the simulator.

The steady-state predictor behind the fit (engine/calibration/calibrate.py) covers fixed
concurrency and static batches. Rows measured under Poisson arrivals at a rate (dstack's
H100-vs-MI300X runs: 1,000 ShareGPT prompts at 16 req/s and all at once) depend on queueing,
batch growth and scheduling as well, which is what the simulator itself models. Each such row is
rerun here as a scenario (the stated chip, parallelism, batch limits, chunked prefill, arrival
rate and prompt count; every request at the stated mean lengths) and its figure is measured on
the simulated requests as vLLM's `benchmark_serving.py` measures it:

- output throughput: output tokens over the benchmark's duration (first arrival to last answer);
- mean TTFT;
- mean TPOT: per request with more than one output token, (latency - TTFT) / (output - 1).

Twice: with the shipped profiles (*fit*) and with the profiles refitted without the row's source,
given by the rules of docs/calibration.md (*leave source out*). These rows are never fitted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from engine.calibration import calibrate, crossval, measurements, predictor, trust
from engine.calibration.reference import OpenLoop
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.scenario.codec import from_data
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.workload import Requests

PROFILE = "end-to-end"
"""Name under which a run's profile is added to its chip (so the run uses exactly that profile)."""


def _scenario(
    setup: OpenLoop | measurements.Measurement,
    *,
    name: str,
    stack: str,
    lengths: tuple[int, int],
    arrival: dict[str, object],
    duration_s: float,
    preemption: str,
    mem_fraction: float = 0.9,
    first_token_ms: float | None = None,
) -> Scenario:
    """One instance of the setup's chip and layout, its batch limits and stack, fixed lengths, and
    its pool running with the profile a run adds to the chip (`PROFILE`); `first_token_ms` is the
    run's `deployment.first_token_ms` (None: the scenario's default)."""
    return from_data(
        {
            "version": 1,
            "name": name,
            "seed": 0,
            "duration_s": duration_s,
            "model": {
                "id": setup.model,
                "weights": setup.weights,
                "kv": setup.kv,
                "attention_weights": setup.attention_weights,
            },
            "workload": {
                "classes": [
                    {
                        "name": "fixed",
                        "input": {"kind": "constant", "tokens": lengths[0]},
                        "output": {"kind": "constant", "tokens": lengths[1]},
                    }
                ],
                "arrival": arrival,
            },
            "deployment": {
                "mode": "colocated",
                "stack": stack,
                "mem_fraction": mem_fraction,
                "eager": setup.eager,
                "first_token_ms": first_token_ms,
                "pools": [
                    {
                        "name": "server",
                        "role": "mixed",
                        "hardware": setup.hardware,
                        "tp": setup.tp,
                        "count": 1,
                        "profile": PROFILE,
                    }
                ],
                "batching": {
                    "max_batch": setup.max_batch,
                    "token_budget": setup.token_budget,
                    "chunked_prefill": setup.chunked,
                },
            },
            "scheduler": {"preemption": preemption},
        }
    )


def _lengths(row: OpenLoop) -> tuple[int, int]:
    """An open-loop row's requests: each at the stated mean prompt and answer."""
    return max(1, round(row.mean_input)), max(1, round(row.mean_output))


def scenario_of(row: OpenLoop) -> Scenario:
    """The scenario that reruns an open-loop row: one instance, the row's settings, its rate.

    vLLM's scheduler: first come, first served; KV grows a token at a time; recompute on preemption.
    """
    return _scenario(
        row,
        name=f"{row.id}: {row.hardware} x{row.tp} at {row.rate_rps:g} req/s",
        stack=row.stack,
        lengths=_lengths(row),
        arrival={"kind": "poisson", "rate_rps": row.rate_rps},
        duration_s=row.prompts / row.rate_rps,
        preemption="recompute",
    )


def _fixed(arrival_s: np.ndarray, lengths: tuple[int, int]) -> Requests:
    """Requests arriving at `arrival_s`, every one of the same (prompt, output) lengths."""
    n = len(arrival_s)
    return Requests(
        arrival_s=arrival_s,
        cls=np.zeros(n, dtype=np.int64),
        prompt_tokens=np.full(n, lengths[0], dtype=np.int64),
        output_tokens=np.full(n, lengths[1], dtype=np.int64),
        prefix_group=np.zeros(n, dtype=np.int64),
        prefix_tokens=np.zeros(n, dtype=np.int64),
        session=np.arange(n, dtype=np.int64),
        reused_tokens=np.zeros(n, dtype=np.int64),
    )


def requests_of(row: OpenLoop) -> Requests:
    """The row's prompts as `benchmark_serving.py` sends them: exactly `prompts` requests, the first
    at 0 and each next one after an exponential gap at the row's rate (seeded), at the mean lengths."""
    gaps = np.random.default_rng(0).exponential(1.0 / row.rate_rps, row.prompts)
    return _fixed(np.concatenate(([0.0], np.cumsum(gaps[:-1]))), _lengths(row))


def _with_profile(catalog: Catalog, chip: str, profile: CalibrationProfile) -> Catalog:
    """The catalog with `profile` added to `chip` as `PROFILE`, the profile the reruns' pool names."""
    hw = catalog.chip(chip)
    spec = hw.model_copy(update={"profiles": {**hw.profiles, PROFILE: profile}})
    return replace(catalog, hardware={**catalog.hardware, spec.id: spec})


def figures(requests: pd.DataFrame) -> dict[str, float]:
    """Output throughput (tok/s), mean TTFT and mean TPOT (ms) as benchmark_serving computes them."""
    done = requests[requests["outcome"] == "completed"]
    if done.empty:
        return {"throughput": 0.0, "ttft": float("nan"), "tpot": float("nan")}
    out = done["output_tokens"].to_numpy(dtype=float)
    ttft = (done["first_token_s"] - done["arrival_s"]).to_numpy()
    latency = (done["completion_s"] - done["arrival_s"]).to_numpy()
    many = out > 1
    span = float(done["completion_s"].max() - requests["arrival_s"].min())
    return {
        "throughput": float(out.sum() / span) if span > 0 else float("nan"),
        "ttft": float(ttft.mean() * 1000.0),
        "tpot": float(((latency[many] - ttft[many]) / (out[many] - 1)).mean() * 1000.0)
        if many.any()
        else 0.0,
    }


def run_row(row: OpenLoop, profile: CalibrationProfile, catalog: Catalog) -> dict[str, float]:
    """Simulate a row's setup with `profile` on its chip; its three figures."""
    reqs = requests_of(row)
    sc = scenario_of(row).model_copy(update={"duration_s": float(reqs.arrival_s[-1]) + 1e-6})
    res = simulate(sc, _with_profile(catalog, row.hardware, profile), reqs)
    return figures(res.requests)


@dataclass(frozen=True)
class Check:
    """One open-loop row: measured, and simulated with the shipped and the held-out profiles."""

    row: OpenLoop
    fit: float
    held_out: float
    basis: str
    origin: str = ""
    """'chip:stack' of the fit the shipped profile is (by the rules of docs/calibration.md), or 'transfer'."""

    @property
    def fit_error(self) -> float:
        return self.fit / self.row.value - 1.0

    @property
    def held_out_error(self) -> float:
        return self.held_out / self.row.value - 1.0


def checks(
    catalog: Catalog,
    rows: list[OpenLoop],
    points: list[measurements.Measurement],
    fits: dict[tuple[str, str], calibrate.Fit],
) -> list[Check]:
    """Every open-loop row rerun with the shipped profiles and with its source left out.

    `points` are the usable reference points and `fits` their fit (`calibrate.reference_fits`: the
    profiles the catalog ships, a test keeps them equal); each source is refitted without its rows.
    """
    held_fits: dict[str, dict[tuple[str, str], calibrate.Fit]] = {}
    runs: dict[tuple[object, ...], dict[str, float]] = {}
    out = []
    for row in rows:
        if row.source_key not in held_fits:
            kept = [m for m in points if m.source_key != row.source_key]
            held_fits[row.source_key] = calibrate.reference_fits(kept, catalog)
        shipped, _ = crossval.rule_profile(row.hardware, row.stack, fits)
        held, basis = crossval.rule_profile(row.hardware, row.stack, held_fits[row.source_key])
        setup = (
            row.hardware,
            row.tp,
            row.model,
            row.weights,
            row.kv,
            row.mean_input,
            row.mean_output,
            row.prompts,
            row.rate_rps,
            row.max_batch,
            row.token_budget,
            row.chunked,
            row.stack,
        )
        for prof in (shipped, held):
            if (*setup, prof) not in runs:
                runs[(*setup, prof)] = run_row(row, prof, catalog)
        found = trust.borrowed_profile(row.hardware, row.stack, crossval.fitted_lookup(fits))
        origin = f"{found[2]}:{found[3]}" if found is not None else "transfer"
        out.append(
            Check(row, runs[(*setup, shipped)][row.figure], runs[(*setup, held)][row.figure], basis, origin)
        )
    return out


def frame(found: list[Check]) -> pd.DataFrame:
    """One line per checked row: setup, load, figure, measured, simulated (fit and held out), errors."""
    return pd.DataFrame(
        [
            {
                "id": c.row.id,
                "chip": c.row.hardware,
                "tp": c.row.tp,
                "model": c.row.model,
                "stack": c.row.stack,
                "rate_rps": c.row.rate_rps,
                "figure": c.row.figure,
                "unit": c.row.unit,
                "measured": c.row.value,
                "fit": c.fit,
                "fit_error": c.fit_error,
                "held_out": c.held_out,
                "held_out_error": c.held_out_error,
                "basis": c.basis,
                "origin": c.origin,
                "note": c.row.note,
            }
            for c in found
        ]
    )


def _spread(df: pd.DataFrame, **columns: str) -> dict[str, float]:
    """n, then `<name>_median` and `<name>_p90` of |df[column]| for each name=column given."""
    out = {"n": float(len(df))}
    for name, column in columns.items():
        err = df[column].abs()
        out[f"{name}_median"] = float(err.median())
        out[f"{name}_p90"] = float(np.quantile(err, 0.9))
    return out


def headline(df: pd.DataFrame) -> dict[str, float]:
    """Median and p90 |error| of the reruns, fit and held out."""
    if df.empty:
        return {}
    return _spread(df, fit="fit_error", held_out="held_out_error")


def online_errors(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per 'chip:stack' whose fit the reruns ran with, the median |error| per figure (to 1%)."""
    out: dict[str, dict[str, float]] = {}
    if df.empty:
        return out
    for origin, g in df.groupby("origin", sort=True):
        out[str(origin)] = {
            str(figure): round(float(f["fit_error"].abs().median()), 2)
            for figure, f in g.groupby("figure", sort=False)
        }
        out[str(origin)]["reruns"] = float(len(g))
    return out


# --- the fitted points, rerun by the simulator ----------------------------------------------

RERUN_KINDS = ("throughput", "tpot", "ttft", "batch_latency")
"""Kinds of reference point a simulation reproduces (one prompt's prefill or one decode step is a
single iteration: the cost model itself, with nothing for the simulator to add)."""

SCENARIO_STACKS = ("vllm", "vllm-v0", "sglang", "trtllm")
OFFLINE_REQUESTS = (1_000, 6_000)
"""An offline throughput without a stated prompt count runs 4 x the batch cap, within these bounds."""


def _point_scenario(
    m: measurements.Measurement, duration_s: float, arrival: dict[str, object], first_token_ms: float = 0.0
) -> Scenario:
    """A reference point's run. vLLM and SGLang grow KV a token at a time and recompute on
    preemption; TensorRT-LLM and Splitwise's harness reserve the whole request. Its first-token
    latency is `first_token_ms`, stated, so a MoE point runs with the figure its prediction adds."""
    stack = m.stack if m.stack in SCENARIO_STACKS else "vllm"
    return _scenario(
        m,
        name=f"{m.id}: {m.hardware} x{m.tp}",
        stack=stack,
        lengths=(m.prompt_tokens, max(m.output_tokens, 1)),
        arrival=arrival,
        duration_s=duration_s,
        preemption="recompute" if stack != "trtllm" and m.stack != "splitwise" else "none",
        mem_fraction=m.kv_mem_fraction,
        first_token_ms=first_token_ms,
    )


def rerun_point(
    m: measurements.Measurement, profile: CalibrationProfile, catalog: Catalog, first_token_ms: float = 0.0
) -> float:
    """A reference point's figure, simulated with `profile` on its chip (its unit: ms or tokens/s),
    every request paying `first_token_ms` on the way in (a MoE point's first-token latency).

    Static batches and offline throughputs send their prompts at once; a concurrency runs that
    many closed-loop clients (no think time, started evenly over one request's predicted time, so
    they are staggered as in a steady state) for about fifteen requests each, and measures the
    steady state after the first fifth of the window. A lockstep concurrency (`Measurement.lockstep`:
    identical requests, clients started together) runs as its benchmark did: every client at t = 0,
    the stated number of requests (else fifteen a client), measured over all of them.
    """
    cat = _with_profile(catalog, m.hardware, profile)
    per_request = m.output_tokens + (m.prompt_tokens if m.count_input else 0)
    if m.static or (m.kind == "throughput" and not m.concurrency):
        n = m.batch if m.static else int(np.clip(4 * m.max_batch, *OFFLINE_REQUESTS))
        reqs = _fixed(np.zeros(n), (m.prompt_tokens, max(m.output_tokens, 1)))
        res = simulate(_point_scenario(m, 1.0, {"kind": "offline", "requests": n}, first_token_ms), cat, reqs)
        t = res.requests
        span = float(t["completion_s"].max())
        return span * 1000.0 if m.kind == "batch_latency" else n * per_request / span
    # a concurrency: closed-loop clients, the window sized by the predicted time of a request
    tpot_ms = predictor.predict(replace(m, kind="tpot"), catalog, profile)
    ttft_ms = predictor.predict(replace(m, kind="ttft"), catalog, profile)
    request_s = (ttft_ms + first_token_ms + tpot_ms * max(m.output_tokens - 1, 0)) / 1000.0
    if m.lockstep:
        return _lockstep(m, cat, request_s, per_request, first_token_ms)
    window = float(np.clip(15.0 * request_s, 10.0, 3_600.0))
    arrival = {"kind": "closed_loop", "clients": m.concurrency, "think_time_s": 0.0, "ramp_s": request_s}
    res = simulate(_point_scenario(m, window, arrival, first_token_ms), cat)
    t = res.requests
    warm = window / 5.0
    done = t[(t["outcome"] == "completed") & (t["arrival_s"] >= warm)]
    if m.kind == "throughput":
        ended = t[(t["outcome"] == "completed") & (t["completion_s"] >= warm) & (t["completion_s"] <= window)]
        return float(len(ended) * per_request / (window - warm))
    return figures(done)[m.kind]


LOCKSTEP_SLACK = 3.0
"""A lockstep rerun's window: this many times the rounds its requests need at the predicted
request time (a round queues its prompts behind each other, which the prediction leaves out)."""


def _lockstep(
    m: measurements.Measurement, catalog: Catalog, request_s: float, per_request: int, first_token_ms: float
) -> float:
    """A lockstep concurrency's figure: `m.concurrency` clients from t = 0 that stop after `m.prompts`
    requests (`Arrival.stop_after`; fifteen a client when unstated), so the last round is as short
    as the benchmark's, all of them measured as the benchmark measures them, warm-up included."""
    n = m.prompts or 15 * m.concurrency
    rounds = -(-n // m.concurrency) + 1
    window = float(np.clip(LOCKSTEP_SLACK * rounds * request_s, 10.0, 4 * 3_600.0))
    arrival = {
        "kind": "closed_loop",
        "clients": m.concurrency,
        "think_time_s": 0.0,
        "ramp_s": 0.0,
        "stop_after": n,
    }
    t = simulate(_point_scenario(m, window, arrival, first_token_ms), catalog).requests
    done = t[t["outcome"] == "completed"]
    if len(done) < n:  # a window too short for the run would measure a biased part of it
        raise ValueError(f"{m.id}: {len(done)} of {n} lockstep requests ended within {window:,.0f} s")
    if m.kind == "throughput":
        return float(n * per_request / done["completion_s"].max())
    return figures(done)[m.kind]


def point_reruns(
    catalog: Catalog,
    points: list[measurements.Measurement],
    fits: dict[tuple[str, str], calibrate.Fit],
    experts: Callable[[str, str], dict[str, float]] | None = None,
    first_token: Callable[[str], float] | None = None,
) -> pd.DataFrame:
    """Every dense reference point of a kind the simulator reproduces: measured, predicted by the
    cost model's steady-state predictor and simulated, both with the shipped profiles (`fits`).
    With `experts` (a stack's fitted MoE terms on a chip vendor's chips: `moe_fit.ExpertFit.terms`),
    the MoE points instead; tensor-parallel ones only, as for the dense points (`moe` tells them
    apart). With `first_token` (a stack's MoE first-token latency, ms: `first_token.FirstToken.ms`),
    a MoE TTFT's prediction adds it as the validation does, and every MoE rerun pays it on the way
    in as a run of the app does."""
    rows = []
    for m in points:
        if m.kind not in RERUN_KINDS or m.dp > 1 or m.speculation is not None:
            continue
        if calibrate.is_moe(m, catalog) != (experts is not None):
            continue
        prof, _ = crossval.rule_profile(m.hardware, measurements.stack_of(m), fits)
        first = 0.0
        if experts is not None:
            prof = prof.model_copy(update=experts(measurements.stack_of(m), calibrate.vendor_of(m, catalog)))
            first = first_token(measurements.stack_of(m)) if first_token is not None else 0.0
        predicted = predictor.predict(m, catalog, prof) + (first if m.kind == "ttft" else 0.0)
        simulated = rerun_point(m, prof, catalog, first)
        rows.append(
            {
                "id": m.id,
                "chip": m.hardware,
                "stack": measurements.stack_of(m),
                "kind": m.kind,
                "measured": m.value,
                "predicted": predicted,
                "simulated": simulated,
                "predicted_error": predicted / m.value - 1.0,
                "simulated_error": simulated / m.value - 1.0,
                "agreement": simulated / predicted - 1.0,
                "moe": experts is not None,
            }
        )
    return pd.DataFrame(rows)


def rerun_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per chip, stack and kind: points, and the median |error| of the predictor, of the simulator,
    and of the simulator against the predictor."""
    if df.empty:
        return df
    g = df.assign(
        p=df["predicted_error"].abs(), s=df["simulated_error"].abs(), a=df["agreement"].abs()
    ).groupby(["chip", "stack", "kind"])
    return pd.DataFrame(
        {
            "n": g.size(),
            "predicted": g["p"].median(),
            "simulated": g["s"].median(),
            "agreement": g["a"].median(),
        }
    ).reset_index()


def rerun_headline(df: pd.DataFrame) -> dict[str, float]:
    """Over every rerun point: n, median and p90 |error| of predictor and simulator, median agreement."""
    if df.empty:
        return {}
    return _spread(df, predicted="predicted_error", simulated="simulated_error", agreement="agreement")
