"""bench/slider.py, the browser benchmark `make bench` runs: without Chromium it says so in one line and
stops (issue 36), so `make bench` still prints every other figure on a machine without a browser."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_without_chromium_the_benchmark_says_it_was_skipped() -> None:
    env = {**os.environ, "FENGONG_CHROMIUM": "/nonexistent/chromium"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "slider.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, lines
    assert "skipped: no Chromium at /nonexistent/chromium" in lines[0]
    assert "p50 <= 0.5 s, max <= 1.5 s" in lines[0]
