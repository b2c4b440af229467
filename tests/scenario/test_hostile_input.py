"""Untrusted input: share links, scenario files and --set values can only fail with a clear message.

Property tests feed generated and mutated input to every parser a link or a file reaches and
assert that nothing but the project's own ScenarioError comes out, that messages shown in the
app render as the text they are (no link, image or format), and that decoding a link costs work
linear in its size. The findings of the hostile-input review each have a test here or beside the
module they concern (test_request_endings, test_work_bound, test_trace_input, test_custom_entries).
"""

from __future__ import annotations

import base64
import contextlib
import html
import io as io_text
import json
import re
import sys
import unicodedata
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from engine.cli import main as cli
from engine.core import safeparse
from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from ui.text import plain

PRESET = io.DEFAULT_PRESET


def encode(text: str) -> str:
    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


def link(changes: Any) -> dict[str, str]:
    return {"v": "1", "p": PRESET, "s": encode(json.dumps(changes))}


def only_scenario_errors(fn: Callable[[], Any]) -> Any:
    """Run `fn`; a ScenarioError is an answer, any other exception fails the test."""
    try:
        return fn()
    except ScenarioError as exc:
        assert str(exc)
        return exc


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
field_paths = st.sampled_from(
    [
        "workload.arrival.rate_rps", "workload.classes[0].name", "workload.classes[0].input",
        "workload.trace", "workload.trace.path", "deployment.pools[0].count", "deployment.pools[1].tp",
        "deployment.pools", "custom_hardware", "custom_models", "faults", "cache", "cache.block_tokens",
        "scheduler.router", "seed", "duration_s", "name", "description", "workload.classes[9].share",
    ]
) | st.text(max_size=40)  # fmt: skip


@given(st.dictionaries(field_paths, json_values, max_size=6))
def test_any_link_changes_give_a_scenario_or_a_scenario_error(changes: dict[str, Any]) -> None:
    out = only_scenario_errors(lambda: io.from_link(link(changes)))
    assert isinstance(out, Scenario | ScenarioError)


@given(st.text(max_size=300))
def test_any_payload_text_gives_a_scenario_error(payload: str) -> None:
    only_scenario_errors(lambda: io.from_link({"v": "1", "p": PRESET, "s": payload}))


@given(st.text(max_size=400))
def test_any_decoded_payload_gives_a_scenario_or_a_scenario_error(text: str) -> None:
    only_scenario_errors(lambda: io.from_link({"v": "1", "p": PRESET, "s": encode(text)}))


@given(st.data())
def test_mutated_real_links_give_a_scenario_or_a_scenario_error(data: st.DataObject) -> None:
    base = io.load_preset(PRESET)
    sc = io.apply_overrides(
        base, {"workload.arrival.rate_rps": 7.5, "workload.classes[0].slo.ttft_ms": 400.0}
    )
    payload = list(io.to_link(sc, PRESET)["s"])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(payload) - 1))
        payload[i] = data.draw(st.sampled_from("AZaz09-_=+/!%"))
    only_scenario_errors(lambda: io.from_link({"v": "1", "p": PRESET, "s": "".join(payload)}))


@given(st.text(max_size=600))
def test_any_toml_or_json_scenario_text_gives_a_scenario_error(text: str) -> None:
    only_scenario_errors(lambda: io.loads_toml(text))
    only_scenario_errors(lambda: io.loads_json(text))


@given(st.text(max_size=120), st.text(max_size=120))
def test_any_set_path_and_value_give_a_scenario_or_a_scenario_error(path: str, text: str) -> None:
    base = io.load_preset(PRESET)
    only_scenario_errors(lambda: io.apply_overrides(base, {path: io.parse_value(text)}))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 50_000 + "]" * 50_000,
        '{"a":' * 3_000 + "1" + "}" * 3_000,
        '{"seed": ' + "9" * 5_000 + "}",
    ],
    ids=["deep-list", "deep-object", "huge-int"],
)
def test_deep_or_huge_json_is_refused_not_a_traceback(text: str) -> None:
    """Finding 3: a 66-character link of nested brackets raised RecursionError with server paths."""
    with pytest.raises(ScenarioError, match="link payload"):
        io.from_link({"v": "1", "p": PRESET, "s": encode(text)})


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 5_000 + "]" * 5_000,
        "a = " + "{b = " * 2_000 + "1" + "}" * 2_000,
        "seed = " + "9" * 5_000,
    ],
    ids=["deep-array", "deep-table", "huge-int"],
)
def test_deep_or_huge_scenario_files_are_refused(tmp_path: Path, text: str) -> None:
    for suffix in (".toml", ".json"):
        f = tmp_path / f"s{suffix}"
        f.write_text(text if suffix == ".toml" else "[" * 5_000 + "]" * 5_000)
        with pytest.raises(ScenarioError, match=f"s{suffix}: "):
            io.load(f)
    with pytest.raises(ScenarioError, match=r"nested|too long"):
        io.parse_value("[" * 5_000 + "]" * 5_000)


def test_a_scenario_file_that_is_not_a_file_is_a_message(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        io.load(tmp_path)
    (tmp_path / "big.toml").write_bytes(b"#" * (io.MAX_SCENARIO_CHARS + 10))
    with pytest.raises(ScenarioError, match="limit"):
        io.load(tmp_path / "big.toml")
    # under the limit in characters, over it in bytes: read whole, not cut at the limit's count of bytes
    # (a 1 MiB file of accented comments lost its last table, its rate of 50 read as the preset's 10)
    body = io.dumps_toml(io.load_preset("chat-colocated")).replace("rate_rps = 16.0", "rate_rps = 50.0")
    accented = "# " + "é" * (io.MAX_SCENARIO_CHARS // 2) + "\n" + body
    assert len(accented) <= io.MAX_SCENARIO_CHARS < len(accented.encode())
    (tmp_path / "accented.toml").write_text(accented, encoding="utf-8")
    assert io.load(tmp_path / "accented.toml").workload.arrival.rate_rps == 50.0
    (tmp_path / "huge.toml").write_bytes("é".encode() * (2 * io.MAX_SCENARIO_CHARS + 10))
    with pytest.raises(ScenarioError, match="at most"):
        io.load(tmp_path / "huge.toml")


def python_calls(fn: Callable[[], Any]) -> int:
    """Python-level function calls made by `fn`: a deterministic measure of work."""
    count = 0

    def prof(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(prof)
    try:
        fn()
    except ScenarioError:
        pass
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("kind", ["valid", "unknown"])
def test_link_decoding_work_is_linear_in_the_payload(kind: str) -> None:
    """Finding 4: decoding cost grew faster than linearly (a 2 kB payload took 17 s)."""

    def changes(n: int) -> dict[str, Any]:
        if kind == "valid":  # distinct real fields, each changed
            return {f"workload.classes[0].{k}": v for k, v in [("share", 0.5), ("priority", 3)]} | {
                f"faults[{i}]": None for i in range(n)
            }
        return {f"x{i}.y": i for i in range(n)}  # every one an unknown field

    small = python_calls(lambda: io.from_link(link(changes(100))))
    large = python_calls(lambda: io.from_link(link(changes(800))))
    assert large < 8 * small * 1.5, (small, large)


# --- messages render as text ---------------------------------------------------------------

MD = MarkdownIt("commonmark", {"linkify": True}).enable(["linkify", "strikethrough", "table"])
HOSTILE_TEXT = [
    "![x](http://127.0.0.1:9/pixel.png) [click here](http://127.0.0.1:9/)",
    "<img src=x onerror=alert(1)> <script>alert(1)</script>",
    "**bold** _it_ `code` ~~strike~~ # heading\n- item\n> quote | a | b |",
    "http://127.0.0.1:9/ www.example.com user@example.com",
    ":red[coloured] :material/home: :smile: $x^2$ $$y$$",
    "\\[escaped\\] \\\\ trailing backslash\\",
]


def rendered(markdown: str) -> str:
    return MD.render(markdown)


def text_of(markdown: str) -> str:
    """What the escaped text reads as once rendered (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered(markdown))).replace("\u2060", "")


def assert_renders_as_itself(text: str) -> None:
    out = plain(text)
    page = rendered(out)
    assert not re.search(r"<(?!/?p>)", page.strip()), page  # one paragraph, nothing else
    shown = "".join("\ufffd" if unicodedata.category(c) == "Cc" and c not in "\t\r\n" else c for c in text)
    shown = shown.replace("\u2060", "")  # an invisible word joiner reads as nothing, the text's own too
    assert " ".join(text_of(out).split()) == " ".join(shown.split())
    # Streamlit's own directives (:color[...], :icon:, emoji shortcodes, $math$) and the links it
    # makes of bare addresses even when escaped (http://, www., a@b) stay broken
    bare = out.replace("\\", "")
    assert not re.search(r":[\w/+-]+[:\[]", bare), out
    assert not re.search(r"(?<!\\)\$", out), out
    assert not re.search(r"(?i)://|www\.|@\w", bare), out


@pytest.mark.parametrize("text", HOSTILE_TEXT)
def test_plain_shows_hostile_text_literally(text: str) -> None:
    assert_renders_as_itself(text)


@settings(max_examples=200)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_plain_shows_any_text_literally(text: str) -> None:
    if text.strip():
        assert_renders_as_itself(text)


@pytest.mark.parametrize("text", HOSTILE_TEXT)
def test_messages_about_hostile_links_render_as_text(text: str) -> None:
    """Finding 2: a preset name or field value from a link is echoed, never rendered."""
    for params in (
        {"v": "1", "p": text},
        link({"workload.classes[0].name": text}),
        link({"deployment.pools[0].hardware": text}),
        link({text[:30]: 1}),
    ):
        err = only_scenario_errors(lambda p=params: resolve(io.from_link(p)))
        assert isinstance(err, ScenarioError)
        assert_renders_as_itself(str(err))


def test_nesting_depth_counts_without_recursion() -> None:
    deep: Any = 1
    for _ in range(10_000):
        deep = [deep]
    assert safeparse.nesting_depth(deep) == safeparse.MAX_NESTING + 1
    assert safeparse.nesting_depth({"a": [1, {"b": 2}]}) == 3
    assert safeparse.nesting_depth(5) == 0


# --- the command line ------------------------------------------------------------------------


def run_cli(argv: list[str]) -> tuple[int, str]:
    """Exit status and stderr of the CLI; any exception but SystemExit fails the test."""
    err = io_text.StringIO()
    with contextlib.redirect_stdout(io_text.StringIO()), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as exc:  # argparse's own refusals
            rc = int(exc.code or 0)
    return rc, err.getvalue()


@given(field_paths, st.text(max_size=60))
def test_any_set_on_the_command_line_exits_cleanly(path: str, value: str) -> None:
    rc, err = run_cli(["scenario", PRESET, "--set", f"{path}={value}", "--json"])
    assert rc in (0, 2), err
    assert "Traceback" not in err


def test_cli_failures_found_by_fuzzing_are_messages(tmp_path: Path) -> None:
    """Finding 3's command-line tracebacks: a KeyError for a profile, NotADirectoryError for --out."""
    rc, err = run_cli(["roofline", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--profile", "nope"])
    assert rc == 2 and "profile 'nope' is not defined for h100-sxm" in err
    (tmp_path / "a-file").write_text("x")
    rc, err = run_cli(["run", "edge-npu", "--set", "duration_s=5", "--out", str(tmp_path / "a-file")])
    assert rc == 2 and "--out" in err and "cannot write" in err
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5_000 + "]" * 5_000)
    rc, err = run_cli(["run", str(deep)])
    assert rc == 2 and "nested" in err


def test_a_nan_is_said_to_be_no_number_with_the_fields_range() -> None:
    """NaN fails every bound, so a bare 'should be at most 5000' would mislead: the message says it is
    no number, and still names the field and its range."""
    for value in (float("nan"), "NaN"):
        with pytest.raises(ScenarioError) as err:
            io.apply_overrides(io.load_preset("chat-colocated"), {"workload.arrival.rate_rps": value})
        text = str(err.value)
        assert text.startswith("workload.arrival.rate_rps: must be a number, not NaN; the allowed range is")
        assert "0.0001 to 5,000" in text and "less than or equal" not in text  # the range, not one bound
    with pytest.raises(ScenarioError, match="an empirical distribution needs"):
        io.apply_overrides(
            io.load_preset("chat-colocated"), {"workload.classes[0].input": {"kind": "empirical"}}
        )


def test_true_or_false_is_no_number_from_a_link_a_file_or_set() -> None:
    """pydantic's lax mode would read `true` as 1: a ceiling of one request in flight, one pool
    instance, a rate of 1 req/s, without a word. A boolean where a number is wanted is refused by
    name, in a link's changes, a scenario file, a `--set` and a custom catalog entry alike."""
    base = io.load_preset("chat-colocated")
    for path, value, wants in (
        ("workload.arrival.max_in_flight", True, "a whole number, not true"),
        ("workload.arrival.rate_rps", False, "a number, not false"),
        ("deployment.pools[0].count", True, "a whole number, not true"),
        ("workload.classes[0].slo.ttft_ms", True, "a number, not true"),
    ):
        with pytest.raises(ScenarioError) as err:
            io.apply_overrides(base, {path: value})
        assert str(err.value) == f"{path}: must be {wants}", str(err.value)
    raw = zlib.compress(json.dumps({"workload.arrival.max_in_flight": True}).encode())
    link = {"v": io.to_link(base, "chat-colocated")["v"], "p": "chat-colocated",
            "s": base64.urlsafe_b64encode(raw).decode().rstrip("=")}  # fmt: skip
    with pytest.raises(
        ScenarioError, match=r"workload\.arrival\.max_in_flight: must be a whole number, not true"
    ):
        io.from_link(link)
    rc, err = run_cli(
        ["scenario", "chat-colocated", "--set", "workload.arrival.max_in_flight=true", "--json"]
    )
    assert rc == 2 and "workload.arrival.max_in_flight: must be a whole number, not true" in err
    # inside a mapping's values and a tuple's items, in policy knobs, and the format's version too
    for path, value, said in (
        ("cost.capex_usd", {"h100-sxm": True}, "cost.capex_usd.h100-sxm: must be a number, not true"),
        ("scheduler.admission", {"name": "queue_cap", "max_queued": True},
         "scheduler.admission.max_queued: must be a whole number, not true"),
        ("version", True, "version: must be one of 1, not true"),
    ):  # fmt: skip
        with pytest.raises(ScenarioError) as err:
            io.apply_overrides(base, {path: value})
        assert str(err.value) == said, str(err.value)
    chip = io.to_data(base)  # a custom chip whose BF16 peak is `true`
    from engine.catalog.entries import load_catalog

    entry = load_catalog().chip("h100-sxm").model_dump(mode="json", by_alias=True) | {"id": "my-chip"}
    entry["tflops"] = {**entry["tflops"], "bf16": True}
    with pytest.raises(
        ScenarioError, match=r"custom_hardware\[0\]\.tflops\.bf16: must be a number, not true"
    ):
        io.from_data({**chip, "custom_hardware": [entry]})
    # numbers themselves are taken as before: an integral float for a count, an int for a rate
    same = io.apply_overrides(base, {"deployment.pools[0].count": 2.0, "workload.arrival.rate_rps": 3})
    assert same.deployment.pools[0].count == 2 and same.workload.arrival.rate_rps == 3.0


def test_an_emptied_list_says_how_many_it_needs() -> None:
    """A link with no request class read "Tuple should have at least 1 item after validation, not 0" (a
    review): the count needed and the count given, in the scenario's words."""
    from engine.core.errors import ScenarioError
    from engine.scenario import codec as io

    with pytest.raises(ScenarioError, match=r"^workload\.classes: needs at least 1 entry \(got 0\)$"):
        io.apply_overrides(io.load_preset("chat-colocated"), {"workload.classes": []})


def test_a_link_null_on_a_field_without_one_is_refused() -> None:
    """`duration_s: null` in a link fell back to 600 s without a word where the CLI refuses it (a review):
    refused, naming the field; a null on an optional field (a trace, a profile) still unsets it, as the
    links the app writes use it, every preset from every other one reading back whole."""
    import base64
    import json
    import zlib

    from engine.core.errors import ScenarioError
    from engine.scenario import codec as io

    def link(changes: dict[str, object]) -> dict[str, str]:
        payload = (
            base64.urlsafe_b64encode(zlib.compress(json.dumps(changes).encode(), 9)).decode().rstrip("=")
        )
        return {"v": "1", "p": "chat-disaggregated", "s": payload}

    for path in ("duration_s", "seed"):
        with pytest.raises(ScenarioError, match=rf"^{path}: null is not a value of this field"):
            io.from_link(link({path: None}))
    assert io.from_link(link({"deployment.pools[0].profile": None})).deployment.pools[0].profile is None
    names = io.preset_names()
    for a, b in zip(names, [*names[7:], *names[:7]], strict=True):  # every preset, from another
        assert io.from_link(io.to_link(io.load_preset(b), a)) == io.load_preset(b), (a, b)


def test_a_field_looked_up_in_a_list_names_the_item_to_pick() -> None:
    """`--set workload.classes.slo.ttft_ms=500` said 'no such field' (a review): it names the list, its
    length and the path with an index."""
    from engine.core.errors import ScenarioError
    from engine.scenario.codec import apply_overrides, load_preset

    with pytest.raises(ScenarioError) as info:
        apply_overrides(load_preset("enterprise-mixed"), {"workload.classes.slo.ttft_ms": 500})
    assert str(info.value) == (
        "workload.classes.slo.ttft_ms: workload.classes is a list of 3; name an item by its index, as "
        "workload.classes[0].slo.ttft_ms (0 to 2)"
    )


def test_an_enabled_cache_tier_of_nothing_is_refused() -> None:
    """--set 'cache.host={enabled=true,capacity_gb=0}' ran, caching nothing unsaid (a review)."""
    from engine.core.errors import ScenarioError
    from engine.scenario.codec import apply_overrides, load_preset

    with pytest.raises(
        ScenarioError, match=r"^cache\.host\.capacity_gb: an enabled tier needs a capacity above 0"
    ):
        apply_overrides(load_preset("chat-colocated"), {"cache.host": {"enabled": True, "capacity_gb": 0}})
    apply_overrides(load_preset("chat-colocated"), {"cache.host": {"enabled": False, "capacity_gb": 0}})


def test_a_field_the_arrival_kind_does_not_use_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """`clients = 64` beside `kind = "poisson"` (or a rate beside a closed loop) ran with nothing said
    (last session's note): `Arrival.unused` names such fields and `run` says each before the figures."""
    from engine.cli.main import main
    from engine.scenario.codec import apply_overrides, load_preset

    arr = apply_overrides(load_preset("chat-colocated"), {"workload.arrival.clients": 64}).workload.arrival
    assert arr.kind == "poisson" and arr.unused() == ["clients"]
    assert load_preset("chat-colocated").workload.arrival.unused() == []
    over = ["--set", "workload.arrival.kind=closed_loop", "--set", "duration_s=20"]
    assert main(["run", "chat-colocated", *over]) == 0
    assert "workload.arrival.rate_rps (16.0) is not used by a closed loop" in capsys.readouterr().out
    # a shape field its shape does not use: peak_factor = 3 beside a flat shape ran flat, unsaid (a review)
    flat = apply_overrides(
        load_preset("chat-colocated"), {"workload.arrival.peak_factor": 3.0}
    ).workload.arrival
    assert flat.unused() == [] and flat.unused_by_shape() == ["peak_factor"]
    peak = apply_overrides(load_preset("chat-colocated"), {"workload.arrival.shape": "peak"})
    assert (
        apply_overrides(peak, {"workload.arrival.peak_factor": 3.0}).workload.arrival.unused_by_shape() == []
    )
    assert (
        main(["run", "chat-colocated", "--set", "workload.arrival.peak_factor=3", "--set", "duration_s=20"])
        == 0
    )
    assert "workload.arrival.peak_factor is not used by a 'flat' shape" in capsys.readouterr().out


def test_an_arrival_field_a_trace_does_not_read_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With a `[workload.trace]` the file gives the arrivals: a scenario file's `clients = 64` (or a rate,
    a kind, a ramp) was dropped with nothing said, where without a trace `run` names a field the kind
    does not use (a documentation review). `max_in_flight` is read by a replay: never named."""
    from engine.cli.main import main
    from engine.explain.run_notes import scenario_notes
    from engine.scenario.codec import apply_overrides, load_preset, save

    replay = apply_overrides(load_preset("mooncake-replay"), {"duration_s": 60.0})
    said = "workload.arrival.clients (64) is not used with a trace"
    assert not [n for n in scenario_notes(replay, {}) if "is not used" in n]  # the preset's defaults
    set_ = apply_overrides(replay, {"workload.arrival": {"clients": 64, "max_in_flight": 32}})
    notes = [n for n in scenario_notes(set_, {}) if "is not used" in n]
    assert len(notes) == 1 and notes[0].startswith(said)
    path = tmp_path / "replay.toml"
    save(set_, path)
    assert main(["run", str(path)]) == 0
    assert said in capsys.readouterr().out


@pytest.mark.parametrize(("name", "text"), [("e.toml", ""), ("x.json", '{"version": 1, "name": "x"}')])
def test_a_file_with_no_scenario_in_it_says_so(tmp_path: Path, name: str, text: str) -> None:
    """An empty file was judged as the defaults' scenario and refused for a pool it never named
    ("deployment.pools[0].tp: llama-3.1-70b in bf16 needs 131 GiB": a review)."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(
        ScenarioError, match=rf"^{re.escape(name)}: sets none of model, workload and deployment"
    ):
        io.load(path)


def test_the_api_names_the_argument_a_wrong_type_was_given_to() -> None:
    """`apply_overrides(s, None)`, `replicate(s, 2.0)`, `advise(scenario)` raised Python errors naming
    neither argument (a review)."""
    from engine import advise, apply_overrides, replicate

    s = io.load_preset("chat-colocated")
    for call, said in (
        (
            lambda: apply_overrides(s, None),
            r"^overrides: a mapping of field path to value.*\(got a NoneType\)",
        ),
        (lambda: apply_overrides(s, {3: 3}), r"\(got the key 3\)"),
        (lambda: apply_overrides(None, {}), r"^scenario: a Scenario"),
        (lambda: replicate(s, 2.0), r"^replications: a whole number from 1 to 100 \(got 2\.0\)"),
        (lambda: replicate(s, True), r"\(got True\)"),
        (lambda: advise(s), r"^result: a run's SimResult"),
    ):
        with pytest.raises(ScenarioError, match=said):
            call()


def test_a_key_given_twice_in_json_is_refused_as_toml_refuses_it() -> None:
    """JSON kept the last of a key given twice without a word: a scenario file's duration_s of 600 then 60
    ran 60, a link's seed 3 then 5 ran 5 (a review), where TOML refuses it."""
    base = json.dumps(io.to_data(io.load_preset("chat-colocated")))
    with pytest.raises(ScenarioError, match="the key 'duration_s' is given twice"):
        io.loads_json(base[:-1] + ', "duration_s": 600, "duration_s": 60}')
    payload = base64.urlsafe_b64encode(zlib.compress(b'{"seed":3,"seed":5}')).decode().rstrip("=")
    with pytest.raises(ScenarioError, match="the key 'seed' is given twice"):
        io.from_link({"v": "1", "p": "chat-colocated", "s": payload})


def test_a_chips_price_can_be_cleared_by_null_and_a_chip_table_emptied() -> None:
    """A price set on a chip could not be cleared: 'cost.usd_per_hour.h100-sxm=null' was refused as no
    number and 'cost.usd_per_hour={}' was merged into the table, changing nothing, unsaid (a review)."""
    priced = io.apply_overrides(io.load_preset("chat-colocated"), {"cost.usd_per_hour.h100-sxm": 5.0})
    assert priced.cost.usd_per_hour == {"h100-sxm": 5.0}
    assert io.apply_overrides(priced, {"cost.usd_per_hour.h100-sxm": None}).cost.usd_per_hour == {}
    assert io.apply_overrides(priced, {"cost.usd_per_hour": {}}).cost.usd_per_hour == {}
    two = io.apply_overrides(priced, {"cost.usd_per_hour": {"mi300x": 2.5}})  # a table still merges
    assert two.cost.usd_per_hour == {"h100-sxm": 5.0, "mi300x": 2.5}
    assert io.apply_overrides(priced, {"cost.usd_per_hour.mi300x": None}).cost.usd_per_hour == {
        "h100-sxm": 5.0
    }


def test_a_chip_table_path_takes_any_chip_id_whole() -> None:
    """Ids the catalog allows ('my.chip', '4090') could not be named: 'cost.usd_per_hour.my.chip' was read
    as the field 'my', and '...4090' was told to put a list's index in brackets (a review)."""
    for key in ("my.chip", "4090", "x-1.2", "h100-sxm"):
        parts = io.parse_path(f"cost.usd_per_hour.{key}")
        assert parts == ["cost", "usd_per_hour", key] and io.format_parts(parts) == f"cost.usd_per_hour.{key}"
    with pytest.raises(ScenarioError, match="'My Chip' is not a chip id"):
        io.parse_path("cost.usd_per_hour.My Chip")
    assert io.parse_path("deployment.pools[1].count") == ["deployment", "pools", 1, "count"]


def test_one_table_where_a_list_of_tables_belongs_is_told_the_toml_for_it() -> None:
    """'[workload.classes]' for '[[workload.classes]]' read "workload.classes: Input should be a valid tuple"
    (a CLI review): the refusal says the TOML a list of tables takes."""
    text = io.dumps_toml(io.load_preset("chat-colocated")).replace(
        "[[workload.classes]]", "[workload.classes]", 1
    )
    with pytest.raises(
        ScenarioError, match=r"workload\.classes: a list of tables.*\[\[workload\.classes\]\]"
    ):
        io.loads_toml(text)
