"""No silent optimism: every chip's factors come by a stated rule, and the scenario says how sure it is."""

from __future__ import annotations

import numpy as np
import pytest

from engine.calibration import trust
from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.costmodel import stacks
from engine.costmodel.iteration import decode_cost, prefill_cost
from engine.costmodel.perf import Instance
from engine.scenario import codec as io
from engine.scenario.resolve import resolve
from engine.serving.run import simulate

STACKS = ("vllm", "sglang", "trtllm", "vllm-v0")


def test_every_catalog_chip_has_a_rule(catalog: Catalog) -> None:
    """A chip is fitted, shares a fitted chip's die, is illustrative, or is listed for transfer."""
    for hw in catalog.hardware.values():
        fitted = any(trust.is_fitted(p) for p in hw.profiles.values())
        assert fitted or hw.id in trust.SAME_SILICON or hw.illustrative or hw.id in trust.TRANSFER_CHIPS, (
            hw.id
        )
    # the tables name catalog chips only (a renamed chip cannot leave a stale rule behind)
    named = set(trust.TRANSFER_CHIPS) | {c for c in trust.SAME_SILICON if c in catalog.hardware}
    assert named <= set(catalog.hardware)
    for chip, sibling in trust.SAME_SILICON.items():
        if chip in catalog.hardware:
            assert sibling in catalog.hardware, (chip, sibling)


@pytest.mark.parametrize("stack", STACKS)
def test_every_chip_resolves_under_every_stack(catalog: Catalog, stack: str) -> None:
    for hw in catalog.hardware.values():
        prof, cal = trust.calibration(hw, stack, catalog)
        assert 0 < prof.eta_compute <= 1 and 0 < prof.eta_bandwidth <= 1
        assert cal.basis in ("fitted", "same_silicon", "other_stack", "illustrative", "transfer")
        if cal.basis != "fitted":  # a rule never claims to be surer than a fit
            fitted = trust.expected_errors("fitted")
            assert all(cal.expected_error[f] >= fitted[f] for f in fitted), (hw.id, stack)
        assert cal.fitted == (cal.basis == "fitted")
        assert cal.rule and set(cal.expected_error) >= {"throughput", "ttft", "tpot", "energy"}


def test_same_silicon_gives_the_same_timings(catalog: Catalog) -> None:
    """The H800 is an H100 with a cut-down NVLink: at tp=1 it must time exactly like the H100."""
    m = catalog.model("llama-3.1-8b")

    def inst(chip: str) -> Instance:
        spec, name, _ = trust.effective_chip(catalog.chip(chip), "vllm", catalog)
        return Instance(model=m, hardware=spec, tp=1, weights="fp8", kv="fp8", profile_name=name)

    h100, h800 = inst("h100-sxm"), inst("h800-sxm")
    assert float(decode_cost(h800, 32, 2048).time_s) == float(decode_cost(h100, 32, 2048).time_s)
    assert float(prefill_cost(h800, 4096).time_s) == float(prefill_cost(h100, 4096).time_s)

    # and the H20 and H200 run with the H100's fractions of their own peaks
    def factors(i: Instance) -> tuple[float, float, float]:
        return i.profile.eta_compute, i.profile.eta_bandwidth, i.profile.overhead_ms

    for chip in ("h20", "h200"):
        assert factors(inst(chip)) == factors(h100)


def test_unmeasured_chips_are_not_flattered(catalog: Catalog) -> None:
    """A transfer never gives more than the typical fitted chip of the stack, but for a newer die of a fitted
    chip's architecture, which takes that chip's fractions (`SAME_ARCHITECTURE`, tested with the catalog)."""
    fitted = [
        p
        for h in catalog.hardware.values()
        for s, p in h.profiles.items()
        if s == "vllm" and trust.is_fitted(p)
    ]
    median_c = float(np.median([p.eta_compute for p in fitted]))
    median_b = float(np.median([p.eta_bandwidth for p in fitted]))
    for chip in trust.TRANSFER_CHIPS:
        prof, cal = trust.calibration(catalog.chip(chip), "vllm", catalog)
        assert cal.basis == "transfer"
        if chip in trust.SAME_ARCHITECTURE:
            continue
        assert prof.eta_compute <= median_c and prof.eta_bandwidth <= median_b
        assert prof.overhead_ms >= min(p.overhead_ms for p in fitted)


def test_a_run_says_how_sure_it_is() -> None:
    calibrated = simulate(io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 20.0}))
    cal = calibrated.summary["calibration"]
    assert cal["prefill"]["fitted"] and cal["prefill"]["basis"] == "fitted"
    assert cal["prefill"]["expected_error"]["tpot"] > 0
    other = io.apply_overrides(
        io.load_preset("chat-disaggregated"), {"duration_s": 20.0, "deployment.pools[1].hardware": "l40s",
                                                "deployment.pools[1].tp": 4}
    )  # fmt: skip
    cal = simulate(other).summary["calibration"]["decode"]
    assert not cal["fitted"] and cal["basis"] == "transfer" and "transferred" in cal["rule"]
    assert cal["expected_error"]["tpot"] >= trust.expected_errors("fitted")["tpot"]


def test_a_fitted_chip_serving_a_moe_model_is_only_partly_calibrated(catalog: Catalog) -> None:
    """Its dense layers are its own fit; its experts run at terms fitted per stack, not per chip, so the
    mark says 'partly calibrated' (never plain 'calibrated'); an uncalibrated chip stays
    uncalibrated, a dense model on the fitted chip stays calibrated, and a profile with its own
    experts' rate (a user's fit of MoE rows) is calibrated."""
    from engine.explain import confidence

    h200 = catalog.chip("h200")
    _, moe = trust.calibration(h200, "trtllm", catalog, moe=True)
    _, dense = trust.calibration(h200, "trtllm", catalog)
    _, other = trust.calibration(h200, "vllm", catalog, moe=True)
    assert moe.fitted and moe.partial and moe.mark == "partly calibrated"
    assert moe.label().startswith("partly calibrated (") and moe.as_dict()["partial"] is True
    assert confidence.describe(moe).startswith("partly calibrated under TensorRT-LLM") and "experts at" in (
        confidence.describe(moe)
    )
    assert confidence.short_mark(moe).startswith("partly calibrated: ")
    assert not dense.partial and dense.mark == "calibrated" and dense.as_dict()["partial"] is False
    assert not other.fitted and not other.partial and other.mark == "uncalibrated"
    refit = h200.profile("trtllm").model_copy(update={"eta_experts": 1.0, "source": "fitted to my MoE rows"})
    own = h200.model_copy(update={"profiles": {**h200.profiles, "mine": refit}, "default_profile": "mine"})
    _, mine = trust.calibration(own, "trtllm", catalog, moe=True, custom=True)
    assert mine.fitted and not mine.partial and mine.mark == "calibrated"
    # a run is as sure as its least sure pool
    marks = [confidence.PoolMark("a", "prefill", c) for c in (dense, moe)]
    assert (
        confidence.run_mark(marks[:1]) == "calibrated" and confidence.run_mark(marks) == "partly calibrated"
    )
    marks.append(confidence.PoolMark("b", "decode", other))
    assert confidence.run_mark(marks) == "uncalibrated"


def test_stack_defaults_apply_unless_the_scenario_sets_them() -> None:
    base = io.load_preset("chat-disaggregated")
    assert base.deployment.stack == "vllm"
    b = base.batching()
    assert (b.max_batch, b.token_budget, b.chunked_prefill) == (1024, 8192, True)  # vLLM on an 80 GB chip
    trt = io.apply_overrides(base, {"deployment.stack": "trtllm"}).batching()
    assert (trt.max_batch, trt.token_budget) == (2048, 8192)
    l4 = io.apply_overrides(base, {"deployment.pools[0].hardware": "l4"}).batching()
    assert (l4.max_batch, l4.token_budget) == (256, 2048)
    v0 = io.apply_overrides(base, {"deployment.stack": "vllm-v0"}).batching()
    assert (v0.max_batch, v0.chunked_prefill) == (256, False)
    own = io.apply_overrides(
        base, {"deployment.stack": "trtllm", "deployment.batching.max_batch": 64}
    ).batching()
    assert (own.max_batch, own.token_budget) == (64, 8192)


def test_kv_precision_follows_the_stack_when_unset() -> None:
    base = io.apply_overrides(io.load_preset("chat-disaggregated"), {"model.kv": None})
    assert base.model.weights == "fp8"
    assert base.kv_precision() == stacks.kv_default("vllm", "fp8") == "bf16"
    assert io.apply_overrides(base, {"deployment.stack": "trtllm"}).kv_precision() == "fp8"
    assert io.apply_overrides(base, {"model.kv": "fp8"}).kv_precision() == "fp8"


def test_tensorrt_llm_is_refused_on_other_vendors() -> None:
    sc = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {"deployment.stack": "trtllm", "deployment.pools[0].hardware": "mi300x"},
    )
    with pytest.raises(ScenarioError, match=r"deployment\.stack: 'trtllm' runs on NVIDIA GPUs only"):
        resolve(sc)


def test_a_custom_chip_keeps_its_own_profile(catalog: Catalog) -> None:
    # a design of its own (a faster memory): a whole copy runs as the chip it copies (below)
    h = catalog.chip("l40s").model_copy(update={"id": "my-l40s", "memory_tb_s": 1.2})
    sc = io.apply_overrides(io.load_preset("chat-colocated"), {"deployment.pools[0].hardware": "my-l40s",
                                                               "deployment.pools[0].tp": 4})  # fmt: skip
    sc = sc.model_copy(update={"custom_hardware": (h,)})
    pool = resolve(sc).pools[0]
    assert pool.instance.profile == h.profile() and pool.calibration.basis == "assumed"


def test_a_transfer_counts_a_shared_fit_once(catalog: Catalog) -> None:
    """H100 and H200 share one TensorRT-LLM fit: with B200's that is two distinct fits, fewer than
    a transfer takes its quartiles from, so it uses every stack's; the cross-validation's rule
    (built from the fits themselves) gives the same profile."""
    from engine.calibration import calibrate, crossval, reference

    cat = catalog
    fitted = {
        h.profiles["trtllm"]
        for h in cat.hardware.values()
        if "trtllm" in h.profiles and trust.is_fitted(h.profiles["trtllm"])
    }
    assert len(fitted) < trust.MIN_TRANSFER_POOL
    prof = trust.transfer_profile(cat, "trtllm")
    assert "every stack" in prof.source
    fits = calibrate.reference_fits(reference.usable_points(cat), cat)
    ruled, basis = crossval.rule_profile("tpu-v5e", "trtllm", fits)
    assert basis == "transfer"
    assert (ruled.eta_compute, ruled.eta_bandwidth, ruled.overhead_ms) == (
        prof.eta_compute, prof.eta_bandwidth, prof.overhead_ms,
    )  # fmt: skip


def test_a_copy_of_a_chip_that_changed_only_its_price_keeps_the_chips_calibration() -> None:
    """'What if H100s rented for $1.99?' needs a custom chip: one that differs from a catalog chip
    in price and name alone runs as that chip and is as sure; one that changed a spec is the
    user's own design, marked as its profile's source says."""
    from engine.catalog.entries import load_catalog
    from engine.explain.previews import custom_chip
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.scenario.resolve import resolve, scenario_catalog

    cat = load_catalog()
    base = cat.chip("h100-sxm")
    base_prof, base_cal = trust.calibration(base, "vllm", cat)
    fractions = {"eta_compute": base_prof.eta_compute, "eta_bandwidth": base_prof.eta_bandwidth,
                 "overhead_ms": base_prof.overhead_ms}  # fmt: skip
    cheap = custom_chip(base, "my-h100", "Cheap H100", {"usd_per_hour": 1.99}, dict(base.tflops), fractions)
    sc = load_preset("chat-disaggregated")
    mine = apply_overrides(sc, {"custom_hardware": [cheap.model_dump(mode="json", by_alias=True, exclude_none=True)],
                                "deployment.pools[0].hardware": "my-h100", "deployment.pools[1].hardware": "my-h100"})  # fmt: skip
    scat = scenario_catalog(mine)
    assert trust.speed_twin(scat.chip("my-h100"), "vllm", scat) is not None
    prof, cal = trust.calibration(scat.chip("my-h100"), "vllm", scat, custom=True)
    assert cal.fitted and cal.expected_error == base_cal.expected_error and cal.hardware == "my-h100"
    assert "a copy of h100-sxm" in cal.rule
    assert (prof.eta_compute, prof.eta_bandwidth, prof.overhead_ms) == tuple(fractions.values())
    assert [p.calibration.basis for p in resolve(mine).pools] == ["fitted", "fitted"]
    # a faster memory is a design of one's own: the user's numbers, marked so
    fast = custom_chip(base, "my-h100", "Faster H100", {"memory_tb_s": 4.0}, dict(base.tflops), fractions)
    fcat = scenario_catalog(apply_overrides(mine, {"custom_hardware": [fast.model_dump(mode="json", by_alias=True, exclude_none=True)]}))  # fmt: skip
    assert trust.speed_twin(fcat.chip("my-h100"), "vllm", fcat) is None
    assert not trust.calibration(fcat.chip("my-h100"), "vllm", fcat, custom=True)[1].fitted
    # so are other fractions than the chip's under the stack
    slow = custom_chip(base, "my-h100", "H100", {}, dict(base.tflops), {**fractions, "eta_bandwidth": 0.5})
    scat2 = scenario_catalog(apply_overrides(mine, {"custom_hardware": [slow.model_dump(mode="json", by_alias=True, exclude_none=True)]}))  # fmt: skip
    assert trust.speed_twin(scat2.chip("my-h100"), "vllm", scat2) is None


def test_a_catalog_entry_copied_whole_runs_its_stack_profile_as_the_chip_does() -> None:
    """A catalog chip's entry copied whole into custom_hardware under a new id ran its default
    profile (TensorRT-LLM's) under vLLM, 'pinned for vLLM (no vLLM fit)', 17% slower per token than
    the chip it copied (a review): a custom chip runs the profile named for the stack where it has one."""
    from engine.catalog.entries import load_catalog
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.scenario.resolve import scenario_catalog
    from engine.serving.run import simulate

    entry = load_catalog().chip("h100-sxm").model_dump(mode="json", by_alias=True, exclude_none=True)
    assert entry["default_profile"] != "vllm" and "vllm" in entry["profiles"]  # the case
    sc = load_preset("chat-disaggregated")
    copy = apply_overrides(sc, {"custom_hardware": [{**entry, "id": "h100a", "name": "h100a"}],
                                "deployment.pools[0].hardware": "h100a", "deployment.pools[1].hardware": "h100a",
                                "duration_s": 60.0})  # fmt: skip
    mine, theirs = simulate(copy).summary, simulate(apply_overrides(sc, {"duration_s": 60.0})).summary
    assert mine["latency_ms"] == theirs["latency_ms"]
    assert "a copy of h100-sxm" in mine["calibration"]["prefill"]["rule"]
    # every chip under every stack: an H200 copy ran its TensorRT-LLM profile under vLLM, an MI300X copy
    # its assumed default (a read-through): a whole copy runs, and is banded, as its chip
    cat = load_catalog()
    for chip in cat.hardware.values():
        if chip.illustrative:
            continue
        whole = {
            **chip.model_dump(mode="json", by_alias=True, exclude_none=True),
            "id": "copy",
            "name": "copy",
        }
        scat = scenario_catalog(apply_overrides(sc, {"custom_hardware": [whole]}))
        for stack in ("vllm", "sglang", "trtllm"):
            p, c = trust.calibration(scat.chip("copy"), stack, scat, custom=True)
            q, d = trust.calibration(chip, stack, cat)
            fractions = (p.eta_compute, p.eta_bandwidth, p.overhead_ms)
            assert fractions == (q.eta_compute, q.eta_bandwidth, q.overhead_ms), (chip.id, stack)
            assert (c.basis, c.band) == (d.basis, d.band), (chip.id, stack)


def test_the_moe_terms_fall_back_pair_stack_vendor_shared_with_the_span_apart() -> None:
    """One rule picks a point's MoE terms, for the fit in memory and the shipped tables alike."""
    from engine.calibration import moe_fit
    from engine.calibration.trust import EXPERTS_KEYS, pick_experts_terms

    assert moe_fit.TERMS == EXPERTS_KEYS
    shared = {"eta_experts": 0.5, "eta_experts_compute": 0.2, "moe_layer_ms": 0.1, "span_step_ms": 3.0}
    stack = {"eta_experts": 0.6, "eta_experts_compute": 0.3, "moe_layer_ms": 0.2, "span_step_ms": 8.0}
    pair = {"eta_experts": 0.7, "eta_experts_compute": 0.4, "moe_layer_ms": 0.3}  # no rows over machines
    vendor = {"eta_experts": 0.9, "eta_experts_compute": 0.9, "moe_layer_ms": 0.9}
    assert pick_experts_terms(shared, stack, pair, vendor) == {**pair, "span_step_ms": 8.0}
    assert pick_experts_terms(shared, stack, None, vendor) == stack
    assert pick_experts_terms(shared, None, None, vendor) == {**vendor, "span_step_ms": 3.0}
    assert pick_experts_terms(shared, None, None, None) == shared
    assert pick_experts_terms({}, None, None, None) == {}  # before the terms are generated


def test_a_pinned_fit_of_another_stack_is_as_sure_as_one_borrowed(catalog: Catalog) -> None:
    """Pinning the H100's TensorRT-LLM fit under SGLang read 'calibrated under SGLang', with the fitted
    band (a review): it is another stack's fit, marked and banded as the rule's borrowing is."""
    h100 = catalog.chip("h100-sxm")
    _, pinned = trust.calibration(h100, "sglang", catalog, "trtllm")
    assert pinned.basis == "other_stack" and not pinned.fitted and "pinned for SGLang" in pinned.rule
    _, own = trust.calibration(h100, "trtllm", catalog, "trtllm")
    assert own.basis == "fitted"  # the same fit under its own stack stays fitted
    # vLLM on a 910B runs vLLM-Ascend: its fit pinned there is its own
    _, ascend = trust.calibration(catalog.chip("ascend-910b"), "vllm", catalog, "vllm-ascend")
    assert ascend.basis == "fitted"


def test_a_band_is_no_narrower_than_a_surer_basis_or_its_median_miss(catalog: Catalog) -> None:
    """Another stack's fit showed a narrower band than the chip's own fit, and a TPOT band of -26% to
    +10% beside a median miss of 32% (a review): a band holds its basis' median miss on each side, and
    another stack's fit (of another chip: the same silicon's too) the band of the surer basis."""
    for chip in ("h100-sxm", "h200"):
        _, fitted = trust.calibration(catalog.chip("h100-sxm"), "vllm", catalog)
        _, other = trust.calibration(catalog.chip(chip), "sglang", catalog)
        assert other.basis == "other_stack"
        for kind, (lo, hi) in other.band.items():
            flo, fhi = fitted.band[kind]
            assert lo <= flo and hi >= fhi, (chip, kind)
            e = other.expected_error[kind]
            assert lo <= 1 - e + 1e-9 and hi >= 1 + e - 1e-9, (chip, kind)
    _, twin = trust.calibration(catalog.chip("h200"), "vllm", catalog)
    _, both = trust.calibration(catalog.chip("h200"), "sglang", catalog)
    assert all(both.band[k][0] <= lo and both.band[k][1] >= hi for k, (lo, hi) in twin.band.items())
    # a transfer (the A100's) no narrower than the same silicon's on either side: its TPOT read -30% to
    # +67% beside the H200's -44% to +64% (a review)
    _, transfer = trust.calibration(catalog.chip("a100-80g"), "vllm", catalog)
    assert transfer.basis == "transfer"
    assert all(transfer.band[k][0] <= lo and transfer.band[k][1] >= hi for k, (lo, hi) in twin.band.items())
