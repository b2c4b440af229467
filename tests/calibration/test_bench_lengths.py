"""A benchmark's drawn lengths: bench_serving's draws, their length classes, and how the predictor
combines the classes into a point's figure."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.calibration import bench_lengths, predictor
from engine.calibration.measurements import Measurement
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile


def test_draws_reproduce_the_cookbooks_stated_means() -> None:
    # calibration-moe.csv: 1000/1000 over 80 prompts, "mean actual 495.9" and "509.1" (SGLang 0.5.6)
    draws = bench_lengths.matching_draws((1000, 1000), 80, (495.9, 509.1))
    assert draws is not None
    inputs, outputs = draws
    assert len(inputs) == 80 and inputs.min() >= 1 and inputs.max() <= 1000 and outputs.max() <= 1000
    assert inputs.mean() == pytest.approx(495.9, abs=0.051) and outputs.mean() == pytest.approx(
        509.1, abs=0.051
    )
    # SGLang 0.5.7's lowest output is 1 token: the same inputs, every output one more ("510.1")
    later = bench_lengths.matching_draws((1000, 1000), 80, (495.9, 510.1))
    assert later is not None and np.array_equal(later[0], inputs) and np.array_equal(later[1], outputs + 1)
    # means no draw reproduces (another seed, another harness): the lengths are unknown
    assert bench_lengths.matching_draws((1000, 1000), 80, (620.9, 510.1)) is None


def test_classes_span_the_draws_and_keep_their_means() -> None:
    inputs, outputs = bench_lengths.bench_serving(8000, 1000, 320, 0)
    cls = bench_lengths.classes(inputs, outputs)
    assert len(cls) == bench_lengths.CLASSES**2
    assert sum(w for *_, w in cls) == pytest.approx(1.0)
    mean_in = sum(i * w for i, _, w in cls)
    mean_out = sum(o * w for _, o, w in cls)
    assert mean_in == pytest.approx(inputs.mean(), abs=0.5) and mean_out == pytest.approx(
        outputs.mean(), abs=0.5
    )
    # uniform below the requested: the lowest quarter's mean near an eighth of it, the highest near 7/8
    ins = sorted({i for i, _, _ in cls})
    assert ins[0] < 0.2 * 8000 and ins[-1] > 0.8 * 8000
    # ten prompts cut into four groups of 3, 2, 3, 2 requests
    few = bench_lengths.classes(*bench_lengths.bench_serving(1000, 1000, 10, 0))
    assert sorted({round(w * 100) for *_, w in few}) == [4, 6, 9]


@pytest.fixture(scope="module")
def spread_point(catalog: Catalog) -> Measurement:
    inputs, outputs = bench_lengths.bench_serving(1000, 1000, 80, 0)
    return Measurement(
        id="t", model="deepseek-v3", hardware="b200", tp=8, weights="fp8", kv="bf16", kind="ttft",
        prompt_tokens=round(inputs.mean()), output_tokens=round(outputs.mean()), value=1.0, unit="ms",
        stack="sglang", max_batch=1024, token_budget=16384, concurrency=16, prompts=80,
        lengths=bench_lengths.classes(inputs, outputs),
    )  # fmt: skip


PROFILE = CalibrationProfile(eta_compute=0.5, eta_bandwidth=0.7, overhead_ms=3.0, source="test")


@pytest.mark.parametrize("kind", ["ttft", "tpot", "throughput"])
def test_a_spread_point_is_its_classes_combined_as_the_figure_is_defined(
    spread_point: Measurement, catalog: Catalog, kind: str
) -> None:
    m = replace(spread_point, kind=kind)  # type: ignore[arg-type]
    each = [
        (
            w,
            i,
            o,
            predictor.predict(replace(m, prompt_tokens=i, output_tokens=o, lengths=()), catalog, PROFILE),
        )
        for i, o, w in m.lengths
    ]
    if kind == "ttft":  # a mean over requests
        want = sum(w * v for w, _, _, v in each)
    elif kind == "tpot":  # the steps the classes' requests share, one per output token
        want = sum(w * o * v for w, _, o, v in each) / sum(w * o for w, _, o, _ in each)
    else:  # tokens over time
        want = sum(w * o for w, _, o, _ in each) / sum(w * o / v for w, _, o, v in each)
    got = predictor.predict(m, catalog, PROFILE)
    assert got == pytest.approx(want, rel=1e-9)
    # and the spread is not the mean: one length for every request predicts otherwise
    assert abs(predictor.predict(replace(m, lengths=()), catalog, PROFILE) / got - 1.0) > 1e-3
