"""Text fields that refuse control characters (`Line`, `Prose`).

A name printed by `run` with an escape sequence cleared the terminal and wrote a line of its own above
the report (a review); a catalog entry's name (`import-model --name`, a config.json's
`_name_or_path`, a custom chip) reached `roofline` the same way (a hostile review). Scenario, model
and chip names take these types.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def no_controls(text: str, allowed: str = "") -> str:
    """`text` where it holds no control character (but those `allowed`)."""
    bad = next((c for c in text if (ord(c) < 32 or 127 <= ord(c) < 160) and c not in allowed), None)
    if bad is not None:
        raise ValueError(f"control character U+{ord(bad):04X} at {text.index(bad)}: printable text only")
    return text


Line = Annotated[str, AfterValidator(no_controls)]
"""A line of text: no control characters."""
Prose = Annotated[str, AfterValidator(lambda t: no_controls(t, "\n\t"))]
"""Text of a few lines: no control characters but line feeds and tabs."""


CLIP_CHARS = 40
"""The most of an untrusted label a message quotes (`clipped`)."""


def clipped(text: str, limit: int = CLIP_CHARS) -> str:
    """`text` cut to about `limit` characters, its start and end kept around an ellipsis: a trace whose one
    class label was 20 MB long was quoted whole in its refusal, and the page stalled for minutes (a
    browser review)."""
    if len(text) <= limit:
        return text
    half = max(limit // 2 - 1, 1)
    return f"{text[:half]}…{text[-half:]}"
