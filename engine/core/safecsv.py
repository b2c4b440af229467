"""CSV for spreadsheets: text cells that cannot run as formulas (CSV injection).

Exported tables carry strings that came from users (class names, uploaded trace labels, custom
chip ids). A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula
(``=HYPERLINK(...)``), so every CSV the project writes goes through `safe_csv`, which prefixes
such text with a single quote, OWASP's advice. Numbers are written unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

_FORMULA_START = ("=", "+", "-", "@")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_AFTER_SEPARATOR = re.compile(r"([,;\t\r\n][ ]*)(?=[=+\-@])")


def safe_cell(value: object) -> object:
    """A cell a spreadsheet will not run as a formula (CSV injection; OWASP's advice).

    A text that starts with = + - @, a tab or a carriage return gets a leading single quote, and
    so does such a start right after a comma, semicolon, tab or line break inside it (a
    spreadsheet set to split at semicolons or tabs would start a cell there). Anything that is not
    text, and text that is a plain number (``-1.5``), is returned as it is.
    """
    if not isinstance(value, str) or not value or _PLAIN_NUMBER.fullmatch(value.strip()):
        return value
    out = _AFTER_SEPARATOR.sub(r"\1'", value)
    if out[0] in "\t\r" or out.lstrip(" ").startswith(_FORMULA_START):
        out = "'" + out
    return out


def safe_csv(frame: pd.DataFrame, **to_csv: Any) -> str:
    """A table as CSV text for a spreadsheet: every text cell and column name through `safe_cell`.

    Every CSV the project writes goes through here. Numeric columns, and numbers in mixed
    columns, are written unchanged. `to_csv` are `DataFrame.to_csv` options (``index`` defaults
    to False).
    """
    out = frame.copy(deep=False)
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_datetime64_any_dtype(col)):
            out.isetitem(i, col.astype(object).map(safe_cell).to_numpy())
    out.columns = pd.Index([safe_cell(c) for c in frame.columns], dtype=object)
    if to_csv.get("index") and not pd.api.types.is_numeric_dtype(out.index):
        out.index = out.index.map(safe_cell)
    to_csv.setdefault("index", False)
    return str(out.to_csv(None, **to_csv))


def safe_comment(text: str) -> str:
    """One line of provenance for a CSV's ``#`` header: no line breaks, no formula after a separator."""
    return _AFTER_SEPARATOR.sub(r"\1'", " ".join(text.split()))
