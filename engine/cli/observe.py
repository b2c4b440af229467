"""`replay` and `calibrate FILE...`: a benchmark result replayed on a stated deployment, and a
profile fitted to one or several results (docs/calibration.md, 'Calibrate from your benchmark').

Both take what no file says as flags: ``--hardware`` (required), ``--count``, ``--stack``,
``--tp``, ``--weights``, ``--kv``, and ``--model`` where the file's model name is not a catalog
model. A Prometheus scrape takes ``--earlier`` (the scrape taken ``--window-s`` seconds before).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.catalog.entries import entry_to_toml, load_catalog
from engine.catalog.specs import CalibrationProfile, HardwareSpec
from engine.cli.common import check_range, check_writable_file, emit_json
from engine.core import bounds, safeparse
from engine.core.errors import ScenarioError
from engine.explain.compare_table import minus
from engine.observe import detect
from engine.observe.formats import named_stack
from engine.observe.observation import has_load, with_load

if TYPE_CHECKING:
    from engine.observe.playback import Deployment


def stack_of(args: argparse.Namespace, observations: list[Any]) -> str:
    """`--stack`, else the stack the files name (an SGLang file was fitted and replayed as vLLM unless
    --stack said otherwise: a review), else vLLM, said; files that name two stacks need --stack."""
    if args.stack:
        return str(args.stack)
    named = {s for o in observations if (s := named_stack(o.format)) is not None}
    if len(named) > 1:
        raise ScenarioError(
            f"--stack: the files come from {' and '.join(sorted(named))}; one fit is of one stack: give --stack"
        )
    if not named:
        print("note: the file names no serving stack: vLLM taken (give --stack)", file=sys.stderr)
    return named.pop() if named else "vllm"


def deployment(args: argparse.Namespace) -> Deployment:
    """The flags as a `Deployment` (ranges checked; the stack `--stack`'s or vLLM, `stack_of` settles it)."""
    from engine.observe import playback  # the simulator and pandas: loaded when a command needs them

    check_range(args.count, "--count", 1, bounds.MAX_INSTANCES)
    check_range(args.tp, "--tp", 1, bounds.MAX_TP)
    check_range(args.window_s, "--window-s", 0.001, bounds.MAX_DURATION_S * 30)
    load_catalog().chip(args.hardware)
    return playback.Deployment(
        hardware=args.hardware,
        count=args.count,
        stack=args.stack or "vllm",
        tp=args.tp,
        weights=args.weights,
        kv=args.kv,
        model=args.model,
    )


def _read(path: str, args: argparse.Namespace, alone: bool = False) -> Any:
    """A benchmark file's observation, the load flags given where it states none; `alone` (a replay
    of one file): a load flag on a file that states its own is refused, not ignored (calibrate's
    several files take it for those that state none)."""
    earlier = None
    if bool(args.earlier) != (args.window_s is not None):  # one without the other blamed the file (a review)
        given, missing = ("--earlier", "--window-s") if args.earlier else ("--window-s", "--earlier")
        raise ScenarioError(
            f"{given}: a Prometheus scrape's rates need two scrapes: give {missing} too (--earlier the scrape "
            "taken --window-s seconds before FILE)"
        )
    if args.earlier:
        earlier = safeparse.read_capped(args.earlier, bounds.MAX_TRACE_BYTES, "--earlier")
    obs = detect.read_path(path, earlier=earlier, window_s=args.window_s)
    if has_load(obs):  # the load is given for the files that do not state one (as the dashboard does)
        if alone and (args.rate is not None or args.concurrency is not None):  # ignored, unsaid (a review)
            flag = "--rate" if args.rate is not None else "--concurrency"
            raise ScenarioError(
                f"{flag}: {path} states its own load, and a replay runs at the load its measurements were taken "
                "at; --rate and --concurrency are for a file that states none"
            )
        return obs
    return with_load(obs, concurrency=args.concurrency, rate_rps=args.rate)


PROFILE_MAX_BYTES = 1_000_000
"""The most a --profile-from file may hold (an entry `calibrate --out` writes is a few kB)."""


def profile_from(path: str, hardware: str | None = None) -> CalibrationProfile:
    """The default profile of a hardware entry's TOML (`fengong calibrate --out`), refused where the entry's
    chip is not `hardware`'s (its fractions are of its own chip's peaks: an L40S fit on an H100 replayed
    its TPOT +89% off with nothing said, a hostile review)."""
    from pydantic import ValidationError

    from engine.core.errors import format_validation_error

    what = f"--profile-from {path}"
    try:
        text = safeparse.read_capped(path, PROFILE_MAX_BYTES, "--profile-from").decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{what}: not UTF-8 text") from None
    try:
        entry = HardwareSpec.model_validate(safeparse.loads_toml(text, what, max_chars=PROFILE_MAX_BYTES))
    except ValidationError as exc:  # (a raw traceback for eta_compute = 0: a hostile review)
        raise ScenarioError(f"{what}: {format_validation_error(exc, model=HardwareSpec)}") from None
    if hardware is not None and not _same_silicon(entry, hardware):
        raise ScenarioError(
            f"{what}: the entry {entry.id!r} has other peaks than --hardware {hardware} (its fitted fractions "
            f"are of its own chip's peaks); replay on the chip it was fitted to, or fit {hardware}'s own"
        )
    name = entry.default_profile
    if not name or name not in entry.profiles:
        raise ScenarioError(f"--profile-from {path}: the entry names no default_profile among its profiles")
    return entry.profiles[name]


def _same_silicon(entry: HardwareSpec, hardware: str) -> bool:
    """Whether a profile's entry is of `hardware`'s chip or of one on its die (`chip_rules.SAME_SILICON`: an
    H100 fit replayed on an H200, as the catalog itself runs the H200 on the H100's profile): its peaks are
    a catalog chip's whose die is `hardware`'s. A chip not in the catalog is not judged."""
    from engine.calibration.chip_rules import SAME_SILICON

    cat = load_catalog().hardware
    if hardware not in cat:
        return True
    die = SAME_SILICON.get(hardware, hardware)
    peaks = (dict(entry.tflops), entry.memory_tb_s)
    return any(
        SAME_SILICON.get(c.id, c.id) == die and (dict(c.tflops), c.memory_tb_s) == peaks for c in cat.values()
    )


def _setup_dict(obs: Any) -> dict[str, Any]:
    s = obs.setup
    return {k: getattr(s, k) for k in s.__dataclass_fields__}


def cmd_replay(args: argparse.Namespace) -> int:
    """`fengong replay FILE --hardware ...`."""
    from engine.observe import playback

    dep = deployment(args)
    if args.profile_from:
        dep = replace(dep, profile=profile_from(args.profile_from, dep.hardware))
    obs = _read(args.file, args, alone=True)
    dep = replace(dep, stack=stack_of(args, [obs]))
    rep = playback.replay(obs, dep)
    if args.json:
        emit_json(
            {
                "source": obs.source,
                "format": obs.format,
                "setup": _setup_dict(obs),
                "unknown": list(obs.unknown),
                "deployment": {
                    k: getattr(dep, k) for k in ("hardware", "count", "stack", "tp", "weights", "kv")
                },
                "model": rep.scenario.model.id,
                "comparison": rep.table.to_dict(orient="records"),
                "notes": list(rep.notes),
            }
        )
        return 0
    for note in rep.notes:
        print(f"note: {note}", file=sys.stderr)
    where = f"{dep.count}x {dep.hardware} tp{dep.tp} {dep.stack}"
    print(f"{obs.source} ({obs.format}) replayed on {where}, model {rep.scenario.model.id}")
    shown = rep.table.copy()
    shown["error"] = shown["error"].map(lambda e: f"{e:+.1%}")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
    return 0


def cmd_calibrate_files(args: argparse.Namespace) -> int:
    """`fengong calibrate FILE... --hardware ...`: a profile fitted to benchmark results."""
    if not args.hardware:
        raise ScenarioError("calibrate: give --hardware, the chip the benchmarks ran on")
    from engine.observe import fit

    if args.out:
        check_writable_file(args.out)  # before the fit, not after it printed (a review)
    dep = deployment(args)
    cat = load_catalog()
    from engine.cli.entries import landing, new_entry_id

    new_id = new_entry_id(
        args
    )  # before the fit, as a CSV's (a shipped id or a bad name passed here: a review)
    observations = [_read(p, args) for p in args.measurements]
    dep = replace(dep, stack=stack_of(args, observations))
    result = fit.fit_files(observations, dep, cat)
    shown = result.table[["id", "point", "measured", "predicted", "error"]].copy()
    # four significant figures and the unit (six decimals and none read as raw: a review)
    shown.insert(2, "unit", ["tok/s" if i.endswith(":throughput") else "ms" for i in shown["id"]])
    for col in ("measured", "predicted"):
        shown[col] = shown[col].map(lambda v: f"{v:,.4g}")
    shown["error"] = shown["error"].map(lambda e: minus(f"{e:+.1%}"))
    print(shown.to_string(index=False), file=sys.stderr)
    # the table is each file's replay at the fitted profile, what `replay --profile-from` prints (it was the fit's
    # steady state, whose TPOT read 10% under the replay's for vllm_bench_detailed.json: a review)
    print(
        "predicted: the simulator replaying each file's own requests with the fitted profile, as "
        "`fengong replay FILE --profile-from <toml>` does",
        file=sys.stderr,
    )
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    for row in result.held_out.to_dict(orient="records"):
        e = row["held_out_abs_error"]
        err = "no other file to fit without it" if e is None or e != e else f"held-out median |error| {e:.1%}"
        err = f"it {row['why']}" if row.get("why") else err
        print(f"{row['file']}: {row['points']} points; {err}", file=sys.stderr)
    if problem := result.problem():  # as a CSV's fit says it (a benchmark file's said nothing: a review)
        print(f"warning: {problem}", file=sys.stderr)
    if result.thin_note:
        print(f"warning: {result.thin_note}", file=sys.stderr)
    for band in result.bands.to_dict(orient="records"):
        cov = band["coverage"]
        covered = (
            ""
            if cov is None or cov != cov
            else f"; coverage {cov:.0%} (each file's points against the other files' band)"
        )
        # where measured figures land around the model's, as a run prints a band (this printed the
        # model's miss, predicted / measured - 1, the other way round from a CSV's and run's: a review)
        span = landing(1 + band["low"], 1 + band["high"])
        print(
            f"band of {band['figure']} (held out, {band['points']} points; where measured figures land around the "
            f"model's, as a run shows it): {span}{covered}",
            file=sys.stderr,
        )
    p = result.profile
    print(
        f"{dep.hardware}/{args.profile}: eta_compute {p.eta_compute}, eta_bandwidth {p.eta_bandwidth}, "
        f"overhead {p.overhead_ms} ms per 80 layers",
        file=sys.stderr,
    )
    entry = fit.entry_with(cat.chip(dep.hardware), p, args.profile, new_id)
    from engine.cli.entries import write_or_print

    return write_or_print(entry_to_toml(entry), args.out, entry.id)
