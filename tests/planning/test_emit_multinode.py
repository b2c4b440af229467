"""A replica wider than a node in the Dynamo manifest: a `multinode` service where Dynamo's operator
starts it, a note to do it by hand where it does not (engine.planning.emit_manifests.dynamo_nodes)."""

from __future__ import annotations

from typing import Any

from engine.planning import emit_deployment
from engine.scenario import codec
from engine.scenario.model import Scenario


def _vary(name: str, **changes: Any) -> Scenario:
    return codec.apply_overrides(codec.load_preset(name), changes)


def _services(scenario: Scenario) -> tuple[dict[str, Any], str]:
    emitted = emit_deployment(scenario, "dynamo")
    return emitted.document["spec"]["services"], emitted.text


def test_a_data_parallel_replica_over_two_nodes_is_a_multinode_service_of_node_sized_pods() -> None:
    """moe-deepseek-dp-ep's decode instance is 16 H200s (dp 16, tp 1): one pod asking for 16 GPUs cannot
    be placed, and the manifest asked for it with a note to make it multi-node by hand (a closing note).
    Dynamo's operator takes `multinode.nodeCount` pods of `gpu` GPUs each and adds vLLM's hybrid
    data-parallel flags itself (a node's ranks: its GPUs over TP x PP)."""
    services, text = _services(codec.load_preset("moe-deepseek-dp-ep"))
    decode, prefill = services["VllmDecodeWorker"], services["VllmPrefillWorker"]
    assert decode["multinode"] == {"nodeCount": 2} and decode["resources"]["limits"]["gpu"] == "8"
    assert "multinode" not in prefill and prefill["resources"]["limits"]["gpu"] == "8"
    assert "multinode service of 2 pods of 8 GPUs" in text and "8 ranks a node" in text
    assert "by hand" not in text
    args = decode["extraPodSpec"]["mainContainer"]["args"]
    assert "--data-parallel-size-local" not in args  # the operator's to add, from the pod's GPUs


def test_a_tensor_parallel_group_over_two_nodes_is_one_engine_the_operator_starts_across_them() -> None:
    tp16 = _vary(
        "moe-deepseek-dp-ep",
        **{"deployment.pools[1].tp": 16, "deployment.pools[1].dp": 1, "deployment.pools[1].ep": 16},
    )
    services, text = _services(tp16)
    assert services["VllmDecodeWorker"]["multinode"] == {"nodeCount": 2}
    assert "starts one engine across them" in text and "by hand" not in text


def test_a_layout_the_operator_cannot_start_keeps_one_pod_and_says_so() -> None:
    """A TP16 group with two data-parallel ranks (32 chips): the operator would start Ray for the TP group
    and leave the ranks unplaced, so the replica stays one pod and the note says why."""
    wide = _vary(
        "moe-deepseek-dp-ep",
        **{"deployment.pools[1].tp": 16, "deployment.pools[1].dp": 2, "deployment.pools[1].ep": 32},
    )
    services, text = _services(wide)
    decode = services["VllmDecodeWorker"]
    assert "multinode" not in decode and decode["resources"]["limits"]["gpu"] == "32"
    assert "make each replica multi-node by hand (Dynamo's operator starts neither" in text
