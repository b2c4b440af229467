"""Build the compiled hot path: `python tools/build_native.py` (run by `make`).

Compiles `engine.core.native.COMPILED` with mypyc (the mypy the test tools install, the C
compiler Python was built with) into `build/native/`, then writes its manifest, which is what
lets the engine use the build (engine/core/native.py). The sources are never touched and nothing
is written beside them. All or nothing: where mypyc, a C compiler or Python's headers are
missing, or the compile fails, it says so, removes any partial build and exits 0: the engine
runs its pure-Python modules, with the same results, about half as fast. `FENGONG_PURE=1` skips
the build.

`--if-stale` (what `make` runs) builds only where the engine would not use the build as it is, and
not again after a failed build of the same sources (`build/native-failed.json` records it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core import native


def compile_into(build: Path, work: Path) -> None:
    """mypyc's C for the group into `work`, the extensions into `build`; raises on any failure."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    sources = [str(native.source_of(m).relative_to(native.ROOT)) for m in native.COMPILED]
    extensions = mypycify(
        # a cache of its own: `make test` type-checks beside this build, into .mypy_cache
        [f"--config-file={native.ROOT / 'pyproject.toml'}", f"--cache-dir={work / 'mypy-cache'}", *sources],
        opt_level="3",
        group_name=native.GROUP,
        target_dir=str(work / "c"),
    )
    dist = Distribution({"name": "fengong-native", "ext_modules": extensions})
    command = dist.get_command_obj("build_ext")
    command.build_lib = str(build)
    command.build_temp = str(work / "obj")
    dist.run_command("build_ext")


FAILED = native.ROOT / "build" / "native-failed.json"
"""The sources and interpreter of the last failed build, and why it failed."""


def _failed_before(sources: dict[str, str]) -> str | None:
    """Why the build of these very sources failed before on this interpreter, if it did."""
    try:
        failed = json.loads(FAILED.read_text())
    except (OSError, ValueError):
        return None
    if failed.get("interpreter") == native.interpreter() and failed.get("modules") == sources:
        return str(failed.get("reason", "unknown"))
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--if-stale", action="store_true", help="build only where the build is not current")
    args = ap.parse_args(argv)
    if os.environ.get(native.PURE_ENV, "") not in ("", "0"):
        print(f"build_native: {native.PURE_ENV} is set: no compiled build, pure Python")
        return 0
    before, stats = native.digests(), native.stats()
    if args.if_stale and native.state() == "compiled":
        return 0
    if args.if_stale and (reason := _failed_before(before)) is not None:
        print(f"build_native: not built, as before for these sources ({reason}); pure Python")
        return 0
    build, work = native.BUILD, native.ROOT / "build" / "native-work"
    shutil.rmtree(build, ignore_errors=True)
    FAILED.unlink(missing_ok=True)
    start = time.monotonic()
    os.chdir(native.ROOT)  # mypy resolves the sources as modules from the checkout's root
    try:
        compile_into(build, work)
    except (Exception, SystemExit) as exc:  # no mypyc, no compiler or headers, a mypyc error
        shutil.rmtree(build, ignore_errors=True)
        reason = repr(exc)[:500]
        failed = {"interpreter": native.interpreter(), "modules": before, "reason": reason}
        FAILED.parent.mkdir(parents=True, exist_ok=True)
        FAILED.write_text(json.dumps(failed, indent=1) + "\n")
        print(f"build_native: the compiled hot path was not built ({reason}); the engine runs pure Python")
        return 0
    # a source edited during the build: its extension may be of either version
    if native.digests() != before or native.stats() != stats:
        shutil.rmtree(build, ignore_errors=True)
        print("build_native: a source changed during the build; run make again")
        return 0
    manifest = {"interpreter": native.interpreter(), "modules": before, "stats": stats, "group": native.GROUP}
    (build / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"build_native: {len(before)} modules compiled into {build} in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
