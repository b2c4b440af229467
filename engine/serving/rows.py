"""Rows of numbers appended one at a time during a run, kept compact: the iteration records.

An instance records every iteration (or decode jump) as a row of floats (`ledger.SEGMENT_COLUMNS`),
two or three rows a request. Kept as a Python list of tuples, a row costs about 470 bytes (a tuple
and a float object per value); a million requests' rows took about 1.2 GB, and laying them out as
an array at the end held them twice. `RowLog` packs each row as it comes into one growing buffer
of float64s (`struct`: 104 bytes a row for 13 columns; the buffer grows in place, a `realloc`, which
for a large buffer remaps its pages rather than copying them), and the table handed over at the end
is that buffer itself, read by numpy without a copy. Each number is packed as its C double
(`PyFloat_AsDouble`: an int by the same correctly rounded conversion as `float(int)`), so the
records are those `np.asarray(rows, dtype=float)` gives, bit for bit; packing a row costs about a
third of what building the table from the rows' tuples did (`np.fromiter`, every value through
numpy's generic scalar conversion).
"""

from __future__ import annotations

from struct import Struct
from typing import Final

import numpy as np

_DOUBLE_BYTES: Final = 8


class RowLog:
    """A table of `width` float64 columns that grows a row at a time."""

    __slots__ = ("width", "_row_bytes", "_pack", "_buf", "_handed")

    def __init__(self, width: int) -> None:
        if width < 1:
            raise ValueError(f"RowLog: width must be at least 1 (got {width})")
        self.width = width
        self._row_bytes = width * _DOUBLE_BYTES
        self._pack = Struct(f"@{width}d").pack  # native doubles: each value's bytes as C holds them
        self._buf = bytearray()  # the rows, packed; until `array`, no one else sees it
        self._handed = False  # `array` gave the buffer out: it must not be resized any more

    def add(self, row: tuple[float, ...]) -> None:
        """Append one row of `width` numbers."""
        if self._handed:  # rows after `array`: grow a copy, never what was handed out
            self._buf, self._handed = bytearray(self._buf), False
        pack = self._pack  # (a local: compiled, `self._pack(...)` is a call by name)
        self._buf += pack(*row)

    def __len__(self) -> int:
        return len(self._buf) // self._row_bytes

    def since(self, start: int) -> list[list[float]]:
        """The rows from index `start` on, in order, each as a list of Python floats."""
        tail = self._buf[start * self._row_bytes :]  # a copy: the log's buffer stays unexported
        out: list[list[float]] = np.frombuffer(tail, dtype=np.float64).reshape(-1, self.width).tolist()
        return out

    def array(self) -> np.ndarray:
        """Every row as one (rows, width) float64 array over the log's buffer, not a copy. Rows added
        after this call grow a copy, so the array handed out never changes."""
        self._handed = True
        return np.frombuffer(self._buf, dtype=np.float64).reshape(-1, self.width)
