"""Every physical field has a finite, physical range, refused outside it with the field named.

The hostile-input campaign's findings: a KV link or a cache tier at 1e-300 GB/s, a link fault of
1e-320 s, a lognormal whose p99 no sigma can give (accepted by `scenario`, refused by `run` without
a field), an unknown draft model named at a path that does not exist. The property test draws
scenarios whose physical fields take any value their own ranges accept, the edges most of all,
and finds no summary figure that is NaN or infinite.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from engine.cli.main import main
from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario import model as m
from engine.scenario.resolve import resolve
from engine.serving.run import simulate
from engine.serving.workload import lognormal_params

LINK_FAULT = {"at_s": 1.0, "pool": "prefill", "kind": "link", "duration_s": 2.0, "link_factor": 0.5}


@pytest.mark.parametrize(
    ("preset", "path", "value"),
    [
        ("chat-disaggregated", "deployment.link.bandwidth_gb_s", 1e-300),
        ("chat-disaggregated", "deployment.link.shared_gb_s", 1e-300),
        ("chat-colocated", "cache.host.bandwidth_gb_s", 1e-300),
        ("chat-colocated", "cache.pooled.bandwidth_gb_s", 1e-300),
        ("chat-disaggregated", "faults[0].duration_s", 1e-320),
        ("chat-disaggregated", "faults[0].link_factor", 1e-300),
        ("chat-colocated", "duration_s", 1e-320),
        ("chat-colocated", "resolution_s", 1e-300),
        ("chat-colocated", "workload.arrival.rate_rps", 1e-300),
        ("chat-colocated", "workload.arrival.cv", 1e-300),
        ("chat-colocated", "workload.classes[0].slo.ttft_ms", 1e-300),
        ("chat-colocated", "workload.classes[0].share", 1e-300),
        ("chat-colocated", "scheduler.elastic.check_s", 1e-300),
    ],
)
def test_a_vanishing_physical_value_is_refused_naming_its_field(preset: str, path: str, value: float) -> None:
    base = io.load_preset(preset)
    over: dict[str, Any] = {path: value}
    if path.startswith("faults"):
        over = {"faults": [{**LINK_FAULT, path.split(".")[1]: value}]}
    with pytest.raises(ScenarioError) as err:
        io.apply_overrides(base, over)
    assert str(err.value).startswith(path + ":"), str(err.value)


def test_a_lognormal_no_sigma_can_give_is_refused_when_loaded(capsys: pytest.CaptureFixture[str]) -> None:
    """`scenario` used to accept it and `run` to refuse it without a field: one check, at load."""
    sets = [
        "workload.classes[0].input.kind=lognormal",
        "workload.classes[0].input.mean=513",
        "workload.classes[0].input.p99=40000",
    ]
    for command in ("scenario", "run"):
        argv = [command, "chat-colocated"] + [a for s in sets for a in ("--set", s)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "workload.classes[0].input.p99:" in err and "14.97x its mean" in err, err


def test_the_widest_lognormal_the_check_accepts_can_be_drawn() -> None:
    widest = m.LOGNORMAL_MAX_SPREAD * 100 * (1 - 1e-12)
    m.LengthDist(kind="lognormal", mean=100, p99=widest)
    mu, sigma = lognormal_params(100, widest)
    assert math.isfinite(mu) and sigma > 0


def test_an_unknown_draft_model_is_named_at_its_own_path() -> None:
    s = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {"deployment.speculative": {"method": "draft", "draft_model": "no-such-model"}},
    )
    with pytest.raises(ScenarioError) as err:
        resolve(s)
    assert str(err.value).startswith("deployment.speculative.draft_model: unknown model 'no-such-model'")


# --- the property: no summary figure is ever NaN or infinite ----------------------------------


def field_range(cls: type[BaseModel], name: str) -> tuple[float, float, bool]:
    """(low, high, low excluded) of a float field of a scenario model, read from its own constraints."""
    info = cls.model_fields[name]
    metadata = list(info.metadata)
    for arg in getattr(info.annotation, "__args__", ()):  # `Annotated[float, Field(...)] | None`
        metadata += getattr(arg, "__metadata__", ())
    lo = hi = None
    excluded = False
    for c in [c for meta in metadata for c in getattr(meta, "metadata", [meta])]:
        if hasattr(c, "ge"):
            lo = c.ge
        if hasattr(c, "gt"):
            lo, excluded = c.gt, True
        if hasattr(c, "le"):
            hi = c.le
    assert lo is not None and hi is not None, f"{cls.__name__}.{name} has no finite range"
    return float(lo), float(hi), excluded


def in_range(cls: type[BaseModel], name: str, high: float | None = None) -> st.SearchStrategy[float]:
    """Any value the field accepts (capped at `high` to keep runs short), its edges most often."""
    lo, hi, excluded = field_range(cls, name)
    hi = min(hi, high) if high is not None else hi
    least = math.nextafter(lo, math.inf) if excluded else lo
    return st.sampled_from([least, hi]) | st.floats(lo, hi, exclude_min=excluded)


PHYSICAL: dict[str, st.SearchStrategy[float]] = {
    "deployment.link.bandwidth_gb_s": in_range(m.KvLink, "bandwidth_gb_s"),
    "deployment.link.shared_gb_s": in_range(m.KvLink, "shared_gb_s"),
    "deployment.link.latency_ms": in_range(m.KvLink, "latency_ms"),
    "deployment.mem_fraction": in_range(m.Deployment, "mem_fraction"),
    "cache.host.bandwidth_gb_s": in_range(m.CacheTier, "bandwidth_gb_s"),
    "cache.pooled.bandwidth_gb_s": in_range(m.CacheTier, "bandwidth_gb_s"),
    "cache.host.capacity_gb": in_range(m.CacheTier, "capacity_gb"),
    "cache.usd_per_gb_hour": in_range(m.Cache, "usd_per_gb_hour"),
    "resolution_s": in_range(m.Scenario, "resolution_s"),
    "workload.arrival.cv": in_range(m.Arrival, "cv"),
    "workload.arrival.rate_rps": in_range(m.Arrival, "rate_rps", high=8.0),
    "workload.classes[0].slo.ttft_ms": in_range(m.Slo, "ttft_ms"),
    "workload.classes[0].slo.tpot_ms": in_range(m.Slo, "tpot_ms"),
}


@st.composite
def physical_scenarios(draw: st.DrawFn) -> m.Scenario:
    """A short disaggregated run with its cache tiers on, a link fault, and random physical fields."""
    base = io.load_preset("chat-disaggregated")
    over: dict[str, Any] = {
        "duration_s": 4.0,
        "workload.arrival.rate_rps": 4.0,
        "workload.arrival.kind": "gamma",
        "seed": draw(st.integers(0, 1000)),
        "cache.enabled": True,
        "cache.host.enabled": True,
        "cache.host.capacity_gb": 50.0,
        "cache.pooled.enabled": True,
        "cache.pooled.capacity_gb": 100.0,
        "workload.classes[0].prefix.tokens": 512,
        "faults": [
            {
                **LINK_FAULT,
                "duration_s": draw(in_range(m.Fault, "duration_s", high=10.0)),
                "link_factor": draw(in_range(m.Fault, "link_factor")),
            }
        ],
    }
    for path in draw(st.lists(st.sampled_from(sorted(PHYSICAL)), min_size=2, max_size=6, unique=True)):
        over[path] = draw(PHYSICAL[path])
    try:
        s = io.apply_overrides(base, over)
        resolve(s)
    except ScenarioError:
        assume(False)
    return s


def non_finite(doc: Any, path: str = "") -> list[str]:
    """Paths of the NaN or infinite numbers in a summary."""
    if isinstance(doc, float):
        return [] if math.isfinite(doc) else [path]
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in non_finite(v, f"{path}.{k}")]
    if isinstance(doc, list | tuple):
        return [p for i, v in enumerate(doc) for p in non_finite(v, f"{path}[{i}]")]
    return []


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(s=physical_scenarios())
def test_no_summary_figure_is_ever_nan_or_infinite(s: m.Scenario) -> None:
    res = simulate(s)
    assert not non_finite(res.summary), non_finite(res.summary)
