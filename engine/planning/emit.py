"""From plan to deployment: a scenario's deployment as launch commands or a manifest for a serving stack.

`emit(scenario, stack)` writes one text a user can paste: shell commands for vLLM, SGLang and
TensorRT-LLM (one per pool, with TensorRT-LLM's options file beside its command), or a Kubernetes
manifest for NVIDIA Dynamo or llm-d (disaggregated deployments only). Scenario fields with no flag
in the stack become comments, never invented flags. `Emitted.commands` keeps every command's
argument vector so tests can parse each one with the stack's own flag list.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from engine.core.errors import ScenarioError
from engine.costmodel.stacks import STACK_NAMES
from engine.planning.emit_engines import sglang_args, trtllm_args, vllm_args
from engine.planning.emit_facts import DeploymentFacts, PoolFacts, facts, shared_notes
from engine.planning.emit_manifests import (
    DYNAMO_EAGER,
    NODE_GPUS,
    RESOURCES,
    dynamo_graph,
    dynamo_nodes,
    llmd_set,
    nodes_of,
    to_yaml,
)
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve

Stack = Literal["vllm", "sglang", "trtllm", "dynamo", "llm-d"]
STACKS: tuple[Stack, ...] = ("vllm", "sglang", "trtllm", "dynamo", "llm-d")
"""The stacks `emit` writes for, in the order the CLI and the Planner page offer them."""
PROGRAMS = {
    "vllm": ("vllm", "serve"),
    "sglang": ("python", "-m", "sglang.launch_server"),
    "trtllm": ("trtllm-serve",),
}
"""The program each launch command starts with, before its arguments."""
RUNS_ON: dict[str, frozenset[str]] = {
    "vllm": frozenset({"NVIDIA", "AMD", "Intel", "Google", "AWS", "Huawei"}),
    "sglang": frozenset({"NVIDIA", "AMD", "Huawei"}),
    "trtllm": frozenset({"NVIDIA"}),
    "dynamo": frozenset({"NVIDIA"}),
    "llm-d": frozenset({"NVIDIA", "AMD", "Google", "Intel"}),
}
"""The chip vendors each stack has a build for (vLLM's platform plugins: CUDA, ROCm, Gaudi, TPU, Neuron,
Ascend; SGLang's CUDA, ROCm and Ascend backends; TensorRT-LLM and Dynamo NVIDIA's; llm-d's vLLM on CUDA,
ROCm, TPU and Gaudi). A chip of another vendor (Groq's LPU, SambaNova's RDU, an illustrative ASIC) is
refused: `emit` wrote 'vllm serve ... --tensor-parallel-size 64' for 576 LPUs (a review)."""


NO_BUILD_CLASSES = frozenset({"FPGA", "CGRA", "Dataflow"})
"""Chip classes no stack of `RUNS_ON` builds for, whatever the vendor: `emit --stack vllm` wrote 'vllm serve'
for an AMD Alveo FPGA as "vLLM's ROCm build", which runs on AMD's Instinct GPUs only (a review)."""


def has_build(stack: str, vendor: str, kind: str = "GPU") -> bool:
    """Whether `stack` has a build for a chip of `vendor` and class `kind` (`RUNS_ON`, `NO_BUILD_CLASSES`)."""
    return vendor in RUNS_ON[stack] and kind not in NO_BUILD_CLASSES


def no_build(stack: str, vendor: str, illustrative: bool = False, kind: str = "GPU") -> bool:
    """Whether `stack` has no build for a chip of `vendor` (and class `kind`) that a run still models with a
    profile by rule (vLLM's or SGLang's; TensorRT-LLM's own mark says 'not run by', `stacks.runs_only_on`).
    What-if chips (`illustrative`) are said to be so instead. The catalog and `plan`'s notes name such chips."""
    return stack in ("vllm", "sglang") and not has_build(stack, vendor, kind) and not illustrative


ROUTERS = {
    "vllm": "prefill/decode: a proxy must send each request to a prefill server, then to a decode server "
    "(vLLM's disaggregated-serving proxy example); not generated: --emit dynamo or llm-d deploys one",
    "sglang": "prefill/decode: SGLang's router must pair the servers (sglang_router with its PD mode); "
    "not generated. The KV moves over SGLang's default transfer backend (Mooncake, over RDMA): across "
    "nodes, give each server its RDMA device",
}
"""What a plain prefill/decode launch still lacks: the router in front, which these commands do not start."""
BUILDS: dict[tuple[str, str], str] = {
    ("vllm", "AMD"): "vLLM's ROCm build",
    ("vllm", "Intel"): "vLLM with Intel's Gaudi plugin (vllm-gaudi)",
    ("vllm", "Google"): "vLLM's TPU build",
    ("vllm", "AWS"): "vLLM with AWS's Neuron plugin",
    (
        "vllm",
        "Huawei",
    ): "vLLM-Ascend (vLLM with Huawei's vllm-ascend plugin, whose fit this chip's vLLM runs with)",
    ("sglang", "AMD"): "SGLang's ROCm build",
    ("sglang", "Huawei"): "SGLang's Ascend backend",
}
"""The build a stack's command needs on another vendor's chip (`RUNS_ON`): `vllm serve` on a 910B is
vLLM-Ascend's, which the export did not say (a review)."""
NIXL_HOST = (
    "prefill/decode across nodes: start each server with VLLM_NIXL_SIDE_CHANNEL_HOST set to its own address "
    "the other pool can reach (vLLM's default, localhost, fails NIXL's KV handshake between machines)"
)
"""What a plain vLLM prefill/decode launch needs when its pools span nodes (llm-d's manifest sets it)."""


@dataclass(frozen=True, kw_only=True)
class Emitted:
    """An export: its text, each command's argument vector by pool, and any files it names."""

    stack: str
    text: str
    commands: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(pool name, arguments after the program) for each command."""
    files: tuple[tuple[str, str], ...] = ()
    """(file name, contents) of side files a command reads (TensorRT-LLM's --config)."""
    document: dict[str, object] | None = None
    """The manifest as a mapping (Dynamo, llm-d)."""
    filename: str = "deploy.sh"


def _comment(lines: list[str]) -> list[str]:
    return [f"# {line}" for line in lines]


def _command(program: tuple[str, ...], argv: list[str]) -> str:
    """A command over several lines: the program and its positional model, then one flag a line."""
    head = list(program)
    rest = list(argv)
    if rest and not rest[0].startswith("-"):
        head.append(rest.pop(0))
    out = shlex.join(head)
    i = 0
    while i < len(rest):
        pair = [rest[i]]
        if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            pair.append(rest[i + 1])
            i += 1
        out += " \\\n    " + shlex.join(pair)
        i += 1
    return out


def _shell(f: DeploymentFacts, stack: Stack) -> Emitted:
    lines = ["#!/bin/sh", *_comment(shared_notes(f, stack))]
    if f.disaggregated and stack in ROUTERS:
        lines += _comment([ROUTERS[stack]])
    if f.disaggregated and stack == "vllm":
        lines += _comment([NIXL_HOST])
    commands: list[tuple[str, tuple[str, ...]]] = []
    files: list[tuple[str, str]] = []
    for pool in f.pools:
        lines.append("")
        lines.append(f"# pool {pool.name}: {_pool_line(pool)}")
        if pool.chips_per_instance > NODE_GPUS:
            lines.append(
                f"# {pool.chips_per_instance} chips span several {NODE_GPUS}-chip nodes: "
                "add the stack's multi-node flags"
            )
        lines += _comment(_platform_notes(f, pool, stack))
        if stack == "trtllm":
            cfg_name = f"trtllm-{pool.name}.yaml"
            argv, config, notes = trtllm_args(f, pool, cfg_name)
            body = to_yaml(config)
            files.append((cfg_name, body))
            lines += _comment(notes)
            lines.append(f"cat > {shlex.quote(cfg_name)} <<'EOF'\n{body}\nEOF")
        else:
            argv, notes = vllm_args(f, pool) if stack == "vllm" else sglang_args(f, pool)
            lines += _comment(notes)
        lines.append(_command(PROGRAMS[stack], argv))
        commands.append((pool.name, tuple(argv)))
    return Emitted(stack=stack, text="\n".join(lines) + "\n", commands=tuple(commands), files=tuple(files))


def _platform_notes(f: DeploymentFacts, pool: PoolFacts, stack: Stack) -> list[str]:
    """What a command needs on a chip that is not NVIDIA's: the stack's build for it, and where the
    scenario asks for FP8 that the chip has no path for, that the build must accept it."""
    out = []
    if build := BUILDS.get((stack, pool.vendor)):
        out.append(
            f"pool {pool.name}: on {pool.hardware_id} ({pool.vendor}) this command runs under " + build
        )
    fp8 = [what for what, p in (("weights", f.weights), ("KV cache", f.kv)) if p == "fp8"]
    if fp8 and not pool.fp8_path:
        out.append(
            f"pool {pool.name}: {pool.hardware_id} has no FP8 matmul path in the catalog (the run stores FP8 "
            f"{' and '.join(fp8)} and computes at BF16); check that {STACK_NAMES.get(stack, stack)}'s build for "
            f"it accepts FP8 {' and '.join(fp8)}, or serve BF16 and run the scenario so"
        )
    return out


def _count_text(pool: PoolFacts) -> str:
    """A pool's instances: '3', or an autoscaled one's 'up to 8 (1 warm)' (its header read '8 x h100-sxm'
    beside replicas 1: a review)."""
    return str(pool.count) if pool.autoscale is None else f"up to {pool.count} ({pool.start_count} warm)"


def _pool_line(pool: PoolFacts) -> str:
    return (
        f"{pool.role}, {_count_text(pool)} x {pool.hardware_id} instance{'s' if pool.count != 1 else ''} "
        f"of tp {pool.tp} "
        f"x pp {pool.pp} x dp "
        f"{pool.dp} (ep {pool.ep}) = {pool.chips_per_instance} chip{'s' if pool.chips_per_instance != 1 else ''} each"
    )


def _manifest(f: DeploymentFacts, stack: Stack) -> Emitted:
    if not f.disaggregated:
        raise ScenarioError(
            f"deployment.mode: the {stack} export is a prefill/decode deployment and needs mode "
            "'disaggregated' (got 'colocated'); choose vllm, sglang or trtllm for a colocated one"
        )
    doc = dynamo_graph(f) if stack == "dynamo" else llmd_set(f)
    notes = shared_notes(f, "vllm", copies=False)  # both run vLLM workers; replicas count the copies
    notes += [f"pool {p.name}: {_pool_line(p)}" for p in f.pools]
    for pool in f.pools:  # the workers run vLLM: what its flags cannot say, once each
        notes += [n for n in vllm_args(f, pool)[1] if n not in notes]
    notes += [_multi_node_note(p, stack) for p in f.pools if p.chips_per_instance > NODE_GPUS]
    notes += [
        f"pool {p.name}: replicas is its {p.start_count} warm at the start; its autoscaler's bounds are "
        f"{p.autoscale[0]} to {p.count} instances (what a run scales it to is the run's): give it an "
        f"autoscaler (a HorizontalPodAutoscaler or KEDA on queue depth) with minReplicas {p.autoscale[0]} "
        f"and maxReplicas {p.count}"
        for p in f.pools
        if p.autoscale is not None
    ]
    vendors = {p.hardware_id: p.vendor for p in f.pools if p.vendor != "NVIDIA"}  # once a chip (a review)
    notes += [
        f"{chip} ({vendor}): its role requests {RESOURCES[vendor]} (the vendor's Kubernetes device "
        "plugin) and needs a model-server image built for it"
        for chip, vendor in vendors.items()
    ]
    chips = sorted({p.hardware_id for p in f.pools})
    # nothing told the roles' nodes apart; nor, on one chip, kept them off another kind's nodes (a B200 plan's
    # pods could land on H100s the plan judged too slow: a browser review)
    where = (
        f"the roles run on different chips ({', '.join(chips)}): pin each to its nodes"
        if len(chips) > 1
        else f"the roles run on {chips[0]}: on a cluster of more than one chip kind, pin them to its nodes"
    )
    notes.append(
        f"{where} with a nodeSelector on your cluster's chip label (GPU feature discovery's "
        "nvidia.com/gpu.product, for one); this manifest sets none"
    )
    if stack == "dynamo" and f.eager:
        notes.append(DYNAMO_EAGER)
    if stack == "llm-d":
        notes.append(
            "HF_TOKEN comes from the secret llm-d-hf-token (key HF_TOKEN), as in llm-d's guide: create it "
            "in the namespace first (kubectl create secret generic llm-d-hf-token --from-literal=HF_TOKEN=...)"
        )
    commands = tuple(_manifest_commands(doc, stack))
    text = "\n".join(_comment(notes)) + "\n" + to_yaml(doc) + "\n"
    return Emitted(stack=stack, text=text, commands=commands, document=doc, filename=f"{stack}.yaml")


_ALL2ALL_OVER_NODES = (
    "; its experts' all-to-all crosses nodes: choose vLLM's backend for it (--all2all-backend; "
    "llm-d's wide-EP guide runs DeepEP's) and request the cluster's RDMA devices, which are "
    "cluster-specific and not written here (the run prices it at the chips' scale-out NICs)"
)


def _multi_node_note(p: PoolFacts, stack: Stack) -> str:
    """What a manifest does with a replica wider than a node: llm-d's LeaderWorkerSet group of a pod a
    node where vLLM's data parallelism splits it so (`nodes_of`), Dynamo's multinode service where its
    operator starts it (`dynamo_nodes`), else by hand."""
    nodes = nodes_of(p) if stack == "llm-d" else dynamo_nodes(p)
    a2a = _ALL2ALL_OVER_NODES if p.ep > 1 else ""
    if stack == "llm-d" and nodes is not None:
        return (
            f"pool {p.name}: each replica is a LeaderWorkerSet group of {nodes} pods of {NODE_GPUS} chips, "
            f"{NODE_GPUS // p.tp} data-parallel ranks a pod, every pod serving its own ranks "
            "(--data-parallel-hybrid-lb) and finding the group's leader and its first rank from LeaderWorkerSet's "
            "LWS_LEADER_ADDRESS and LWS_WORKER_INDEX, as llm-d's wide-EP guide runs them" + a2a
        )
    if stack == "dynamo" and nodes is not None:
        how = (
            "starts one engine across them (Ray, or vLLM's multiprocessing executor in newer releases)"
            if p.dp == 1
            else f"adds vLLM's hybrid data-parallel flags, {NODE_GPUS // (p.tp * p.pp)} ranks a node"
        )
        return (
            f"pool {p.name}: each replica is a multinode service of {nodes} pods of "
            f"{p.chips_per_instance // nodes} GPUs (multinode.nodeCount {nodes}); Dynamo's operator {how}; "
            "Dynamo releases before multinode.nodeCount named it numberOfNodes" + a2a
        )
    how = (
        "Dynamo's operator starts neither a tensor-parallel group over nodes with data parallelism nor an uneven "
        "split of nodes"
        if stack == "dynamo"
        else "LeaderWorkerSet size and Ray for tensor or pipeline parallelism across nodes"
    )
    return (
        f"pool {p.name}: {p.chips_per_instance} chips an instance span more than one {NODE_GPUS}-chip node; make "
        f"each replica multi-node by hand ({how})"
    )


def _manifest_commands(doc: dict[str, object], stack: Stack) -> list[tuple[str, tuple[str, ...]]]:
    """Each worker's arguments in a manifest, for the flag checks."""
    out: list[tuple[str, tuple[str, ...]]] = []
    spec = doc["spec"]
    assert isinstance(spec, dict)
    if stack == "dynamo":
        for name, service in spec["services"].items():
            container = service["extraPodSpec"]["mainContainer"]
            if "args" in container:
                out.append((name, tuple(container["args"])))
    else:
        for role in spec["roles"]:
            pod = role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
            out.append((role["name"], tuple(pod["containers"][0]["args"])))
    return out


def emit(scenario: Scenario, stack: str) -> Emitted:
    """The scenario's deployment as launch commands (vllm, sglang, trtllm) or a manifest (dynamo, llm-d)."""
    if stack not in STACKS:
        raise ScenarioError(f"stack: choose one of {', '.join(STACKS)} (got {stack!r})")
    # the checks a run makes (weights that fit, heads a tp splits): emit wrote what run refuses; and each
    # pool's KV tokens a rank, which cap the longest request its commands ask for
    resolved = resolve(scenario)
    f = facts(scenario, {p.spec.name: p.instance.kv_capacity_tokens // p.instance.dp for p in resolved.pools})
    index = {p.name: i for i, p in enumerate(scenario.deployment.pools)}  # (facts leave edge pools out)
    for pool in f.pools:
        if not has_build(stack, pool.vendor, pool.kind):
            raise ScenarioError(
                f"deployment.pools[{index[pool.name]}].hardware: {stack} has no build for {pool.hardware_id} "
                f"({pool.vendor} {pool.kind}); it runs on {', '.join(sorted(RUNS_ON[stack]))} chips, not on "
                "FPGAs, CGRAs or dataflow parts"
            )
    if stack in ("dynamo", "llm-d"):
        return _manifest(f, stack)  # type: ignore[arg-type]
    return _shell(f, stack)  # type: ignore[arg-type]
