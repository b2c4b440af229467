"""Uploads kept for the session: a file uploader empties when the user leaves its page.

Streamlit's file uploader keeps no value across a page change (it has no ``persist_state``), so a
benchmark uploaded on the Hardware page, or measurements on About, and the fit made from them were
gone after a look at Results (a review). The uploader's change callback (`keep`) copies its files
into the session, and removes them when the user clears the box; on the next visit the page reads
them back (`files`), says so under the box and offers to forget them.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.text import plain

KEPT = "fg_kept_uploads"
"""Session key: uploader key -> ((bytes, file name), ...) last uploaded there."""

Files = tuple[tuple[bytes, str], ...]


def _as_files(value: Any) -> Files:
    """An uploader's value (one file, several, or None) as (bytes, name) pairs."""
    ups = value if isinstance(value, list) else [] if value is None else [value]
    return tuple((u.getvalue(), u.name) for u in ups)


def keep(key: str) -> None:
    """The uploader `key`'s change callback: its files kept for the session, or forgotten when cleared."""
    kept: dict[str, Files] = st.session_state.setdefault(KEPT, {})
    files = _as_files(st.session_state.get(key))
    if files:
        kept[key] = files
    else:
        kept.pop(key, None)


def _forget(key: str) -> None:
    st.session_state.get(KEPT, {}).pop(key, None)


def files(key: str, value: Any) -> Files:
    """The uploader's files (`value`, what it returned), else those kept from an earlier visit, said
    under the box with a button to forget them; () where there are none."""
    now = _as_files(value)
    if now:
        return now
    kept: Files = st.session_state.get(KEPT, {}).get(key, ())
    if kept:
        names = ", ".join(f"**{plain(n)}**" for _, n in kept)
        with st.container(horizontal=True, gap="small", vertical_alignment="center"):
            st.caption(
                f"Using {names}, uploaded earlier in this session (the box above empties when you leave the page)."
            )
            st.button("Forget", key=f"{key}:forget", on_click=_forget, args=(key,), icon=":material/close:")
    return kept
