"""The compiled hot path (engine.core.native, tools/build_native.py): used only where current, never
different from the pure-Python modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.core import native

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import build_native  # noqa: E402


@pytest.fixture
def fresh_state() -> Iterator[None]:
    """`native.state` decided again for the test, and again after it."""
    native.state.cache_clear()
    yield
    native.state.cache_clear()


def _manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doc: object) -> None:
    """A build in `tmp_path` with this manifest and (empty) files for every extension."""
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(native, "MANIFEST", path)
    monkeypatch.setattr(native, "BUILD", tmp_path)
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    for ext in native.extensions():
        ext.parent.mkdir(parents=True, exist_ok=True)
        ext.write_bytes(b"")


@pytest.mark.usefixtures("fresh_state")
def test_a_manifest_that_matches_the_sources_and_interpreter_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _manifest(tmp_path, monkeypatch, {"interpreter": native.interpreter(), "modules": native.digests()})
    assert native.state() == "compiled"
    path = ["/the/sources"]
    native.extend("engine.serving", path)
    assert path == [str(tmp_path / "engine" / "serving"), "/the/sources"]
    native.extend("engine.serving", path)  # once only
    assert len(path) == 2


@pytest.mark.usefixtures("fresh_state")
def test_sizes_and_times_spare_the_digests_and_a_touched_unchanged_source_still_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stats, digests = native.stats(), native.digests()
    _manifest(tmp_path, monkeypatch, {"interpreter": native.interpreter(), "modules": {}, "stats": stats})
    assert native.state() == "compiled"  # the digests are not read where sizes and times match
    native.state.cache_clear()
    touched = {**stats, "engine.serving.kv": [stats["engine.serving.kv"][0], 1]}
    _manifest(
        tmp_path, monkeypatch, {"interpreter": native.interpreter(), "modules": digests, "stats": touched}
    )
    assert native.state() == "compiled"  # a checkout that rewrote it byte for byte


@pytest.mark.usefixtures("fresh_state")
@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("edited", "source changed"),
        ("interpreter", "another interpreter"),
        ("garbled", "unreadable"),
        ("missing", "no compiled build"),
        ("incomplete", "incomplete"),
    ],
)
def test_a_stale_or_foreign_build_leaves_the_pure_modules(
    change: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digests = native.digests()
    doc: dict[str, object] = {"interpreter": native.interpreter(), "modules": digests}
    if change == "edited":
        doc["modules"] = {**digests, "engine.serving.kv": "0" * 64}
    if change == "interpreter":
        doc["interpreter"] = "cpython-310 linux"
    _manifest(tmp_path, monkeypatch, doc)
    if change == "garbled":
        native.MANIFEST.write_text("{not json")
    if change == "missing":
        native.MANIFEST.unlink()
    if change == "incomplete":
        native.extensions()[3].unlink()
    assert native.state().startswith("pure:") and why in native.state()
    path = ["/the/sources"]
    native.extend("engine.serving", path)
    assert path == ["/the/sources"]


@pytest.mark.usefixtures("fresh_state")
def test_fengong_pure_turns_a_current_build_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _manifest(tmp_path, monkeypatch, {"interpreter": native.interpreter(), "modules": native.digests()})
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert native.state() == f"pure: {native.PURE_ENV} is set"


@pytest.mark.usefixtures("fresh_state")
def test_a_failed_build_leaves_pure_python_and_is_not_retried_for_the_same_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build = tmp_path / "native"
    monkeypatch.setattr(native, "BUILD", build)
    monkeypatch.setattr(native, "MANIFEST", build / "manifest.json")
    monkeypatch.setattr(build_native, "FAILED", tmp_path / "native-failed.json")
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    calls = []

    def broken(into: Path, work: Path) -> None:
        calls.append(into)
        into.mkdir(parents=True)
        (into / "half.so").write_bytes(b"")
        raise RuntimeError("error: command 'gcc' failed")

    monkeypatch.setattr(build_native, "compile_into", broken)
    assert build_native.main([]) == 0
    assert "not built" in capsys.readouterr().out and not build.exists()
    assert native.state().startswith("pure:")
    assert build_native.main(["--if-stale"]) == 0
    assert len(calls) == 1 and "as before" in capsys.readouterr().out
    assert build_native.main([]) == 0  # asked outright, it tries again
    assert len(calls) == 2


def _fingerprints(pure: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
    if pure:
        env[native.PURE_ENV] = "1"
    probe = (
        "from engine.core import native; import engine.serving.sim as s; print(native.state(), s.__file__)"
    )
    state = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True)
    assert state.returncode == 0, state.stderr
    assert state.stdout.startswith("pure:" if pure else "compiled "), state.stdout
    run = [sys.executable, "bench/fingerprints.py", "--extra"]
    out = subprocess.run(run, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow
def test_the_compiled_build_simulates_every_preset_request_by_request_as_pure_python() -> None:
    """What ships (the compiled build) against the modules it is built from: every preset and the
    extra scenarios (preemption, closed loops, faults, elastic roles), per-request digests."""
    if not native.active():
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the compiled build, and it is not in use: {native.state()}")
        pytest.skip(native.state())
    compiled = _fingerprints(pure=False)
    assert compiled.count("\n") >= 30
    assert compiled == _fingerprints(pure=True)
