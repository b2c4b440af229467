"""A real browser on the Hardware page's "Calibrate from your benchmark" (issue 33), as
tests/app/test_browser.py drives the main path: Debian's Chromium and `streamlit run app.py`.

A user with `vllm bench serve --save-result --save-detailed` JSONs from an H100 gets, in three steps,
(1) upload the files and name the chip: the replay's measured-against-simulated CDFs; (2) fit: the
profile and its held-out error; (3) keep: every pool runs on the fitted chip, and the Results page
marks the scenario as run with the user's own calibration. It prints the upload-to-chart and the
fit times (figures for the report, never assertions). Skipped only where /usr/bin/chromium is missing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

from engine.scenario.codec import from_link
from tests.app.test_browser import ARGS, CHROMIUM, _serve

FIX = Path(__file__).resolve().parents[1] / "observe" / "fixtures"
FILES = ("vllm_bench_detailed.json", "vllm_bench_detailed_rate8.json")
"""Two runs of one H100 (4 and 8 req/s): the fit leaves each out in turn for its held-out error."""

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason=f"Debian's Chromium is not installed at {CHROMIUM}"
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The app, served as a user starts it."""
    with _serve() as base:
        yield base


def test_calibrate_from_your_benchmark_in_three_steps(server: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=120_000)  # a replay and a fit on a busy CI machine
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(f"{server}/hardware")
        expect(page.get_by_role("heading", name="Calibrate from your benchmark")).to_be_visible()

        # step 1: upload the results and say the chip they ran on; the replay's CDFs appear
        t0 = time.perf_counter()
        page.locator(".st-key-fg-observe-upload input[type=file]").set_input_files([FIX / f for f in FILES])
        chip = page.locator(".st-key-fg-observe-chip")
        expect(chip).to_be_visible()
        chip.click()
        page.keyboard.type("h100-sxm")
        page.locator("[role='option']").filter(has_text="h100-sxm").first.click()
        for figure in ("ttft", "tpot", "e2e"):  # measured against simulated
            expect(page.locator(f".st-key-fg-observe-cdf-{figure} .js-plotly-plot")).to_be_visible()
        upload_to_charts_s = time.perf_counter() - t0
        caption = page.locator("[data-testid='stCaptionContainer']").filter(has_text="vllm-bench-json").first
        expect(caption).to_contain_text("per-request rows")

        # step 2: fit; the profile and its held-out error
        t1 = time.perf_counter()
        page.locator(".st-key-fg-observe-fit label").first.click()
        held = page.locator("[data-testid='stMetric']").filter(has_text="Held-out median |error|")
        expect(held).to_contain_text("%")
        fit_s = time.perf_counter() - t1
        expect(page.locator("[data-testid='stMetric']").filter(has_text="η_F (compute)")).to_be_visible()

        # step 3: keep it; every pool runs on the fitted chip, marked as the user's own calibration
        page.get_by_role("button", name="Run the scenario on this chip").click()
        kept = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="h100-sxm-mine")
        expect(kept).to_contain_text("your own calibration under vLLM")
        page.wait_for_url("**&s=*")  # the share link now carries the chip and its profile
        query = page.url.split("?", 1)[1]
        sc = from_link(dict(parse_qsl(query)))
        assert [h.id for h in sc.custom_hardware] == ["h100-sxm-mine"]
        assert {pool.hardware for pool in sc.deployment.pools} == {"h100-sxm-mine"}
        assert sc.custom_hardware[0].profiles["mine"].source.startswith("user's own")

        # the scenario uses it: the Results page runs it and marks it with the user's own calibration
        page.goto(f"{server}/results?{query}")
        expect(
            page.locator("[data-testid='stCaptionContainer']").filter(has_text="your own calibration").first
        ).to_be_visible()
        browser.close()
    print(f"\ncalibrate from your benchmark: upload to charts {upload_to_charts_s:.1f} s, fit {fit_s:.1f} s")
