"""Agentic-coding session traces (kv-cache-tester's format): read, checked, replayed with their reuse.

The sample in data/traces/kv_cache_tester_sample is 13 Claude Code sessions whose prompts repeat
the previous turn's: its block ids must reach the prefix cache unchanged in meaning, so a replay
with the cache on hits about as much as the ids allow. Every bad value is a ScenarioError naming
the file, the session, the request and the field.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.scenario import codec as sio
from engine.scenario.model import Scenario
from engine.serving import traces, workload
from engine.serving.run import simulate
from engine.serving.workload import Requests, read_trace

SAMPLE = "data:traces/kv_cache_tester_sample/sessions.jsonl"
BASE = sio.load_preset("chat-colocated")
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def scenario(path: str = "upload.json", **trace: object) -> Scenario:
    over = {"workload.trace": {"format": "agentic", "path": path, **trace}, "duration_s": 86400.0}
    return sio.apply_overrides(BASE, over)


def read(text: str | None = None, path: str = "upload.json", **trace: object) -> Requests:
    sc = scenario(path, **trace)
    assert sc.workload.trace is not None
    return read_trace(sc.workload.trace, sc, text=text)


def session(*requests: dict[str, Any], block_size: int = 4, **top: object) -> dict[str, Any]:
    return {"id": "s", "block_size": block_size, "requests": list(requests), **top}


def req(
    t: object = 0.0, inp: object = 8, out: object = 2, hash_ids: object = (), **more: object
) -> dict[str, Any]:
    ids = list(hash_ids) if isinstance(hash_ids, tuple) else hash_ids
    return {"t": t, "in": inp, "out": out, "hash_ids": ids, **more}


def lines(*docs: object) -> str:
    return "".join(json.dumps(d) + "\n" for d in docs)


def sample_documents() -> list[dict[str, Any]]:
    raw = gzip.decompress(datafiles.locate(SAMPLE).read_bytes()).decode("utf-8")
    return [json.loads(line) for line in raw.splitlines()]


def flat(entries: list[dict[str, Any]], start: float = 0.0) -> list[tuple[float, dict[str, Any]]]:
    """(arrival, request) of a session's requests, sub-agents' included (an independent reading)."""
    out = []
    for e in entries:
        if "requests" in e:
            out += flat(e["requests"], start + e["t"])
        else:
            out.append((start + e["t"], e))
    return out


# --- the shipped sample -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample() -> Requests:
    return read(path=SAMPLE, time_scale=6.0)


def test_the_sample_ships_whole_with_its_licence() -> None:
    docs = sample_documents()
    assert len(docs) == 13
    assert sum(len(flat(d["requests"])) for d in docs) == 889
    folder = datafiles.locate(SAMPLE).parent
    assert (folder / "LICENSE").is_file() and "Apache" in (folder / "LICENSE").read_text()


def test_sample_requests_keep_their_lengths_times_and_sessions(sample: Requests) -> None:
    docs = sample_documents()
    assert len(sample) == 889
    assert sample.block_tokens == 64
    want = sorted((t / 6.0, r["in"], r["out"], k) for k, d in enumerate(docs) for t, r in flat(d["requests"]))
    got = sorted(
        zip(sample.arrival_s, sample.prompt_tokens, sample.output_tokens, sample.session, strict=True)
    )
    assert [(round(a, 6), p, o, s) for a, p, o, s in got] == [(round(a, 6), p, o, s) for a, p, o, s in want]
    assert np.all(np.diff(sample.arrival_s) >= 0)
    # a block id per full 64-token block of each prompt, as in the file
    lens = np.diff(sample.block_offsets)  # type: ignore[arg-type]
    assert np.array_equal(lens, sample.prompt_tokens // 64)


def test_each_turn_repeats_the_blocks_of_the_turn_before(sample: Requests) -> None:
    """The ids keep the reuse: within a session the next prompt starts with the previous one's
    blocks; sessions (scoped "local") share none."""
    owners: dict[int, set[int]] = {}
    for rid in range(len(sample)):
        for b in sample.blocks(rid).tolist():  # type: ignore[union-attr]
            owners.setdefault(b, set()).add(int(sample.session[rid]))
    assert all(len(s) == 1 for s in owners.values())
    first = [rid for rid in range(len(sample)) if sample.session[rid] == 1][:6]  # trace_0002: no sub-agents
    for a, b in itertools.pairwise(first):
        prev, nxt = sample.blocks(a), sample.blocks(b)
        assert prev is not None and nxt is not None
        assert np.array_equal(nxt[: len(prev)], prev)


def ideal_hit_rate(reqs: Requests) -> float:
    """The share of prompt tokens a cache that never forgets could serve: each prompt's longest
    prefix of blocks some earlier prompt had."""
    seen: set[int] = set()
    hit = 0
    for rid in range(len(reqs)):
        blocks = reqs.blocks(rid)
        assert blocks is not None
        m = 0
        for b in blocks.tolist():
            if b not in seen:
                break
            m += 1
        hit += min(m * reqs.block_tokens, int(reqs.prompt_tokens[rid]) - 1)
        seen.update(blocks.tolist())
    return hit / float(reqs.prompt_tokens.sum())


def test_a_replay_with_the_cache_on_hits_what_the_block_ids_allow() -> None:
    over = {
        "workload.trace": {"format": "agentic", "path": SAMPLE, "max_gap_s": 60.0},
        "duration_s": 86400.0,
        "cache": {"enabled": True},
        "model": {"id": "llama-3.1-8b", "weights": "fp8"},
        "deployment.pools": [{"name": "p", "hardware": "h200", "tp": 1, "count": 8}],
        "scheduler.router": {"name": "cache_aware"},
    }
    # Claude Code's sessions reach 198k tokens: on Llama-3.1-8B's 131,072 the longer ones are refused
    sc = sio.apply_overrides(BASE, over)
    assert sc.workload.trace is not None
    reqs = read_trace(sc.workload.trace, sc)
    over_context = int(np.count_nonzero(reqs.prompt_tokens + reqs.output_tokens > 131_072))
    short = simulate(sc).summary["requests"]
    assert over_context == 155 and short["rejected_by_reason"] == {"longer_than_context": 155}
    assert short["completed"] == 889 - 155
    # the same model with a context that holds them (a custom entry), every request served
    long_8b = {"id": "llama-3.1-8b-256k", "name": "Llama-3.1-8B, 256k context", "source": "this test",
               "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "intermediate": 14336,
               "vocab": 128256, "max_context": 262_144}  # fmt: skip
    sc = sio.apply_overrides(sc, {"custom_models": [long_8b], "model.id": "llama-3.1-8b-256k"})
    ideal = ideal_hit_rate(read_trace(sc.workload.trace, sc))  # type: ignore[arg-type]
    assert 0.9 < ideal < 0.97  # agentic sessions resend almost all of their context
    res = simulate(sc)
    assert res.summary["requests"]["completed"] == 889
    hit = res.summary["cache"]["hit_rate"]
    assert ideal - 0.02 <= hit <= ideal + 0.005, (hit, ideal)  # a prompt may hit a later one prefilled first
    # and with the cache off nothing hits: the reuse comes from the ids
    off = simulate(sio.apply_overrides(sc, {"cache.enabled": False}))
    assert off.summary["cache"]["hit_rate"] == 0.0


def test_max_gap_cuts_long_pauses_and_keeps_short_ones(sample: Requests) -> None:
    cut = read(path=SAMPLE, max_gap_s=60.0)
    assert len(cut) == 889
    assert cut.arrival_s.max() < 86400.0 < sample.arrival_s.max() * 6.0  # five days without the cut
    for s in range(13):
        t = np.sort(cut.arrival_s[cut.session == s])
        assert np.diff(t).max() <= 60.0 + 1e-6
    # a session whose gaps are all short keeps its times (trace_0007: 12 requests in 353 s)
    docs = sample_documents()
    short = next(k for k, d in enumerate(docs) if d["id"] == "trace_0007")
    want = sorted(t for t, _ in flat(docs[short]["requests"]))
    assert np.allclose(np.sort(cut.arrival_s[cut.session == short]), want)


# --- the format -----------------------------------------------------------------------------


def test_sub_agents_count_from_their_entry_and_share_the_parent_blocks() -> None:
    doc = session(
        req(0.0, 8, 1, (1, 2)),
        {"t": 10.0, "type": "subagent", "requests": [req(0.0, 12, 1, (1, 2, 7)), req(5.0, 12, 1, (1, 2, 7))]},
        req(30.0, 12, 1, (1, 2, 3)),
    )
    r = read(lines(doc))
    assert r.arrival_s.tolist() == [0.0, 10.0, 15.0, 30.0]
    assert r.session.tolist() == [0, 0, 0, 0]
    b = [r.blocks(i).tolist() for i in range(4)]  # type: ignore[union-attr]
    assert b[1][:2] == b[0] == b[3][:2]  # one namespace for parent and sub-agent
    assert b[1] == b[2] and b[1][2] != b[3][2]


def test_scopes_local_ids_differ_between_sessions_global_ones_do_not() -> None:
    one = session(req(0.0, 8, 1, (1, 2)))
    local = read(lines(one, one))
    assert set(local.blocks(0).tolist()).isdisjoint(local.blocks(1).tolist())  # type: ignore[union-attr]
    shared = session(req(0.0, 8, 1, (1, 2)), hash_id_scope="global")
    both = read(lines(shared, shared))
    assert both.blocks(0).tolist() == both.blocks(1).tolist()  # type: ignore[union-attr]


def test_ids_that_do_not_name_prefixes_are_made_to() -> None:
    """Block k of a prompt is the cache's block only after the same k - 1 blocks."""
    r = read(lines(session(req(0.0, 12, 1, (1, 2, 3)), req(1.0, 8, 1, (2, 3)), req(2.0, 8, 1, (1, 3)))))
    a, b, c = (r.blocks(i).tolist() for i in range(3))  # type: ignore[union-attr]
    assert set(b).isdisjoint(a)  # 2, 3 at the start are not the blocks after 1
    assert c[0] == a[0] and c[1] != a[1] and c[1] not in a


def test_prefix_ids_agree_between_the_fast_and_the_general_path() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        lens = rng.integers(0, 6, size=5)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        hashes = rng.integers(0, 4, size=int(offsets[-1])).astype(np.int64)
        space = rng.integers(0, 2, size=5).astype(np.int64)
        ids = traces.prefix_ids(hashes, offsets, space)
        # two blocks share a name exactly when their namespace and whole prefix of ids agree
        keys = [
            (int(space[r]), tuple(hashes[offsets[r] : k + 1].tolist()))
            for r in range(5)
            for k in range(int(offsets[r]), int(offsets[r + 1]))
        ]
        for i in range(len(keys)):
            for j in range(len(keys)):
                assert (ids[i] == ids[j]) == (keys[i] == keys[j])


def test_one_pretty_printed_session_or_concatenated_documents_read() -> None:
    doc = session(req(0.0), req(2.5))
    assert len(read(json.dumps(doc, indent=2))) == 2
    assert len(read(json.dumps(doc) + json.dumps(doc))) == 4


def test_windowing_and_time_scale_apply_as_for_other_formats() -> None:
    doc = session(req(0.0), req(100.0), req(200.0))
    assert read(lines(doc), time_scale=2.0).arrival_s.tolist() == [0.0, 50.0, 100.0]
    assert read(lines(doc), start_s=50.0).arrival_s.tolist() == [50.0, 150.0]
    assert len(read(lines(doc), max_requests=2)) == 2


def test_the_readers_moved_without_changing_what_workload_offers() -> None:
    assert workload.trace_class_names is traces.trace_class_names
    mooncake = '{"timestamp": 5, "input_length": 3, "output_length": 2, "hash_ids": [9]}\n'
    sc = sio.apply_overrides(BASE, {"workload.trace": {"format": "mooncake", "path": "m.jsonl"}})
    assert sc.workload.trace is not None
    r = read_trace(sc.workload.trace, sc, text=mooncake)
    assert (len(r), r.block_tokens, r.session.tolist(), r.blocks(0).tolist()) == (1, 512, [0], [9])  # type: ignore[union-attr]


# --- hostile input --------------------------------------------------------------------------

BAD: list[tuple[str, str]] = [
    ("{", r"upload.json: line 1: not JSON"),
    (lines(session(req()), [1]), r"session 2 \(line 2\): expected a JSON object \(one session\)"),
    (
        lines({"requests": [req()]}),
        r"session 1 \(line 1\): missing field 'block_size'",
    ),
    (
        lines(session(req(), block_size=0)),
        r"session 1 \(line 1\), field block_size: must be an integer from 1 to 65,536",
    ),
    (lines({"block_size": "64", "requests": []}), r"field block_size: must be .* \(got '64'\)"),
    (lines({"block_size": True, "requests": []}), r"field block_size"),
    (
        lines(session(req()), session(req(), block_size=8)),
        r"session 2 .*block_size: 8 differs from the first session's 4",
    ),
    (
        lines(session(req(), hash_id_scope="team")),
        r"field hash_id_scope: must be one of local, global \(got 'team'\)",
    ),
    (lines({"block_size": 4}), r"session 1 \(line 1\): missing field 'requests'"),
    (
        lines(session() | {"requests": {"t": 0}}),
        r"session 1 \(line 1\), requests: must be a list of requests",
    ),
    (lines(session(5)), r"requests\[0\]: expected a JSON object \(a request or a sub-agent\)"),  # type: ignore[arg-type]
    (lines(session({"in": 8, "out": 1, "hash_ids": []})), r"requests\[0\]: missing field 't'"),
    (
        lines(session(req(t=-1))),
        r"requests\[0\], field t: must be a time in seconds from 0 to 10\^15 \(got -1\)",
    ),
    (lines(session(req(t="0"))), r"field t: must be a time"),
    (lines(session(req(t=True))), r"field t: must be a time"),
    (lines(session(req(t=1e300))), r"field t: must be a time"),
    ('{"block_size": 4, "requests": [{"t": NaN, "in": 8, "out": 1, "hash_ids": []}]}', r"field t: .*got nan"),
    (
        lines(session(req(), req(1.0, inp=0))),
        r"requests\[1\], field in: must be an integer from 1 to 1,048,576 \(got 0\)",
    ),
    (lines(session(req(inp=1.5))), r"field in: must be an integer"),
    (lines(session(req(inp=True))), r"field in: must be an integer"),
    (lines(session(req(inp=2**21))), r"field in: must be an integer"),
    (lines(session(req(out=0))), r"field out: must be an integer from 1"),
    (lines(session({"t": 0, "in": 8, "hash_ids": []})), r"requests\[0\]: missing field 'out'"),
    (lines(session(req(hash_ids="abc"))), r"field hash_ids: must be a list of 64-bit integers"),
    (lines(session(req(hash_ids=[1, "x"]))), r"field hash_ids: must be a list of 64-bit integers"),
    (lines(session(req(hash_ids=[1.0]))), r"field hash_ids: must be a list of 64-bit integers"),
    (lines(session(req(hash_ids=[2**64]))), r"field hash_ids: must be a list of 64-bit integers"),
    (
        lines(session(req(inp=8, hash_ids=[1, 2, 3]))),
        r"field hash_ids: 3 block ids for 8 prompt tokens; at most 2",
    ),
    (
        lines(session({"t": 0, "requests": [req(), {"t": 1, "requests": [req(inp=0)]}]})),
        r"requests\[0\]\.requests\[1\]\.requests\[0\], field in: must be",
    ),
    ("[" * 100_000 + "]" * 100_000, r"line 1: not usable JSON \(nested too deeply\)"),
    (
        '{"block_size": 4, "requests": [{"t": 0, "in": 1' + "0" * 5000 + "}]}",
        r"not usable JSON \(a number too long\)",
    ),
    ("", r"upload.json: no requests"),
    (lines(session()), r"upload.json: no requests"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_input_is_named(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        read(text)


def test_sub_agents_nest_at_most_max_nesting_deep() -> None:
    entry: dict[str, Any] = req()
    for _ in range(traces.MAX_NESTING + 1):
        entry = {"t": 0, "requests": [entry]}
    with pytest.raises(ScenarioError, match=r"sub-agents nested deeper than 8 levels"):
        read(lines(session(entry)))
    ok: dict[str, Any] = req()
    for _ in range(traces.MAX_NESTING):
        ok = {"t": 1, "requests": [ok]}
    assert read(lines(session(req(), ok))).arrival_s.tolist() == [0.0, float(traces.MAX_NESTING)]


def test_max_gap_is_a_bounded_positive_time() -> None:
    with pytest.raises(ScenarioError, match=r"max_gap_s"):
        scenario(max_gap_s=0)
    with pytest.raises(ScenarioError, match=r"max_gap_s"):
        scenario(max_gap_s=float("nan"))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(
    t=JSON | st.floats(0, 1e6),
    inp=JSON | st.integers(1, 64),
    out=JSON | st.integers(1, 64),
    ids=JSON | st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20),
    extra=st.dictionaries(
        st.sampled_from(["block_size", "hash_id_scope", "requests", "x"]), JSON, max_size=2
    ),
)
def test_any_session_gives_requests_or_a_scenario_error(
    t: object, inp: object, out: object, ids: object, extra: dict[str, object]
) -> None:
    doc = session(req(0.0, 16, 1, (1, 2)), {"t": t, "in": inp, "out": out, "hash_ids": ids}) | extra
    try:
        r = read(lines(doc))
    except ScenarioError:
        return
    assert len(r) >= 1 and np.all(np.isfinite(r.arrival_s)) and np.all(r.prompt_tokens >= 1)
    assert r.block_offsets is not None and r.block_hashes is not None
    assert np.all(np.diff(r.block_offsets) <= -(-r.prompt_tokens // r.block_tokens))


@FUZZ
@given(data=st.binary(max_size=300))
def test_any_bytes_give_requests_or_a_scenario_error(data: bytes) -> None:
    with contextlib.suppress(ScenarioError):
        read(data.decode("utf-8", "replace"))


# --- uploads: a gzipped file, its format told from its opening, its pauses named -------------------------


def test_an_upload_unpacks_its_gzip_layer_within_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agentic sample ships as .jsonl.gz and the Workload page took .csv and .jsonl alone: a user had no
    file of that format to upload. A gzipped upload is unpacked, to the trace limit and no further."""
    from engine.explain.trace_files import trace_format

    raw = (datafiles.data_dir() / "traces" / "kv_cache_tester_sample" / "sessions.jsonl.gz").read_bytes()
    name, text = datafiles.unpack_upload("sessions.jsonl.gz", raw)
    assert name == "sessions.jsonl" and trace_format(name, text.decode()[:65536]) == "agentic"
    assert datafiles.unpack_upload("a.csv", b"x") == ("a.csv", b"x")  # not gzipped: as it came
    two = gzip.compress(b"arrival_s,input_tokens,") + gzip.compress(b"output_tokens\n0,1,1\n")
    assert datafiles.unpack_upload("a.csv.gz", two)[1].endswith(b"output_tokens\n0,1,1\n")  # every member
    monkeypatch.setattr(datafiles.bounds, "MAX_TRACE_BYTES", 1000)
    for name, body, said in (
        ("a.csv.gz", gzip.compress(b"0" * 5000), "a.csv.gz: unpacks to more than 1,000 bytes, the limit"),
        ("a.csv.gz", b"not gzip", "a.csv.gz: not a gzip file, or a damaged one"),
        ("a.csv.gz", gzip.compress(bytes(range(256)) * 3)[:-20], "a.csv.gz: cut off"),
        (
            "a.txt.gz",
            gzip.compress(b"0"),
            "a.txt.gz: a gzipped trace's name says the format inside, .csv.gz, "
            ".jsonl.gz or .json.gz (this one's name ends in '.txt')",
        ),
        ("b.gz", gzip.compress(b"0"), "b.gz: a gzipped trace's name says the format inside"),
    ):
        with pytest.raises(ScenarioError, match="^" + re.escape(said)):
            datafiles.unpack_upload(name, body)


def test_a_json_trace_is_told_by_what_it_holds() -> None:
    from engine.explain.trace_files import trace_format, trace_problem

    pretty = json.dumps({"id": "s1", "block_size": 64, "requests": [{"t": 0, "in": 9, "out": 2}]}, indent=2)
    assert pretty.split("\n", 1)[0] == "{" and trace_format("x.json", pretty) == "agentic"
    assert trace_format("x.jsonl", '{"id":"s","requests":[]}') == "agentic"
    assert trace_format("x.jsonl", '{"timestamp": 0, "input_length": 5}') == "mooncake"
    assert trace_format("x.json", '{"timestamp": 0, "input_length": 5}') is None  # Mooncake's is JSON Lines
    said = trace_problem("x.json", '{"a": 1}')
    assert "input_length" in said and "requests (each with t, in, out and hash_ids)" in said


def test_a_window_that_leaves_sessions_out_names_the_gap_cut_not_a_time_unit() -> None:
    """The sample in a 600 s window keeps 174 of its 889 requests; what it said was 'if its times are in
    milliseconds, set the time scale to 1,000', wrong of a file in seconds whose sessions pause for hours."""
    from engine.explain.trace_files import trace_notes

    sc = sio.apply_overrides(BASE, {"workload.trace": {"format": "agentic", "path": SAMPLE}})
    win = read_trace(sc.workload.trace, sc).source.window()
    (said,) = trace_notes(win, sc)
    assert said.startswith(f"{len(win):,} requests in the window of the file's 889")
    assert (
        "(the file runs to 440,384 s; its sessions pause for hours in places: Max gap (workload.trace.max_gap_s) "
        in said
    )
    assert "milliseconds" not in said
    cut = sio.apply_overrides(sc, {"workload.trace.max_gap_s": 60.0})
    (then,) = trace_notes(read_trace(cut.workload.trace, cut).source.window(), cut)
    assert (
        "its sessions' pauses cut to 60 s)" in then and "Max gap" not in then
    )  # followed: not advised again
