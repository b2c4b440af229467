"""The Hardware page's "Calibrate from your benchmark": upload, fill in, replay, fit, keep.

Three steps: upload one or several benchmark results (`engine.observe.FORMATS`); say what the file
cannot (chip, count, stack, layout, precision, the model where the file does not name one in the
catalog) and see the first file replayed, measured against simulated CDFs and figures; fit a
profile to every file (held-out error per file) and see the replay before and after, then add the
chip with its fitted profile to the scenario's custom hardware (it travels with the share link)
or download its TOML. The profile carries its stack and held-out band, so every page marks the chip
calibrated under that stack as the user's own (`engine.calibration.own`). Everything computed comes
from `engine.observe`; this module only draws.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from engine import observe as ob
from engine.catalog import Catalog, HardwareSpec
from engine.core import MAX_TRACE_BYTES, ScenarioError
from engine.costmodel import SERVING_STACKS, STACK_NAMES
from engine.explain import fitting_tp
from engine.scenario import scenario_catalog
from ui import charts, custom_chip, state, uploads
from ui.tables import MISSING, PERCENT_STEP, stepped
from ui.text import plain, sentence

UPLOAD = "fg:observe-upload"
KEY = "fg:observe-"


Files = tuple[tuple[bytes, str], ...]

ERROR_HELP = "Simulated / measured − 1: + where the model reads higher than measured (a browser review)."
BEFORE_AFTER = {
    "simulated_before": "simulated, chip's profile",
    "error_before": st.column_config.Column("error, chip's profile", help=ERROR_HELP),
    "simulated_after": "simulated, fitted",
    "error_after": st.column_config.Column("error, fitted", help=ERROR_HELP),
}
"""The before-and-after table's headings in words (its columns keep the engine's names)."""


@st.cache_data(max_entries=16, show_spinner=False)
def _observations(files: Files, window_s: float | None, load: int | None) -> list[ob.Observation]:
    """The uploads read: two scrapes `window_s` apart as one window, else each file alone; `load`
    (a concurrency) given to the files that state none."""
    if window_s is not None and len(files) == 2:
        read = [ob.read_pair(*files[0], *files[1], window_s)]
    else:
        read = [ob.read_text(d, n) for d, n in files]
    return [ob.with_load(o, concurrency=load) if load and not ob.has_load(o) else o for o in read]


@st.cache_data(max_entries=8, show_spinner="Replaying…")
def _replay(
    files: Files,
    window_s: float | None,
    load: int | None,
    dep: ob.Deployment,
    catalog_key: str,
    _catalog: Catalog,
    shown: int = 0,
) -> ob.Replay:
    return ob.replay(_observations(files, window_s, load)[shown], dep, _catalog)


@st.cache_data(max_entries=8, show_spinner="Fitting…")
def _fit(
    files: Files,
    window_s: float | None,
    load: int | None,
    dep: ob.Deployment,
    catalog_key: str,
    _catalog: Catalog,
) -> ob.FileFit:
    return ob.fit_files(_observations(files, window_s, load), dep, _catalog)


def _deployment(obs: ob.Observation, cat: Catalog) -> ob.Deployment:
    """The widgets for what the file cannot say, defaulting to the scenario's first pool."""
    sc = state.scenario()
    pool = sc.deployment.pools[0]
    chips = sorted(cat.hardware)
    models = sorted(cat.models)
    guessed = ob.guess_model(obs.setup.model, cat) or sc.model.id
    c1, c2, c3 = st.columns(3)
    hw = c1.selectbox(
        "Chip it ran on", chips, index=chips.index(pool.hardware), key=KEY + "chip", persist_state="session"
    )
    count = c2.number_input(
        "Instances",
        1,
        512,
        1,
        key=KEY + "count",
        persist_state="session",
        help="Servers behind the benchmarked endpoint.",
    )
    # the stack the file names (an SGLang file was replayed under the scenario's vLLM: a review)
    named = ob.named_stack(obs.format) or sc.deployment.stack
    stack = c3.selectbox(
        "Serving stack",
        SERVING_STACKS,
        index=SERVING_STACKS.index(named),
        key=KEY + "stack",
        persist_state="session",
        format_func=lambda s: STACK_NAMES[s],
    )
    c1, c2, c3, c4 = st.columns(4)
    # not plain "Model", "Weights", "KV cache": the page's own model picker, above, has those labels
    model = c1.selectbox(
        "Model it served", models, index=models.index(guessed), key=KEY + "model", persist_state="session"
    )
    # from the least that holds the model chosen on the chip chosen (the scenario's own where that is its
    # model and chip): the scenario's tp 2 for an 8B benchmark replayed it at TTFT -50%, TPOT -42% as if
    # the model were that far off (a browser review)
    least = fitting_tp(cat.models[str(model)], cat.hardware[str(hw)], "bf16", "bf16")
    own = str(model) == sc.model.id and str(hw) == pool.hardware and (least is None or pool.tp >= least)
    tp = c2.number_input(
        "Tensor parallel",
        1,
        64,
        pool.tp if own or least is None else least,
        # one value per model and chip: another model kept the last one's TP, and 70B at TP 1 was refused
        # naming the scenario's deployment.pools[0].tp, a field not on this form (a browser review)
        key=f"{KEY}tp:{model}:{hw}",
        persist_state="session",
    )
    weights: Any = c3.selectbox(
        "Its weights", ["bf16", "fp8", "fp4", "int4"], key=KEY + "weights", persist_state="session"
    )
    kv: Any = c4.selectbox("Its KV cache", ["bf16", "fp8"], key=KEY + "kv", persist_state="session")
    fits = fitting_tp(cat.models[str(model)], cat.hardware[str(hw)], weights, kv)
    st.caption(
        plain(
            "The file does not say its chip, layout or precisions: set them as the benchmark ran, or every "
            "error below is as much theirs as the model's."
        )
    )
    if fits is not None and int(tp) < fits:  # said on this form's terms, not the scenario's field
        raise ScenarioError(
            f"Tensor parallel: {model} in {weights} needs at least {fits} {hw} chips an instance (got {int(tp)})"
        )
    return ob.Deployment(
        hardware=str(hw),
        count=int(count),
        stack=str(stack),
        tp=int(tp),
        weights=weights,
        kv=kv,
        model=str(model),
    )


def _describe(obs: ob.Observation) -> None:
    s = obs.setup
    load = (
        f"concurrency {s.concurrency}"
        if s.concurrency
        else f"{s.rate_rps:g} req/s"
        if s.rate_rps
        else "all at once"
    )
    lengths = (
        f"{s.prompt_tokens:,.0f} in / {s.output_tokens:,.0f} out"
        if s.prompt_tokens and s.output_tokens
        else "lengths not stated"
    )
    rows = "per-request rows" if obs.rows is not None else "aggregates only"
    st.caption(
        f"**{plain(obs.source)}**: {obs.format}; {s.requests or '?'} requests, {load}, {lengths}, {rows}. "
        f"The file cannot say: {', '.join(obs.unknown)}."
        + "".join(f" {plain(sentence(n))}." for n in obs.notes)
    )


def _charts(obs: ob.Observation, rep: ob.Replay) -> None:
    # the replay's own notes (a file of means only drew a lone simulated step and no measured curve, unsaid:
    # a browser review); the file's were said with its description above
    if said := [n for n in rep.notes if n not in obs.notes]:
        what = " (so the charts draw the simulated curve alone)" if obs.rows is None else ""
        st.caption(plain(f"{obs.source}: " + "; ".join(said) + what + "."))
    frame = ob.cdf_frame(obs, rep)
    cols = st.columns(3)
    for col, (metric, label) in zip(cols, (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")), strict=True):
        part = frame[frame["figure"] == label]
        if len(part):
            col.plotly_chart(
                charts.cdf(part, metric, series="source", height=260, dashes={"simulated": "dash"}),
                width="stretch",
                key=KEY + f"cdf-{metric}",
            )


def _errors(frame: Any) -> Any:
    return frame.style.format(
        {c: "{:+.1%}" for c in frame.columns if c.startswith("error")}
        | {c: "{:,.2f}" for c in frame.columns if c.startswith(("measured", "simulated"))}
    )


def _errors_band(frame: Any) -> Any:
    return frame.style.format({"low": "{:+.1%}", "high": "{:+.1%}", "coverage": "{:.0%}"}, na_rep="-")


def _use(chip: HardwareSpec) -> None:
    custom_chip.add_custom_chip(chip, use_everywhere=True)


ANSWERS = tuple(
    KEY + k for k in ("chip", "count", "stack", "model", "tp", "weights", "kv", "fit", "window", "load")
)
"""What the user said of the files (kept for the session, `persist_state`: they went back to the scenario's
first pool after a look at Results, and the kept file replayed on an H200 at TP 8: a review)."""


def _answers_for(files: Files) -> None:
    """Other files: what was said of the last ones is forgotten (their model, chip and load were theirs)."""
    seen = tuple((n, len(d)) for d, n in files)
    if st.session_state.get(KEY + "files") not in (None, seen):
        for key in ANSWERS:
            st.session_state.pop(key, None)
    st.session_state[KEY + "files"] = seen


def section() -> None:
    """Upload, fill in, replay; fit, compare before and after, keep the chip."""
    st.markdown(
        "Ran `vllm bench serve`, SGLang's `bench_serving` or AIPerf, or scraped a vLLM server's `/metrics`? Upload the "
        "result: Fengong replays what it sent on the deployment you describe and sets what you measured beside what it "
        "simulates; then fits the chip's profile to your files (the same fit as the shipped profiles), each file "
        "left out in turn for its held-out error. From the command line: `fengong replay FILE --hardware CHIP` and "
        "`fengong calibrate FILE... --hardware CHIP` (docs/calibration.md)."
    )
    ups = st.file_uploader(
        "Benchmark results",
        accept_multiple_files=True,
        key=UPLOAD,
        type=["json", "jsonl", "csv", "txt", "log", "prom"],
        max_upload_size=MAX_TRACE_BYTES // (1024 * 1024),
        help="; ".join(ob.FORMATS) + ". The first file is replayed; every file is used by the fit.",
        on_change=uploads.keep,
        args=(UPLOAD,),
    )
    files = _readable(uploads.files(UPLOAD, ups))  # (kept from an earlier visit where the box is empty)
    if not files:
        return
    _answers_for(files)
    try:
        window, load = _window(files), None
        if window is False:
            return
        observations = _observations(files, window or None, None)
        for obs in observations:
            _describe(obs)
        if not all(ob.has_load(o) for o in observations):
            load = _load()
            if load is None:
                return
            observations = _observations(files, window or None, load)
    except ScenarioError as exc:
        st.error(plain(exc), icon=":material/error:")
        return
    sc = state.scenario()
    cat = scenario_catalog(sc)
    key = sc.model_dump_json(include={"custom_hardware", "custom_models"})
    _stacks_said(observations)
    try:
        dep = _deployment(observations[0], cat)
    except ScenarioError as exc:  # a layout the form's model does not fit on its chip
        st.error(plain(exc), icon=":material/error:")
        return
    runs = (files, window or None, load)
    # each file's replay, one at a time: only the first's was ever shown, so a second file's errors could
    # not be checked against the fit made from it (a browser review)
    shown = (
        0
        if len(observations) == 1
        else st.selectbox(
            "Replay shown",
            range(len(observations)),
            format_func=lambda i: observations[i].source,
            key=KEY + "shown",
            help="The file whose requests the charts and tables below replay; the fit uses every file.",
        )
    )
    try:
        before = _replay(*runs, dep, key, cat, shown)
    except ScenarioError as exc:
        st.error(plain(exc), icon=":material/error:")
        return
    _charts(observations[shown], before)
    if not st.toggle("Fit a profile to these files", key=KEY + "fit", persist_state="session"):
        st.dataframe(
            _errors(before.table),
            hide_index=True,
            width="stretch",
            key=KEY + "before",
            placeholder=MISSING,
            column_config={"error": st.column_config.Column("error", help=ERROR_HELP)},
        )
        return
    _fitted(runs, observations[shown], dep, cat, key, before, shown)


def _stacks_said(observations: list[ob.Observation]) -> None:
    """Files that name different serving stacks are said (an SGLang file went under vLLM, unsaid: a review)."""
    named = {o.source: ob.named_stack(o.format) for o in observations}
    if len({s for s in named.values() if s is not None}) > 1:
        each = "; ".join(f"{f} {STACK_NAMES[s] if s else 'no stack named'}" for f, s in named.items())
        st.warning(
            plain(
                f"These files name different serving stacks ({each}): each is replayed and fitted under the "
                "one stack chosen below. Fit each stack's files on their own."
            ),
            icon=":material/merge_type:",
        )


@st.cache_data(max_entries=16, show_spinner=False)
def _unreadable(data: bytes, name: str) -> str | None:
    """Why a file does not read as a benchmark result (None: it does); once per file, not on every rerun
    of the page (`_observations` reads the good ones, cached too)."""
    try:
        ob.read_text(data, name)
    except ScenarioError as exc:
        return str(exc)
    return None


def _readable(files: Files) -> Files:
    """The files that read as benchmark results, each once; each other one's error said (one broken file
    beside a good one hid the good one's replay until it was removed: a browser review)."""
    good: list[tuple[bytes, str]] = []
    seen: dict[bytes, str] = {}
    said: set[str] = set()
    broken = 0
    for data, name in files:
        # the same bytes twice counted as two files: the held-out error halved, 3.6% read 1.8% (a browser
        # review); a copy is used once, and said
        if (first := seen.get(data)) is not None:  # once a copy ('x is the same file as x', twice: a review)
            if name not in said:
                same = (
                    f"{name} is uploaded more than once"
                    if name == first
                    else f"{name} is the same file as {first}"
                )
                st.info(plain(f"{same}: used once."), icon=":material/content_copy:")
                said.add(name)
            continue
        if (problem := _unreadable(data, name)) is not None:
            st.error(plain(problem), icon=":material/error:")
            broken += 1
            continue
        seen[data] = name
        good.append((data, name))
    if good and broken:
        st.caption(f"Replayed and fitted without the file{'s' if broken > 1 else ''} above.")
    return tuple(good)


def _window(files: Files) -> float | bool | None:
    """Two scrapes: the seconds between them (False until given); anything else: None."""
    if len(files) != 2 or not all(ob.is_scrape(d) for d, _ in files):
        return None
    given = st.number_input(
        "Seconds between the two scrapes",
        min_value=1.0,
        max_value=86_400.0,
        value=None,
        key=KEY + "window",
        persist_state="session",
        help="Two scrapes of one server's /metrics, in either order: what happened between them, and its rates.",
    )
    if given is None:
        st.info(
            "Give the seconds between the two scrapes to read them as one window.", icon=":material/info:"
        )
        return False
    return float(given)


def _load() -> int | None:
    """The concurrency of a run whose file states no load (None until given)."""
    given = st.number_input(
        "Concurrency it ran at",
        min_value=1,
        max_value=10_000,
        value=None,
        key=KEY + "load",
        persist_state="session",
        help="A file here states no load (AIPerf's CSV): the number of clients the benchmark kept busy.",
    )
    if given is None:
        st.info("Give the concurrency the run used to replay it.", icon=":material/info:")
        return None
    return int(given)


def _fitted(
    runs: tuple[Files, float | None, int | None],
    obs: ob.Observation,
    dep: ob.Deployment,
    cat: Catalog,
    key: str,
    before: ob.Replay,
    shown: int = 0,
) -> None:
    try:
        result = _fit(*runs, dep, key, cat)
    except ScenarioError as exc:
        st.error(plain(exc), icon=":material/error:")
        return
    p = result.profile
    held = result.held_out_median
    with st.container(horizontal=True, gap="small"):
        st.metric("η_F (compute)", f"{p.eta_compute:.3f}", border=True, width="content")
        st.metric("η_B (bandwidth)", f"{p.eta_bandwidth:.3f}", border=True, width="content")
        st.metric("Overhead per 80 layers", f"{p.overhead_ms:.2f} ms", border=True, width="content")
        st.metric(
            "Held-out median |error|",
            "one file: none" if held is None else f"{held:.1%}",
            border=True,
            width="content",
            help="Each file's points as its replay reads them with the profile fitted to the other files.",
        )
    if problem := result.problem():  # as `fengong calibrate` says it
        st.warning(plain(problem[:1].upper() + problem[1:]) + ".", icon=":material/warning:")
    if result.thin_note:  # three factors through two points fit anything
        st.warning(plain(result.thin_note), icon=":material/warning:")
    for note in result.notes:  # a file the simulator could not replay: fitted by its steady state
        st.info(plain(sentence(note)) + ".", icon=":material/info:")
    # a percent, as the metric above says it (the bare fraction read "0.0314" under "3.0%")
    held = {
        "held_out_abs_error": st.column_config.NumberColumn(
            "held-out median |error|", format="percent", step=PERCENT_STEP
        )
    }
    st.dataframe(
        stepped(result.held_out, held),
        hide_index=True,
        width="stretch",
        key=KEY + "held-out",
        column_config=held,
        placeholder=MISSING,  # one file has no held-out error: '–', not 'None' (a browser review)
    )
    if len(result.bands):
        st.caption(
            "The band each figure carries: the 16th to 84th percentile of held-out errors (predicted / measured - 1), "
            "and how often a file's points fell inside the band of the other files'."
        )
        st.dataframe(_errors_band(result.bands), hide_index=True, width="stretch", placeholder=MISSING)
    after = _replay(*runs, dataclasses.replace(dep, profile=p), key, cat, shown)
    st.markdown(f"**{plain(obs.source)}** replayed with the chip's profile before and after the fit:")
    st.dataframe(
        _errors(ob.before_after(before, after)),
        hide_index=True,
        width="stretch",
        key=KEY + "before-after",
        column_config=BEFORE_AFTER,
        placeholder=MISSING,
    )
    st.caption(
        "The fit matches each file's mean TTFT and TPOT (and, at a fixed concurrency, its throughput) as this "
        "replay reads them: the file's own requests sent at their own times. Where the files disagree (no one "
        "profile meets them all) it splits the difference."
    )
    _keep(cat, dep, p)


def _keep(cat: Catalog, dep: ob.Deployment, p: Any) -> None:
    """The fitted chip as a catalog entry to download, and a button that moves the scenario onto it."""
    entry = ob.entry_with(cat.chip(dep.hardware), p, "mine")
    sc = state.scenario()
    mine = {h.id: h for h in sc.custom_hardware}.get(entry.id)
    present = (
        mine is not None
        and mine.profiles.get("mine") == p
        and all(pool.hardware == entry.id for pool in sc.deployment.pools)
    )
    with st.container(horizontal=True, gap="small"):
        st.download_button(
            f"Catalog entry {entry.id}.toml",
            data=ob.entry_toml(entry),
            file_name=f"{entry.id}.toml",
            mime="application/toml",
            on_click="ignore",
            icon=":material/download:",
            key="fg:dl:observe-toml",
        )
        st.button(
            "Run the scenario on this chip",
            icon=":material/add_circle:",
            key=KEY + "use",
            on_click=_use,
            args=(entry,),
            disabled=present,
            help="Adds it to the scenario's custom hardware (it travels with the share link) and moves every "
            "pool onto it; the Strategy page can move them back.",
        )
    served = (dep.model or sc.model.id, dep.weights)
    if served != (sc.model.id, sc.model.weights):  # the fit moves to another model as a chip's profile does
        # the same model in another precision is not 'a model it was not measured on' (a browser review)
        other = "precision" if served[0] == sc.model.id else "model"
        st.caption(
            f"Fitted on {plain(served[0])} in {served[1]}; the scenario serves {plain(sc.model.id)} in "
            f"{sc.model.weights}. Moved onto it, the profile carries over as any chip's does to a {other} it was "
            f"not measured on, so the figures are surer for the {other} you benchmarked: benchmark the "
            f"scenario's own {other} to be sure."
        )
    if present:
        band = (
            "no held-out error, so no band (one file)"
            if p.band is None
            else "the band of its held-out errors"
            if p.band
            else "too few held-out points for a band"
        )
        st.success(
            f"Every pool of the scenario runs on **{plain(entry.id)}**, with the fitted profile: your own "
            f"calibration under {STACK_NAMES[dep.stack]}, with {band}.",
            icon=":material/check_circle:",
        )
