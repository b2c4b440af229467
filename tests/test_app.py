"""App tests (streamlit.testing AppTest): every page runs without exceptions."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_catalog_page_lists_catalogs() -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Hardware & models"]
    frames = [df.value for df in at.dataframe]
    assert len(frames) == 2
    assert "h100-sxm" in set(frames[0]["id"])
    assert "llama-3.1-70b" in set(frames[1]["id"])
