"""Rows of numbers appended one at a time during a run, kept compact: the iteration records.

An instance records every iteration (or decode jump) as a row of floats (`ledger.SEGMENT_COLUMNS`),
two or three rows a request. Kept as a Python list of tuples, a row costs about 470 bytes (a tuple
and a float object per value); a million requests' rows took about 1.2 GB, and laying them out as
an array at the end held them twice. `RowLog` appends to a short list, as cheap as before on the
hot path, and every `chunk_rows` rows moves it into one float64 table (104 bytes a row for 13
columns) that grows in place (`ndarray.resize`: a `realloc`, which for a large table remaps its
pages rather than copying them), so the run holds at most one short list of tuples and the table
is handed over at the end without a copy. The values are those `np.asarray(rows, dtype=float)`
gives, so the records are the same bit for bit.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

CHUNK_ROWS = 8192
"""Rows kept as tuples before they move into the table (8,192 x 13 floats: 852 KB)."""


class RowLog:
    """A table of `width` float64 columns that grows a row at a time."""

    __slots__ = ("width", "chunk_rows", "_open", "_table", "_handed")

    def __init__(self, width: int, chunk_rows: int = CHUNK_ROWS) -> None:
        if width < 1 or chunk_rows < 1:
            raise ValueError(f"RowLog: width and chunk_rows must be at least 1 (got {width}, {chunk_rows})")
        self.width, self.chunk_rows = width, chunk_rows
        self._open: list[tuple[float, ...]] = []
        self._table = np.empty((0, width))  # owns its memory and, until `array`, no one else sees it
        self._handed = False  # `array` gave the table out: it must not be resized any more

    def add(self, row: tuple[float, ...]) -> None:
        """Append one row of `width` numbers."""
        rows = self._open
        rows.append(row)
        if len(rows) >= self.chunk_rows:
            self._seal()

    def _seal(self) -> None:
        if not self._open:
            return
        # one flat pass (a third quicker than `asarray` over the tuples, the same values: each
        # number converted by `float`)
        rows = self._open
        block = np.fromiter(chain.from_iterable(rows), dtype=float, count=len(rows) * self.width)
        block = block.reshape(-1, self.width)
        self._open = []
        if self._handed:  # rows after `array`: grow a copy, never what was handed out
            self._table, self._handed = self._table.copy(), False
        table = self._table
        at = len(table)
        table.resize((at + len(block), self.width), refcheck=False)
        table[at:] = block

    def __len__(self) -> int:
        return len(self._table) + len(self._open)

    def since(self, start: int) -> list[list[float]]:
        """The rows from index `start` on, in order, each as a list of Python floats."""
        sealed = len(self._table)
        out: list[list[float]] = self._table[start:].tolist() if start < sealed else []
        out.extend([float(v) for v in row] for row in self._open[max(start - sealed, 0) :])
        return out

    def array(self) -> np.ndarray:
        """Every row as one (rows, width) float64 array: the table itself, not a copy. Rows added
        after this call grow a copy, so the array handed out never changes."""
        self._seal()
        self._handed = True
        return self._table
