"""The catalog-entry commands: ``roofline`` (a model on one instance), ``import-model`` (a Hugging
Face config.json to an entry) and ``calibrate`` (a chip's profile fitted to measured timings)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from engine.catalog.entries import (
    entry_to_toml,
    load_catalog,
    model_from_hf_config,
    presets_dir,
    shared_catalog,
    unknown_text,
)
from engine.catalog.specs import ID_PATTERN, HardwareSpec
from engine.cli.common import check_range, emit_json
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.costmodel.perf import Instance
from engine.explain.compare_table import minus


def cmd_roofline(args: argparse.Namespace) -> int:
    """Prefill and decode of a model on one instance: times, bounds, the roofline's ridge."""
    from engine.calibration import trust
    from engine.costmodel import stacks
    from engine.costmodel.roofline import report
    from engine.explain import confidence

    cat = load_catalog()
    # the flag named, as plan's refusal and roofline's own --tp name theirs (a review)
    for flag, name, known in (
        ("--model", args.model, cat.models),
        ("--hardware", args.hardware, cat.hardware),
    ):
        if name not in known:
            raise ScenarioError(f"{flag}: {unknown_text(flag[2:], name, known)}")
    model = cat.model(args.model)
    # the layouts a scenario's run accepts, not a figure for one it refuses (a review: --tp 3 printed)
    check_range(args.tp, "--tp", 1, bounds.MAX_TP)
    check_range(args.pp, "--pp", 1, bounds.MAX_PP)
    if split := stacks.tp_split_problem(model, args.tp):
        raise ScenarioError(f"--tp: {split}")
    if only := stacks.runs_only_on(args.stack, cat.chip(args.hardware)):  # as a run refuses it (a review)
        raise ScenarioError(
            f"--stack: {stacks.STACK_NAMES.get(args.stack, args.stack)} runs on {only}; --hardware is "
            f"{args.hardware!r}. Choose another stack or chip"
        )
    # the profile (given or the stack's by rule), with a MoE model's experts' factor, as a run uses it
    chip, name, cal = trust.effective_chip(
        cat.chip(args.hardware), args.stack, cat, args.profile, moe=model.moe is not None
    )
    budget = stacks.defaults(args.stack, chip).token_budget  # the stack's, as a scenario's run keeps room for
    inst = Instance(
        model=model,
        hardware=chip,
        tp=args.tp,
        pp=args.pp,
        weights=args.weights,
        kv=args.kv,
        profile_name=name,
        activation_tokens=stacks.activation_tokens(args.stack, budget),
    )
    rep = report(inst)
    # with the calibration the text prints (the profile's own stack and band read null: a review)
    if args.json:
        bands = {k: list(v) for k, v in confidence.real_bands(cal).items()}
        calibration = {"stack": args.stack, "mark": cal.mark, "calibrated": cal.fitted, "rule": cal.rule}
        emit_json({**rep, "calibration": {**calibration, "bands": bands, "text": confidence.describe(cal)}})
        return 0
    print(
        f"{inst.model.name} on {inst.chips} x {inst.hardware.name}"
        + (f" (tp{inst.tp} x pp{inst.pp})" if inst.pp > 1 else "")
        + f" ({args.weights} weights, {args.kv} KV)"
    )
    # how sure, as a run's pool line says ("profile vllm" alone read as a name --profile takes: a review)
    print(f"calibration: {confidence.describe(cal)}")
    print(_memory_line(inst, rep))
    if rep["kv_capacity_tokens"] == 0:  # no times for what cannot run: it printed 'compute'-bound prefills
        print("the weights do not fit: raise --tp, add pipeline stages (--pp) or lower --weights precision")
        print("(no prefill or decode times: an instance that cannot hold its weights runs nothing)")
        return 0
    # a pipeline's stages in turn (`IterationCost.pipeline_s`): the time compute and memory leave
    staged = inst.pp > 1
    print("\nprefill (one prompt alone)")
    print(
        f"{'prompt':>8} {'time ms':>9} {'compute':>9} {'memory':>9}"
        + (f" {'pipeline':>9}" if staged else "")
        + f" {'FLOP/B':>8}  bound"
    )
    for r in rep["prefill"]:
        print(
            f"{r['prompt_tokens']:8d} {r['time_ms']:9.2f} {r['compute_ms']:9.2f} {r['memory_ms']:9.2f}"
            + (f" {r['pipeline_ms']:9.2f}" if staged else "")
            + f" {r['intensity_flops_per_byte']:8.0f}  {r['bound']}"
        )
    _print_decode(rep["decode"], staged)
    return 0


def _print_decode(rows: list[dict[str, Any]], staged: bool) -> None:
    """`roofline`'s decode table: one step's times per batch and context, none where the KV does not fit."""
    print("\ndecode (one step)")
    print(
        f"{'batch':>6} {'context':>8} {'time ms':>9} {'compute':>9} {'memory':>9}"
        + (f" {'pipeline':>9}" if staged else "")
        + f" {'tok/s':>9}  bound"
    )
    for r in rows:
        if r["time_ms"] is None:  # its KV does not fit: no times for a batch that cannot be resident
            dash = f"{'-':>9} " * (4 + staged)
            print(f"{r['batch']:6d} {r['context_tokens']:8d} {dash} does not fit: {r['max_batch']:,} at most")
            continue
        print(
            f"{r['batch']:6d} {r['context_tokens']:8d} {r['time_ms']:9.2f} {r['compute_ms']:9.2f} "
            f"{r['memory_ms']:9.2f}"
            + (f" {r['pipeline_ms']:9.2f}" if staged else "")
            + f" {r['tokens_per_s']:9.0f}  {r['bound']}"
        )


def landing(low: float, high: float) -> str:
    """A held-out band of ratios predicted / measured as a run prints it: where the measured figure lands
    around the model's ('+0.7% to +10.0%' for ratios 0.909 to 0.993). Calibrate printed the model's miss,
    '-9.1% to -0.7%', beside run's '+1% to +10%' for the same profile (a review)."""
    return minus(f"{1 / high - 1:+.1%}") + " to " + minus(f"{1 / low - 1:+.1%}")


def new_entry_id(args: argparse.Namespace) -> str:
    """The calibrated entry's id (`--new-id`, else <chip>-<profile>), refused where the catalog would
    refuse it or where it is a shipped chip's: an entry named h100-sxm holding an L40S's fit ran every
    h100-sxm pool at the L40S's speed and price under the H100's name (a review)."""
    new_id = args.new_id or f"{args.hardware}-{args.profile}"
    flag = "--new-id" if args.new_id else "--profile"
    if not re.fullmatch(ID_PATTERN, new_id):
        raise ScenarioError(
            f"{flag}: the entry's id {new_id!r} must be lowercase letters, digits, '.', '_' or '-' (at most 64, "
            "starting with a letter or digit)"
        )
    if new_id in shipped_ids("hardware"):
        raise ScenarioError(f"{flag}: {new_id!r} is a shipped chip's id; give your entry its own")
    return new_id


def shipped_ids(folder: str) -> set[str]:
    """The ids of the shipped catalog's entries of `folder` (hardware or models): its parsed catalog's,
    which `shared_catalog` caches."""
    shipped = shared_catalog(presets_dir())
    return set(shipped.hardware if folder == "hardware" else shipped.models)


def cmd_import_model(args: argparse.Namespace) -> int:
    """A Hugging Face config.json turned into a model catalog entry."""
    if args.id in shipped_ids("models"):  # (it would replace the shipped model under its name)
        raise ScenarioError(f"--id: {args.id!r} is a shipped model's id; give your entry its own")
    spec = model_from_hf_config(Path(args.config), args.id, args.name)
    return write_or_print(entry_to_toml(spec), args.out, spec.id, "models")


def write_or_print(text: str, out: str | None, entry_id: str = "", folder: str = "hardware") -> int:
    """Write text to `out` (saying so on stderr), or to stdout. An entry (`entry_id`, of the catalog's
    `folder`) written under another name is told where a catalog directory takes it: the catalog refuses
    a file whose name is not its id (the README's `--out /tmp/h100-mine.toml` wrote `h100-sxm-mine`, and
    import-model said nothing of it: reviews)."""
    if out:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"--out {out}: cannot write ({exc.strerror or type(exc).__name__})") from None
        where = (
            f" (entry {entry_id}: in a FENGONG_CATALOG directory it goes as {folder}/{entry_id}.toml)"
            if entry_id and Path(out).stem != entry_id
            else ""
        )
        print(f"wrote {out}{where}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _thin(n: int) -> str:
    """A fit's warning where it has no more points than the factors it fits, else ''."""
    from engine.observe.fit import FITTED_FACTORS

    if n > FITTED_FACTORS:
        return ""
    return (
        f"a thin fit ({n} point{'s' if n != 1 else ''} for {FITTED_FACTORS} factors): it passes through them "
        "whatever the chip does elsewhere and says little of other loads; measure other batch sizes and lengths "
        "before trusting it"
    )


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit a chip's profile to measured timings and print (or write) the new catalog entry."""
    from engine.calibration import own_fit
    from engine.explain import report

    cat = load_catalog()
    if args.reference:
        from engine.cli.validate import cmd_calibrate_reference

        return cmd_calibrate_reference(args)
    if args.measurements and not (len(args.measurements) == 1 and args.measurements[0].endswith(".csv")):
        from engine.cli.observe import cmd_calibrate_files  # benchmark results (engine.observe)

        return cmd_calibrate_files(args)
    if not args.measurements or not args.hardware:
        raise ScenarioError("calibrate: give a measurements CSV and --hardware (or --reference)")
    new_id = new_entry_id(args)  # before the fit: a bad name died in a traceback after it (a review)
    csv = args.measurements[0]
    try:
        if (size := Path(csv).stat().st_size) > report.MAX_MEASUREMENT_BYTES:  # its size, not the part read
            raise ScenarioError(f"{csv}: {size:,} bytes; the limit is {report.MAX_MEASUREMENT_BYTES:,}")
        with open(csv, "rb") as f:  # never more than the limit and one byte (a file may grow meanwhile)
            data = f.read(report.MAX_MEASUREMENT_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{csv}: cannot read ({exc.strerror or type(exc).__name__})") from None
    # the checks the dashboard's upload makes, each naming its line and column (a review: the command read
    # a batch of -8 and a prompt of 10^11 tokens, fitted them and wrote the profile; Latin-1 text crashed)
    every = report.parse_measurements(data, csv, cat)
    points = [m for m in every if m.hardware == args.hardware]
    if not points:
        raise ScenarioError(f"calibrate: no rows for hardware {args.hardware!r} in {csv}")
    if others := sorted({m.hardware for m in every} - {args.hardware}):  # (they were dropped unsaid)
        n = len(every) - len(points)
        print(
            f"set aside {n:,} row{'s' if n != 1 else ''} of other chips ({', '.join(others)})",
            file=sys.stderr,
        )
    args.stack = args.stack or "vllm"  # a CSV of timings names no server
    result = own_fit.fit_own(points, cat, Path(csv).name, args.stack)  # the user's own, under --stack
    # each figure in its unit, to the measurement's digits (a prediction read 34.759934 beside 31.09: a review)
    shown = result.table[["id", "point", "measured", "predicted", "unit", "error"]].copy()
    # the measured as given (to six figures: '1675.00' stood beside '1,605'), the errors signed as every
    # command signs them ('−3.8%', not '-3.8%': a CLI review)
    shown["measured"] = shown["measured"].map(lambda v: f"{v:,.6g}")
    shown["predicted"] = shown["predicted"].map(lambda v: f"{v:,.4g}")
    shown["error"] = shown["error"].map(lambda e: minus(f"{e:+.1%}"))
    print(shown.to_string(index=False), file=sys.stderr)
    print(
        f"{args.hardware}/{args.profile}: eta_compute {result.profile.eta_compute}, eta_bandwidth "
        f"{result.profile.eta_bandwidth}, overhead {result.profile.overhead_ms} ms per 80 layers; median |error| "
        f"{result.median_abs_error:.1%}",
        file=sys.stderr,
    )
    if problem := result.problem():  # measurements no profile meets, said before the entry is written
        print(f"warning: {problem}", file=sys.stderr)
    if thin := _thin(len(points)):  # as a benchmark file's fit says it (a one-row CSV said nothing: a review)
        print(f"warning: {thin}", file=sys.stderr)
    band = result.profile.band
    # as a run prints the band, where the measured figure lands around the prediction: it printed the
    # model's miss (predicted / measured - 1), 'tpot -9.1% to -0.7%' where `run` read 'TPOT +1% to +10%'
    held = (
        "no held-out error (one point)"
        if band is None
        else "; ".join(f"{f} {landing(lo, hi)}" for f, (lo, hi) in band.items())
        or "too few held-out points for a band (three per figure)"
    )
    print(
        f"marked as your own calibration under {args.stack}; held-out band (where measured figures land around "
        f"the model's, as a run shows it): {held}",
        file=sys.stderr,
    )
    chip = cat.chip(args.hardware)
    profiles = {**chip.profiles, args.profile: result.profile}
    entry = chip.model_copy(update={"id": new_id, "profiles": profiles, "default_profile": args.profile})
    return write_or_print(
        entry_to_toml(HardwareSpec.model_validate(entry.model_dump(by_alias=True))), args.out, new_id
    )


def _memory_line(inst: Instance, rep: dict[str, Any]) -> str:
    """The weights, the KV bytes a token takes (held more than once where ranks keep whole KV heads or
    MLA's whole latent, `Instance.kv_copies`), the KV room in tokens and the ridge. In GiB, as the
    catalog's memory and the refusals' ("72.7 GB" read beside "68 GiB", a review)."""
    held = f", held {inst.kv_copies:g} times over the {inst.tp} ranks" if inst.kv_copies > 1 else ""
    return (
        f"weights {rep['weight_bytes'] / 2**30:.1f} GiB; KV {rep['kv_bytes_per_token']:,.0f} B/token{held}; "
        f"KV capacity {rep['kv_capacity_tokens']:,} tokens; ridge {rep['ridge_flops_per_byte']:.0f} FLOP/B"
    )
