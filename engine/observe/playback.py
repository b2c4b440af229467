"""Replay: a benchmark result as a workload, simulated on a stated deployment, measured against simulated.

The workload is what the file says the benchmark sent. With per-request rows, each request keeps
its prompt and output length; without, every request has the stated mean lengths. Arrivals follow
the stated load, drawn as the benchmark tools draw them:

- a concurrency (``--max-concurrency``, AIPerf's ``--concurrency``): that many closed-loop clients,
  no think time, all started at t = 0, sending the stated number of requests in all;
- a rate: gaps drawn from a gamma distribution of shape `burstiness` (1: Poisson), rescaled so
  the last request is sent at requests / rate, as vLLM's ``get_request`` does; with a concurrency
  beside it, that rate's schedule with a ceiling of that many requests in flight
  (`Arrival.max_in_flight`: a request due while that many are unanswered waits for one to end, as
  vLLM's semaphore makes it);
- ``inf`` without a concurrency: every request at t = 0.

The simulated requests are measured as the tools measure theirs: TTFT, TPOT per request with
more than one output token ((E2E - TTFT) / (output - 1)), E2E, and output tokens per second over
the run (first request sent to last answer). The simulator does not time each token, so its ITL
is the TPOT of each request weighted by its gaps (a run's tokens of one request come one step
apart): its mean is exact, its tail narrower than a real server's.

What the file cannot say comes from `Deployment`: chip, count, stack, layout, precision, and
optionally a calibration profile to run the chip with (the fit's result: replay before and after).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from engine.catalog.entries import Catalog, shared_catalog
from engine.catalog.specs import CalibrationProfile, KvPrecision, Precision
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.observe.observation import Latency, Observation
from engine.scenario.codec import from_data
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.workload import Requests, generate, whole_run

PROFILE = "observed"
"""Name under which a replay's given profile is added to its chip."""

DEFAULT_REQUESTS = 200
"""Requests replayed when a file states neither a count nor per-request rows."""

STATS = ("mean", "p50", "p90", "p99")
MEANS_ONLY = (
    "percentiles not compared: the file has no per-request rows, so every request replays at the mean "
    "lengths, and their spread is the simulator's queueing alone, not the file's mix of lengths"
)
"""Said of a replay of a file without per-request rows (an SGLang printed block read TTFT p99 -16.5%
against a simulated p99 equal to its mean: a review)."""
"""The statistics compared, where the file states them."""


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """What a benchmark file does not say: where it ran, to replay it there."""

    hardware: str
    count: int = 1
    stack: str = "vllm"
    tp: int = 1
    weights: Precision = "bf16"
    kv: KvPrecision = "bf16"
    model: str | None = None
    """Catalog model id; None: recognised from the file's model name (`guess_model`)."""
    profile: CalibrationProfile | None = None
    """The chip's calibration profile to run with; None: the stack's, by the catalog's rules."""


@dataclass(frozen=True)
class Replay:
    """A replay: the comparison table and the simulated per-request values (for CDFs)."""

    table: pd.DataFrame
    """figure, stat, unit, measured, simulated, error (simulated / measured - 1)."""
    scenario: Scenario
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    notes: tuple[str, ...] = field(default_factory=tuple)

    def error(self, figure: str, stat: str = "mean") -> float | None:
        """The error of one figure's statistic, or None where it was not compared."""
        hit = self.table[(self.table["figure"] == figure) & (self.table["stat"] == stat)]
        return None if hit.empty else float(hit["error"].iloc[0])


def _norm(name: str, dated: bool = False) -> str:
    """A model name without its organisation, tuning suffix and (unless `dated`) release date
    ('-2507', '-0528')."""
    base = name.strip().rsplit("/", 1)[-1].lower()
    base = re.sub(r"^meta-", "", base)
    date = re.search(r"-\d{4}$", base)
    base = base[: date.start()] if date else base
    base = re.sub(r"-(instruct|chat|hf|it|thinking)$", "", base).replace("_", "-")
    return base + date.group(0) if dated and date else base


def guess_model(name: str | None, catalog: Catalog) -> str | None:
    """The catalog id of a file's model name ('meta-llama/Llama-3.1-8B-Instruct' -> 'llama-3.1-8b').

    A release the catalog has an entry of its own for is that entry ('Qwen3-235B-A22B-Instruct-2507',
    served at 262,144 tokens where the first release's config says 40,960); another release is the
    entry of the same name without its date (the same architecture)."""
    if not name:
        return None
    for dated in (True, False):
        want = _norm(name, dated)
        for mid, spec in catalog.models.items():
            if want in (_norm(mid, dated), _norm(spec.name, dated)) and (dated or not _has_date(mid)):
                return mid
    return None


def _has_date(model_id: str) -> bool:
    return re.search(r"-\d{4}$", model_id) is not None


def _model(obs: Observation, dep: Deployment, catalog: Catalog) -> str:
    if dep.model:
        catalog.model(dep.model)
        return dep.model
    found = guess_model(obs.setup.model, catalog)
    if found is None:
        said = (
            f"names {obs.setup.model!r}, not a catalog model"
            if obs.setup.model
            else "does not name the model"
        )
        raise ScenarioError(
            f"{obs.source}: the file {said}; give the model (one of {', '.join(sorted(catalog.models))})"
        )
    return found


def _lengths(obs: Observation) -> tuple[np.ndarray, np.ndarray]:
    """Per-request (prompt, output) lengths: the rows', else the stated means for every request."""
    if obs.rows is not None:
        return (
            np.maximum(obs.rows.prompt_tokens, 1).astype(np.int64),
            np.maximum(obs.rows.output_tokens, 1).astype(np.int64),
        )
    s = obs.setup
    if s.prompt_tokens is None or s.output_tokens is None:
        raise ScenarioError(f"{obs.source}: the file states no prompt and output lengths to replay")
    n = min(s.requests or obs.measured.completed or DEFAULT_REQUESTS, bounds.MAX_REQUESTS)
    return np.full(n, max(1, round(s.prompt_tokens)), np.int64), np.full(
        n, max(1, round(s.output_tokens)), np.int64
    )


def gamma_arrivals(n: int, rate_rps: float, burstiness: float, seed: int) -> np.ndarray:
    """Send times of `n` requests at `rate_rps`: gamma gaps of shape `burstiness`, the first at 0 and
    the whole rescaled to n / rate (vLLM's ``get_request`` without a ramp)."""
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(burstiness, 1.0 / (rate_rps * burstiness), size=n)
    t = np.cumsum(gaps)
    t *= (n / rate_rps) / t[-1]
    return np.concatenate(([0.0], t[:-1]))


def _arrival(obs: Observation, n: int) -> dict[str, object]:
    s = obs.setup
    if s.concurrency and s.rate_rps:  # the rate's schedule, never more than the concurrency in flight
        return {**_rate(s.rate_rps, s.burstiness), "max_in_flight": min(s.concurrency, bounds.MAX_CLIENTS)}
    if s.concurrency:
        return {
            "kind": "closed_loop",
            "clients": min(s.concurrency, n),
            "think_time_s": 0.0,
            "ramp_s": 0.0,
            "stop_after": n,
        }
    if s.rate_rps:
        return _rate(s.rate_rps, s.burstiness)
    if s.all_at_once:
        return {"kind": "offline", "requests": n}
    raise ScenarioError(
        f"{obs.source}: the file states neither a request rate nor a concurrency to replay; give the one it ran at"
    )


def _rate(rate_rps: float, burstiness: float | None) -> dict[str, object]:
    shape = burstiness or 1.0
    if shape == 1.0:
        return {"kind": "poisson", "rate_rps": rate_rps}
    return {"kind": "gamma", "rate_rps": rate_rps, "cv": min(20.0, max(0.01, shape**-0.5))}


def _scenario(
    obs: Observation,
    dep: Deployment,
    model: str,
    arrival: dict[str, object],
    duration_s: float,
    lengths: tuple[int, int],
) -> Scenario:
    pool: dict[str, object] = {
        "name": "server",
        "role": "mixed",
        "hardware": dep.hardware,
        "tp": dep.tp,
        "count": dep.count,
    }
    if dep.profile is not None:
        pool["profile"] = PROFILE
    return from_data(
        {
            "version": 1,
            "name": f"replay of {obs.source}",
            "seed": 0,
            "duration_s": duration_s,
            "model": {"id": model, "weights": dep.weights, "kv": dep.kv},
            "workload": {
                "classes": [
                    {
                        "name": "observed",
                        "input": {"kind": "constant", "tokens": lengths[0]},
                        "output": {"kind": "constant", "tokens": lengths[1]},
                    }
                ],
                "arrival": arrival,
            },
            "deployment": {"mode": "colocated", "stack": dep.stack, "pools": [pool]},
        }
    )


def _requests(sc: Scenario, arrival_s: np.ndarray | None, prompt: np.ndarray, output: np.ndarray) -> Requests:
    """The scenario's requests with the observed lengths (and send times, for an open loop)."""
    base = generate(sc) if arrival_s is None else None
    n = len(prompt)
    if base is not None and len(base) == n:
        return replace(base, prompt_tokens=prompt, output_tokens=output)
    t = arrival_s if arrival_s is not None else np.zeros(n)
    z = np.zeros(n, dtype=np.int64)
    return Requests(
        arrival_s=t,
        cls=z,
        prompt_tokens=prompt,
        output_tokens=output,
        prefix_group=z,
        prefix_tokens=z,
        session=np.arange(n, dtype=np.int64),
        reused_tokens=z,
    )


def _with_profile(catalog: Catalog, dep: Deployment) -> Catalog:
    if dep.profile is None:
        return catalog
    hw = catalog.chip(dep.hardware)
    spec = hw.model_copy(update={"profiles": {**hw.profiles, PROFILE: dep.profile}})
    return replace(catalog, hardware={**catalog.hardware, spec.id: spec})


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The `q` percentile (0-100) of `values` each counted `weights` times."""
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][min(int(np.searchsorted(cum, q / 100.0 * cum[-1])), len(values) - 1)])


def _sim_latency(values_s: np.ndarray, weights: np.ndarray | None = None) -> Latency:
    ms = values_s * 1000.0
    w = np.ones_like(ms) if weights is None else weights
    return Latency(
        mean_ms=float(np.average(ms, weights=w)),
        percentiles_ms={q: weighted_percentile(ms, w, q) for q in (50.0, 90.0, 99.0)},
    )


ITL_FROM_TPOT = (
    "the simulated ITL is each request's mean gap weighted by its tokens (its TPOT), not single gaps: an open "
    "loop's token gaps are measured over its window only, which ends at the last send; its tail is narrower "
    "than a measured ITL's"
)
"""Said where a replay's simulated ITL is not the run's token gaps (a review read its TPOT-weighted 'ITL'
matching a measured ITL's tail by +1.3% as a fit)."""


def _token_gaps(summary: Any, sc: Scenario, notes: list[str]) -> Latency | None:
    """The simulated ITL as the run's gap before every decoded token (`latency_ms.tbt`, Mooncake's TBT) where
    the run is measured whole (a burst, a closed loop); None with `ITL_FROM_TPOT` said otherwise."""
    tbt = summary.get("latency_ms", {}).get("tbt") or {}
    if not whole_run(sc) or tbt.get("p50") is None:
        notes.append(ITL_FROM_TPOT)
        return None
    return Latency(
        mean_ms=tbt.get("mean"), percentiles_ms={50.0: tbt["p50"], 90.0: tbt["p90"], 99.0: tbt["p99"]}
    )


def _rows(measured: Observation, sim: dict[str, Latency | float | None]) -> list[dict[str, object]]:
    """Each figure measured against simulated; of a file without per-request rows, the latencies' means
    alone (its requests replay at the mean lengths, so their spread is not the file's: `MEANS_ONLY`)."""
    rows: list[dict[str, object]] = []
    m = measured.measured
    stats = STATS if measured.rows is not None else ("mean",)
    for figure in ("ttft", "tpot", "itl", "e2e"):
        have, got = getattr(m, figure), sim.get(figure)
        if not isinstance(have, Latency) or not isinstance(got, Latency):
            continue
        for stat in stats:
            a, b = have.at(stat), got.at(stat)
            if a is not None and b is not None and a > 0:
                rows.append(
                    {
                        "figure": figure,
                        "stat": stat,
                        "unit": "ms",
                        "measured": a,
                        "simulated": b,
                        "error": b / a - 1.0,
                    }
                )
    for figure, unit in (("output_tok_s", "tok/s"), ("request_rps", "req/s")):
        have, got = getattr(m, figure), sim.get(figure)
        if isinstance(have, float) and isinstance(got, float) and have > 0:
            rows.append(
                {
                    "figure": figure,
                    "stat": "mean",
                    "unit": unit,
                    "measured": have,
                    "simulated": got,
                    "error": got / have - 1.0,
                }
            )
    return rows


def replay(obs: Observation, dep: Deployment, catalog: Catalog | None = None, *, seed: int = 0) -> Replay:
    """Simulate what `obs` measured on `dep`; measured against simulated, with each figure's error."""
    cat = catalog or shared_catalog()
    model = _model(obs, dep, cat)
    prompt, output = _lengths(obs)
    n = len(prompt)
    arrival = _arrival(obs, n)
    notes = list(obs.notes) + ([MEANS_ONLY] if obs.rows is None else [])
    open_loop = arrival["kind"] in ("poisson", "gamma")
    recorded = obs.rows.start_s if obs.rows is not None else None
    if open_loop and recorded is not None:  # the file's own send times (AIPerf, vLLM's start_times), in order
        order = np.argsort(recorded, kind="stable")
        send, prompt, output = recorded[order], prompt[order], output[order]
    elif open_loop:
        send = gamma_arrivals(n, float(obs.setup.rate_rps or 1.0), obs.setup.burstiness or 1.0, seed)
    else:
        send = None
    window = (
        max(bounds.MIN_DURATION_S, float(send[-1]) + 1e-6)
        if send is not None
        else min(bounds.MAX_DURATION_S, max(3_600.0, 4.0 * (obs.measured.duration_s or 0.0)))
    )
    sc = _scenario(obs, dep, model, arrival, window, (int(np.median(prompt)), int(np.median(output))))
    reqs = _requests(sc, send if open_loop else None, prompt, output)
    res = simulate(sc, _with_profile(cat, dep), reqs)
    t = res.requests
    done = t[t["outcome"] == "completed"]
    if done.empty:
        raise ScenarioError(f"{obs.source}: no simulated request completed on {dep.count}x {dep.hardware}")
    if len(done) < n:
        notes.append(
            f"{n - len(done)} of {n} simulated requests did not complete (rejected or past the window)"
        )
    ttft = (done["first_token_s"] - done["arrival_s"]).to_numpy(dtype=float)
    e2e = (done["completion_s"] - done["arrival_s"]).to_numpy(dtype=float)
    out = done["output_tokens"].to_numpy(dtype=float)
    many = out > 1
    tpot = (e2e[many] - ttft[many]) / (out[many] - 1)
    span = float(done["completion_s"].max() - t["arrival_s"].min())
    sim: dict[str, Latency | float | None] = {
        "ttft": _sim_latency(ttft),
        "e2e": _sim_latency(e2e),
        "tpot": _sim_latency(tpot) if tpot.size else None,
        # (the note only where an ITL is compared: it stood over tables without an ITL row, a review)
        "itl": _token_gaps(res.summary, sc, notes if obs.measured.itl is not None and tpot.size else [])
        or (_sim_latency(tpot, out[many] - 1) if tpot.size else None),
        "output_tok_s": float(out.sum() / span) if span > 0 else None,
        "request_rps": float(len(done) / span) if span > 0 else None,
    }
    table = pd.DataFrame(
        _rows(obs, sim), columns=["figure", "stat", "unit", "measured", "simulated", "error"]
    )
    return Replay(table=table, scenario=sc, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, notes=tuple(notes))


CDF_FIGURES = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E"}
"""Figures whose distributions a replay draws, measured against simulated."""


def _cdf(values_s: np.ndarray, figure: str, source: str, points: int) -> pd.DataFrame:
    ms = np.sort(values_s) * 1000.0
    idx = np.unique(np.linspace(0, len(ms) - 1, min(points, len(ms))).round().astype(int))
    return pd.DataFrame(
        {"figure": figure, "source": source, "latency_ms": ms[idx], "fraction": (idx + 1) / len(ms)}
    )


def cdf_frame(obs: Observation, rep: Replay, points: int = 200) -> pd.DataFrame:
    """figure, source ('measured', 'simulated'), latency_ms, fraction: the CDFs of TTFT, TPOT and E2E (the
    measured ones where the file has per-request rows), each at most `points` points."""
    frames = []
    for key, label in CDF_FIGURES.items():
        sim = getattr(rep, f"{key}_s")
        if obs.rows is not None:
            meas = getattr(obs.rows, f"{key}_s")
            if meas.size:
                frames.append(_cdf(meas, label, "measured", points))
        if sim.size:
            frames.append(_cdf(sim, label, "simulated", points))
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["figure", "source", "latency_ms", "fraction"])
    )


def before_after(before: Replay, after: Replay) -> pd.DataFrame:
    """Each compared figure measured, then simulated and its error with the profile before and after."""
    keys = ["figure", "stat", "unit", "measured"]
    a = before.table.rename(columns={"simulated": "simulated_before", "error": "error_before"})
    b = after.table[["figure", "stat", "simulated", "error"]].rename(
        columns={"simulated": "simulated_after", "error": "error_after"}
    )
    return a.merge(b, on=["figure", "stat"], how="left")[
        [*keys, "simulated_before", "error_before", "simulated_after", "error_after"]
    ]
