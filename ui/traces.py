"""The Workload page's traces: a shipped trace's settings, an uploaded file (checked, its classes
offered where the scenario lacks them), and the arrivals a trace replays in the window."""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd
import streamlit as st

from engine.core import (
    DATA_PREFIX,
    LEGACY_PREFIX,
    MAX_CLASSES,
    MAX_TRACE_BYTES,
    UPLOAD_PREFIX,
    ScenarioError,
    clipped,
    directed,
    store_upload,
    unpack_upload,
)
from engine.explain import (
    JSON_SUFFIXES,
    arrival_histogram,
    dense_note,
    idle_tail,
    kept_text,
    over_context_text,
    shipped_traces,
    tokens_histogram,
    tokens_stats,
    trace_format,
    trace_problem,
)
from engine.scenario import Scenario, Trace, apply_overrides, scenario_catalog
from engine.serving import (
    ClassGap,
    TooManyRequests,
    class_gap,
    estimate_work,
    read_trace,
    trace_class_names,
    with_classes,
)
from ui import charts, export, state
from ui.forms import model_form
from ui.text import plain
from ui.workload import ceiling_input

CREATE_EARLIEST = "fg_create_earliest"
"""Session key: ((file name, the classes it adds), the earliest requests that fit) where creating a trace's
classes was refused for the whole file's work."""

MAX_NAMES_COUNTED = 1000
"""The most class labels of an upload counted (`trace_class_names`): past it the count is "at least" (a
browser review read "it names 1000 classes" of a trace naming 5,000)."""


@st.cache_data(max_entries=8, show_spinner=False)
def _window_of(
    trace_json: str, duration_s: float, classes: tuple[str, ...], _sc: Scenario
) -> tuple[str, int, str]:
    """What the window keeps of the trace's file (`kept_text`), how many rows lie past its end and whether
    its arrivals look too dense for their unit (`dense_note`); by the trace, the window and the classes (a
    new SLO reads no file again)."""
    tr = _sc.workload.trace
    assert tr is not None
    got = read_trace(tr, _sc).source
    return (
        kept_text(got, duration_s, tr.start_s, tr.format, tr.max_gap_s),
        got.after,
        dense_note(got, tr.format, tr.time_scale),
    )


def trace_lengths(sc: Scenario, requests: pd.DataFrame | None) -> None:
    """The prompt and answer lengths the trace replays in the window, as histograms beside each other (a
    trace showed its arrivals only: the mix a buyer sizes for was not to be seen, a browser review)."""
    if requests is None or requests.empty or sc.workload.trace is None:
        return
    if over := over_context_text(requests, scenario_catalog(sc).model(sc.model.id).max_context):
        # before the lengths, not on Results alone (keyed: a finding of the file, not a refusal)
        st.container(key="fg-over-context").warning(plain(over), icon=":material/straighten:")
    for col, (key, what) in zip(
        st.columns(2), (("prompt_tokens", "Prompt tokens"), ("output_tokens", "Output tokens")), strict=True
    ):
        stats = tokens_stats(requests[key])
        fig = charts.length_histogram(  # named: two titles of figures alone did not say which was which (a review)
            tokens_histogram(requests[key]),
            f"{what}: mean {stats['mean_tokens']:,.0f} · p50 {stats['p50_tokens']:,.0f} · p99 "
            f"{stats['p99_tokens']:,.0f} tokens",
            of="requests",
        )
        with col:
            export.chart(fig, sc, f"trace_{key}", title=f"{what} of the trace's requests in the window")


def trace_arrivals(sc: Scenario, observed_s: Any) -> None:
    """The arrivals a trace replays in the window, per second; what the window keeps of the file."""
    if observed_s is None or not len(observed_s) or (tr := sc.workload.trace) is None:
        return
    try:
        kept, after, dense = _window_of(
            tr.model_dump_json(), sc.duration_s, tuple(c.name for c in sc.workload.classes), sc
        )
    except ScenarioError:  # said where the run is refused
        kept, after, dense = "", 0, ""
    if " of the file's " in kept:  # rows the window leaves out: said, with where they went
        st.caption(plain(kept) + ".")
    if dense:  # a file stamped in seconds where its format reads milliseconds (a review)
        st.warning(plain(dense), icon=":material/speed:")
    if said := idle_tail(observed_s, sc.duration_s, after):
        with st.container(key="fg-idle-tail"):
            st.warning(plain(said), icon=":material/hourglass_disabled:")
    fig = charts.rate(
        pd.DataFrame(columns=["t_s", "rate_rps"]),
        "Arrivals of the trace in the window",
        observed=arrival_histogram(observed_s, sc.duration_s),
        observed_name="trace",
        warmup_s=sc.warmup_s,
    )
    export.chart(fig, sc, "trace_arrivals", title="Arrivals of the trace")


def source_of(sc: Scenario) -> str:
    """Where the requests come from: generated, a shipped trace, or an uploaded one."""
    tr = sc.workload.trace
    if st.session_state.get(state.UPLOAD_MODE):  # chosen: over a shipped trace too, which stays until a
        return "upload"  # file is applied (the choice sprang back to "Shipped trace", a review)
    if tr is None:
        return "generated"
    return "upload" if tr.path.startswith(UPLOAD_PREFIX) else "shipped"


def source_changed() -> None:
    choice = st.session_state["fg:source"]
    st.session_state[state.UPLOAD_MODE] = choice == "upload"
    if choice == "generated":
        state.override({"workload.trace": None})
    elif choice == "shipped":
        traces = shipped_traces()
        if traces:
            t = next((t for t in traces if "conversation" in t.label), traces[0])
            state.override({"workload.trace": {"format": t.format, "path": t.path}})


def trace_editor(sc: Scenario) -> None:
    """Pick a shipped trace and how to replay it."""
    traces = shipped_traces()
    by_path = {t.path: t for t in traces}
    tr = sc.workload.trace
    if tr is not None and tr.path.startswith((DATA_PREFIX, LEGACY_PREFIX)):
        key = "fg:trace-pick"
        if st.session_state.get(key) != tr.path:
            st.session_state[key] = tr.path

        def picked() -> None:
            t = by_path[st.session_state[key]]
            state.override({"workload.trace.path": t.path, "workload.trace.format": t.format})

        opts = list(by_path) if tr.path in by_path else [*by_path, tr.path]
        st.selectbox(
            "Trace",
            opts,
            key=key,
            on_change=picked,
            format_func=lambda p: by_path[p].label if p in by_path else p,
            help="Public traces shipped in data/traces (each with its licence; see its SOURCE.md).",
        )
    if tr is not None:
        unused = (  # the fields its format does not read
            *(() if tr.format == "mooncake" else ("block_tokens",)),
            *(() if tr.format == "agentic" else ("max_gap_s",)),
        )
        model_form("workload.trace", Trace, skip=("path", "format", *unused), columns=4)
        with st.columns(4)[0]:  # a replay may be held to a client's ceiling too (`Arrival.max_in_flight`)
            ceiling_input()


def upload_editor() -> None:
    """Upload a trace (CSV or JSONL, size-limited); it is checked, kept by content hash, and replayed."""
    up = st.file_uploader(
        "Trace file",
        type=["csv", "jsonl", "json", "gz"],
        key=state.upload_key(),
        max_upload_size=MAX_TRACE_BYTES // (1024 * 1024),
        help="Mooncake JSONL (timestamp ms, input_length, output_length[, hash_ids]); Azure CSV (TIMESTAMP, "
        "ContextTokens, GeneratedTokens); a plain CSV (arrival_s, input_tokens, output_tokens[, class]); or "
        "agentic sessions, JSON (kv-cache-tester's: requests of t, in, out, hash_ids). Each may be gzipped. "
        f"At most {MAX_TRACE_BYTES // (1024 * 1024)} MiB, unpacked.",
    )
    if up is None:
        return
    raw = up.getvalue()
    digest = hashlib.sha256(raw).hexdigest()[:20]
    if st.session_state.get(state.UPLOAD_DONE) == digest:
        return
    name = plain(up.name)
    if len(raw) > MAX_TRACE_BYTES:
        st.error(f"{name}: {len(raw):,} bytes; the limit is {MAX_TRACE_BYTES:,}")
        return
    try:
        inner, raw = unpack_upload(up.name, raw)
        text = raw.decode("utf-8-sig")
    except ScenarioError as exc:
        _refused(plain(exc))
        return
    except UnicodeDecodeError:
        _refused(f"{name}: not UTF-8 text")
        return
    suffix = stored_suffix(inner)
    head = _head(text, inner)
    fmt = trace_format(inner, head)
    if fmt is None:
        _refused(f"{name}: {plain(trace_problem(inner, head))}")
        return
    sc = state.scenario()
    # the replay's cap on requests set over the trace before it holds for this one (set to 100,000, a
    # 1.5M-row file was still refused counting every row: a browser review)
    cap = sc.workload.trace.max_requests if sc.workload.trace is not None else None
    trace = Trace(format=fmt, path=up.name[:200] or "upload", max_requests=cap)  # type: ignore[arg-type]
    try:
        labels = trace_class_names(text, fmt, MAX_NAMES_COUNTED)
        gap = class_gap(sc, labels)
        if gap.missing:  # its labels counted to the cap: the count is 'at least'
            class_offer(up.name, gap, trace, text, len(labels) >= MAX_NAMES_COUNTED)
            return
        with st.spinner(f"Checking {name}…"):
            reqs, counted = _read_capped(trace, sc, text)
        ref = store_upload(raw, suffix)
        over, earliest = _work_check(sc, trace, ref, text, reqs, up.name)
        if counted is not None:  # over the request cap: its earliest that fit the cap and the work bound
            said, limit = counted
            over, earliest = (f"{said}; at that many, {over}", earliest) if over else (said, limit)
    except ScenarioError as exc:
        _refused(plain(exc))
        return
    if over:
        _refused(plain(over))
        if earliest is not None:  # the way out the refusal names, one click away (the field shows only after)
            st.button(
                f"Replay its earliest {earliest:,} requests",
                key="fg:upload-earliest",
                on_click=_apply_upload,
                args=({"format": fmt, "path": ref, "max_requests": earliest}, digest, up.name, None),
                icon=":material/content_cut:",
            )
        return
    _apply_upload(
        {"format": fmt, "path": ref, "max_requests": cap},
        digest,
        up.name,
        kept_text(reqs.source, sc.duration_s, fmt=fmt),
    )
    if st.session_state.get(state.UPLOAD_DONE) == digest:
        st.rerun()


def stored_suffix(name: str) -> str:
    """What an upload named `name` (its gzip layer off) is stored as: JSON of any kind as JSON Lines (an
    agentic file of one document reads as well so)."""
    return ".csv" if name.endswith(".csv") else ".jsonl"


def _head(text: str, name: str) -> str:
    """What `trace_format` reads of an upload: a CSV's header, a JSON file's opening 64 KiB (an agentic
    session pretty-printed opens with a brace alone on its line)."""
    return text.lstrip()[:65536] if name.endswith(JSON_SUFFIXES) else text.split("\n", 1)[0]


def _read_capped(trace: Trace, sc: Scenario, text: str) -> tuple[Any, tuple[str, int] | None]:
    """The upload's requests, and where its window holds more than a replay may, what is said of it, as
    plain text the caller escapes once (it read "manyrows\\.csv": a browser review) (None: it does not):
    the requests are then its earliest `MAX_REQUESTS`, whose work is checked as any upload's,
    so that the refusal offers the earliest that fit (it offered nothing, naming workload.trace.max_requests,
    a field not on the page: a browser review)."""
    try:
        return read_trace(trace, sc, text=text), None
    except TooManyRequests as exc:
        said = (
            f"{trace.path}: {exc.count:,} requests in the window, more than the {exc.limit:,} a replay "
            "holds: replay its earliest, or shorten the window"
        )
        capped = trace.model_copy(update={"max_requests": exc.limit})
        return read_trace(capped, sc, text=text), (said, exc.limit)


def _work_check(
    sc: Scenario, trace: Trace, ref: str, text: str, reqs: Any, file_name: str
) -> tuple[str, int | None]:
    """Whether the work bound admits the upload's replay under `sc` (its refusal said of the file, '' where
    it does) and, where it does not, the most of its earliest requests that fit (None: none found)."""
    est = estimate_work(apply_overrides(sc, {"workload.trace": {**trace.model_dump(), "path": ref}}), reqs)
    over = _over_text(est.problems(), ref, file_name)
    return over, _earliest_that_fit(sc, trace, ref, text, est) if over else None


def _earliest_that_fit(sc: Scenario, trace: Trace, ref: str, text: str, est: Any) -> int | None:
    """The most requests of the upload's earliest, to two figures, whose replay the work bound admits,
    from the estimate of its whole replay `est` (None where none found, or where the count is not what
    is over)."""
    n = int(est.requests)
    guess = n / max(est.load(), 1.0) * 0.95
    if guess < 1:
        return None
    count = int(directed(guess, 2, up=False))
    capped = trace.model_copy(update={"max_requests": count})
    fewer = read_trace(capped, sc, text=text)
    doc = {**capped.model_dump(), "path": ref}
    return (
        count
        if 0 < count < n and not estimate_work(apply_overrides(sc, {"workload.trace": doc}), fewer).problems()
        else None
    )


def _apply_upload(trace: dict[str, Any], digest: str, file_name: str, kept: str | None) -> None:
    """The upload in use: the scenario's trace, the file's name kept, and said (`kept`: what it keeps of the
    file; None: its earliest `max_requests`)."""
    if state.override({"workload.trace": trace}):
        st.session_state[state.UPLOAD_DONE] = digest
        st.session_state[state.UPLOAD_NAME] = file_name
        state.clear_upload_notes()  # the file before it is no longer replayed: nor said
        said = kept if kept is not None else f"its earliest {trace['max_requests']:,} requests"
        state.notify(
            f"{file_name}: {said}, format {trace['format']}.", kind="success", key=f"upload:{file_name}"
        )
        state.upload_said()


def _over_text(over: list[str], ref: str, file_name: str) -> str:
    """The work bound's problems with an upload's replay said of its file ('' where none)."""
    if not over:
        return ""
    return (
        f"{file_name}: "
        + "; ".join(over).replace(ref, file_name)
        + " (the trace's max requests keeps the earliest)"
    )


def _refused(text: str) -> None:
    """A refused upload's reason, then what it leaves in use: a refusal said nothing of it, and a trace
    uploaded before stayed the one replayed (a browser review)."""
    tr = state.scenario().workload.trace
    if tr is None:
        kept = "The scenario keeps its generated requests."
    elif tr.path.startswith(UPLOAD_PREFIX):
        before = st.session_state.get(state.UPLOAD_NAME)
        kept = f"The trace uploaded before{f' ({plain(before)})' if before else ''} stays the one replayed."
    else:
        kept = f"The scenario keeps replaying {plain(tr.path)}."
    st.error(f"{text.rstrip()}{'' if text.rstrip().endswith('.') else '.'} {kept}")


def replaying(tr: Trace) -> str:
    """What the upload source replays now: the file applied last, or the shipped trace until a file is
    (the caption said "an uploaded trace" over a shipped one, and never named the file, a review)."""
    if not tr.path.startswith(UPLOAD_PREFIX):
        return f"Replaying the shipped trace {tr.path} until a file is applied."
    name = st.session_state.get(state.UPLOAD_NAME)
    return (
        f"Replaying the uploaded trace{f' {name}' if name else ''} ({tr.format}). A share link to it works on "
        "this server only."
    )


def class_offer(file_name: str, gap: ClassGap, trace: Trace, text: str, cut: bool = False) -> None:
    """A trace names classes the scenario lacks: offer to create them, or say why it cannot be used."""
    name, sc = plain(file_name), state.scenario()
    missing = ", ".join(gap.missing)
    if gap.creatable:
        first = sc.workload.classes[0]
        st.info(
            plain(
                f"{file_name} gives its rows classes this scenario does not have: {missing}. Create them and replay "
                f"the trace? Each new class starts with the SLO of class {first.name} (TTFT {first.slo.ttft_ms:g} ms, "
                f"TPOT {first.slo.tpot_ms:g} ms at p{first.slo.percentile:g}); change them on the SLO page."
            ),
            icon=":material/playlist_add:",
        )
        shown = ", ".join(gap.missing[:4]) + (
            f" and {len(gap.missing) - 4} more" if len(gap.missing) > 4 else ""
        )
        create = f"Create class{'es' if len(gap.missing) > 1 else ''} {shown}"
        st.button(
            plain(f"{create} and use the trace"),
            key="fg:upload-create-classes",
            on_click=_create_classes,
            args=(file_name, gap.missing, trace.format, trace.max_requests),
            type="primary",
            icon=":material/add:",
        )
        # the whole file was over the work bound with the new classes: its earliest requests that fit, one
        # click away, as a plain upload offers them (this way had only the refusal: a read-through)
        earliest = st.session_state.get(CREATE_EARLIEST)
        if earliest is not None and earliest[0] == (file_name, gap.missing):
            st.button(
                plain(f"{create} and replay its earliest {earliest[1]:,} requests"),
                key="fg:upload-create-earliest",
                on_click=_create_classes,
                args=(file_name, gap.missing, trace.format, earliest[1]),
                icon=":material/content_cut:",
            )
        return
    # a label cut (a 20 MB one was quoted whole and the page stalled for minutes: a browser review)
    reasons = [f"{clipped(label)!r} cannot be a class name: {clipped(why, 200)}" for label, why in gap.bad]
    if gap.over_limit:
        least = "at least " if cut else ""  # (`cut`: its labels were counted only to MAX_NAMES_COUNTED)
        reasons.append(
            f"it names {least}{len(gap.missing):,} classes this scenario lacks; with its {len(sc.workload.classes)} "
            f"that is {least}{gap.over_limit:,} more than the {MAX_CLASSES} a workload may have"
        )
    try:
        read_trace(trace, sc, text=text)
        rows = ""
    except ScenarioError as exc:  # the reader names the rows of each unknown label
        rows = f" {exc}"
    st.error(f"{name}: cannot be used as it is: " + plain("; ".join(reasons) + "." + rows))


def _create_classes(file_name: str, names: tuple[str, ...], fmt: str, cap: int | None) -> None:
    """Add the trace's missing classes and switch to the uploaded trace, its earliest `cap` requests where
    set (the cap set over the trace before, or the earliest that fit), in one change (or say why not)."""
    up = st.session_state.get(state.upload_key())
    if up is None:
        return
    sc = state.scenario()
    classes = with_classes(sc, names)
    st.session_state.pop(CREATE_EARLIEST, None)
    try:
        raw = unpack_upload(up.name, up.getvalue())[1]
        text = raw.decode("utf-8-sig")
        with_them = apply_overrides(sc, {"workload.classes": classes}, merge=False)
        trace = Trace(format=fmt, path=file_name[:200] or "upload", max_requests=cap)  # type: ignore[arg-type]
        reqs = read_trace(trace, with_them, text=text)
        ref = store_upload(raw, stored_suffix(file_name.removesuffix(".gz")))
        # the work bound the upload itself checks, with the classes the file adds (it was skipped here:
        # such a file was refused only when its run was, a read-through)
        over, earliest = _work_check(with_them, trace, ref, text, reqs, file_name)
        if earliest is not None:
            st.session_state[CREATE_EARLIEST] = ((file_name, names), earliest)
    except (ScenarioError, UnicodeDecodeError) as exc:
        over = f"{file_name}: {exc}"
    if over:
        state.notify(over, key=f"upload:{file_name}")
        return
    if state.override(
        {"workload.classes": classes, "workload.trace": {"format": fmt, "path": ref, "max_requests": cap}},
        what=file_name,
    ):
        st.session_state[state.UPLOAD_DONE] = hashlib.sha256(raw).hexdigest()[:20]
        st.session_state[state.UPLOAD_NAME] = file_name
        state.clear_upload_notes()
        state.notify(
            f"{file_name}: created class{'es' if len(names) > 1 else ''} {', '.join(names)} (SLOs on the SLO page); "
            f"{kept_text(reqs.source, sc.duration_s, fmt=fmt)}, format {fmt}.",
            kind="success",
            key=f"upload:{file_name}",
        )
        state.upload_said()
