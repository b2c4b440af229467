"""A clone of the project alone runs everything: the data it uses ships in data/, with its licences."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from engine.core import datafiles
from engine.scenario import codec as io

ROOT = Path(__file__).resolve().parents[2]


def test_no_code_reads_a_folder_outside_the_repository() -> None:
    sources = [
        *ROOT.glob("engine/**/*.py"),
        *ROOT.glob("ui/*.py"),
        *ROOT.glob("app_pages/*.py"),
        ROOT / "app.py",
    ]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        assert "FENGONG_SHARED" not in text and "../shared" not in text, path


def test_every_data_file_a_preset_names_ships_with_the_project() -> None:
    named = {p for name in io.preset_names() for _, p in io.data_paths(io.load_preset(name))}
    assert named, "some preset replays a shipped trace"
    for ref in named:
        assert ref.startswith(datafiles.DATA_PREFIX), ref
        assert datafiles.locate(ref).is_relative_to(ROOT / "data"), ref


def test_every_shipped_data_folder_keeps_its_licence_and_source() -> None:
    for folder in (ROOT / "data" / "traces").iterdir():
        assert (folder / "LICENSE").is_file() and (folder / "SOURCE.md").is_file(), folder
    readme = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    for folder in (ROOT / "data" / "traces").iterdir():
        assert f"traces/{folder.name}/" in readme, folder.name


def test_a_trace_preset_runs_from_anywhere_without_the_shared_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FENGONG_SHARED"}
    out = subprocess.run(
        [sys.executable, "-m", "engine", "run", "mooncake-replay-nocache", "--set", "workload.trace.max_requests=300",
         "--json"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-1500:]
    assert re.search(r'"completed": 300\b', out.stdout), out.stdout[:500]
