"""The launch-command export on another vendor's chip: the build its command runs under, and the FP8 the chip
has no path for (`engine.planning.emit`'s `BUILDS` and platform notes)."""

from __future__ import annotations

from engine.planning import emit_deployment
from tests.planning.test_emit import _presets, _vary


def test_a_command_on_another_vendors_chip_names_its_build_and_an_fp8_it_lacks() -> None:
    """`vllm serve` for a 910B pool said nothing of vLLM-Ascend, and wrote --quantization fp8 for a chip whose
    catalog entry has no FP8 path (a review): the build is named, the FP8 the chip lacks is said."""
    chat = _presets()["chat-colocated"]
    assert chat.model.weights == "fp8"
    npu = emit_deployment(_vary(chat, **{"deployment.pools[0].hardware": "ascend-910b"}), "vllm").text
    assert "on ascend-910b (Huawei) this command runs under vLLM-Ascend" in npu
    assert (
        "ascend-910b has no FP8 matmul path in the catalog" in npu
        and "accepts FP8 weights and KV cache" in npu
    )
    amd = emit_deployment(_vary(chat, **{"deployment.pools[0].hardware": "mi300x"}), "sglang").text
    assert "on mi300x (AMD) this command runs under SGLang's ROCm build" in amd and "no FP8" not in amd
    assert "runs under" not in emit_deployment(chat, "vllm").text  # an NVIDIA chip: the stack's own build
