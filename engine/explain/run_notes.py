"""What qualifies a run's figures, in words: one list for the CLI's report, `run --json` and Python.

The CLI's text report said these lines before its figures (a fault that never fired, a field the
load's kind does not use, a window measured while sessions ramp up, a queue that grows), while
`run --json` and `engine.simulate`'s result said none of them: a notebook user ran a fault set after
the run's end and read its figures as the drill's (a review). `notes(result)` (``engine.notes``) and
`run --json`'s ``notes`` give the same sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.explain import sustain
from engine.explain.timeline_marks import fault_notes
from engine.explain.trace_files import trace_notes
from engine.scenario.crossing import vendor_crossing_note
from engine.scenario.workload import arrival_unused_with_trace

if TYPE_CHECKING:
    from engine.scenario.model import Scenario
    from engine.serving.run import SimResult
    from engine.serving.traces import TraceWindow


def scenario_notes(
    scenario: Scenario, doc: Mapping[str, Any], window: TraceWindow | None = None
) -> list[str]:
    """What the scenario as written will not do in the run of `doc` (its summary): faults that never
    fire or take fewer instances than they name, arrival fields and a warm-up the load's kind ignores,
    of a trace the arrival fields it does not read and (`window`: how its file met the run's window,
    `SimResult.extra`) the rows the window leaves out, its idle tail and arrivals too dense for their
    unit, and a KV hand-off between chip vendors, which the run prices by the link alone."""
    out = fault_notes(scenario, doc.get("drain_end_s"))
    if scenario.workload.trace is not None:  # how the file meets the window, as the Workload page says
        out += trace_notes(window, scenario) if window is not None else []
        arr = scenario.workload.arrival  # set, and not read: the file gives the arrivals
        out += [
            f"workload.arrival.{n} ({_said(getattr(arr, n))}) is not used with a trace: its arrivals come "
            "from the file (workload.trace.time_scale replays it faster or slower)"
            for n in arrival_unused_with_trace(scenario.workload)
        ]
    else:  # set, and not used by the kind
        arr = scenario.workload.arrival
        kind = {"offline": "an offline batch", "closed_loop": "a closed loop"}.get(
            arr.kind, f"a {arr.kind} load"
        )
        out += [f"workload.arrival.{n} ({getattr(arr, n)}) is not used by {kind}" for n in arr.unused()]
        out += [f"workload.arrival.{n} is not used by a {arr.shape!r} shape" for n in arr.unused_by_shape()]
        if arr.kind in ("offline", "closed_loop") and scenario.warmup_s > 0:  # (unsaid: a review)
            out.append(f"warmup_s ({scenario.warmup_s:g}) is not used by {kind}: its whole run is measured")
    if crossing := vendor_crossing_note(scenario):  # `emit` alone said it (a hardware strategist's review)
        out.append(crossing)
    if scenario.deployment.stack == "vllm" and not scenario.batching().chunked_prefill:  # (`emit` said it)
        from engine.planning.emit_facts import unchunked_start_note

        out += [n] if (n := unchunked_start_note(scenario)) else []
    return out + span_notes(scenario) + precision_notes(scenario)


def precision_notes(scenario: Scenario) -> list[str]:
    """Each chip of the deployment without a peak at the weights' precision: its matrix multiplies fall back
    to a wider one (`HardwareSpec.compute_precision`), the weights read at their own width. fp8 weights on
    an Ascend 910B, or fp4 on an H100, ran with nothing said (a hardware strategist's review)."""
    weights = scenario.model.weights
    out: list[str] = []
    if weights not in ("fp8", "fp4"):  # bf16 weights, and int4 (weight-only by design), are not said
        return out
    seen = set()
    for i, p in enumerate(scenario.deployment.pools):
        chip = scenario.chip(p.hardware)
        if chip is None or p.hardware in seen:
            continue
        seen.add(p.hardware)
        if (used := chip.compute_precision(weights)) != weights:
            out.append(
                f"deployment.pools[{i}].hardware: {p.hardware} has no {weights} peak, so its {weights} weights are "
                f"modelled weight-only (read at {weights}, multiplied at {used}); check that the serving stack "
                f"runs {weights} weights on it at all"
            )
    return out


def _said(value: Any) -> str:
    """A field's value as a note shows it: a schedule of points by its length."""
    return f"{len(value)} points" if isinstance(value, tuple) else str(value)


def span_notes(scenario: Scenario) -> list[str]:
    """Each pool whose tensor-parallel group is wider than its chip's scale-up domain: its all-reduces
    cross the network at every layer (a TP64 of H100s over eight machines ran with nothing said)."""
    from engine.costmodel.scale_out import SCALE_OUT_LATENCY_US, machines, scale_out_hops, spans_machines

    out = []
    for i, p in enumerate(scenario.deployment.pools):
        chip = scenario.chip(p.hardware)
        if chip is None or not spans_machines(chip, p.tp):
            continue
        wait, over = SCALE_OUT_LATENCY_US * scale_out_hops(chip, p.tp), machines(chip, p.tp)
        out.append(
            f"deployment.pools[{i}] ({p.role}): its TP group of {p.tp} {p.hardware} spans {over} machines of "
            f"{chip.scale_up_domain} chips, so each layer's two all-reduces cross the network, at least "
            f"{wait:g} µs each; instances of at most {chip.scale_up_domain} chips keep them inside a machine"
        )
    return out


def load_notes(scenario: Scenario | None, doc: Mapping[str, Any]) -> list[str]:
    """What the run's load did to its figures: a queue that grows through the window or still rose at
    its end, and (with its `scenario`) a window measured while sessions ramp up."""
    out = []
    if (said := sustain.line(doc) or sustain.rising_line(doc)) is not None:
        out.append(said)
    if scenario is not None and (ramp := sustain.ramp_line(scenario, sustain.mean_e2e_s(doc))):
        out.append(ramp[0])
    return out


def notes(result: SimResult) -> list[str]:
    """The sentences that qualify `result`'s figures, as the CLI's report says them before its figures
    (an empty list when nothing does); what admission, preemption and faults did is in its summary's
    figures (`requests.rejected_by_reason` and the like), which the report lists after them."""
    doc = result.summary
    win = result.extra.get("trace_window")
    return scenario_notes(result.scenario, doc, win) + load_notes(result.scenario, doc)
