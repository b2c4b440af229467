"""What a serving stack cannot build or start, said alike by `emit` and by `run` (engine.planning.emit)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core.errors import ScenarioError
from engine.planning import emit_deployment
from engine.scenario import codec
from engine.scenario.model import Scenario


def _vary(name: str, **changes: Any) -> Scenario:
    return codec.apply_overrides(codec.load_preset(name), changes)


def test_no_stack_builds_for_an_fpga_of_a_vendor_whose_gpus_it_runs_on() -> None:
    """An Alveo read "vLLM's ROCm build" (a review): a stack's build is by vendor and chip class."""
    fpga = _vary("chat-colocated", **{"deployment.pools[0].hardware": "alveo-v80"})
    for stack in ("vllm", "sglang"):
        with pytest.raises(ScenarioError, match=r"has no build for alveo-v80 \(AMD FPGA\)"):
            emit_deployment(fpga, stack)


def test_run_says_what_vllm_refuses_to_start_where_emit_does() -> None:
    """With chunked prefill off and a token budget under the longest request, `emit --stack vllm` said vLLM
    refuses to start, while `run` and `advise` priced the deployment bare (a review): the run's notes say it
    too, and a budget that holds the longest request, or another stack, has no such note."""
    from engine.explain.run_notes import scenario_notes

    off = _vary("chat-colocated", **{"deployment.batching.chunked_prefill": False})
    said = [n for n in scenario_notes(off, {}) if n.startswith("vLLM refuses to start")]
    assert len(said) == 1 and "token budget (8,192) must hold the longest request (20,480 tokens)" in said[0]
    assert "vLLM refuses to start" in emit_deployment(off, "vllm").text
    held = codec.apply_overrides(off, {"deployment.batching.token_budget": 20480})
    assert not any(n.startswith("vLLM refuses") for n in scenario_notes(held, {}))
    sglang = codec.apply_overrides(off, {"deployment.stack": "sglang"})
    assert not any(n.startswith("vLLM refuses") for n in scenario_notes(sglang, {}))
