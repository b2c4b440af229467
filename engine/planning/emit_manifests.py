"""Prefill/decode deployments for NVIDIA Dynamo and llm-d, built from a disaggregated scenario.

Dynamo: a `DynamoGraphDeployment` (apiVersion nvidia.com/v1alpha1) with a Frontend service and one
worker service per pool, each running `python3 -m dynamo.vllm` with vLLM's engine flags, a NIXL KV
connector and Dynamo's `--is-prefill-worker` / `--is-decode-worker`; replicas are the pool's
instance count and each replica's GPUs its chips (the shape of ai-dynamo/dynamo's
examples/backends/vllm/deploy/disagg.yaml).

llm-d: a `DisaggregatedSet` (apiVersion disaggregatedset.x-k8s.io/v1) with one role per pool, each
a LeaderWorkerSet template whose container runs `vllm serve` with a NIXL KV connector, the guide's
environment (HF_TOKEN from a secret, NIXL's side channel on the pod's IP) and a memory /dev/shm; decode
roles carry llm-d's routing sidecar (the shape of llm-d/llm-d's
guides/pd-disaggregation/modelserver/gpu/vllm/base/disaggregatedset.yaml). Images are placeholders
the user replaces, as in those guides.

Both are plain mappings; `to_yaml` writes them as YAML (block style, strings JSON-quoted, which
YAML reads as double-quoted scalars).
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.core.errors import ScenarioError
from engine.planning.emit_engines import vllm_args
from engine.planning.emit_facts import DeploymentFacts, PoolFacts

DYNAMO_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:DYNAMO_VERSION"
"""Dynamo's vLLM runtime image, with the version left for the user (the examples use ${VERSION})."""
NIXL_BOTH = ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']
"""The KV connector of a Dynamo vLLM worker: Dynamo's vLLM worker asks for it explicitly in prefill mode
(components/src/dynamo/vllm/args.py, whose error message gives this very value)."""
DYNAMO_EAGER = (
    "deployment.eager: left out of the Dynamo workers' args; dynamo.vllm registers its own --enforce-eager "
    "(diffusion models only, components/src/dynamo/vllm/backend_args.py at the pinned 036f289) and parses "
    "before vLLM's parser, so vLLM never sees it and keeps CUDA graphs on; turn them off in vLLM's "
    "compilation config by hand"
)
"""Why a Dynamo worker cannot take vLLM's eager mode as a flag, said where the scenario sets it."""
RESOURCES = {
    "NVIDIA": "nvidia.com/gpu",
    "AMD": "amd.com/gpu",
    "Google": "google.com/tpu",
    "Intel": "habana.ai/gaudi",
}
"""The Kubernetes resource each vendor's device plugin names its chips by (an MI300X role requested
nvidia.com/gpu: a review)."""
LLMD_IMAGE = "REPLACE_MODEL_SERVER_IMAGE"
LLMD_SIDECAR_IMAGE = "REPLACE_ROUTING_SIDECAR_IMAGE"
NODE_GPUS = 8
"""GPUs in one node of the servers these manifests target (an HGX board), and so of one pod: an
instance with more spans nodes (`nodes_of`)."""
DP_RPC_PORT = 5555
"""vLLM's data-parallel RPC port on the group's leader (llm-d's wide-EP guide uses 5555)."""
LLMD_SHM_GI = 20
"""The memory-backed /dev/shm each llm-d pod gets (the guide's size): a container's default 64 MiB is too
small for NCCL between the tensor-parallel ranks."""


def _llmd_env() -> list[dict[str, Any]]:
    """Both roles' environment, as llm-d's P/D guide sets it: the Hugging Face token from a secret
    (gated repositories such as meta-llama's) and NIXL's side channel on the pod's own address
    (vLLM's default, localhost, fails the KV handshake between pods)."""
    return [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "llm-d-hf-token", "key": "HF_TOKEN"}}},
        {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]


def _k8s_name(text: str) -> str:
    """A Kubernetes object name from a scenario's: lower-case letters, digits and '-', at most 50, starting
    and ending with a letter or digit (cut after the strip, it could end in '-', which kubectl refuses:
    a hostile review)."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return name[:50].strip("-") or "fengong"


def _service_name(pool: PoolFacts) -> str:
    base = "Vllm" + pool.role.capitalize() + "Worker"
    if pool.name == pool.role:
        return base
    return base + "".join(w.capitalize() for w in re.split(r"[^A-Za-z0-9]+", pool.name) if w)


def _distinct(named: list[tuple[str, str]], what: str, cut: bool = False) -> None:
    """Refuse two pools whose names give one manifest name (`named`: pool, its name there): the second
    overwrote the first, and a pool of six H20s left the Dynamo manifest without a word (a review)."""
    seen: dict[str, str] = {}
    for pool, name in named:
        if name in seen:
            raise ScenarioError(
                f"deployment.pools: pools {seen[name]!r} and {pool!r} both become the {what} {name!r}, so one "
                "would be lost from the manifest; rename one (names that differ in more than case and punctuation"
                + (", within their first 50 characters)" if cut else ")")
            )
        seen[name] = pool


def dynamo_graph(f: DeploymentFacts) -> dict[str, Any]:
    """The DynamoGraphDeployment of a disaggregated deployment's prefill and decode pools."""
    _distinct([(p.name, _service_name(p)) for p in f.pools], "Dynamo service")
    services: dict[str, Any] = {
        "Frontend": {
            "componentType": "frontend",
            "replicas": 1,
            "extraPodSpec": {"mainContainer": {"image": DYNAMO_IMAGE}},
        }
    }
    for pool in f.pools:
        args, _ = vllm_args(f, pool, disagg_flags=False)
        model, engine = args[0], [a for a in args[1:] if a != "--enforce-eager"]  # DYNAMO_EAGER
        role_flag = "--is-prefill-worker" if pool.role == "prefill" else "--is-decode-worker"
        services[_service_name(pool)] = {
            "envFromSecret": "hf-token-secret",
            "componentType": "worker",
            "subComponentType": pool.role,
            "replicas": pool.start_count,
            **_dynamo_shape(pool),
            "extraPodSpec": {
                "mainContainer": {
                    "image": DYNAMO_IMAGE,
                    "workingDir": "/workspace/examples/backends/vllm",
                    "command": ["python3", "-m", "dynamo.vllm"],
                    "args": ["--model", model, *engine, *NIXL_BOTH, role_flag],
                }
            },
        }
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": _k8s_name(f.scenario_name)},
        "spec": {"services": services},
    }


def dynamo_nodes(pool: PoolFacts) -> int | None:
    """Nodes of `NODE_GPUS` one Dynamo replica spans (its `multinode.nodeCount`) where Dynamo's operator
    starts it whole: 1 within a node; a tensor or pipeline group over whole nodes (dp 1: the operator runs
    Ray across them); whole data-parallel ranks a node (TP x PP dividing the node: the operator adds vLLM's
    hybrid data-parallel flags, a node's ranks its GPUs over TP x PP). None otherwise: a TP group over
    nodes with dp above 1 or an uneven split, which it does not start (ai-dynamo/dynamo
    deploy/operator/internal/dynamo/backend_vllm.go, `updateVLLMMultinodeArgs`)."""
    chips = pool.chips_per_instance
    if chips <= NODE_GPUS:
        return 1
    if chips % NODE_GPUS:
        return None
    world = pool.tp * pool.pp
    if pool.dp == 1 or (world <= NODE_GPUS and NODE_GPUS % world == 0):
        return chips // NODE_GPUS
    return None


def _dynamo_shape(pool: PoolFacts) -> dict[str, Any]:
    """A Dynamo worker's GPUs: its chips in one pod, or `multinode.nodeCount` pods of a node's GPUs each
    (the operator's GPUs are per pod: docs/kubernetes/deployment/multinode-deployment.md)."""
    nodes = dynamo_nodes(pool)
    if nodes is None or nodes == 1:
        return {"resources": {"limits": {"gpu": str(pool.chips_per_instance)}}}
    return {
        "multinode": {"nodeCount": nodes},
        "resources": {"limits": {"gpu": str(pool.chips_per_instance // nodes)}},
    }


def nodes_of(pool: PoolFacts) -> int | None:
    """Nodes of `NODE_GPUS` one replica spans as a LeaderWorkerSet group, where its layout splits by
    node as vLLM's data parallelism does (tensor parallel ranks within a node, whole data-parallel
    ranks a node, one stage): 1 for a replica within a node, None where it spans nodes otherwise
    (tensor or pipeline parallelism across nodes needs Ray, which llm-d's guides do not deploy)."""
    chips = pool.chips_per_instance
    if chips <= NODE_GPUS:
        return 1
    if pool.pp == 1 and pool.tp <= NODE_GPUS and NODE_GPUS % pool.tp == 0 and chips % NODE_GPUS == 0:
        return chips // NODE_GPUS
    return None


MULTI_NODE = (
    'exec vllm serve "$@" --data-parallel-address "$LWS_LEADER_ADDRESS" '
    "--data-parallel-start-rank $(( ${{LWS_WORKER_INDEX:-0}} * {local} ))"
)
"""The shell line a pod of a multi-node replica runs (`sh -c LINE vllm ARGS...`): vLLM with the
manifest's args, the group leader's address and this pod's first data-parallel rank, which only the
pod knows (LeaderWorkerSet sets LWS_LEADER_ADDRESS and LWS_WORKER_INDEX), as llm-d's wide-EP guide
starts its ranks (guides/wide-ep-lws, `--data-parallel-start-rank $START_RANK`)."""


def _llmd_container(f: DeploymentFacts, pool: PoolFacts) -> dict[str, Any]:
    args, _ = vllm_args(f, pool)
    nodes = nodes_of(pool) or 1
    gpus = str(pool.chips_per_instance // nodes)
    if pool.role == "decode":
        args = [*args, "--port", "8200"]  # the routing sidecar listens on 8000 in front of it
    command = ["vllm", "serve"]
    if nodes > 1:  # each pod runs its node's ranks and serves them (hybrid load balancing)
        local = NODE_GPUS // pool.tp
        args += ["--data-parallel-size-local", str(local), "--data-parallel-rpc-port", str(DP_RPC_PORT)]
        args.append("--data-parallel-hybrid-lb")
        command = ["/bin/sh", "-c", MULTI_NODE.format(local=local), "vllm"]
    return {
        "name": "modelserver",
        "image": LLMD_IMAGE,
        "command": command,
        "args": args,
        "env": _llmd_env(),
        "ports": [{"name": "modelserver", "containerPort": 8200 if pool.role == "decode" else 8000}],
        "resources": {"limits": {RESOURCES[pool.vendor]: gpus}, "requests": {RESOURCES[pool.vendor]: gpus}},
        "volumeMounts": [{"mountPath": "/dev/shm", "name": "shm"}],
    }


def _llmd_role(f: DeploymentFacts, pool: PoolFacts) -> dict[str, Any]:
    labels = {"llm-d.ai/inference-serving": "true", "llm-d.ai/role": pool.role}
    shm = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{LLMD_SHM_GI}Gi"}}
    pod: dict[str, Any] = {"containers": [_llmd_container(f, pool)], "volumes": [shm]}
    if pool.role == "decode":
        pod["initContainers"] = [
            {
                "name": "routing-proxy",
                "image": LLMD_SIDECAR_IMAGE,
                "args": ["--port=8000", "--kv-connector=nixlv2", "--secure-proxy=false"],
                "ports": [{"name": "sidecar", "containerPort": 8000}],
                "restartPolicy": "Always",
            }
        ]
    return {
        "name": _k8s_name(pool.name) if len(f.pools) > 2 else pool.role,
        "spec": {
            "replicas": pool.start_count,
            "leaderWorkerTemplate": {
                "size": nodes_of(pool) or 1,
                "workerTemplate": {"metadata": {"labels": labels}, "spec": pod},
            },
        },
    }


def llmd_set(f: DeploymentFacts) -> dict[str, Any]:
    """The llm-d DisaggregatedSet of a disaggregated deployment's prefill and decode pools."""
    roles = [_llmd_role(f, p) for p in f.pools]
    _distinct([(p.name, str(r["name"])) for p, r in zip(f.pools, roles, strict=True)], "llm-d role", True)
    return {
        "apiVersion": "disaggregatedset.x-k8s.io/v1",
        "kind": "DisaggregatedSet",
        "metadata": {"name": _k8s_name(f.scenario_name), "labels": {"llm-d.ai/inference-serving": "true"}},
        "spec": {"slices": 1, "roles": roles},
    }


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value))


def _empty(item: Any) -> str:
    if isinstance(item, dict):
        return "{}"
    return "[]" if isinstance(item, list) else _scalar(item)


def to_yaml(value: Any, indent: int = 0) -> str:
    """A mapping of mappings, lists and scalars as block-style YAML."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:")
                lines.append(to_yaml(item, indent + 2))
            else:
                lines.append(f"{pad}{key}: {_empty(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list) and item:
                body = to_yaml(item, indent + 2)
                lines.append(f"{pad}- {body.lstrip()}")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    else:
        lines.append(f"{pad}{_scalar(value)}")
    return "\n".join(lines)
