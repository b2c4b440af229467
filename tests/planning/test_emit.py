"""The launch-command export (engine.planning.emit): every flag and key it writes is one the stack's own
parser or schema accepts at a pinned version, and the values carry the scenario's deployment.

The accepted names live in tests/planning/emit_flags/ (one file a stack; each header names the
repository, the file and the commit they were read from). `flagcheck.parser` rebuilds an argparse
parser from them, so a flag missing from the list, a value of the wrong type or outside a flag's
choices fails the parse.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
import yaml

from engine.catalog.entries import load_catalog
from engine.core.errors import ScenarioError
from engine.planning import EMIT_STACKS, emit_deployment
from engine.planning.emit import RUNS_ON
from engine.planning.emit_manifests import to_yaml
from engine.scenario import codec
from engine.scenario.model import Scenario
from tests.planning import flagcheck

PARSERS = {
    "vllm": (("vllm.flags",), True),
    "sglang": (("sglang.flags",), False),
    "trtllm": (("trtllm.flags",), True),
    "dynamo": (("dynamo.flags", "vllm.flags"), False),
    "llm-d": (("vllm.flags",), True),
}
"""Each stack's flag lists and whether its command takes the model as a positional argument."""


@cache
def _presets() -> dict[str, Scenario]:
    return {name: codec.load_preset(name) for name in codec.preset_names()}


def _parse(stack: str, argv: tuple[str, ...]) -> Any:
    names, positional = PARSERS[stack]
    return flagcheck.parser(*names, positional_model=positional).parse_args(list(argv))


def _vary(scenario: Scenario, **changes: Any) -> Scenario:
    return codec.apply_overrides(scenario, changes)


def _runs_on(s: Scenario, stack: str) -> bool:
    """Whether the stack has a build for every data-centre chip of the scenario (`emit.RUNS_ON`)."""
    cat = load_catalog()
    chips = {cat.hardware[p.hardware].vendor for p in s.deployment.pools if p.tier == "datacenter"}
    return chips <= RUNS_ON[stack]


def _cases() -> list[tuple[str, str]]:
    out = []
    for name, s in _presets().items():
        for stack in EMIT_STACKS:
            if stack in ("dynamo", "llm-d") and s.deployment.mode != "disaggregated":
                continue
            if _runs_on(s, stack):
                out.append((name, stack))
    return out


def test_a_stack_without_a_build_for_a_chip_is_refused() -> None:
    """emit wrote 'vllm serve ... --tensor-parallel-size 64' for 576 Groq LPUs and a trtllm-serve command
    for a 910B (a review): a stack without a build for the chip is refused with the pool's field."""
    refused = [(n, st) for n, s in _presets().items() for st in EMIT_STACKS if not _runs_on(s, st)]
    assert ("sram-decode-groq", "vllm") in refused and ("chat-ascend-910b", "trtllm") in refused
    for name, stack in refused:
        if stack in ("dynamo", "llm-d") and _presets()[name].deployment.mode != "disaggregated":
            continue
        with pytest.raises(ScenarioError, match=r"deployment\.pools\[\d+\]\.hardware: .* has no build for"):
            emit_deployment(_presets()[name], stack)


def test_a_deployment_a_run_refuses_is_refused() -> None:
    """emit wrote '--tensor-parallel-size 3' for 64 heads and a 70B model on one L4, which every run refuses."""
    s = _vary(_presets()["chat-disaggregated"], **{"deployment.pools[0].tp": 3})
    with pytest.raises(ScenarioError, match=r"deployment\.pools\[0\]\.tp: 3 tensor-parallel ranks"):
        emit_deployment(s, "vllm")


@pytest.mark.parametrize(("preset", "stack"), _cases())
def test_every_emitted_flag_parses_with_the_stacks_own_flags(preset: str, stack: str) -> None:
    emitted = emit_deployment(_presets()[preset], stack)
    assert emitted.commands, "an export holds at least one command"
    for pool, argv in emitted.commands:
        try:
            _parse(stack, argv)
        except flagcheck.Refused as exc:
            pytest.fail(f"{preset} {stack} pool {pool}: {exc} in {' '.join(argv)}")


def test_the_rebuilt_parsers_refuse_what_the_stacks_refuse() -> None:
    with pytest.raises(flagcheck.Refused):  # a flag the stack does not have
        _parse("vllm", ("m", "--tensor-parallel", "2"))
    with pytest.raises(flagcheck.Refused):  # an int flag given a float
        _parse("trtllm", ("m", "--max_batch_size", "0.5"))
    with pytest.raises(flagcheck.Refused):  # a value outside the choices
        _parse("sglang", ("--model-path", "m", "--kv-cache-dtype", "fp8"))
    with pytest.raises(flagcheck.Refused):  # vLLM's spelling is not SGLang's
        _parse("sglang", ("--model-path", "m", "--max-num-seqs", "8"))
    with pytest.raises(flagcheck.Refused):  # SGLang requires the model path
        _parse(
            "sglang",
            (
                "--tp-size",
                "2",
            ),
        )


def test_every_flag_file_names_its_source() -> None:
    for name in sorted(p.name for p in flagcheck.FLAGS_DIR.iterdir()):
        head = flagcheck.header(name)
        assert "repository: github.com/" in head, name
        assert re.search(r"\b[0-9a-f]{40}\b", head), f"{name}: no commit named"
        assert re.search(r"\S+\.(py|yaml)\b", head), f"{name}: no file named"


def test_values_carry_the_scenarios_deployment() -> None:
    s = _presets()["chat-disaggregated"]
    lim = s.batching()
    emitted = emit_deployment(s, "vllm")
    for (name, argv), pool in zip(emitted.commands, s.deployment.pools, strict=True):
        a = _parse("vllm", argv)
        assert name == pool.name
        assert (a.opt_tensor_parallel_size, a.opt_pipeline_parallel_size) == (pool.tp, pool.pp)
        assert (a.opt_max_num_seqs, a.opt_max_num_batched_tokens) == (lim.max_batch, lim.token_budget)
        assert a.opt_enable_chunked_prefill is lim.chunked_prefill
        assert a.opt_enable_prefix_caching is s.cache.enabled
        assert a.opt_kv_cache_dtype == ("fp8" if s.kv_precision() == "fp8" else "bfloat16")
        assert a.opt_gpu_memory_utilization == pytest.approx(s.deployment.mem_fraction)
        assert a.model == load_catalog().model(s.model.id).hf_id
        assert (
            a.opt_kv_transfer_config["kv_role"]
            == {"prefill": "kv_producer", "decode": "kv_consumer"}[pool.role]
        )


def test_each_pool_is_launched_with_its_own_chips_batching_defaults() -> None:
    """A stack sizes each server's batching by its own GPU: the H100 pool beside the 910B one is
    launched (and simulated) with the H100's defaults, not the first pool's chip's."""
    from engine.scenario.resolve import resolve

    s = _presets()["chat-ascend-910b"]
    cat = load_catalog()
    emitted = emit_deployment(s, "vllm")
    seen = {}
    for (_, argv), pool, run in zip(emitted.commands, s.deployment.pools, resolve(s).pools, strict=True):
        a = _parse("vllm", argv)
        lim = s.batching(cat.hardware[pool.hardware])
        assert (a.opt_max_num_seqs, a.opt_max_num_batched_tokens) == (lim.max_batch, lim.token_budget)
        assert run.limits == lim  # what the run's instances take
        seen[pool.hardware] = lim.max_batch
    assert seen == {"ascend-910b": 256, "h100-sxm": 1024}


def test_attention_dp_and_expert_parallel_map_per_stack() -> None:
    s = _presets()["moe-deepseek-dp-ep"]
    pools = s.deployment.pools
    sg = emit_deployment(s, "sglang")
    for (_, argv), pool in zip(sg.commands, pools, strict=True):
        a = _parse("sglang", argv)
        assert a.opt_tp_size == pool.tp * pool.dp  # SGLang's tp size counts every chip of the instance
        assert a.opt_dp_size == pool.dp and a.opt_enable_dp_attention
        assert a.opt_ep_size == pool.ep
        assert a.opt_disaggregation_mode == pool.role
        # SGLang divides both among its dp ranks (server_args.py `_handle_data_parallelism`); the
        # scenario's limits are per rank, so the server's are dp times them
        lim = s.batching()
        assert a.opt_max_running_requests == lim.max_batch * pool.dp
        assert a.opt_chunked_prefill_size == lim.chunk_tokens * pool.dp
        assert a.opt_max_prefill_tokens == lim.token_budget
    vl = emit_deployment(s, "vllm")
    for (_, argv), pool in zip(vl.commands, pools, strict=True):
        a = _parse("vllm", argv)
        assert (a.opt_tensor_parallel_size, a.opt_data_parallel_size) == (pool.tp, pool.dp)
        assert a.opt_enable_expert_parallel is True
    trt = emit_deployment(s, "trtllm")
    configs = {name: yaml.safe_load(text) for name, text in trt.files}
    for (_, argv), pool in zip(trt.commands, pools, strict=True):
        a = _parse("trtllm", argv)
        assert (a.opt_tp_size, a.opt_ep_size) == (pool.tp * pool.dp, pool.ep)
        assert configs[a.opt_config]["enable_attention_dp"] is True


def _flatten(doc: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in doc.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, path + "."))
        else:
            out[path] = value
    return out


_PY_TYPES = {"bool": bool, "str": str, "int": int, "float": float}


@pytest.mark.parametrize(
    "preset", ["chat-colocated", "chat-disaggregated", "moe-deepseek-dp-ep", "agentic-cache"]
)
def test_trtllm_options_files_use_only_llm_api_keys(preset: str) -> None:
    allowed = flagcheck.config_keys("trtllm_config.keys")
    emitted = emit_deployment(_presets()[preset], "trtllm")
    assert emitted.files
    for name, text in emitted.files:
        assert name in emitted.text and text in emitted.text  # the script writes the file it names
        for key, value in _flatten(yaml.safe_load(text)).items():
            assert key in allowed, f"{name}: {key} is not an LLM API option"
            kind = allowed[key]
            if kind.startswith("choice:"):
                assert value in kind.removeprefix("choice:").split(","), key
            else:
                assert type(value) is _PY_TYPES[kind], key


@pytest.mark.parametrize("stack", ["dynamo", "llm-d"])
@pytest.mark.parametrize("preset", ["chat-disaggregated", "moe-deepseek-dp-ep", "chat-hetero-h20"])
def test_manifests_use_only_the_reference_keys_and_read_back(stack: str, preset: str) -> None:
    emitted = emit_deployment(_presets()[preset], stack)
    doc = yaml.safe_load(emitted.text)  # comments and all: the text is what a user applies
    assert doc == emitted.document
    under = ("spec :: services",) if stack == "dynamo" else ()
    extra = flagcheck.key_paths(doc, under) - flagcheck.manifest_keys(f"{stack}.keys")
    assert not extra, f"keys the reference {stack} manifest does not have: {sorted(extra)}"
    workers = [c for c in emitted.commands]
    assert len(workers) == len(_presets()[preset].deployment.pools)


def test_dynamo_workers_say_their_role_and_replicas() -> None:
    s = _presets()["chat-disaggregated"]
    doc = emit_deployment(s, "dynamo").document
    assert doc is not None
    services = doc["spec"]["services"]  # type: ignore[index]
    for pool in s.deployment.pools:
        (svc,) = [v for v in services.values() if v.get("subComponentType") == pool.role]
        assert svc["replicas"] == pool.count
        assert svc["resources"]["limits"]["gpu"] == str(pool.chips_per_instance)
        a = _parse("dynamo", tuple(svc["extraPodSpec"]["mainContainer"]["args"]))
        assert getattr(a, f"opt_is_{pool.role}_worker") is True


def test_fields_without_a_flag_become_comments_not_flags() -> None:
    base = _presets()["chat-colocated"]
    fp4 = _vary(base, **{"model.weights": "fp4"})
    text = emit_deployment(fp4, "vllm").text
    assert "# model.weights = fp4" in text and "--quantization" not in text
    tiers = _vary(base, **{"cache.enabled": True, "cache.host.enabled": True, "cache.host.capacity_gb": 100})
    assert "# prefix-cache tiers host" in emit_deployment(tiers, "sglang").text
    small_chunks = _vary(base, **{"deployment.batching.chunk_tokens": 512})
    assert "# chunk_tokens = 512" in emit_deployment(small_chunks, "trtllm").text
    edge = emit_deployment(_presets()["edge-offload"], "vllm")
    assert "# edge pools site (deployment.edge): left out" in edge.text
    assert [pool for pool, _ in edge.commands] == ["datacenter"]
    policies = emit_deployment(_presets()["enterprise-mixed"], "sglang").text
    assert "# scheduler.queue = priority, scheduler.admission = early_reject: the router" in policies
    recompute = _vary(base, **{"scheduler.preemption": "recompute"})
    assert "scheduler.preemption" not in emit_deployment(recompute, "vllm").text  # what vLLM does
    assert "# scheduler.preemption = recompute: trtllm-serve" in emit_deployment(recompute, "trtllm").text
    assert "# scheduler.preemption = none (whole outputs" in emit_deployment(base, "sglang").text
    assert "scheduler.preemption" not in emit_deployment(base, "trtllm").text  # guaranteed-no-evict
    spec = _vary(base, **{"deployment.speculative": {"method": "mtp"}})
    text = emit_deployment(spec, "vllm").text
    assert "# speculative decoding (mtp): left out" in text and "--speculative-config" not in text


def test_prefix_cache_and_kv_precision_follow_the_scenario() -> None:
    base = _presets()["chat-colocated"]
    on = _vary(base, **{"cache.enabled": True, "model.kv": "bf16"})
    off = _vary(base, **{"cache.enabled": False, "model.kv": "fp8"})
    a_on = _parse("vllm", emit_deployment(on, "vllm").commands[0][1])
    a_off = _parse("vllm", emit_deployment(off, "vllm").commands[0][1])
    assert (a_on.opt_enable_prefix_caching, a_on.opt_kv_cache_dtype) == (True, "bfloat16")
    assert (a_off.opt_enable_prefix_caching, a_off.opt_kv_cache_dtype) == (False, "fp8")
    assert "--disable-radix-cache" not in emit_deployment(on, "sglang").commands[0][1]
    assert "--disable-radix-cache" in emit_deployment(off, "sglang").commands[0][1]


def test_a_native_fp8_checkpoint_needs_no_quantisation_flag() -> None:
    s = _vary(
        _presets()["chat-colocated"],
        **{
            "model.id": "deepseek-r1",
            "model.weights": "fp8",
            "deployment.pools[0].hardware": "h200",
            "deployment.pools[0].tp": 8,
        },
    )  # a deployment that holds it (emit refuses what a run refuses)
    argv = emit_deployment(s, "vllm").commands[0][1]
    assert argv[0] == "deepseek-ai/DeepSeek-R1" and "--quantization" not in argv


def test_bad_requests_are_refused_with_the_field() -> None:
    with pytest.raises(ScenarioError, match=r"deployment\.mode"):
        emit_deployment(_presets()["chat-colocated"], "dynamo")
    with pytest.raises(ScenarioError, match="stack: choose one of"):
        emit_deployment(_presets()["chat-colocated"], "ollama")


def test_yaml_writer_reads_back_as_written() -> None:
    doc = {"a": {"b": [1, 2.5, "x: y", True], "c": [], "d": {}}, "e": [{"f": "#not a comment", "g": None}]}
    assert yaml.safe_load(to_yaml(doc)) == doc


def test_catalog_models_name_their_hugging_face_checkpoint() -> None:
    models = load_catalog().models
    for m in models.values():
        if m.hf_id is not None:
            assert m.hf_id in m.source, f"{m.id}: hf_id {m.hf_id} is not the repository its source names"
    assert models["opt-175b"].hf_id is None  # released through metaseq, not on the Hub
    assert models["deepseek-r1"].hf_weights == "fp8" and models["llama-3.1-70b"].hf_weights == "bf16"


def test_chips_a_stack_cannot_drive_are_said_so() -> None:
    amd = _vary(_presets()["chat-colocated"], **{"deployment.pools[0].hardware": "mi300x"})
    with pytest.raises(ScenarioError, match="trtllm has no build for mi300x"):
        emit_deployment(amd, "trtllm")
    # the refused pool is named by its place among the scenario's pools, an edge pool before it counted
    edge = _presets()["edge-offload"]
    first, second = (p.model_dump() for p in edge.deployment.pools)
    swapped = _vary(edge, **{"deployment.pools": [second, first | {"hardware": "mi300x"}]})
    with pytest.raises(ScenarioError, match=r"deployment\.pools\[1\]\.hardware: trtllm has no build"):
        emit_deployment(swapped, "trtllm")
    assert "NVIDIA GPUs" not in emit_deployment(amd, "vllm").text  # vLLM and SGLang run on ROCm too
    wide = _presets()["moe-deepseek-dp-ep"]  # a 16-chip decode instance
    assert "# 16 chips span several 8-chip nodes" in emit_deployment(wide, "sglang").text
    assert (
        "multinode service of 2 pods of 8 GPUs" in emit_deployment(wide, "dynamo").text
    )  # test_emit_multinode


def test_a_capped_pool_s_export_says_the_power_limit_to_set() -> None:
    """power-capped-site: each H100 held to 500 W; every stack's export says so, an uncapped one does not."""
    for stack in ("vllm", "sglang", "trtllm", "dynamo", "llm-d"):
        text = emit_deployment(_presets()["power-capped-site"], stack).text
        assert text.count("nvidia-smi -pl 500") == 2, stack  # prefill and decode
        assert "nvidia-smi" not in emit_deployment(_presets()["chat-disaggregated"], stack).text


def test_vllm_gets_the_workloads_longest_request_and_says_what_it_refuses() -> None:
    """vLLM's max_model_len defaults to the model's context (131072 for Llama 3.1), and with chunked
    prefill off its scheduler config refuses a token budget below it: the export sets the length
    the workload can reach and says, without changing the modelled limits, what vLLM refuses."""
    base = _vary(
        _presets()["chat-colocated"],
        **{
            "workload.classes[0].input": {"kind": "uniform", "low": 100, "high": 12000},
            "workload.classes[0].output": {"kind": "constant", "tokens": 500},
            "workload.classes[0].prefix.tokens": 200,
        },
    )
    longest = 200 + 12000 + 500  # the shared prefix, longest prompt and output: past the 8192 budget
    a = _parse("vllm", emit_deployment(base, "vllm").commands[0][1])
    assert a.opt_max_model_len == longest
    off = _vary(base, **{"deployment.batching.chunked_prefill": False})
    emitted = emit_deployment(off, "vllm")
    a = _parse("vllm", emitted.commands[0][1])
    assert a.opt_enable_chunked_prefill is False
    assert a.opt_max_num_batched_tokens == off.batching().token_budget  # the modelled budget, kept
    assert f"must be at least --max-model-len ({longest}" in emitted.text
    assert "refuses" not in emit_deployment(base, "vllm").text
    wide = _vary(off, **{"deployment.batching.token_budget": longest})
    assert "refuses" not in emit_deployment(wide, "vllm").text
    many = _vary(base, **{"deployment.batching.max_batch": 4096, "deployment.batching.token_budget": 2048})
    assert "--max-num-seqs (4096) must not exceed" in emit_deployment(many, "vllm").text
    long = _vary(base, **{"workload.classes[0].input": {"kind": "lognormal", "mean": 2000, "p99": 9000}})
    # a lognormal's draws are clipped at its max_tokens only (1,048,576 unless set)
    a = _parse("vllm", emit_deployment(long, "vllm").commands[0][1])
    assert a.opt_max_model_len == load_catalog().model(base.model.id).max_context  # unbounded: capped
    split = _vary(_presets()["chat-disaggregated"], **{"deployment.batching.chunked_prefill": False})
    for stack in ("dynamo", "llm-d"):  # vLLM workers: the same refusal, said once
        assert emit_deployment(split, stack).text.count("vLLM refuses to start: with chunked") == 1
    trace = _presets()["azure-code-replay"]
    a = _parse("vllm", emit_deployment(trace, "vllm").commands[0][1])
    assert a.opt_max_model_len == 7841  # the trace's longest prompt and output in the window


def test_vllm_caps_each_request_s_prefill_at_the_chunk() -> None:
    """offline-batch models 4096-token chunks under a 16384-token budget: vLLM V1 caps one request's
    prefill a step at --long-prefill-token-threshold, so the chunk is that flag, not the budget."""
    s = _presets()["offline-batch"]
    lim = s.batching()
    assert (lim.chunk_tokens, lim.token_budget) == (4096, 16384)
    emitted = emit_deployment(s, "vllm")
    a = _parse("vllm", emitted.commands[0][1])
    assert (a.opt_long_prefill_token_threshold, a.opt_max_num_batched_tokens) == (4096, 16384)
    assert "chunk_tokens" not in emitted.text
    whole = _presets()["chat-colocated"]  # the chunk is the budget: no cap
    assert "--long-prefill-token-threshold" not in emit_deployment(whole, "vllm").commands[0][1]
    off = _vary(s, **{"deployment.batching.chunked_prefill": False})
    assert "--long-prefill-token-threshold" not in emit_deployment(off, "vllm").commands[0][1]


def test_llm_d_pods_get_the_guides_environment_and_shared_memory() -> None:
    """llm-d's P/D guide sets, on both roles, HF_TOKEN from a secret, NIXL's side channel on the pod's
    IP (vLLM's localhost default fails the handshake across pods) and a memory /dev/shm for NCCL."""
    s = _presets()["chat-disaggregated"]
    doc = emit_deployment(s, "llm-d").document
    assert doc is not None
    for role in doc["spec"]["roles"]:  # type: ignore[index]
        pod = role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
        (container,) = pod["containers"]
        env = {e["name"]: e["valueFrom"] for e in container["env"]}
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        assert env["HF_TOKEN"]["secretKeyRef"]["key"] == "HF_TOKEN"
        (mount,) = container["volumeMounts"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        assert mount["mountPath"] == "/dev/shm" and volume["emptyDir"]["medium"] == "Memory"
    shell = emit_deployment(s, "vllm").text
    assert "# prefill/decode across nodes: start each server with VLLM_NIXL_SIDE_CHANNEL_HOST" in shell
    assert "VLLM_NIXL_SIDE_CHANNEL_HOST" not in emit_deployment(_presets()["chat-colocated"], "vllm").text


def test_dynamo_says_it_swallows_eager_mode() -> None:
    """dynamo.vllm's own parser takes --enforce-eager (for diffusion models) before vLLM's sees it, so
    vLLM keeps CUDA graphs: the flag is left out of the workers' args and a comment says why."""
    eager = _vary(_presets()["chat-disaggregated"], **{"deployment.eager": True})
    emitted = emit_deployment(eager, "dynamo")
    assert "# deployment.eager: left out of the Dynamo workers' args" in emitted.text
    assert all("--enforce-eager" not in argv for _, argv in emitted.commands)
    assert all("--enforce-eager" in argv for _, argv in emit_deployment(eager, "llm-d").commands)
    assert "deployment.eager" not in emit_deployment(_presets()["chat-disaggregated"], "dynamo").text


def test_a_kv_cache_crossing_vendors_is_said_in_the_export_and_the_plan() -> None:
    """An H100-prefill, MI300X-decode choice was emitted with plain NixlConnector commands and nothing
    said (a review): the simulation prices the hand-off by the link alone."""
    import contextlib
    import dataclasses
    import io as text_io

    from engine.cli.plan_verdict import print_verdict
    from engine.planning import vendor_crossing
    from engine.planning.candidates import SearchSpace
    from engine.planning.plan import plan
    from engine.scenario.codec import apply_overrides, load_preset

    crossing = apply_overrides(load_preset("chat-disaggregated"), {"deployment.pools[1].hardware": "mi300x"})
    said = vendor_crossing(crossing)
    assert "prefill on NVIDIA (h100-sxm), decode on AMD (mi300x)" in said
    for stack in ("vllm", "llm-d"):  # (Dynamo has no build for the MI300X: refused)
        assert f"# {said}" in emit_deployment(crossing, stack).text
    same = apply_overrides(load_preset("chat-disaggregated"), {"deployment.pools[1].hardware": "h200"})
    assert vendor_crossing(same) == "" and "crosses" not in emit_deployment(same, "vllm").text
    assert vendor_crossing(load_preset("chat-colocated")) == ""
    # the plan's verdict says it under the choice (a small plan whose choice is swapped for the crossing one)
    space = SearchSpace(hardware=("h100-sxm",), tp=(2,), pp=(1,), duration_s=30.0, max_simulations=6)
    p = plan(load_preset("chat-disaggregated"), 8.0, space)
    assert p.best is not None and vendor_crossing(p.best) == ""
    out = text_io.StringIO()
    with contextlib.redirect_stdout(out):
        print_verdict(dataclasses.replace(p, best=crossing))
    assert said in out.getvalue()


def test_max_model_len_is_at_most_what_a_ranks_kv_cache_holds() -> None:
    """A 70B in FP8 on one H100 holds 18,176 tokens of KV: --max-model-len 20480 (the workload's longest
    request) made vLLM refuse to start (a review). It is capped there, and the note says why and, for a
    prefill pool, that prompts up to it pass."""
    from engine.scenario.resolve import resolve

    sc = _vary(
        _presets()["chat-disaggregated"], **{"deployment.pools[0].tp": 1, "deployment.pools[0].count": 6}
    )
    cap = next(p.instance.kv_capacity_tokens for p in resolve(sc).pools if p.spec.role == "prefill")
    emitted = emit_deployment(sc, "vllm")
    prefill = _parse("vllm", emitted.commands[0][1])
    assert prefill.opt_max_model_len == cap < 20480
    assert (
        f"--max-model-len {cap}, what a rank's KV cache holds" in emitted.text
        and "prompts up to" in emitted.text
    )
    decode = _parse("vllm", emitted.commands[1][1])
    assert decode.opt_max_model_len == 20480  # tp 2 holds the longest request whole


def test_llmd_spreads_a_data_parallel_replica_wider_than_a_node_over_a_group_of_pods() -> None:
    """moe-deepseek-dp-ep's decode instance is 16 H200s (dp 16): one pod asking for 16 GPUs cannot be
    placed. It is a LeaderWorkerSet group of two 8-GPU pods, each running its node's eight ranks from
    its worker index, as llm-d's wide-EP guide does; the flags its shell line adds are vLLM's."""
    from engine.planning.emit_manifests import MULTI_NODE

    emitted = emit_deployment(_presets()["moe-deepseek-dp-ep"], "llm-d")
    roles = {r["name"]: r["spec"]["leaderWorkerTemplate"] for r in emitted.document["spec"]["roles"]}
    decode, prefill = roles["decode"], roles["prefill"]
    assert (decode["size"], prefill["size"]) == (2, 1)
    pod = decode["workerTemplate"]["spec"]["containers"][0]
    assert pod["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert pod["command"][:2] == ["/bin/sh", "-c"] and "LWS_WORKER_INDEX:-0} * 8" in pod["command"][2]
    a = _parse("vllm", tuple(pod["args"]))
    assert (a.opt_data_parallel_size, a.opt_data_parallel_size_local, a.opt_data_parallel_hybrid_lb) == (
        16,
        8,
        True,
    )
    shell = re.findall(r"--[a-z-]+", MULTI_NODE)  # the flags only the shell line gives
    assert _parse("vllm", ("m", *(x for f in shell for x in (f, "1")))) is not None
    assert "LeaderWorkerSet group of 2 pods of 8 chips" in emitted.text and "by hand" not in emitted.text
    # tensor parallelism over nodes needs Ray, which the guide does not deploy: said, not written
    wide = _vary(
        _presets()["moe-deepseek-dp-ep"],
        **{"deployment.pools[1].tp": 16, "deployment.pools[1].dp": 1, "deployment.pools[1].ep": 16},
    )
    assert "by hand (LeaderWorkerSet size and Ray" in emit_deployment(wide, "llm-d").text


def test_an_autoscaled_pool_starts_warm_and_says_its_bounds() -> None:
    """day-autoscaled (1 to 8 instances a pool) was written as 8 copies, replicas 8: 32 H100s at $79.68/h for
    a run that billed $17.90/h, nothing said of autoscaling (a review)."""
    day = _presets()["day-autoscaled"]
    text = emit_deployment(day, "vllm").text
    assert "run 8 copies" not in text
    assert (
        "pool prefill: autoscaled between 1 and 8 instances (its autoscaler's bounds), 1 warm at the start: "
        "start 1 copy" in text
    )
    assert "in the run" not in text  # emit runs nothing (a review)
    assert (
        "up to 8 (1 warm) x h100-sxm" in emit_deployment(day, "dynamo").text
    )  # its header read '8 x h100-sxm'
    doc = emit_deployment(day, "dynamo").document
    workers = [s for s in doc["spec"]["services"].values() if s["componentType"] == "worker"]
    assert [w["replicas"] for w in workers] == [1, 1]
    said = emit_deployment(day, "llm-d").text
    assert "minReplicas 1 and maxReplicas 8" in said
    fixed = emit_deployment(_presets()["chat-disaggregated"], "vllm").text
    assert "autoscaled" not in fixed


def test_llmd_requests_each_vendors_resource_and_says_what_routing_lacks() -> None:
    """portfolio-chat-batch's MI300X role requested nvidia.com/gpu, nothing told its H100, H20 and MI300X
    roles' nodes apart, and its class pins were dropped unsaid (a review)."""
    mixed = _presets()["portfolio-chat-batch"]
    out = emit_deployment(mixed, "llm-d")
    roles = {r["name"]: r for r in out.document["spec"]["roles"]}
    container = roles["decode-batch"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][
        0
    ]
    assert set(container["resources"]["limits"]) == {"amd.com/gpu"}
    assert "this manifest requests NVIDIA GPUs" not in out.text
    assert "the roles run on different chips (h100-sxm, h20, mi300x): pin each to its nodes" in out.text
    # one chip too: its pods could land on another kind's nodes (a browser review)
    one = emit_deployment(_presets()["chat-disaggregated"], "dynamo").text
    assert "the roles run on h100-sxm: on a cluster of more than one chip kind, pin them to its nodes" in one
    assert (
        "class pins (chat -> decode-chat; batch -> decode-batch): no server flag routes by class" in out.text
    )
    assert "class pins" in emit_deployment(mixed, "vllm").text
    assert "class pins" not in emit_deployment(_presets()["chat-disaggregated"], "vllm").text


@pytest.mark.parametrize("stack", ["dynamo", "llm-d"])
def test_two_pools_that_would_share_a_manifest_name_are_refused_naming_both(stack: str) -> None:
    """'decode.a' and 'decode a' both became the Dynamo service VllmDecodeWorkerDecodeA (the second
    overwrote the first: a pool of six H20s left the manifest without a word) and two llm-d roles
    'decode-a' (a review)."""
    base = codec.load_preset("portfolio-chat-batch")
    clash = codec.apply_overrides(
        base,
        {
            "deployment.pools[2].hardware": "h100-sxm",  # (Dynamo has no AMD build)
            "deployment.pools[1].name": "decode.a",
            "deployment.pools[2].name": "decode a",
            "workload.classes[0].pools": ["decode.a"],
            "workload.classes[1].pools": ["decode a"],
        },
    )
    with pytest.raises(ScenarioError, match=r"pools 'decode\.a' and 'decode a' both become"):
        emit_deployment(clash, stack)
    apart = codec.apply_overrides(
        clash, {"deployment.pools[2].name": "decode b", "workload.classes[1].pools": ["decode b"]}
    )
    assert emit_deployment(apart, stack).document is not None  # distinct names still emit


def test_the_autoscalers_bounds_are_called_so_and_a_vendors_note_comes_once() -> None:
    """emit ran nothing yet said 'the run scaled it from 1 to 8' (day-autoscaled's run peaks at 4), and
    two pools on one TPU printed its device-plugin note twice (a review)."""
    text = emit_deployment(codec.load_preset("day-autoscaled"), "llm-d").text
    assert "the run scaled it" not in text and "autoscaler's bounds are 1 to 8 instances" in text
    tpus = codec.apply_overrides(
        _presets()["chat-disaggregated"],
        {
            "deployment.pools[0].hardware": "tpu-v6e",
            "deployment.pools[1].hardware": "tpu-v6e",
            "deployment.pools[0].tp": 4,
            "deployment.pools[1].tp": 4,
        },
    )
    assert emit_deployment(tpus, "llm-d").text.count("tpu-v6e (Google): its role requests") == 1
