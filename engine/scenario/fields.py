"""Field types the scenario's sections share: a token count within bounds, a plain name."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from engine.core import bounds

Tokens = Annotated[int, Field(ge=1, le=bounds.MAX_TOKENS_PER_REQUEST)]
_NAME = re.compile(r"[^\W_][\w .+/-]*")


def _plain_name(value: str) -> str:
    # names reach labels, legends and tables: plain words only (no HTML or Markdown brackets; pages
    # still show them through ui.text.plain, since a bare address would be autolinked)
    if not _NAME.fullmatch(value):
        raise ValueError("use letters, digits, spaces and . _ + / - only, starting with a letter or digit")
    return value


Name = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_plain_name)]
