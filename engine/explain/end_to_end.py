"""End-to-end checks: open-loop reference rows rerun by the simulator.

The steady-state predictor behind the fit (engine/costmodel/calibrate.py) covers fixed
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

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.costmodel import calibrate, crossval, trust
from engine.costmodel.reference import OpenLoop, open_loop_rows
from engine.scenario.codec import from_data
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.workload import Requests

PROFILE = "end-to-end"
"""Name under which a run's profile is added to its chip (so the run uses exactly that profile)."""


def scenario_of(row: OpenLoop) -> Scenario:
    """The scenario that reruns an open-loop row: one instance, the row's settings, its rate."""
    return from_data(
        {
            "version": 1,
            "name": f"{row.id}: {row.hardware} x{row.tp} at {row.rate_rps:g} req/s",
            "seed": 0,
            "duration_s": row.prompts / row.rate_rps,
            "model": {"id": row.model, "weights": row.weights, "kv": row.kv},
            "workload": {
                "classes": [
                    {
                        "name": "sharegpt",
                        "input": {"kind": "constant", "tokens": max(1, round(row.mean_input))},
                        "output": {"kind": "constant", "tokens": max(1, round(row.mean_output))},
                    }
                ],
                "arrival": {"kind": "poisson", "rate_rps": row.rate_rps},
            },
            "deployment": {
                "mode": "colocated",
                "stack": row.stack,
                "pools": [
                    {
                        "name": "server",
                        "role": "mixed",
                        "hardware": row.hardware,
                        "tp": row.tp,
                        "count": 1,
                        "profile": PROFILE,
                    }
                ],
                "batching": {
                    "max_batch": row.max_batch,
                    "token_budget": row.token_budget,
                    "chunked_prefill": row.chunked,
                },
            },
            # vLLM's scheduler: first come, first served; KV grows a token at a time; recompute on
            # preemption
            "scheduler": {"preemption": "recompute"},
        }
    )


def requests_of(row: OpenLoop) -> Requests:
    """The row's prompts as `benchmark_serving.py` sends them: exactly `prompts` requests, the first
    at 0 and each next one after an exponential gap at the row's rate (seeded), at the mean lengths."""
    n = row.prompts
    gaps = np.random.default_rng(0).exponential(1.0 / row.rate_rps, n)
    arrival = np.concatenate(([0.0], np.cumsum(gaps[:-1])))
    return Requests(
        arrival_s=arrival,
        cls=np.zeros(n, dtype=np.int64),
        prompt_tokens=np.full(n, max(1, round(row.mean_input)), dtype=np.int64),
        output_tokens=np.full(n, max(1, round(row.mean_output)), dtype=np.int64),
        prefix_group=np.zeros(n, dtype=np.int64),
        prefix_tokens=np.zeros(n, dtype=np.int64),
        session=np.arange(n, dtype=np.int64),
        reused_tokens=np.zeros(n, dtype=np.int64),
    )


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
    hw = catalog.chip(row.hardware)
    spec = hw.model_copy(update={"profiles": {**hw.profiles, PROFILE: profile}})
    reqs = requests_of(row)
    sc = scenario_of(row).model_copy(update={"duration_s": float(reqs.arrival_s[-1]) + 1e-6})
    res = simulate(sc, replace(catalog, hardware={**catalog.hardware, spec.id: spec}), reqs)
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


def checks(catalog: Catalog, points: list[calibrate.Measurement]) -> list[Check]:
    """Every open-loop row rerun with the shipped profiles and with its source left out.

    `points` are the usable reference points the profiles are fitted to (the same fit the
    catalog ships: a test keeps them equal).
    """
    rows = open_loop_rows(catalog)
    fits = calibrate.reference_fits(points, catalog)
    held_fits: dict[str, dict[tuple[str, str], calibrate.Fit]] = {}
    runs: dict[tuple[object, ...], dict[str, float]] = {}
    out = []
    for row in rows:
        if row.source_key not in held_fits:
            kept = [m for m in points if m.source_key != row.source_key]
            held_fits[row.source_key] = calibrate.reference_fits(kept, catalog)
        shipped, _ = crossval.rule_profile(row.hardware, row.stack, fits)
        held, basis = crossval.rule_profile(row.hardware, row.stack, held_fits[row.source_key])
        setup = (row.hardware, row.tp, row.model, row.weights, row.kv, row.mean_input, row.mean_output,
                 row.prompts, row.rate_rps, row.max_batch, row.token_budget, row.chunked, row.stack)  # fmt: skip
        for prof in (shipped, held):
            if (*setup, prof) not in runs:
                runs[(*setup, prof)] = run_row(row, prof, catalog)
        found = trust.borrowed_profile(
            row.hardware, row.stack, lambda c, st: fits[(c, st)].profile if (c, st) in fits else None
        )
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


def headline(df: pd.DataFrame) -> dict[str, float]:
    """Median and p90 |error| of the reruns, fit and held out."""
    if df.empty:
        return {}
    fit, held = df["fit_error"].abs(), df["held_out_error"].abs()
    return {
        "n": float(len(df)),
        "fit_median": float(fit.median()),
        "fit_p90": float(np.quantile(fit, 0.9)),
        "held_out_median": float(held.median()),
        "held_out_p90": float(np.quantile(held, 0.9)),
    }


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


def _point_scenario(m: calibrate.Measurement, duration_s: float, arrival: dict[str, object]) -> Scenario:
    stack = m.stack if m.stack in SCENARIO_STACKS else "vllm"
    return from_data(
        {
            "version": 1,
            "name": f"{m.id}: {m.hardware} x{m.tp}",
            "seed": 0,
            "duration_s": duration_s,
            "model": {"id": m.model, "weights": m.weights, "kv": m.kv},
            "workload": {
                "classes": [
                    {
                        "name": "fixed",
                        "input": {"kind": "constant", "tokens": m.prompt_tokens},
                        "output": {"kind": "constant", "tokens": max(m.output_tokens, 1)},
                    }
                ],
                "arrival": arrival,
            },
            "deployment": {
                "mode": "colocated",
                "stack": stack,
                "mem_fraction": m.kv_mem_fraction,
                "pools": [
                    {
                        "name": "server",
                        "role": "mixed",
                        "hardware": m.hardware,
                        "tp": m.tp,
                        "count": 1,
                        "profile": PROFILE,
                    }
                ],
                "batching": {
                    "max_batch": m.max_batch,
                    "token_budget": m.token_budget,
                    "chunked_prefill": m.chunked,
                },
            },
            # vLLM and SGLang grow KV a token at a time and recompute on preemption; TensorRT-LLM and
            # Splitwise's harness reserve the whole request
            "scheduler": {
                "preemption": "recompute" if stack != "trtllm" and m.stack != "splitwise" else "none"
            },
        }
    )


def _at_once(m: calibrate.Measurement, n: int) -> Requests:
    return Requests(
        arrival_s=np.zeros(n),
        cls=np.zeros(n, dtype=np.int64),
        prompt_tokens=np.full(n, m.prompt_tokens, dtype=np.int64),
        output_tokens=np.full(n, max(m.output_tokens, 1), dtype=np.int64),
        prefix_group=np.zeros(n, dtype=np.int64),
        prefix_tokens=np.zeros(n, dtype=np.int64),
        session=np.arange(n, dtype=np.int64),
        reused_tokens=np.zeros(n, dtype=np.int64),
    )


def rerun_point(m: calibrate.Measurement, profile: CalibrationProfile, catalog: Catalog) -> float:
    """A reference point's figure, simulated with `profile` on its chip (its unit: ms or tokens/s).

    Static batches and offline throughputs send their prompts at once; a concurrency runs that
    many closed-loop clients (no think time, all from the start) for about fifteen requests each,
    and measures the steady state after the first fifth of the window.
    """
    hw = catalog.chip(m.hardware)
    spec = hw.model_copy(update={"profiles": {**hw.profiles, PROFILE: profile}})
    cat = replace(catalog, hardware={**catalog.hardware, spec.id: spec})
    per_request = m.output_tokens + (m.prompt_tokens if m.count_input else 0)
    if m.static or (m.kind == "throughput" and not m.concurrency):
        n = m.batch if m.static else int(np.clip(4 * m.max_batch, *OFFLINE_REQUESTS))
        reqs = _at_once(m, n)
        res = simulate(_point_scenario(m, 1.0, {"kind": "offline", "requests": n}), cat, reqs)
        t = res.requests
        span = float(t["completion_s"].max())
        return span * 1000.0 if m.kind == "batch_latency" else n * per_request / span
    # a concurrency: closed-loop clients, the window sized by the predicted time of a request
    tpot_ms = calibrate.predict(replace(m, kind="tpot"), catalog, profile)
    ttft_ms = calibrate.predict(replace(m, kind="ttft"), catalog, profile)
    request_s = (ttft_ms + tpot_ms * max(m.output_tokens - 1, 0)) / 1000.0
    window = float(np.clip(15.0 * request_s, 10.0, 3_600.0))
    arrival = {"kind": "closed_loop", "clients": m.concurrency, "think_time_s": 0.0, "ramp_s": request_s}
    res = simulate(_point_scenario(m, window, arrival), cat)
    t = res.requests
    warm = window / 5.0
    done = t[(t["outcome"] == "completed") & (t["arrival_s"] >= warm)]
    if m.kind == "throughput":
        ended = t[(t["outcome"] == "completed") & (t["completion_s"] >= warm) & (t["completion_s"] <= window)]
        return float(len(ended) * per_request / (window - warm))
    return figures(done)[m.kind]


def point_reruns(catalog: Catalog, points: list[calibrate.Measurement]) -> pd.DataFrame:
    """Every dense reference point of a kind the simulator reproduces: measured, predicted by the
    cost model's steady-state predictor and simulated, both with the shipped profiles."""
    fits = calibrate.reference_fits(points, catalog)
    rows = []
    for m in points:
        if m.kind not in RERUN_KINDS or calibrate.is_moe(m, catalog) or m.dp > 1 or m.speculation is not None:
            continue
        prof, _ = crossval.rule_profile(m.hardware, calibrate.stack_of(m), fits)
        predicted = calibrate.predict(m, catalog, prof)
        simulated = rerun_point(m, prof, catalog)
        rows.append(
            {
                "id": m.id,
                "chip": m.hardware,
                "stack": calibrate.stack_of(m),
                "kind": m.kind,
                "measured": m.value,
                "predicted": predicted,
                "simulated": simulated,
                "predicted_error": predicted / m.value - 1.0,
                "simulated_error": simulated / m.value - 1.0,
                "agreement": simulated / predicted - 1.0,
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
    p, s, a = df["predicted_error"].abs(), df["simulated_error"].abs(), df["agreement"].abs()
    return {
        "n": float(len(df)),
        "predicted_median": float(p.median()),
        "predicted_p90": float(np.quantile(p, 0.9)),
        "simulated_median": float(s.median()),
        "simulated_p90": float(np.quantile(s, 0.9)),
        "agreement_median": float(a.median()),
        "agreement_p90": float(np.quantile(a, 0.9)),
    }
