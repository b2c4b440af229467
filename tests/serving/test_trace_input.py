"""Untrusted trace input and CSV exports: every bad value is a ScenarioError naming its place.

Trace uploads and length files come from users, so the readers are held to one rule: whatever
bytes or text they get, they return requests whose values are in bounds or raise ScenarioError
(never OverflowError, csv.Error, UnicodeDecodeError, ...). Exports go the other way: a string a
user put in must not reach a spreadsheet as a formula.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.explain import report
from engine.scenario import codec as sio
from engine.scenario.model import LengthDist, Scenario
from engine.serving import workload as wl
from engine.serving.traces import azure
from engine.serving.traces import csv as trace_csv
from engine.serving.workload import read_trace, sample_lengths, trace_class_names

BASE = sio.load_preset("chat-colocated")
TOP = bounds.MAX_TOKENS_PER_REQUEST
CSV_HEAD = "arrival_s,input_tokens,output_tokens"
AZURE_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def scenario(fmt: str, path: str = "upload.trace", **trace: object) -> Scenario:
    over = {"workload.trace": {"format": fmt, "path": path, **trace}, "duration_s": 86400.0}
    return sio.apply_overrides(BASE, over)


def read(fmt: str, text: str, sc: Scenario | None = None, **trace: object) -> wl.Requests:
    sc = sc or scenario(fmt, "upload.trace", **trace)
    assert sc.workload.trace is not None
    return read_trace(sc.workload.trace, sc, text=text)


def mooncake(*rows: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def row(ts: object = 0, inp: object = 5, out: object = 1, **more: object) -> dict[str, object]:
    return {"timestamp": ts, "input_length": inp, "output_length": out, **more}


def assert_sane(reqs: wl.Requests) -> None:
    """What a successful read promises the simulation."""
    assert len(reqs) <= bounds.MAX_REQUESTS
    assert np.all(np.isfinite(reqs.arrival_s)) and np.all(np.diff(reqs.arrival_s) >= 0)
    for col in (reqs.prompt_tokens, reqs.output_tokens):
        assert col.dtype == np.int64 and np.all((col >= 1) & (col <= TOP))


# --- each problem of the finding ----------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("mooncake", mooncake(row(ts=10**400)), r"line 1, field timestamp: must be a time in milliseconds"),
        (
            "mooncake",
            '{"timestamp": 1e999, "input_length": 5, "output_length": 1}',
            r"line 1, field timestamp",
        ),
        (
            "mooncake",
            '{"timestamp": 0, "input_length": ' + "9" * 5000 + ', "output_length": 1}',
            r"line 1: not",
        ),
        (
            "mooncake",
            mooncake(row(), row(hash_ids=[2**70])),
            r"line 2, field hash_ids: must be a list of 64-bit",
        ),
        ("mooncake", "[" * 100_000, r"line 1: not usable JSON \(nested too deeply\)"),
        (
            "csv",
            f"{CSV_HEAD}\n0,5,1\n1e999,5,1\n",
            r"line 3, column arrival_s: must be a time in seconds >= 0",
        ),
        ("csv", f"{CSV_HEAD}\n{'9' * 5000},5,1\n", r"line 2, column arrival_s"),
        ("csv", f"{CSV_HEAD}\n0,{'9' * 5000},1\n", r"line 2, column input_tokens: must be an integer from 1"),
        (
            "azure",
            f"{AZURE_HEAD}\n9999-12-31 23:59:59.9999999,{'9' * 40},1\n",
            r"line 2, column ContextTokens",
        ),
    ],
)
def test_huge_numbers_are_refused_not_overflowed(fmt: str, text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        read(fmt, text)


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("csv", f"{CSV_HEAD}\n0,5,1\n1,5\x00,1\n"),
        ("azure", f"{AZURE_HEAD}\n2023-11-16 18:17:03.97,10,1\n2023-11-16 18:17:04.97,\x0010,1\n"),
        (
            "mooncake",
            mooncake(row(), row()) + '{"timestamp": 1, "input_length": 5,\x00 "output_length": 1}\n',
        ),
    ],
)
def test_nul_bytes_are_refused_with_their_line(fmt: str, text: str, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"line 3: holds a NUL"):
        read(fmt, text)
    p = tmp_path / "nul.trace"
    p.write_bytes(text.encode())
    sc = scenario(fmt, str(p))
    assert sc.workload.trace is not None
    with pytest.raises(ScenarioError, match=r"holds a NUL"):
        read_trace(sc.workload.trace, sc)


BAD_LENGTHS = ["0", "-1", "1.5", str(TOP + 1), '"5"', "5e2", " ", "", "+5", "٣", "1_0", "0x10", "nan"]


@pytest.mark.parametrize("cell", BAD_LENGTHS)
@pytest.mark.parametrize("column", ["input_tokens", "output_tokens"])
def test_plain_csv_lengths_must_be_integers_in_bounds(cell: str, column: str) -> None:
    cells = {"input_tokens": "5", "output_tokens": "1", column: cell}
    text = f"{CSV_HEAD}\n0,5,1\n3,{cells['input_tokens']},{cells['output_tokens']}\n"
    rule = rf"line 3, column {column}: must be an integer from 1 to {TOP:,}"
    with pytest.raises(ScenarioError, match=rule) as exc:
        read("csv", text)
    if cell.startswith('"'):
        assert "written without quotes" in str(exc.value)


@pytest.mark.parametrize("cell", BAD_LENGTHS)
def test_azure_lengths_must_be_integers_in_bounds(cell: str) -> None:
    text = f"{AZURE_HEAD}\n2023-11-16 18:17:03.9799600,10,1\n2023-11-16 18:17:04.0319600,{cell},8\n"
    with pytest.raises(
        ScenarioError, match=rf"line 3, column ContextTokens: must be an integer from 1 to {TOP:,}"
    ):
        read("azure", text)


@pytest.mark.parametrize("value", [0, -1, 1.5, 5.0, TOP + 1, "5", True, None, [5]])
@pytest.mark.parametrize("field", ["input_length", "output_length"])
def test_mooncake_lengths_must_be_integers_in_bounds(value: object, field: str) -> None:
    bad = row(**{"inp" if field == "input_length" else "out": value})
    with pytest.raises(ScenarioError, match=rf"line 2, field {field}: must be an integer from 1 to {TOP:,}"):
        read("mooncake", mooncake(row(), bad))


@pytest.mark.parametrize("value", [-1, -0.5, "0", True, None, float("nan"), 2e18])
def test_mooncake_timestamps_must_be_finite_and_not_negative(value: object) -> None:
    with pytest.raises(ScenarioError, match=r"line 1, field timestamp"):
        read("mooncake", json.dumps(row(ts=value)))


@pytest.mark.parametrize("cell", ["-1", "nan", "inf", "1e999", "x", '"3"', "", "1_0"])
def test_plain_csv_times_must_be_finite_and_not_negative(cell: str) -> None:
    with pytest.raises(ScenarioError, match=r"line 2, column arrival_s: must be a time in seconds >= 0"):
        read("csv", f"{CSV_HEAD}\n{cell},5,1\n")


@pytest.mark.parametrize(
    "stamp", ["yesterday", "2023-02-30 00:00:00", "0000-01-01 00:00:00", "2023-11-16 24:00:00", "2023-11-16"]
)
def test_azure_timestamps_must_be_real_dates(stamp: str) -> None:
    with pytest.raises(ScenarioError, match=r"line 2, column TIMESTAMP: must be a timestamp like"):
        read("azure", f"{AZURE_HEAD}\n{stamp},10,1\n")


def test_unknown_classes_name_their_rows_and_the_known_classes() -> None:
    data = sio.to_data(scenario("csv"))
    data["workload"]["classes"].append({"name": "batch", "share": 0.5})
    sc = sio.from_data(data)
    lines = ["0,5,1,chat", "1,5,1,gold", "2,5,1,batch", "3,5,1,gold", "4,5,1,=HYPERLINK(x)", "5,5,1,"]
    with pytest.raises(ScenarioError) as exc:
        read("csv", CSV_HEAD + ",class\n" + "\n".join(lines) + "\n", sc)
    msg = str(exc.value)
    assert "line 3, column class: 'gold' is not a class of this scenario" in msg
    assert "'gold' on lines 3, 5" in msg and "'=HYPERLINK(x)' on line 6" in msg
    assert "The scenario's classes: chat, batch" in msg
    # an empty cell is the first class; known labels (quoted or padded) map to theirs
    ok = read("csv", CSV_HEAD + ',class\n0,5,1,chat\n1,5,1," batch"\n2,5,1,\n', sc)
    assert list(ok.cls) == [0, 1, 0]


def test_many_unknown_classes_stay_a_short_message() -> None:
    text = CSV_HEAD + ",class\n" + "".join(f"{i},5,1,c{i}\n" for i in range(5000))
    with pytest.raises(ScenarioError) as exc:
        read("csv", text)
    assert len(str(exc.value)) < 800 and "other labels on lines" in str(exc.value)


def test_trace_class_names_lists_the_labels_a_ui_could_create() -> None:
    text = CSV_HEAD + ',class\n0,5,1,gold\n1,5,1, chat\n2,5,1,"gold"\n3,5,1,\n4,5,1,silver\n'
    assert trace_class_names(text, "csv") == ("gold", "chat", "silver")
    assert trace_class_names("\ufeff" + text, "csv", limit=2) == ("gold", "chat")
    assert trace_class_names(f"{CSV_HEAD}\n0,5,1\n", "csv") == ()
    assert trace_class_names(mooncake(row()), "mooncake") == ()


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("csv", f"{CSV_HEAD}\r\n0.5,100,10\r\n0.1,200,20\r\n"),
        ("azure", f"{AZURE_HEAD}\n2023-11-16 18:17:03.5,100,10\n2023-11-16 18:17:03.1,200,20\n"),
        ("mooncake", mooncake(row(500, 100, 10), row(100, 200, 20))),
    ],
)
def test_a_byte_order_mark_is_dropped(fmt: str, text: str, tmp_path: Path) -> None:
    plain = read(fmt, text)
    assert list(plain.prompt_tokens) == [200, 100] and plain.arrival_s[1] == pytest.approx(0.4)
    with_bom = read(fmt, "\ufeff" + text)
    assert np.array_equal(with_bom.arrival_s, plain.arrival_s)
    p = tmp_path / "bom.trace"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode())
    sc = scenario(fmt, str(p))
    assert sc.workload.trace is not None
    assert np.array_equal(read_trace(sc.workload.trace, sc).prompt_tokens, plain.prompt_tokens)


def test_empirical_lengths_are_checked_and_accept_a_bom(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    good = tmp_path / "good.csv"
    good.write_bytes(b"\xef\xbb\xbfn,other\r\n3,x\r\n7,y\r\n")
    x = sample_lengths(LengthDist(kind="empirical", path=str(good), column="n"), 100, rng)
    assert set(x.tolist()) == {3, 7}
    for i, (cell, message) in enumerate(
        [
            ("0", "must be an integer from 1"),
            ("2.5", "must be an integer"),
            (str(TOP + 1), "must be .* to 1,048,576"),
        ]
    ):
        bad = tmp_path / f"bad{i}.csv"
        bad.write_text(f"n\n3\n{cell}\n")
        with pytest.raises(ScenarioError, match=rf"line 3, column n: {message}"):
            sample_lengths(LengthDist(kind="empirical", path=str(bad), column="n"), 10, rng)
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"n\n3\x00\n")
    with pytest.raises(ScenarioError, match="line 2: holds a NUL"):
        sample_lengths(LengthDist(kind="empirical", path=str(nul), column="n"), 10, rng)
    with pytest.raises(ScenarioError, match=r"no column 'm'; columns: 'n', 'other'"):
        sample_lengths(LengthDist(kind="empirical", path=str(good), column="m"), 10, rng)


def test_max_requests_keeps_the_earliest_arrivals() -> None:
    text = f"{CSV_HEAD}\n9,90,1\n1,10,1\n5,50,1\n0,1,1\n3,30,1\n"
    reqs = read("csv", text, max_requests=3)
    assert list(reqs.prompt_tokens) == [1, 10, 30]
    assert list(reqs.arrival_s) == [0.0, 1.0, 3.0]
    windowed = read("csv", text, max_requests=2, start_s=2.0)
    assert list(windowed.prompt_tokens) == [30, 50] and list(windowed.arrival_s) == [1.0, 3.0]
    assert list(read("csv", text).prompt_tokens) == [1, 10, 30, 50, 90]  # unset: every one of the window


def test_max_requests_on_an_unsorted_mooncake_trace_keeps_the_blocks_of_the_kept_rows() -> None:
    text = mooncake(
        row(3000, 3, 1, hash_ids=[3]), row(1000, 600, 1, hash_ids=[1, 11]), row(2000, 2, 1, hash_ids=[2])
    )
    reqs = read("mooncake", text, max_requests=2)
    assert list(reqs.prompt_tokens) == [600, 2]
    assert reqs.block_hashes is not None
    assert [reqs.block_hashes.tolist(), reqs.block_offsets.tolist()] == [[1, 11, 2], [0, 2, 3]]  # type: ignore[union-attr]


def test_hash_ids_that_do_not_fit_the_block_size_are_refused_naming_block_tokens() -> None:
    """One id a block of the prompt: a block size of 16 on Mooncake's 512-token blocks read each id as 16
    tokens (a 0.9% hit rate for 28.8%), and 30 ids for 6,760 tokens passed (a trace replay review)."""
    ok = mooncake(row(0, 6760, 1, hash_ids=list(range(14))), row(1, 512, 1, hash_ids=[1]), row(2, 9, 1))
    assert len(read("mooncake", ok)) == 3  # 13 whole blocks and a part; a row without ids has no cache names
    many = mooncake(row(0, 6760, 1, hash_ids=list(range(30))))
    with pytest.raises(
        ScenarioError, match=r"line 1, field hash_ids: 30 ids for an input_length of 6,760 tokens"
    ):
        read("mooncake", many)
    with pytest.raises(ScenarioError, match=r"workload\.trace\.block_tokens \(16\) makes 422 or 423 blocks"):
        read("mooncake", ok, block_tokens=16)
    # the block size is the trace's being read, not the scenario's current one (an upload reads a new trace
    # against the scenario: a current trace at 16 refused a 512-block upload, a code review)
    other = scenario("mooncake", "other.trace", block_tokens=16)
    fresh = scenario("mooncake", "upload.trace").workload.trace
    assert fresh is not None and fresh.block_tokens == 512
    assert len(read_trace(fresh, other, text=ok)) == 3


def test_rows_with_too_few_cells_and_blank_lines() -> None:
    assert len(read("csv", f"{CSV_HEAD}\n\n0,5,1\n  \n1,5,1,extra\n")) == 2
    with pytest.raises(
        ScenarioError, match=r"line 3: 2 cell\(s\); the columns arrival_s, input_tokens, output_tokens"
    ):
        read("csv", f"{CSV_HEAD}\n0,5,1\n1,5\n")


def test_a_column_named_twice_is_refused() -> None:
    """A trace CSV naming input_tokens twice was read with its first copy (a review): refused by name."""
    with pytest.raises(ScenarioError, match="the column 'input_tokens' is named twice"):
        read("csv", "arrival_s,input_tokens,output_tokens,input_tokens\n0,5,1,90000\n")
    line = '{"timestamp": 0, "input_length": 500, "input_length": 90000, "output_length": 1}'
    with pytest.raises(ScenarioError, match="line 1: the field 'input_length' is given twice"):
        read("mooncake", line + "\n")
    # a nested object's field of the same name is not the line's given twice (the text's count refused it)
    nested = (
        '{"meta": {"timestamp": 7, "input_length": 1}, "timestamp": 0, "input_length": 5, "output_length": 1}'
    )
    assert len(read("mooncake", nested + "\n")) == 1
    # a key spelled with an escape is the same key given twice (its last copy ran: a review)
    escaped = '{"timestamp": 0, "input_length": 500, "output_length": 1, "input_l\\u0065ngth": 90000}'
    with pytest.raises(ScenarioError, match="line 1: the field 'input_length' is given twice"):
        read("mooncake", escaped + "\n")
    with pytest.raises(ScenarioError, match="the column 'ContextTokens' is named twice"):
        read(
            "azure",
            "TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2023-11-16 18:15:46.6805900,5,1,9\n",
        )


def test_large_traces_are_read_in_chunks_with_the_right_line_numbers() -> None:
    n = 120_000  # several chunks of the reader
    body = "".join(f"{i * 0.01:.2f},{1 + i % 4000},{1 + i % 300}\n" for i in range(n))
    reqs = read("csv", CSV_HEAD + "\n" + body, max_requests=bounds.MAX_REQUESTS)
    assert len(reqs) == n and reqs.prompt_tokens[-1] == 1 + (n - 1) % 4000
    bad = body + "1200.5,0,1\n"
    with pytest.raises(ScenarioError, match=rf"line {n + 2}, column input_tokens"):
        read("csv", CSV_HEAD + "\n" + bad)


# --- CSV exports --------------------------------------------------------------------------


def test_csv_exports_neutralise_formulas_and_keep_numbers() -> None:
    frame = pd.DataFrame(
        {
            "class": ['=HYPERLINK("http://evil","x")', "+cmd", "-2+3", "@SUM(A1)", "\tx", "chat", "a;=1+1"],
            "ttft_s": [-1.5, 0.0, 2.25, -3.0, 1e-9, 4.0, 5.0],
            "count": [-7, 0, 1, 2, 3, 4, 5],
            "mixed": [-1.5, "-2", "=1", 3, None, "x", "+4.5"],
        }
    )
    text = report.safe_csv(frame)
    back = pd.read_csv(io.StringIO(text), keep_default_na=False)
    assert back["class"].tolist() == [
        """'=HYPERLINK("http://evil","x")""", "'+cmd", "'-2+3", "'@SUM(A1)", "'\tx", "chat", "a;'=1+1",
    ]  # fmt: skip
    assert back["ttft_s"].tolist() == frame["ttft_s"].tolist()
    assert back["count"].tolist() == frame["count"].tolist()
    assert back["mixed"].tolist() == ["-1.5", "-2", "'=1", "3", "", "x", "+4.5"]
    for line in text.splitlines():
        for cell in line.split(","):
            assert not cell.lstrip('"').startswith(("=", "@", "\t", "\r")), line


def test_csv_with_provenance_goes_through_safe_csv() -> None:
    frame = pd.DataFrame({"=name": ["=1+2", "ok"], "value": [-1, 2]})
    text = report.csv_with_provenance(frame, {"scenario": "demo", "preset": "a,=cmd()"})
    assert "# preset: a,'=cmd()\n" in text
    back = pd.read_csv(io.StringIO(text), comment="#")
    assert back.columns.tolist() == ["'=name", "value"]
    assert back["'=name"].tolist() == ["'=1+2", "ok"]
    assert back["value"].tolist() == [-1, 2]


# --- fuzzing: any input, only ScenarioError -----------------------------------------------


def only_scenario_errors(fmt: str, text: str) -> None:
    try:
        reqs = read(fmt, text)
    except ScenarioError:
        return
    assert_sane(reqs)


NUMBERISH = st.sampled_from(
    ["0", "1", "-1", "1.5", "5", "00012", "1048576", "1048577", "1e3", "1e999", "nan", "inf", " 7 ", '"5"', "",
     "+3", "1_0", "٣", "²", "9" * 30, "2023-11-16 18:17:03.9799600", "2023-02-29 00:00:00", "chat", "=1+1"]
)  # fmt: skip
CELL = st.one_of(NUMBERISH, st.text(max_size=8))
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)


def csv_text(head: str) -> st.SearchStrategy[str]:
    rows = st.lists(st.lists(CELL, min_size=0, max_size=5).map(",".join), max_size=8)
    ends = st.sampled_from(["\n", "\r\n", "\r", "\n\n"])
    return st.tuples(st.sampled_from(["", "\ufeff"]), rows, ends).map(
        lambda t: t[0] + head + t[2] + t[2].join(t[1])
    )


JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)
FIELD = st.one_of(st.integers(min_value=-5, max_value=TOP + 5), st.integers(), JSON_VALUE)
MOONCAKE_ROW = st.fixed_dictionaries(
    {"timestamp": FIELD, "input_length": FIELD, "output_length": FIELD},
    optional={"hash_ids": st.one_of(st.lists(st.integers(), max_size=4), JSON_VALUE)},
)


@FUZZ
@given(fmt=st.sampled_from(["mooncake", "azure", "csv"]), text=TEXT)
def test_any_text_gives_requests_or_a_scenario_error(fmt: str, text: str) -> None:
    only_scenario_errors(fmt, text)


@FUZZ
@given(text=csv_text(CSV_HEAD + ",class"))
def test_plain_csv_fuzz(text: str) -> None:
    only_scenario_errors("csv", text)


@FUZZ
@given(text=csv_text(AZURE_HEAD))
def test_azure_fuzz(text: str) -> None:
    only_scenario_errors("azure", text)


@FUZZ
@given(rows=st.lists(st.one_of(MOONCAKE_ROW.map(json.dumps), JSON_VALUE.map(json.dumps), TEXT), max_size=6))
def test_mooncake_fuzz(rows: list[str]) -> None:
    only_scenario_errors("mooncake", "\n".join(rows))


@FUZZ
@given(fmt=st.sampled_from(["mooncake", "azure", "csv"]), data=st.binary(max_size=300), bom=st.booleans())
def test_any_file_bytes_give_requests_or_a_scenario_error(fmt: str, data: bytes, bom: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "t.trace"
        p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
        sc = scenario(fmt, str(p))
        assert sc.workload.trace is not None
        try:
            reqs = read_trace(sc.workload.trace, sc)
        except ScenarioError:
            return
        assert_sane(reqs)


@FUZZ
@given(
    data=st.one_of(
        st.binary(max_size=200),
        csv_text("n,m").map(lambda t: t.encode("utf-8", "surrogatepass")),
    )
)
def test_any_length_file_gives_lengths_or_a_scenario_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "lengths.csv"
        p.write_bytes(data)
        dist = LengthDist(kind="empirical", path=str(p), column="n")
        try:
            x = sample_lengths(dist, 50, np.random.default_rng(0))
        except ScenarioError:
            return
        finally:
            trace_csv._EMPIRICAL_CACHE.pop((str(p), "n"), None)
        assert np.all((x >= 1) & (x <= TOP))


# --- the column-at-once path agrees with the row-by-row one -------------------------------


def row_by_row(parse: Callable[[str], float], cells: list[str]) -> list[float] | None:
    try:
        return [parse(c) for c in cells]
    except ScenarioError:
        return None


@FUZZ
@given(cells=st.lists(CELL, min_size=1, max_size=6))
def test_whole_column_conversions_accept_only_what_rows_accept(cells: list[str]) -> None:
    """A column conversion may give up (None), but never accepts a bad cell or changes a value."""
    pairs: list[tuple[Callable[[list[str]], np.ndarray | None], Callable[[str], float]]] = [
        (trace_csv._tokens_column, lambda c: trace_csv._tokens(c, "t", 1, "c")),
        (trace_csv._seconds_column, lambda c: trace_csv._seconds(c, "t", 1, "c")),
        (azure._azure_column, lambda c: azure._azure_seconds(c, "t", 1)),
    ]
    for fast, slow in pairs:
        got = fast(cells)
        want = row_by_row(slow, cells)
        if got is not None:
            assert want is not None and got.tolist() == want


@FUZZ
@given(
    stamps=st.lists(
        st.datetimes(min_value=pd.Timestamp("1900-01-01").to_pydatetime(), max_value=pd.Timestamp("2200-01-01").to_pydatetime()),
        min_size=1, max_size=20,
    ),
    digits=st.integers(min_value=0, max_value=9),
)  # fmt: skip
def test_azure_column_matches_the_row_reader_exactly(stamps: list[object], digits: int) -> None:
    cells = [f"{s:%Y-%m-%d %H:%M:%S}" + (f".{s:%f}{'0' * 3}"[: digits + 1] if digits else "") for s in stamps]  # type: ignore[str-format]
    got = azure._azure_column(cells)
    want = [azure._azure_seconds(c, "t", 1) for c in cells]
    assert got is not None and got.tolist() == want


def test_a_line_that_is_not_json_says_where_and_a_csv_is_named_as_one() -> None:
    """'not JSON (Unterminated string starting at, column 41)' read as cut off, and an Azure CSV given as a
    Mooncake trace was told only 'Expecting value' (a trace replay review)."""
    cut = '{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1, "input_length": "5\n'
    with pytest.raises(
        ScenarioError, match=r"line 2: not JSON at column 34 \(unterminated string starting\)$"
    ):
        read("mooncake", cut)
    azure = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
    with pytest.raises(
        ScenarioError, match=r"line 1: .*it reads as CSV: set workload\.trace\.format to azure"
    ):
        read("mooncake", azure)
