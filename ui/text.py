"""Showing text that came from a user, a link or a file without rendering it as Markdown.

Streamlit renders the body of st.warning, st.error, st.caption and most labels as Markdown,
plus its own directives (``:red[...]``, ``:material/icon:``, emoji shortcodes, ``$LaTeX$``).
A message that echoes a value from a share link must never turn into a link, an image fetched
from a third party or formatted text: `plain` escapes every Markdown-significant character
(CommonMark lets any ASCII punctuation be escaped with a backslash). Escaping is not enough for
two things Streamlit finds in plain text: its colon directives and bare addresses, which it
turns into links even when escaped (seen in the browser test). An invisible word joiner after
every colon, @ and "www" breaks both, so the text reads the same and renders as itself (line
breaks become spaces; other control characters a replacement mark).
"""

from __future__ import annotations

import re
import string
import unicodedata

from engine.costmodel import STACK_NAMES

_PUNCT = frozenset(string.punctuation) - {":"}
_WORD_JOINER = "\u2060"


def _breaks_a_link(text: str, i: int) -> bool:
    """Whether an invisible joiner goes after text[i]: a colon, an @, or the "www" of "www."."""
    return text[i] in ":@" or (text[max(0, i - 2) : i + 2].lower() == "www.")


def plain(text: object) -> str:
    """`text` escaped so that Streamlit's Markdown shows it literally (no links, images, formats)."""
    out = []
    text = str(text)
    for i, ch in enumerate(text):
        if ch in "\r\n\t":
            out.append(" ")
        elif unicodedata.category(ch) == "Cc":
            out.append("\ufffd")  # control characters are shown as a replacement mark
        else:
            out.append("\\" + ch if ch in _PUNCT else ch)
            if _breaks_a_link(text, i):
                out.append(_WORD_JOINER)
    return "".join(out)


FIELD_PATH = re.compile(r" \((?:[a-z_]+(?:\[\d+\])?\.)+[a-z_]+(?:\[\d+\])?\)")
"""A field's path in parentheses after its label ('Instances (deployment.pools[0].count)'), which a toast leaves out."""


def toast_text(message: str) -> str:
    """A refusal as its toast says it: without the field's path, and 'refused, allowed 1 to 512' for
    '... is not allowed: the allowed range is 1 to 512'. A toast shows about a hundred characters before
    'view more', and the range had been cut off ('... the allowed range is 1…': a browser review); the
    banner at the top of the page keeps the whole message."""
    short = FIELD_PATH.sub("", message, count=1)
    return short.replace(" is not allowed: the allowed range is ", " refused, allowed ", 1)


def sentence(text: str) -> str:
    """`text` opening a sentence: its first letter raised, the rest kept (str.capitalize lowered the rest,
    printing "misses its slo ... ttft p90"); engine notes start in lower case, as clauses."""
    return text[:1].upper() + text[1:]


def opening(text: str) -> str:
    """A note or finding as the page's sentences open: an English first word capitalised ('Class chat passes',
    'The $29.88/h bill'; they opened in lower case, a review), an id as it is written ('h200', 'vllm')."""
    first = text.split(" ", 1)[0].rstrip(":,")
    return sentence(text) if first.isalpha() and first.islower() and first not in STACK_NAMES else text
