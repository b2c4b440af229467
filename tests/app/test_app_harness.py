"""The harness's run-wide shortcuts (tests/app/harness.py's `streamlit_setup_once`, applied to every
test by tests/conftest.py) never hide a change: a page script edited during the run is run as edited."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest


def test_a_script_edited_during_the_run_is_run_as_edited(tmp_path: Path) -> None:
    script = tmp_path / "page.py"
    script.write_text("import streamlit as st\nst.title('before')\n")
    assert [t.value for t in AppTest.from_file(str(script)).run().title] == ["before"]
    script.write_text("import streamlit as st\nst.title('after')\n")
    assert [t.value for t in AppTest.from_file(str(script)).run().title] == ["after"]
    script.write_text("raise RuntimeError('broken page')\n")
    assert "broken page" in AppTest.from_file(str(script)).run().exception[0].value
