"""The Scenario value: validation messages, exact round trips, paths, overrides, share links."""

from __future__ import annotations

import base64
import json
import re
import tomllib
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core import bounds, datafiles
from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve

PRESETS = io.preset_names()


def test_default_preset_exists() -> None:
    assert io.DEFAULT_PRESET in PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_preset_round_trips_exactly(name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = io.load_preset(name)
    assert io.loads_toml(io.dumps_toml(s)) == s
    assert io.loads_json(io.dumps_json(s)) == s
    for suffix in (".toml", ".json"):
        path = tmp_path / f"x{suffix}"
        io.save(s, path)
        again = io.load(path)
        assert again == s and hash(again) == hash(s)
    resolve(s)  # catalog ids exist and the weights fit


@pytest.mark.parametrize("name", PRESETS)
def test_preset_has_a_lesson_and_a_paired_counterpart(name: str) -> None:
    """Every preset says what it teaches; its counterpart is a shipped preset on the same requests."""
    s = io.load_preset(name)
    assert 40 <= len(s.lesson) <= 600 and s.lesson.strip() == s.lesson, s.lesson
    assert any(ch.isdigit() for ch in s.lesson)  # the figure that shows it
    if s.counterpart is not None:
        assert s.counterpart in PRESETS and s.counterpart != name
        other = io.load_preset(s.counterpart)
        assert (requests_of(other), other.seed, other.duration_s) == (
            requests_of(s),
            s.seed,
            s.duration_s,
        )  # paired


def requests_of(s: Scenario) -> dict[str, object]:
    """What decides a scenario's requests: its workload without the classes' routing (pins, overflow)."""
    routing = {"pools", "overflow", "spill_queue"}
    return s.workload.model_dump(exclude={"classes": {i: routing for i in range(len(s.workload.classes))}})


def test_the_mooncake_pair_differs_only_in_the_cache() -> None:
    on, off = io.load_preset("mooncake-replay"), io.load_preset("mooncake-replay-nocache")
    assert on.cache.enabled and on.cache.host.enabled and on.cache.pooled.enabled and not off.cache.enabled
    assert on.cache.block_tokens == on.workload.trace.block_tokens == 512  # type: ignore[union-attr]
    same = {"name", "description", "lesson", "counterpart", "cache"}
    assert on.model_dump(exclude=same) == off.model_dump(exclude=same)
    assert (on.counterpart, off.counterpart) == ("mooncake-replay-nocache", "mooncake-replay")


@pytest.mark.parametrize("name", PRESETS)
def test_preset_share_link_round_trip(name: str) -> None:
    s = io.load_preset(name)
    assert io.from_link(io.to_link(s, name)) == s
    changed = io.apply_overrides(s, {"seed": 7, "workload.classes[0].priority": 3})
    params = io.to_link(changed, name)
    assert io.from_link(params) == changed
    assert len(params["s"]) < 200  # only the changed fields travel


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"workload.classes[0].share": 2},
            r"workload\.classes\[0\]\.share: .*less than or equal to 1; the allowed range is 0\.000001 to 1 \(got 2\)",
        ),
        ({"workload.classes[0].sharex": 2}, r"workload\.classes\[0\]\.sharex: unknown field"),
        ({"deployment.pools[0].tp": 0}, r"deployment\.pools\[0\]\.tp: .*greater than or equal to 1"),
        ({"deployment.pools[0].tp": 128}, r"deployment\.pools\[0\]\.tp: .*less than or equal to 64"),
        (
            {"workload.arrival.rate_rps": 4000},
            r"workload\.arrival\.rate_rps: .*limit is 1,666,666 \(what 2 GB",
        ),
        ({"workload.classes[0].input.p99": 5}, r"workload\.classes\[0\]\.input\.p99: must exceed mean"),
        (  # a cap below the mean drew another workload than the form stated (a review)
            {"workload.classes[0].input.max_tokens": 500},
            r"workload\.classes\[0\]\.input\.max_tokens: must be at least the mean \(1024\)",
        ),
        ({"scheduler.router": {"name": "nope"}}, r"scheduler\.router\.name: 'nope' is not a router policy"),
        (
            {"scheduler.admission": {"name": "queue_cap", "max_queued": 0}},
            r"scheduler\.admission\.max_queued: 0 is outside",
        ),
        ({"model.weights": "fp3"}, r"model\.weights: Input should be 'bf16', 'fp8', 'fp4' or 'int4'"),
        ({"warmup_s": 1e4}, r"warmup_s: 10000.0 must be below duration_s"),
        ({"duration_s": 1e9}, r"duration_s: .*less than or equal to 86400"),
        (  # an exclusive bound said as such ('greater than 0; the allowed range is 0 to ...': a review)
            {"scheduler.elastic.threshold": 0},
            r"scheduler\.elastic\.threshold: .*; the allowed range is more than 0 to 100,000 \(got 0\)",
        ),
        (  # an optional field says both bounds too (only the broken one was named: a review)
            {"deployment.first_token_ms": 10001},
            r"deployment\.first_token_ms: .*; the allowed range is 0 to 10,000 \(got 10001\)",
        ),
        (
            {"deployment.power_cap_kw": 0.0001},
            r"deployment\.power_cap_kw: .*; the allowed range is 0\.001 to 1,000,000 \(got 0\.0001\)",
        ),
        (  # and a policy's knob
            {"deployment.pools[1].autoscale": {"policy": {"name": "slo", "headroom": 5}}},
            r"autoscale\.policy\.headroom: .*; the allowed range is 0\.1 to 1 \(got 5\)",
        ),
        (  # not a number at all: the range too (it said a number was wanted, not which: a review)
            {"duration_s": "abc"},
            r"duration_s: Input should be a valid number.*; the allowed range is 1 to 86,400 \(got 'abc'\)",
        ),
    ],
)
def test_validation_names_field_value_and_range(override: dict[str, object], message: str) -> None:
    base = io.load_preset(io.DEFAULT_PRESET)
    with pytest.raises(ScenarioError, match=message):
        io.apply_overrides(base, override)


def test_resolve_errors_name_the_field() -> None:
    base = io.load_preset(io.DEFAULT_PRESET)
    with pytest.raises(ScenarioError, match=r"deployment\.pools\[0\]\.hardware: unknown hardware 'h1000'"):
        resolve(io.apply_overrides(base, {"deployment.pools[0].hardware": "h1000"}))
    with pytest.raises(ScenarioError, match=r"deployment\.pools\[0\]\.tp: llama-3.1-70b .* at least 2 chips"):
        resolve(io.apply_overrides(base, {"deployment.pools[0].tp": 1, "model.weights": "bf16"}))
    with pytest.raises(ScenarioError, match=r"model\.id: unknown model"):
        resolve(io.apply_overrides(base, {"model.id": "gpt-9"}))
    # a token budget whose one forward pass outgrows the memory says so, and names the knob
    with pytest.raises(
        ScenarioError, match=r"^deployment\.batching\.token_budget: the activations of one 1,048,576"
    ):
        resolve(io.apply_overrides(base, {"deployment.batching.token_budget": 1_048_576}))
    # an SRAM chip's few hundred MB in figures that say something ('0 GiB of each groq-lpu's 0 GiB': a review)
    groq = io.apply_overrides(io.load_preset("sram-decode-groq"), {"deployment.batching.token_budget": 65536})
    with pytest.raises(ScenarioError, match=r"take 2\.2 GiB of each groq-lpu's 0\.19 GiB usable"):
        resolve(groq)
    # ... and one that only tips the balance keeps the advice on chips, naming the budget too
    with pytest.raises(
        ScenarioError, match=r"pools\[0\]\.tp: .* activations .* deployment\.batching\.token_budget"
    ):
        resolve(
            io.apply_overrides(
                base, {"deployment.batching.token_budget": 131_072, "deployment.pools[0].tp": 1}
            )
        )


def test_moe_ranks_that_each_hold_every_expert_are_told_to_spread_them() -> None:
    """A MoE instance of several data-parallel ranks with ep below tp x dp keeps a copy of the
    experts per group: the refusal names ep and the ep that holds it, and a chip count on a
    spread instance, not one that more copies would need."""
    base = io.load_preset("moe-deepseek-dp-ep")
    with pytest.raises(
        ScenarioError,
        match=r"^deployment\.pools\[0\]\.ep: .* ep 1 over tp 1 x dp 8 keeps 8 copies .* with ep 8 ",
    ):
        resolve(io.apply_overrides(base, {"deployment.pools[0].ep": 1}))
    with pytest.raises(
        ScenarioError, match=r"^deployment\.pools\[0\]\.dp: .* at least 6 chips .* ep = tp x dp"
    ):
        resolve(io.apply_overrides(base, {"deployment.pools[0].ep": 1, "deployment.pools[0].dp": 2}))
    # the six it names hold it
    resolve(io.apply_overrides(base, {"deployment.pools[0].ep": 6, "deployment.pools[0].dp": 6}))


def test_custom_hardware_inline(catalog) -> None:  # type: ignore[no-untyped-def]
    base = io.load_preset(io.DEFAULT_PRESET)
    chip = catalog.chip("h100-sxm").model_copy(update={"id": "my-h100", "usd_per_hour": 1.0})
    data = io.to_data(base)
    data["custom_hardware"] = [chip.model_dump(mode="json", by_alias=True)]
    data = io.set_path(data, "deployment.pools[0].hardware", "my-h100")
    s = io.from_data(data)
    assert resolve(s).pools[0].usd_per_hour == 3 * 2 * 1.0
    assert io.loads_toml(io.dumps_toml(s)) == s


def test_a_custom_chip_missing_a_table_is_told_what_the_table_holds(catalog) -> None:  # type: ignore[no-untyped-def]
    """A custom chip without profiles or sources read only "profiles: Field required" (a hardware
    strategist): the message says what each table holds; a field without a description keeps pydantic's."""
    data = io.to_data(io.load_preset(io.DEFAULT_PRESET))
    chip = catalog.chip("h100-sxm").model_dump(mode="json", by_alias=True) | {"id": "my-h100"}
    del chip["profiles"], chip["sources"], chip["vendor"]
    data["custom_hardware"] = [chip]
    with pytest.raises(ScenarioError) as err:
        io.from_data(io.set_path(data, "deployment.pools[0].hardware", "my-h100"))
    said = str(err.value)
    assert "custom_hardware[0].profiles: Field required: calibration profiles by name" in said
    assert "profiles.default with eta_compute and eta_bandwidth (0 to 1" in said
    assert "custom_hardware[0].sources: Field required: a table of where each number comes from" in said
    assert re.search(r"custom_hardware\[0\]\.vendor: Field required(;|$)", said)


def test_paths() -> None:
    assert io.parse_path("workload.classes[0].share") == ["workload", "classes", 0, "share"]
    assert io.format_parts(["a", "b", 2, "c"]) == "a.b[2].c"
    for bad in ("", "a..b", "a[x]", "a.[0]", "1a"):
        with pytest.raises(ScenarioError, match="malformed field path"):
            io.parse_path(bad)
    data = io.to_data(io.load_preset(io.DEFAULT_PRESET))
    assert io.get_path(data, "deployment.pools[1].role") == "decode"
    with pytest.raises(ScenarioError, match="out of range"):
        io.set_path(data, "deployment.pools[5]", {})
    # a list's index written as a name: the message gives the path as it should read
    with pytest.raises(ScenarioError, match=r"in brackets, 'deployment.pools\[0\].hardware'"):
        io.parse_path("deployment.pools.0.hardware")


def test_parse_value() -> None:
    assert io.parse_value("3") == 3
    assert io.parse_value("2.5") == 2.5
    assert io.parse_value("true") is True
    assert io.parse_value("h100-sxm") == "h100-sxm"
    assert io.parse_value('{name = "round_robin"}') == {"name": "round_robin"}
    # null unsets an optional field (a ceiling set in a file removed from the command line)
    assert io.parse_value("null") is None and io.parse_value('"null"') == "null"
    capped = io.apply_overrides(io.load_preset("chat-colocated"), {"workload.arrival.max_in_flight": 8})
    freed = io.apply_overrides(capped, {"workload.arrival.max_in_flight": io.parse_value("null")})
    assert freed.workload.arrival.max_in_flight is None
    with pytest.raises(ScenarioError, match=r"duration_s"):  # a field that must have a value says so
        io.apply_overrides(capped, {"duration_s": io.parse_value("null")})


def test_scenario_is_hashable_and_frozen() -> None:
    s = io.load_preset(io.DEFAULT_PRESET)
    assert len({s, io.load_preset(io.DEFAULT_PRESET)}) == 1
    with pytest.raises(Exception, match="frozen"):
        s.seed = 3  # type: ignore[misc]


def _encode(obj: object) -> str:
    raw = json.dumps(obj).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"v": "9", "p": io.DEFAULT_PRESET}, "link version"),
        ({"v": "1", "p": "nope"}, "link preset 'nope' is unknown"),
        ({"v": "1", "p": io.DEFAULT_PRESET, "s": "!!!"}, "not a valid encoded scenario"),
        ({"v": "1", "p": io.DEFAULT_PRESET, "s": _encode([1, 2])}, "must map field paths"),
        ({"v": "1", "p": io.DEFAULT_PRESET, "s": _encode({"workload.arrival.rate_rps": 1e9})}, "rate_rps"),
        ({"v": "1", "p": io.DEFAULT_PRESET, "s": _encode({"__class__": 1})}, "unknown field"),
        ({"v": "1", "p": io.DEFAULT_PRESET, "s": "A" * (bounds.MAX_LINK_CHARS + 1)}, "limit"),
        ({"v": "1", "p": io.DEFAULT_PRESET, "s": _encode({"a" * 5: "x" * 600_000})}, "size limit"),
    ],
)
def test_hostile_links_are_refused_with_a_reason(params: dict[str, str], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        io.from_link(params)


@given(st.dictionaries(st.text(max_size=30), st.text(max_size=200), max_size=4))
def test_arbitrary_query_params_never_crash(params: dict[str, str]) -> None:
    try:
        s = io.from_link(params)
    except ScenarioError:
        return
    assert isinstance(s, Scenario)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z_]{1,12}(\.[a-z_]{1,12}){0,3}", fullmatch=True),
        st.one_of(
            st.integers(-(10**12), 10**12),
            st.floats(allow_nan=True),
            st.text(max_size=20),
            st.booleans(),
            st.none(),
        ),
        max_size=4,
    )
)
def test_arbitrary_link_payloads_validate_or_explain(changes: dict[str, object]) -> None:
    params = {"v": "1", "p": io.DEFAULT_PRESET, "s": _encode(changes)}
    try:
        s = io.from_link(params)
    except ScenarioError as exc:
        assert str(exc)
        return
    assert isinstance(s, Scenario)


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("data:traces/mooncake/conversation_trace.jsonl", True),
        ("shared:traces/mooncake/conversation_trace.jsonl", True),  # links made before data/ moved in
        ("/etc/passwd", False),
        ("shared:/etc/passwd", False),
        ("data:/proc/self/environ", False),
        ("shared:../../etc/passwd", False),
        ("data:traces/../../../etc/passwd", False),
        ("~/.ssh/id_rsa", False),
        ("upload:../../etc/passwd", False),
        ("data:traces/mooncake/missing.jsonl", False),
    ],
)
def test_links_may_only_name_shipped_data(path: str, ok: bool) -> None:
    s = io.apply_overrides(
        io.load_preset(io.DEFAULT_PRESET), {"workload.trace": {"format": "csv", "path": path}}
    )
    params = io.to_link(s, io.DEFAULT_PRESET)
    if ok:
        assert io.from_link(params) == s
    else:
        with pytest.raises(ScenarioError, match=r"^workload\.trace\.path: ") as err:
            io.from_link(params)
        assert "root:" not in str(err.value)  # nothing of the file is echoed


def test_links_may_name_this_servers_uploads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(datafiles.UPLOADS_ENV, str(tmp_path / "up"))
    ref = datafiles.store_upload(b"arrival_s,input_tokens,output_tokens\n0,10,5\n", ".csv")
    assert ref.startswith("upload:") and (tmp_path / "up" / ref.removeprefix("upload:")).is_file()
    s = io.apply_overrides(
        io.load_preset(io.DEFAULT_PRESET), {"workload.trace": {"format": "csv", "path": ref}}
    )
    assert io.from_link(io.to_link(s, io.DEFAULT_PRESET)) == s
    # a link planted in the uploads folder that points outside it is refused after resolution
    (tmp_path / "secret.csv").write_text("arrival_s,input_tokens,output_tokens\n")
    (tmp_path / "up" / "evil.csv").symlink_to(tmp_path / "secret.csv")
    bad = io.apply_overrides(s, {"workload.trace.path": "upload:evil.csv"})
    with pytest.raises(ScenarioError, match="leaves its folder"):
        io.from_link(io.to_link(bad, io.DEFAULT_PRESET))


def test_an_uploads_folder_someone_else_could_plant_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link in place of the uploads folder (or one others can write) would let upload: names read any file."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0\n")
    (tmp_path / "up").symlink_to(tmp_path / "etc")
    monkeypatch.setenv(datafiles.UPLOADS_ENV, str(tmp_path / "up"))
    with pytest.raises(ScenarioError, match="not a private folder"):
        datafiles.locate("upload:passwd")
    shared = tmp_path / "shared-up"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(datafiles.UPLOADS_ENV, str(shared))
    with pytest.raises(ScenarioError, match="not a private folder"):
        datafiles.store_upload(b"arrival_s,input_tokens,output_tokens\n0,1,1\n", ".csv")
    monkeypatch.delenv(datafiles.UPLOADS_ENV)
    assert datafiles.uploads_dir().name.startswith("fengong-uploads-")  # one folder per user by default


def test_a_window_that_would_end_inside_the_warm_up_shortens_it_to_its_share() -> None:
    sc = io.apply_overrides(Scenario(), {"duration_s": 600.0, "warmup_s": 300.0})
    assert io.window_changes(sc, 120.0) == {"duration_s": 120.0, "warmup_s": 60.0}  # half, as before
    assert io.window_changes(sc, 300.0) == {"duration_s": 300.0, "warmup_s": 150.0}  # equal: it would not fit
    assert io.window_changes(sc, 301.0) == {"duration_s": 301.0}  # still fits: kept as set
    odd = io.apply_overrides(sc, {"duration_s": 700.0, "warmup_s": 699.99})
    made = io.window_changes(odd, 7.0)
    assert made["warmup_s"] == 6.9  # cut to 0.1 s below its share, so it ends before the window
    assert io.apply_overrides(odd, made).warmup_s < 7.0
    assert io.window_changes(Scenario(), 1.0) == {"duration_s": 1.0}  # no warm-up: nothing else moves


def test_a_number_past_one_bound_is_told_both() -> None:
    """A link's rate of -5 read only 'greater than or equal to 0.0001' beside a page that gives the
    whole range (a review): a field with two bounds says both; one with one bound, as pydantic says."""
    from engine.core import ScenarioError
    from engine.scenario.codec import apply_overrides, load_preset

    base = load_preset("chat-disaggregated")
    with pytest.raises(ScenarioError) as low:
        apply_overrides(base, {"deployment.pools[0].count": 0})
    assert str(low.value) == (
        "deployment.pools[0].count: Input should be greater than or equal to 1; the allowed range is 1 to 512 (got 0)"
    )
    with pytest.raises(ScenarioError) as high:
        apply_overrides(base, {"workload.classes[0].slo.tpot_ms": 1e9})
    assert "the allowed range is 0.01 to 60,000 (got 1000000000.0)" in str(high.value)


def test_a_table_at_a_path_changes_the_fields_it_names_and_keeps_the_others() -> None:
    """Found in review: a dict given at a path replaced the table, the fields it left out falling to
    their defaults (an SLO of {ttft_ms: 500} reset TPOT 30 -> 100 ms and p90 -> p99, silently)."""
    base = io.load_preset("chat-colocated")
    slo = io.apply_overrides(base, {"workload.classes[0].slo": {"ttft_ms": 500}}).workload.classes[0].slo
    assert (slo.ttft_ms, slo.tpot_ms, slo.percentile) == (500, 30, 90)
    # table within table: the arrival keeps its kind and the class its lengths
    sc = io.apply_overrides(base, {"workload": {"arrival": {"rate_rps": 20}}})
    assert sc.workload.arrival.rate_rps == 20 and sc.workload.arrival.kind == "poisson"
    assert sc.workload.classes == base.workload.classes
    # another kind starts afresh: a constant length keeps no lognormal mean
    dist = io.apply_overrides(base, {"workload.classes[0].input": {"kind": "constant", "tokens": 512}})
    assert dist.workload.classes[0].input.mean is None and dist.workload.classes[0].input.tokens == 512
    # the same kind keeps what it does not name (the cap on a prompt's length)
    same = io.apply_overrides(
        base, {"workload.classes[0].input": {"kind": "lognormal", "mean": 2048, "p99": 9000}}
    )
    assert same.workload.classes[0].input.max_tokens == base.workload.classes[0].input.max_tokens
    assert same.workload.classes[0].input.mean == 2048
    # the engine's own callers give whole tables: replaced, as before
    whole = io.apply_overrides(base, {"workload.classes[0].slo": {"ttft_ms": 500}}, merge=False)
    assert whole.workload.classes[0].slo.tpot_ms != 30
    # the CLI's --set merges the same way
    from engine.cli.common import load_scenario

    cli = load_scenario("chat-colocated", ["workload.classes[0].slo={ttft_ms=500}"]).workload.classes[0].slo
    assert (cli.ttft_ms, cli.tpot_ms, cli.percentile) == (500, 30, 90)


def test_a_table_naming_another_policy_replaces_it_knobs_and_all() -> None:
    """docs/autoscaling.md: `policy={name = "queue"}` replaces the autoscaler, knobs included (merged,
    the slo policy's headroom would stay, and the queue policy refuses it)."""
    from typing import get_args

    from engine.scenario.model import Scenario
    from engine.scenario.policy_spec import PolicySpec

    base = io.load_preset("day-autoscaled")
    i = next(i for i, p in enumerate(base.deployment.pools) if p.autoscale is not None)
    policy = io.apply_overrides(base, {f"deployment.pools[{i}].autoscale.policy": {"name": "queue"}})
    assert policy.deployment.pools[i].autoscale.policy.model_dump() == {"name": "queue"}  # type: ignore[union-attr]
    # the same policy by name keeps its knobs; another router leaves the queue order as it was
    kept = io.apply_overrides(
        base, {f"deployment.pools[{i}].autoscale.policy": {"name": "slo", "headroom": 0.7}}
    )
    assert kept.deployment.pools[i].autoscale.policy.model_dump()["predict"] == "constant"  # type: ignore[union-attr]
    sched = io.apply_overrides(base, {"scheduler": {"router": {"name": "cache_aware"}}}).scheduler
    assert sched.router.name == "cache_aware" and sched.queue == base.scheduler.queue

    def policy_fields(model: type, seen: set[type]) -> set[str]:  # every field typed PolicySpec
        out: set[str] = set()
        for name, f in model.model_fields.items():  # type: ignore[attr-defined]
            for t in (f.annotation, *get_args(f.annotation)):
                if t is PolicySpec:
                    out.add(name)
                elif isinstance(t, type) and hasattr(t, "model_fields") and t not in seen:
                    seen.add(t)
                    out |= policy_fields(t, seen)
                else:
                    for u in get_args(t):
                        if isinstance(u, type) and hasattr(u, "model_fields") and u not in seen:
                            seen.add(u)
                            out |= policy_fields(u, seen)
        return out

    assert policy_fields(Scenario, set()) == io.POLICY_TABLES


def test_a_link_fault_without_its_kind_is_refused_not_run_as_an_outage() -> None:
    """A fault with `link_factor = 0` and `link_down = "reject"` but no `kind = "link"` ran as an
    instance outage (1 retry, 94.2% within SLO where the link drill gives 487 failed and 50.8%): a
    drill 44 points rosier than meant (a review). An instance fault refuses a link's fields set off
    their defaults, naming them, the kind to set, and the defaults."""
    sc = io.load_preset("chat-disaggregated")
    fault = {"at_s": 20.0, "pool": "prefill", "duration_s": 30.0, "link_factor": 0.0, "link_down": "reject"}
    with pytest.raises(ScenarioError) as err:
        io.apply_overrides(sc, {"faults": [fault]})
    said = str(err.value)
    assert 'faults[0]: link_factor, link_down: apply only to a fault with kind = "link"' in said
    assert 'link_factor = 0.1, link_down = "queue"' in said
    assert io.apply_overrides(sc, {"faults": [{**fault, "kind": "link"}]}).faults[0].link_factor == 0.0
    # a form keeps an item's every field: an instance fault at the link's defaults, a link with `instances`
    same = {"at_s": 20.0, "pool": "prefill", "link_factor": 0.1, "link_down": "queue"}
    assert io.apply_overrides(sc, {"faults": [same]}).faults[0].kind == "instances"
    link = {**fault, "kind": "link", "instances": 2}
    assert io.apply_overrides(sc, {"faults": [link]}).faults[0].kind == "link"


def test_a_fault_that_cannot_act_as_written_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """A fault set at 260 s in a 120 s run never fired, and the drill printed four identical rows at
    99.6% with nothing said; a fault naming 10 instances of a 3-instance pool took 3 in silence (a
    review). The run, the drill and the Strategy page say both."""
    from engine.cli.main import main
    from engine.explain.timeline_marks import fault_notes
    from engine.serving.run import simulate

    sc = io.apply_overrides(io.load_preset("failure-drill"), {"duration_s": 60.0})
    assert sc.faults[0].at_s >= 60.0
    assert fault_notes(sc) == [
        f"faults[0] at {sc.faults[0].at_s:,.0f} s starts at or after the window's end (60 s): it can act only "
        "on the drain's last requests, if the run lasts that long."
    ]
    end = simulate(sc).summary["drain_end_s"]
    assert (
        f"faults[0] at {sc.faults[0].at_s:,.0f} s never fired: the run ended at {end:,.0f} s"
        in fault_notes(sc, end)[0]
    )
    many = io.apply_overrides(sc, {"faults[0].at_s": 20.0, "faults[0].instances": 10})
    pool = next(p for p in many.deployment.pools if p.name == many.faults[0].pool)
    assert fault_notes(many) == [
        f"faults[0] takes 10 instances of pool {pool.name}, which has {pool.count}: all {pool.count} are lost."
    ]
    assert fault_notes(io.apply_overrides(sc, {"faults[0].at_s": 20.0})) == []
    assert main(["drill", "failure-drill", "--set", "duration_s=60"]) == 0
    out = capsys.readouterr().out
    assert "starts at or after the window's end" in out and "the same as none on these faults" in out


def test_a_policy_by_its_name_a_nan_knob_and_a_scenario_by_name_are_answered_plainly() -> None:
    """`--set scheduler.queue=priority` read "valid dictionary or instance of PolicySpec", a NaN
    factor "(got None)", and `simulate("chat-colocated")` raised an AttributeError (a review)."""
    from engine.serving.run import simulate

    sc = io.load_preset("enterprise-mixed")
    assert io.apply_overrides(sc, {"scheduler.queue": "edf"}).scheduler.queue.name == "edf"
    with pytest.raises(
        ScenarioError, match=r"scheduler\.queue\.name: 'bogus' is not a queue policy; choose one of"
    ):
        io.apply_overrides(sc, {"scheduler.queue": "bogus"})
    with pytest.raises(
        ScenarioError, match=r"scheduler\.admission\.factor: must be a finite number \(got nan\)"
    ):
        io.apply_overrides(sc, {"scheduler.admission.factor": float("nan")})
    with pytest.raises(
        ScenarioError, match=r"scenario: a Scenario \(engine\.load_preset\('chat-colocated'\)"
    ):
        simulate("chat-colocated")  # type: ignore[arg-type]


def test_request_shares_are_the_shares_of_the_requests_the_generator_draws() -> None:
    """A class's share is of the sessions; with three-turn sessions at 20% of them, it sends about 43%
    of the requests, where the Workload page said '20% of traffic' (a review)."""
    from engine.serving.workload import generate

    s = io.load_preset("chat-colocated")
    c = s.workload.classes[0].model_dump()
    multi = c | {"name": "multi", "share": 0.2, "multi_turn": {"turns_mean": 3.0, "think_time_s": 5.0}}
    s = io.apply_overrides(s, {"workload.classes": [c | {"share": 0.8}, multi]})
    assert s.workload.request_shares() == pytest.approx([0.8 / 1.4, 0.6 / 1.4])
    drawn = float((generate(s).cls == 1).mean())
    assert drawn == pytest.approx(0.6 / 1.4, abs=0.03)


def test_a_written_scenario_states_what_it_serves_on_what() -> None:
    """A planner's file left out the model, every pool's chip and the seed (at their defaults): it read
    as the defaults of whichever version opened it (a review). They are written, and it reads back the same."""
    sc = io.load_preset(io.DEFAULT_PRESET)
    data = tomllib.loads(io.dumps_toml(sc))
    assert data["model"]["id"] == sc.model.id and data["deployment"]["stack"] == sc.deployment.stack
    assert (data["seed"], data["duration_s"]) == (sc.seed, sc.duration_s)
    assert [p["hardware"] for p in data["deployment"]["pools"]] == [p.hardware for p in sc.deployment.pools]
    assert io.loads_toml(io.dumps_toml(sc)) == sc


def test_a_links_changes_to_one_table_are_tried_together() -> None:
    """dp 6 with ep 6 holds, either alone does not (ep must divide tp x dp): tried one by one, both were
    refused (a review). A table's changes go together first; a bad rate beside them is still refused."""
    import base64
    import json
    import zlib

    from engine.scenario.codec import from_link_partial

    def payload(changes: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(zlib.compress(json.dumps(changes).encode(), 9)).decode().rstrip("=")

    changes = {"deployment.pools[0].dp": 6, "deployment.pools[0].ep": 6, "workload.arrival.rate_rps": -5}
    sc, refused = from_link_partial({"v": "1", "p": "moe-deepseek-dp-ep", "s": payload(changes)}, resolve)
    assert (sc.deployment.pools[0].dp, sc.deployment.pools[0].ep) == (6, 6)
    assert len(refused) == 1 and refused[0].startswith("workload.arrival.rate_rps")
