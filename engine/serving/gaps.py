"""Gaps between a request's tokens: each request's largest, and the distribution over every token.

The simulator records, per decode segment of an instance, the gap before its first step's tokens
(from the batch's previous decode step: a prompt-only iteration in between, or a long mixed one,
is a stall) and its mean step time; and, per preemption, when the request was taken off and when
it rejoined (`Records.stalls`). From those, with no per-token work: a request's largest gap
(`largest_gaps`, the `max_tbt` of docs/metrics.md) and the token-weighted distribution of the gap
before every decoded token of a window (`token_gaps`, Mooncake's TBT).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from engine.serving.ledger import COMPLETED, SEGMENT_COLUMNS, Records
from engine.serving.summary import LatencyStats

PERCENTILES = (50, 90, 99)
"""The percentiles every latency figure reports (the keys of `engine.serving.summary.Percentiles`)."""


def largest_gaps(rec: Records, out: np.ndarray) -> np.ndarray:
    """Per request, the largest gap between two of its tokens (s; NaN below two tokens or undone).

    Each decode segment of an instance records the gap before its first step's tokens (a
    prompt-only iteration in between, or a long mixed one, is a stall) and its mean step time.
    A request's first decoded token comes with the first step that starts once it holds its first
    token (`_first_steps`: its gap counted from that first token, not from the batch's step before,
    which under `prefill_first` came before the prompt-only iteration that gave the first token);
    the segments after that one, to its completion, carried its later tokens: its largest gap is
    the largest of those, found with a sparse table of range maxima per instance (O(segments log
    segments), no per-token work), and of its stalls.
    """
    n = len(out)
    result = np.full(n, np.nan)
    seg = rec.segments
    if not len(seg) or not n:
        return result
    c = {name: i for i, name in enumerate(SEGMENT_COLUMNS)}
    dec = np.flatnonzero(
        seg[:, c["decodes"]] > 0
    )  # the decode rows, read column by column (no copy of every column)
    if not len(dec):
        return result
    worst = np.maximum(
        seg[dec, c["first_gap_s"]], np.where(seg[dec, c["steps"]] > 1, seg[dec, c["step_s"]], 0.0)
    )
    server = seg[dec, c["server"]].astype(np.int64)
    t0, t1, steps = seg[dec, c["t0"]], seg[dec, c["t1"]], seg[dec, c["steps"]]
    in_run = np.where(steps > 1, seg[dec, c["step_s"]], 0.0)  # a segment's steps after its first
    ok = (rec.outcome == COMPLETED) & (out > 1) & (rec.decode_instance >= 0)
    for rows, who in _instances(rec, ok, server):
        pos, joined, first = _first_steps(t0[rows], t1[rows], steps[rows], rec.first_token_s[who])
        who, pos = who[joined], pos[joined]
        # its first decoded token's gap, the steps after it in that segment, then the later segments'
        result[who] = np.maximum(first, in_run[rows[pos]])
        hi = np.searchsorted(t1[rows], rec.completion_s[who], side="right")
        later = hi > pos + 1
        if later.any():
            np.fmax.at(result, who[later], _range_max(worst[rows], pos[later] + 1, hi[later]))
    rid, stall_s, _ = _stall_gaps(rec, server, t1)
    keep = ok[rid]
    if keep.any():  # a preempted request's wait to rejoin is a gap between two of its tokens
        np.fmax.at(result, rid[keep], stall_s[keep])
    return result


def _instances(rec: Records, ok: np.ndarray, server: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per instance with requests of `ok` decoding on it: (its decode rows, in time order, as
    indices into `server`; those requests)."""
    for srv in _distinct(server):
        who = np.flatnonzero(ok & (rec.decode_instance == srv))
        if len(who):
            yield np.flatnonzero(server == srv), who


def _first_steps(
    t0: np.ndarray, t1: np.ndarray, steps: np.ndarray, first_token_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For requests of one instance: (the position among its decode rows, in time order, of the
    segment whose first step gave each its first decoded token; whether there is one; the gap from
    its first token to that token, s, for those that have one).

    A request joins its instance's batch at the first iteration that starts once it holds its KV
    cache (`first_token_s`): a step already under way then does not carry it. In a split deployment
    its first token comes when the cache lands, mid-step as often as not, so the gap runs over the
    rest of that step and the whole next one; a segment's own first gap (from the batch's previous
    step) holds only the latter, and under `prefill_first` it runs from a step before the first token.
    """
    pos = np.searchsorted(t0, first_token_s, side="left")
    found = pos < len(t0)
    at = pos[found]
    first_end = t0[at] + (t1[at] - t0[at]) / steps[at]
    return pos, found, first_end - first_token_s[found]


def _join_gaps(
    rec: Records, ok: np.ndarray, server: np.ndarray, t0: np.ndarray, t1: np.ndarray, steps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request of `ok` (completed, two tokens or more): (request, the gap from its first token
    to its first decoded one in s, index of the decode row whose first step gave it).

    `_first_steps` finds them; `server`, `t0`, `t1` and `steps` are the decode rows', in the
    records' order (an instance's rows one after another in time).
    """
    rid_all, gap_all, row_all = [], [], []
    for rows, who in _instances(rec, ok, server):
        pos, found, gap = _first_steps(t0[rows], t1[rows], steps[rows], rec.first_token_s[who])
        rid_all.append(who[found])
        gap_all.append(gap)
        row_all.append(rows[pos[found]])
    if not rid_all:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.concatenate(rid_all), np.concatenate(gap_all), np.concatenate(row_all)


def _distinct(ints: np.ndarray) -> list[int]:
    """The distinct values of non-negative integers, ascending: ``np.unique(ints).tolist()`` without
    its check for masked arrays, which imports ``numpy.ma`` (about 50 M instructions, 10 ms, the
    first time: a tenth of a ``run --json`` process's summary)."""
    return np.flatnonzero(np.bincount(ints)).tolist()  # type: ignore[no-any-return]


def _stall_gaps(
    rec: Records, server: np.ndarray, t1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per preemption that rejoined: (request, gap in s, index of the decode row that ended it).

    `server` and `t1` are the decode rows' servers (as integers) and ends, in the records' order.
    The gap runs from the end of the batch's last decode step before the request was taken off to
    the end of the first decode step of its server after it rejoined (when its next token came).
    Rejoins with no decode step after them (the run ended) are left out.
    """
    stalls = rec.stalls
    none = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64))
    if not len(stalls) or not len(server):
        return none
    s_server = stalls[:, 1].astype(np.int64)
    row = np.full(len(stalls), -1, dtype=np.int64)
    for srv in _distinct(s_server):
        rows = np.flatnonzero(server == srv)  # in time order: an instance's segments end one after another
        mine = np.flatnonzero(s_server == srv)
        pos = np.searchsorted(t1[rows], stalls[mine, 3], side="right")
        ok = pos < len(rows)
        row[mine[ok]] = rows[pos[ok]]
    found = row >= 0
    if not found.any():
        return none
    row = row[found]
    return stalls[found, 0].astype(np.int64), t1[row] - stalls[found, 2], row


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[i]:hi[i]]) for every i (each range non-empty), by a sparse table."""
    table = [values]
    width = 1
    longest = int((hi - lo).max())
    while width * 2 <= longest:
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    length = hi - lo
    level = np.floor(np.log2(length)).astype(np.int64)
    out = np.empty(len(lo))
    for k in _distinct(level):
        sel = level == k
        row = table[k]
        out[sel] = np.maximum(row[lo[sel]], row[hi[sel] - (1 << k)])
    return out


def token_gaps(rec: Records, lo: float, hi: float) -> LatencyStats:
    """Percentiles (ms) of the gap before every token decoded in [lo, hi] (Mooncake's TBT).

    Token-weighted: a segment's first step counts its requests at its first gap, its other steps
    at its mean step time; a preempted request's token after it rejoined counts at its stall
    (`_stall_gaps`), a request's first decoded token at the gap from its first token (`_join_gaps`).
    A request's first token (TTFT) is not a gap.
    """
    seg = rec.segments
    empty: LatencyStats = {"p50": None, "p90": None, "p99": None, "mean": None}
    if not len(seg):
        return empty
    c = {name: i for i, name in enumerate(SEGMENT_COLUMNS)}
    t1 = seg[:, c["t1"]]
    d = seg[:, c["decodes"]]
    keep = (d > 0) & (t1 >= lo) & (t1 <= hi)
    if not keep.any():
        return empty
    first_weight = np.where(keep, d, 0.0)
    dec_rows = np.flatnonzero(d > 0)
    dec_server = seg[dec_rows, c["server"]].astype(np.int64)
    _, stall_s, row = _stall_gaps(rec, dec_server, t1[dec_rows])
    row = dec_rows[row]
    ok = (rec.outcome == COMPLETED) & (rec.output_tokens > 1) & (rec.decode_instance >= 0)
    _, join_s, joined = _join_gaps(
        rec, ok, dec_server, seg[dec_rows, c["t0"]], t1[dec_rows], seg[dec_rows, c["steps"]]
    )
    joined = dec_rows[joined]
    # a rejoining request's token in that step came after its stall, a joining one's after its
    # first token, not after the batch's gap
    inside, joins = keep[row], keep[joined]
    np.subtract.at(first_weight, row[inside], 1.0)
    np.subtract.at(first_weight, joined[joins], 1.0)
    d, steps = d[keep], seg[keep, c["steps"]]
    values = (
        np.concatenate([seg[keep, c["first_gap_s"]], seg[keep, c["step_s"]], stall_s[inside], join_s[joins]])
        * 1e3
    )
    weights = np.concatenate(
        [
            np.maximum(first_weight[keep], 0.0),
            d * (steps - 1.0),
            np.ones(int(inside.sum())),
            np.ones(int(joins.sum())),
        ]
    )
    order = np.argsort(values, kind="stable")
    values, weights = values[order], weights[order]
    cum = np.cumsum(weights)
    total = float(cum[-1])

    def at(q: float) -> float:
        i = int(np.searchsorted(cum, q / 100.0 * total, side="left"))
        return float(values[min(i, len(values) - 1)])

    return {"p50": at(50), "p90": at(90), "p99": at(99), "mean": float((values * weights).sum() / total)}
