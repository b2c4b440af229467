"""The app tests' harness (streamlit.testing AppTest): the app opened on a page through a share link,
the scenario it holds, the live strip, the Hardware tabs, the messages waiting at the top.

The scenario under test is the default preset shortened to a two-minute window through a share
link, which also exercises the link path on every test; the simulation cache is shared across
tests (st.cache_data is process-wide), so each distinct scenario is simulated once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

from engine.scenario.codec import (
    DEFAULT_PRESET,
    apply_overrides,
    load_preset,
    to_link,
)
from engine.scenario.model import Scenario

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SHORT = {"duration_s": 120.0}
PAGES = {
    "results": "Results",
    "workload": "Workload mix",
    "hardware": "Hardware catalog",
    "strategy": "Disaggregation strategy",
    "slo": "SLO targets",
    "compare": "Compare",
    "about": "About & validation",
}


def streamlit_setup_once(patch: Any) -> None:
    """Make Streamlit do once a process what each AppTest otherwise repeats (`patch`: a pytest
    MonkeyPatch; tests/conftest.py applies it for the whole run). Both are fixed for a run's length
    and neither is what the tests check (docs/performance.md, "The suite under ten minutes"):

    - the scan of the installed packages for custom components, which every new AppTest's first
      run makes over every distribution's metadata (about 0.2 s of CPU; the packages installed do
      not change during a run, so each AppTest registers what the first scan found);
    - each page script's bytecode, which every run of an AppTest compiles again with Streamlit's
      "magic" (a new `ScriptCache` a run: about 25 ms a script, two scripts a run): kept by the
      script's path, its bytes and the magic setting, so a changed script is compiled afresh.
    """
    from streamlit import config
    from streamlit.components.v2 import manifest_scanner
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    patch.setattr(
        manifest_scanner,
        "scan_component_manifests",
        functools.cache(manifest_scanner.scan_component_manifests),
    )
    compile_script = ScriptCache.get_bytecode
    compiled: dict[tuple[str, bytes, bool], Any] = {}

    def get_bytecode(self: ScriptCache, script_path: str) -> Any:
        path = os.path.abspath(script_path)
        key = (path, Path(path).read_bytes(), bool(config.get_option("runner.magicEnabled")))
        if key not in compiled:
            compiled[key] = compile_script(self, script_path)
        return compiled[key]

    patch.setattr(ScriptCache, "get_bytecode", get_bytecode)


def short(preset: str = DEFAULT_PRESET, **changes: Any) -> Scenario:
    """A preset on a two-minute window (fast to simulate), with more changes by path."""
    sc = load_preset(preset)
    cut = {"warmup_s": 0.0} if sc.warmup_s >= SHORT["duration_s"] else {}  # a warm-up the window cannot hold
    return apply_overrides(sc, {**SHORT, **cut, **changes})


def app(page: str = "results", scenario: Scenario | None = None, preset: str = DEFAULT_PRESET) -> AppTest:
    """The app opened on a page through a share link to `scenario` (default: the short preset)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(to_link(scenario or short(preset), preset))
    at.run()
    if page != "results":
        at.switch_page(f"app_pages/{page}.py").run()
    return at


def scenario_of(at: AppTest) -> Scenario:
    return at.session_state["fg_scenario"]  # type: ignore[no-any-return]


def live(at: AppTest) -> str:
    """The live strip's table (markdown) of the sidebar."""
    texts = [m.value for m in at.sidebar.markdown if "TTFT p99" in m.value]
    assert texts, "no live strip"
    return texts[0]


def catalog(at: AppTest) -> Any:
    """The Hardware page's accelerators' table, its tabs (`ui.hardware.HARDWARE_VIEWS`) side by side by chip."""
    import pandas as pd

    from ui.hardware import HARDWARE_VIEWS

    return pd.concat(
        [t.dataframe[0].value.set_index("id") for t in at.tabs if t.label in HARDWARE_VIEWS], axis=1
    )


def assert_clean(at: AppTest) -> None:
    """No exception and no warning, except the Results page's advisor findings, a load on a cliff
    (its band left off, `fg-cliff`), a trace that ends early in its window (`fg-idle-tail`) or holds requests past the context (`fg-over-context`) and a
    queue still rising at the window's end (`fg-rising`): warnings by design."""
    assert not at.exception, [e.value for e in at.exception]
    advice: set[int] = set()
    for key in (
        "fg-advisor",
        "fg-cliff",
        "fg-idle-tail",
        "fg-over-context",
        "fg-rising",
        "fg-rising-A",
        "fg-rising-B",
    ):
        with contextlib.suppress(KeyError):  # a page without it
            advice |= {id(w) for w in at.get_by_key(key).warning}  # type: ignore[union-attr]
    warnings = [w.value for w in at.warning if id(w) not in advice]
    assert not warnings, warnings


def dismiss_buttons(at: AppTest) -> list[Any]:
    """The dismiss button of each message waiting at the top of the page, in order."""
    return [b for b in at.button if str(b.key).startswith("fg:dismiss:")]


def text_of(markdown: str) -> str:
    """What a message escaped by ui.text.plain reads as on the page."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def shown_cells(df: Any) -> pd.DataFrame:
    """What a styled dataframe element draws in each cell: its Styler's display values (the data under
    them is what `.value` gives), with the figure's column as in the table."""
    import pyarrow as pa

    return pa.ipc.open_stream(df.proto.arrow_data.styler.display_values).read_all().to_pandas()
