"""Slider to redraw in a real browser: 20 moves to new values on the default preset (issue 36).

It starts ``streamlit run app.py`` on a free port, opens the Strategy page of the default preset in
headless Chromium (Playwright; the flags of tests/app/test_browser.py), and moves the decode pool's
instance slider one stop up with the keyboard, 20 times: each move a scenario the server has not
simulated, each the same requests (so every move asks for the same work, a run of the whole
default preset), unlike the rate slider, whose stops above the preset's rate overload it and below
make runs too small to need a preview. A move is timed from the key press until the live strip's
text changes on screen: the preview's figures when the run is new (marked *preview*), else the
full run's. The next move waits for the full run's strip. It prints p50 and max beside their
targets (0.5 s and 1.5 s, bench/targets.py), how many moves answered with a preview first, and
the time until the full figures showed.

Chromium: ``FENGONG_CHROMIUM`` or ``/usr/bin/chromium`` (Debian's, as the browser test); where
neither exists the line says so and the benchmark is skipped. Run: ``python bench/slider.py``.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.targets import judged, machine_load
from engine.scenario.codec import DEFAULT_PRESET, load_preset, to_link

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("FENGONG_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking"]
MOVES = 20
LABEL = "slider to redraw (browser, 20 moves)"
STRIP = "[data-testid='stSidebar'] [class*='st-key-fg-live']"
"""The live strip: `st-key-fg-live` for a full run, `st-key-fg-live-preview` for its preview."""
FULL = "[data-testid='stSidebar'] .st-key-fg-live"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(env: dict[str, str] | None = None) -> Iterator[str]:
    """`streamlit run app.py` on a free localhost port (with extra environment), stopped with its
    children afterwards; RuntimeError with the server's last output when it does not start. The
    browser tests serve the app through this too (tests/app/test_browser.py)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                out = (
                    proc.stdout.read().decode(errors="replace")
                    if proc.stdout and proc.poll() is not None
                    else ""
                )
                raise RuntimeError(f"streamlit did not start:\n{out[-3000:]}")
            time.sleep(0.3)
        yield base
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)


def _text(page, selector: str) -> str:  # type: ignore[no-untyped-def]
    loc = page.locator(selector)
    return str(loc.first.inner_text()) if loc.count() else ""


def move(page, before: str) -> tuple[float, bool, float]:  # type: ignore[no-untyped-def]
    """Press ArrowRight on the focused slider: (seconds to the strip's first change, whether that
    was a preview, seconds to the full run's strip)."""
    t0 = time.perf_counter()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([sel, old]) => { const e = document.querySelector(sel); return e && e.innerText !== old; }",
        arg=[STRIP, before],
        polling="raf",
        timeout=120_000,
    )
    first = time.perf_counter() - t0
    shown = page.locator(STRIP).first.get_attribute("class") or ""
    preview = "st-key-fg-live-preview" in shown
    page.wait_for_function(
        "([sel, old]) => { const e = document.querySelector(sel); return e && e.innerText !== old; }",
        arg=[FULL, before],
        polling="raf",
        timeout=120_000,
    )
    return first, preview, time.perf_counter() - t0


def measure(base: str) -> tuple[list[float], int, list[float]]:
    """The 20 moves: (first redraws s, moves that showed a preview first, full redraws s)."""
    from playwright.sync_api import sync_playwright

    scenario = load_preset(DEFAULT_PRESET)
    decode = next(i for i, p in enumerate(scenario.deployment.pools) if p.role == "decode")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(f"{base}/strategy?{urlencode(to_link(scenario, DEFAULT_PRESET))}")
        page.wait_for_selector(FULL)
        slider = page.locator(f".st-key-fg-deployment-pools-{decode}--count input[type=range]").first
        slider.focus()
        firsts, fulls, previews = [], [], 0
        for _ in range(MOVES):
            page.wait_for_timeout(300)  # the app idle again, as between a user's moves
            first, preview, full = move(page, _text(page, FULL))
            firsts.append(first)
            fulls.append(full)
            previews += preview
        browser.close()
    return firsts, previews, fulls


def main() -> None:
    """Print the slider figures beside their targets, or why they were not measured."""
    if not Path(CHROMIUM).exists():
        print(
            f"{LABEL:42} skipped: no Chromium at {CHROMIUM} (set FENGONG_CHROMIUM; targets p50 <= 0.5 s, max <= 1.5 s)"
        )
        return
    try:
        import playwright  # noqa: F401
    except ImportError:
        print(f"{LABEL:42} skipped: Playwright is not installed (pip install -e '.[test]')")
        return
    with served() as base:
        firsts, previews, fulls = measure(base)
    p50, top = statistics.median(firsts), max(firsts)
    print(f"{'slider to redraw, p50 (browser, 20 moves)':42} {p50:8.3f} s  {judged('slider_p50', p50)}")
    print(
        f"{'slider to redraw, max':42} {top:8.3f} s  {judged('slider_max', top)}  "
        f"{previews} of {len(firsts)} moves drew a preview first; full run shown after "
        f"p50 {statistics.median(fulls):.2f} s, max {max(fulls):.2f} s ({machine_load()})"
    )


if __name__ == "__main__":
    main()
