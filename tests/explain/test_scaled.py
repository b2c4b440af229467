"""`autoscale_line`: a run's autoscaling in one line, only when a pool autoscales."""

from __future__ import annotations

from typing import Any

from engine.explain import autoscale_line


def _summary(during: int, missed: int) -> dict[str, Any]:
    pool = {"instance_hours": 1.5, "slots": 8, "min_instances": 1, "peak_instances": 3, "cold_start_s": 79.4}
    return {
        "autoscale": {
            "pools": {"decode": {**pool, "capacity_rps": 20.0}},
            "scale_ups": 4,
            "scale_downs": 2,
            "requests_during_cold_start": during,
            "misses_during_cold_start": missed,
        }
    }


def test_no_autoscaled_pool_no_line() -> None:
    assert autoscale_line({}) is None
    assert autoscale_line({"autoscale": None}) is None


def test_the_line_names_each_pool_and_the_cold_start_misses() -> None:
    line = autoscale_line(_summary(1_200, 30))
    assert line == (
        "Autoscaling: decode 1.50 instance-h (1 to 8, peak 3, cold start 79 s); 4 scale-ups, 2 scale-downs; "
        "1,200 requests arrived during cold starts, 30 of them missed their SLO (2.5%)."
    )
    assert autoscale_line(_summary(0, 0)).endswith("0 of them missed their SLO.")  # type: ignore[union-attr]
