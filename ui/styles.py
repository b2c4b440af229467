"""The app's few CSS rules, injected once per run by app.py: each works around a Streamlit behaviour
(or fits a table to the sidebar, `LIVE_STRIP_TABLE`).

A popover button (the ⤓ export menu above every chart, Share, Numbers) ends in a chevron icon that
React replaces (expand_more -> expand_less) when the popover opens. Streamlit 1.67 closes a popover
on a click outside it and ignores only the click that opened it, for 50 ms: when the page is busy
drawing charts the re-render takes longer, the opening click reaches the document with a target
that is no longer in the page, counts as outside, and the menu closes at once (the first click on a
freshly loaded page did nothing but show the tooltip). With the button's inner parts transparent to
the pointer, every click on it targets the button itself, which stays in the page.
"""

from __future__ import annotations

import streamlit as st

POPOVER_CLICKS_ON_BUTTON = '[data-testid="stPopoverButton"] * { pointer-events: none; }'
LIVE_STRIP_TABLE = (
    '[class*="st-key-fg-live"] table { font-size: 0.8rem; }\n'
    '[class*="st-key-fg-live"] th, [class*="st-key-fg-live"] td { padding: 0.3rem 0.45rem; }'
)
"""The live strip's table, a size smaller and tighter than a page's: named as on the Results cards
('SLO attainment', '$ / 1M output tokens'), its figures took two and three lines in the sidebar."""
WIDE_CARDS = '[class*="st-key-fg-wide-cards"] [data-testid="stMetricValue"] { font-size: 1.5rem; }'
"""Headline cards whose values carry a mean ± interval and a band ('624 ± 14 ms (model −23% to +30%)'),
a size smaller: at the metric's own size each took a row of its own on Compare with ten seeds (a review)."""
NARROW_SCREEN = (
    "@media (max-width: 1279px) {\n"
    '  [data-testid="stMainBlockContainer"] { padding-left: 1.5rem; padding-right: 1.5rem; }\n'
    '  [data-testid="stTopNavLink"] { padding-left: 0.35rem; padding-right: 0.35rem; }\n'
    "}"
)
"""Under 1,280 px the wide layout's 5rem margins each side leave a page beside the sidebar 640 px of its
800 at 1,100 px: per-class and comparison tables ran past the right edge with the margins empty (a review).
The top navigation's links a little tighter too: at 1,100 px "About" ended 7 px past the window's edge."""
CSS = "\n".join([POPOVER_CLICKS_ON_BUTTON, LIVE_STRIP_TABLE, WIDE_CARDS, NARROW_SCREEN])


def inject() -> None:
    """Add the rules to the page (a style-only st.html takes no room)."""
    st.html(f"<style>\n{CSS}\n</style>")
