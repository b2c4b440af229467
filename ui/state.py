"""The scenario a session is looking at, and the share link that reproduces it.

The scenario lives in session state as one immutable `Scenario` value with the preset it started
from. Widgets never mutate it: they call `override` (a field path and a value, through
`engine.scenario.codec.apply_overrides`) or `commit` (a whole new value); both validate and resolve
the result against the catalog before accepting it, and say why when they do not.

The URL always carries the share link of the current scenario (``?v=1&p=<preset>&s=<changes>``,
see `engine.scenario.codec.to_link`), so a reload, a bookmark or a copied address reopens the same
scenario on the same page. A link is untrusted: `sync_link` decodes it with `from_link`, refuses
data files outside the shipped and uploaded ones, resolves it, and on any problem shows a warning
naming what was wrong (never rendered as Markdown: see ui.text) and falls back to the preset.
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from engine import resolve
from engine.core import ScenarioError
from engine.scenario import (
    DEFAULT_PRESET,
    Scenario,
    apply_overrides,
    check_untrusted,
    dumps_toml,
    from_link,
    from_link_partial,
    load_preset,
    preset_names,
    to_data,
    to_link,
)
from engine.scenario import named as named_scenario

SCENARIO = "fg_scenario"
PRESET = "fg_preset"
LINK = "fg_link"
NOTICES = "fg_notices"
FRESH = "fg_fresh_notices"
LINK_KEYS = ("v", "p", "s")
PAGE_KEYS = ("a", "b", "plan", "seeds")
"""Query parameters of one page: Compare's scenarios A and B (bound to its widgets), the Planner's
form (`ui.plan_link`)."""
LINK_REFUSED = "fg_link_refused"
"""Session state, within one run: the link's scenario was refused and the preset shown instead."""
STREAMLIT_KEYS = ("embed", "embed_options")
"""Query parameters Streamlit itself reads."""


@st.cache_resource(show_spinner=False)
def preset(name: str) -> Scenario:
    """A shipped preset (parsed once per server)."""
    return load_preset(name)


def scenario() -> Scenario:
    """The session's scenario."""
    return st.session_state[SCENARIO]  # type: ignore[no-any-return]


def preset_name() -> str:
    """The preset the session's scenario started from."""
    return str(st.session_state[PRESET])


def moved_on(tag: str, now: Any) -> bool:
    """Whether the session has moved on from what `tag` last recorded (another preset, another model), `now`
    recorded in its place; False the first time (nothing recorded yet: a link's own values stand). A page's
    fields that start from the scenario start again where it has (the Planner's form, Compare's B)."""
    moved = st.session_state.get(tag, now) != now
    st.session_state[tag] = now
    return moved


def data() -> dict[str, Any]:
    """The session's scenario as plain data (computed once per scenario value)."""
    sc = scenario()
    cached = st.session_state.get("fg_data")
    if cached is None or cached[0] is not sc:
        cached = (sc, to_data(sc))
        st.session_state["fg_data"] = cached
    return cached[1]  # type: ignore[no-any-return]


def link() -> dict[str, str]:
    """The share-link query parameters of the session's scenario."""
    sc, name = scenario(), preset_name()
    cached = st.session_state.get("fg_link_cache")
    if cached is None or cached[0] is not sc or cached[1] != name:
        cached = (sc, name, to_link(sc, name))
        st.session_state["fg_link_cache"] = cached
    return dict(cached[2])


def edited() -> bool:
    """Whether the scenario differs from its preset."""
    return "s" in link()


def named(sc: Scenario | None = None) -> Scenario:
    """The session's scenario (or `sc`, one edited from the session's preset) under the name it shows:
    the preset's while unchanged, else derived from its model and pools (`engine.scenario.naming`)."""
    name = preset_name()
    return named_scenario(scenario() if sc is None else sc, preset(name), name)


def notify(message: str, kind: str = "warning", key: str | None = None) -> None:
    """Show a message at the top of every page until the user dismisses it.

    `key` names what the message is about (a field path, a file): a newer message with the same
    key replaces the older one, so repeating a mistake never piles up copies. Without a key the
    message itself is the key.
    """
    notes = st.session_state.get(NOTICES)
    if not isinstance(notes, dict):
        notes = st.session_state[NOTICES] = {}
    key = key or f"{kind}:{message}"
    notes.pop(key, None)  # the newest goes last
    notes[key] = (kind, message)
    if kind == "warning":  # said once where the user is looking too (`fresh_warnings`)
        fresh = st.session_state.get(FRESH)
        st.session_state[FRESH] = [*(fresh if isinstance(fresh, list) else []), key]


_INDEXED = re.compile(r"\b(workload\.classes|deployment\.pools)\[(\d+)\]")


def with_names(message: str, paths: Any) -> str:
    """A refusal of a change to `paths` led by the name of the class or pool the first of them is in,
    as the session's scenario names it ('Class interactive: E2E (ms) (workload.classes[0].slo.e2e_ms):
    ...'): three E2E boxes on the SLO page refused by index alone left the reader to count (a review).
    Named from the change, not from the message (a run-wide refusal names indices of its own); the
    message itself kept, paths included, so it still reads as the CLI's."""
    found = next((m for p in paths if (m := _INDEXED.match(str(p)))), None)
    if found is None:
        return message
    sc = scenario()
    table = (
        [c.name for c in sc.workload.classes]
        if found.group(1) == "workload.classes"
        else [p.name for p in sc.deployment.pools]
    )
    i = int(found.group(2))
    if i >= len(table):
        return message
    return f"{'Class' if found.group(1) == 'workload.classes' else 'Pool'} {table[i]}: {message}"


def fresh_warnings() -> list[str]:
    """The warnings notified since this was last asked (the next run's), each once, and forgets them.
    The notices sit at the top of the page: a value refused in a box further down snapped back with
    its reason out of view (a walkthrough), so each new one is also said in a toast."""
    fresh = st.session_state.pop(FRESH, None)
    notes = st.session_state.get(NOTICES)
    if not isinstance(fresh, list) or not isinstance(notes, dict):
        return []
    return [notes[k][1] for k in dict.fromkeys(fresh) if k in notes]


def notices() -> list[tuple[str, str, str]]:
    """The messages waiting to be dismissed, oldest first, as (key, kind, message)."""
    notes = st.session_state.get(NOTICES)
    if not isinstance(notes, dict):
        return []
    return [(key, kind, message) for key, (kind, message) in notes.items()]


def dismiss(key: str | None = None) -> None:
    """Drop the message with this key (all of them when None)."""
    notes = st.session_state.get(NOTICES)
    if not isinstance(notes, dict):
        return
    if key is None:
        notes.clear()
    else:
        notes.pop(key, None)


def field_key(paths: Any) -> str:
    """The notice key of a change to these field paths (a later change to them replaces its message)."""
    return "field:" + ",".join(sorted(paths))


def check(sc: Scenario) -> None:
    """Raise ScenarioError when the app may not run the scenario.

    Everything a session holds came from someone else (a link, an opened file, typed values), so
    it may name only shipped or uploaded data files, and the catalog must serve it (known chips,
    weights that fit).
    """
    check_untrusted(sc)
    resolve(sc)


def commit(new: Scenario, what: str = "", key: str | None = None) -> bool:
    """Make `new` the session's scenario if it resolves; otherwise keep the old one and say why.

    The message stays until dismissed, or until a later change with the same `key` is accepted.
    """
    try:
        check(new)
    except ScenarioError as exc:
        notify(f"{what + ': ' if what else ''}not applied: {exc}", key=key)
        return False
    st.session_state[SCENARIO] = new
    if key is not None:
        dismiss(key)  # an earlier refusal of the same change is settled
        settle_beside(key)
    return True


def _tables(key: str) -> set[str]:
    """The tables a field notice's paths sit in ('field:workload.classes[1].output.p99' ->
    {'workload.classes[1].output'}; a top-level field sits in none)."""
    return {p.rsplit(".", 1)[0] for p in _paths(key) if "." in p}


def _paths(key: str) -> set[str]:
    """The field paths of a notice's key ('field:duration_s,warmup_s' -> {'duration_s', 'warmup_s'})."""
    return set(key.removeprefix("field:").split(","))


def settle_beside(key: str) -> None:
    """Drop the refusals of fields in the same table as an accepted change, or of a change that moved
    one of its fields too: a p99 refused below its mean is settled by raising the mean, and its warning
    stayed on every page; a window refused with the warm-up it moved, by the warm-up set (reviews)."""
    notes = st.session_state.get(NOTICES)
    if not isinstance(notes, dict) or not key.startswith("field:"):
        return
    near, paths = _tables(key), _paths(key)
    for k in [k for k in notes if k.startswith("field:") and (_tables(k) & near or _paths(k) & paths)]:
        notes.pop(k, None)


def forget_field_notices() -> None:
    """Drop every refusal of a field: they were about a scenario no longer shown (a preset loaded, a
    reset), and one naming workload.classes[1] stayed over a preset without that class (a review)."""
    notes = st.session_state.get(NOTICES)
    if isinstance(notes, dict):
        for k in [k for k in notes if k.startswith("field:")]:
            notes.pop(k, None)


def override(changes: dict[str, Any], what: str = "") -> bool:
    """Change fields by path (validated like any scenario); say why when a change is refused.

    `what` names the change for people (a widget's label); the message also carries the path.
    """
    key = field_key(changes)
    try:
        new = apply_overrides(scenario(), changes, merge=False)
    except ScenarioError as exc:
        notify(with_names(f"{what + ': ' if what else ''}not applied: {exc}", changes), key=key)
        return False
    return commit(new, with_names(what, changes) if what else what, key)


def attempt(changes: dict[str, Any]) -> str | None:
    """Change fields by path like `override`, but return why a refused change was refused (None: applied).

    For widgets that show their refusal beside themselves rather than at the top of the page.
    """
    try:
        new = apply_overrides(scenario(), changes, merge=False)
        check(new)
    except ScenarioError as exc:
        return str(exc)
    st.session_state[SCENARIO] = new
    dismiss(field_key(changes))
    settle_beside(field_key(changes))
    return None


def keep_relative_to(name: str) -> None:
    """Keep the session's scenario relative to preset `name` (the share link's `p`, Reset, the
    counterpart to compare with) without changing the scenario."""
    if name in preset_names():
        st.session_state[PRESET] = name


def use_preset(name: str) -> None:
    """Start over from a shipped preset, an uploaded trace forgotten with it (`forget_upload`)."""
    st.session_state[SCENARIO] = preset(name)
    st.session_state[PRESET] = name
    forget_upload()
    forget_field_notices()
    st.session_state.pop(SPLIT_BEFORE, None)  # another preset's split is not this one's to restore


SPLIT_BEFORE = "fg:split_before"
"""Session key: the scenario as it was before the Strategy page switched it to colocated, whose
split a switch back restores (`engine.explain.mode_switch.with_mode`)."""


UPLOAD_GENERATION = "fg_upload_gen"
"""Session key: how many times the trace uploader was emptied (its widget's key counts them)."""
UPLOAD_MODE = "fg_upload_mode"
"""Session key: the Workload page's source is 'Upload a trace' (no trace applied yet, or over a shipped one)."""
UPLOAD_DONE = "fg_upload_done"
"""Session key: the digest of the upload last applied (the same file is not applied twice in a row)."""
UPLOAD_NAME = "fg_upload_name"
"""Session key: the file name of the trace upload last applied."""


def upload_key() -> str:
    """The trace uploader's widget key: a new one each time the upload is forgotten, as a file
    uploader's file cannot be taken back from the browser any other way."""
    gen = int(st.session_state.get(UPLOAD_GENERATION, 0))
    return "fg:upload" if gen == 0 else f"fg:upload:{gen}"


def forget_upload() -> None:
    """Empty the trace uploader, its source choice and its messages: after a preset switch the Workload
    page still showed 'Upload a trace' and the file, its message stayed on every page, and the same
    file uploaded again was ignored as one already applied (a browser review)."""
    ss = st.session_state
    if not (ss.get(UPLOAD_MODE) or ss.get(UPLOAD_DONE) or ss.get(upload_key()) is not None):
        return
    for key in (UPLOAD_MODE, UPLOAD_DONE, UPLOAD_NAME):
        ss.pop(key, None)
    ss[UPLOAD_GENERATION] = int(ss.get(UPLOAD_GENERATION, 0)) + 1
    clear_upload_notes()


def clear_upload_notes() -> None:
    """Drop every upload's message: a file applied after another left the first one's message at the top
    of every page though its trace was no longer used (a review)."""
    notes = st.session_state.get(NOTICES)
    if isinstance(notes, dict):
        for key in [k for k in notes if str(k).startswith("upload:")]:
            notes.pop(key)
    st.session_state.pop(UPLOAD_SAID, None)


UPLOAD_SAID = "fg_upload_said"
"""Session key: the trace and window an upload's message counted requests for (`upload_said`)."""


def _trace_and_window() -> tuple[Any, float]:
    sc = scenario()
    tr = sc.workload.trace
    return (None if tr is None else tr.model_dump(mode="json"), sc.duration_s)


def upload_said() -> None:
    """Note the trace and window the upload's message just counted requests for (`stale_upload_notes`)."""
    st.session_state[UPLOAD_SAID] = _trace_and_window()


def stale_upload_notes() -> None:
    """Drop an upload's message once the trace or the window it counted for changed: it stood on every page
    with its upload-time counts after the window and the gap cut moved (a browser review); the Workload
    page's line under the arrivals and the Results say the window's own."""
    said = st.session_state.get(UPLOAD_SAID)
    if said is not None and said != _trace_and_window():
        clear_upload_notes()


def _from_params(params: dict[str, str]) -> tuple[Scenario, str]:
    """The scenario a link describes, checked like untrusted input; ScenarioError says why not."""
    sc = from_link(params)
    _check_link(sc)
    return sc, params.get("p", DEFAULT_PRESET)


def _check_link(sc: Scenario) -> None:
    """`check`, and the work bound the run would hold it to: a link at 2,500 req/s was opened and its run
    then refused on Results, where the Workload page refuses the same rate as it is typed (a browser review)."""
    check(sc)
    from engine.serving import estimate_work  # (the engine's serving face: loaded where a link is opened)

    if over := estimate_work(sc).problems():
        raise ScenarioError("; ".join(over))


def _open_in_part(params: dict[str, str], exc: ScenarioError) -> None:
    """A link that does not hold whole: its preset with every change of it that holds, and what was
    refused said (one bad field threw the whole link away, its valid changes with it: a review); its
    preset alone, or the default one, where none of it can be read."""
    ss = st.session_state
    ss[LINK_REFUSED] = True
    fallback = _fallback(params)
    try:
        sc: Scenario | None
        sc, refused = from_link_partial(params, _check_link)  # each change checked as the app runs it
    except ScenarioError:
        sc, refused = None, []
    use_preset(fallback)
    if sc is None or not refused or sc == ss[SCENARIO]:  # nothing of it holds: its preset, as before
        notify(f"The share link could not be used: {exc}. Showing the preset {fallback} instead.")
        return
    ss[SCENARIO] = sc
    notify(
        f"The share link's changes were applied but for {len(refused)} refused: {'; '.join(refused)}. "
        "The address now holds the rest."
    )


def _fallback(params: dict[str, str]) -> str:
    name = params.get("p", DEFAULT_PRESET)
    return name if name in preset_names() else DEFAULT_PRESET


def scenario_toml(sc: Scenario) -> str:
    """The scenario's TOML as the dashboard shows its figures: where they are the mean of several seeds,
    a first comment says how many and the command that gives the same (the file carried only `seed`,
    so the command line printed one seed's figures beside the page's mean of three: a review)."""
    from ui.replicas import NOTE, SETTING  # (ui.replicas imports this module only inside a function)

    n = st.session_state.get(SETTING, 1)
    if not isinstance(n, int) or n <= 1:
        return dumps_toml(sc)
    return (
        f"{NOTE}{n} seeds ({sc.seed} to {sc.seed + n - 1}): "
        f"`fengong run FILE --replications {n}` gives the same figures\n" + dumps_toml(sc)
    )


def seeds_of_file(text: str) -> None:
    """The seeds count a scenario file's first comment states (`scenario_toml`), made the session's:
    a file exported over three seeds opened on one (a review). A count the picker does not offer is
    left alone."""
    from ui.replicas import (  # (it imports this module lazily)
        NOTE,
        PAGES,
        PARAM,
        SETTING,
        offered,
        widget_key,
    )

    n = offered(text[len(NOTE) :].split(" ", 1)[0]) if text.startswith(NOTE) else None
    if n is not None:
        st.session_state[SETTING] = n
        for page in PAGES:  # each page's picker shows it, and the link carries it
            st.session_state[widget_key(page)] = n
        st.query_params[PARAM] = str(n)


def _check_seeds(qp: Any) -> None:
    """A link's seeds count (`ui.replicas.PARAM`) that is not one the picker offers: said and dropped
    here, before the page's notices are drawn (the picker, further down, applies a good one)."""
    from ui.replicas import OPTIONS, PARAM, offered  # (ui.replicas imports this module only in a function)

    raw = qp.get(PARAM)
    if raw is not None and offered(raw) is None:
        notify(
            f"The link's seeds: {raw[:20]!r} is not one of {', '.join(map(str, OPTIONS))}; one seed shown.",
            key="link:seeds",
        )
        del qp[PARAM]


def sync_link() -> None:
    """Load the scenario from the URL when it brings a new link; then write the current link back.

    Run once at the top of every script run (app.py does). A link that fails validation leaves
    a warning naming the problem and falls back to the link's preset (or the default one).
    """
    ss = st.session_state
    qp = st.query_params
    ss.pop(LINK_REFUSED, None)
    if "preset" in qp:  # a hand-written `?preset=<name>` means the app's `p=<name>`
        if "p" not in qp:
            qp["p"] = str(qp["preset"])
        del qp["preset"]
    unknown = [k for k in qp if k not in (*LINK_KEYS, *PAGE_KEYS, *STREAMLIT_KEYS)]
    if unknown:  # said, and dropped, so a share link does not carry them on
        names = ", ".join(repr(k[:40]) for k in unknown[:5]) + (" and more" if len(unknown) > 5 else "")
        many = len(unknown) > 1
        notify(
            f"The link's parameter{'s' if many else ''} {names} {'are not ones' if many else 'is not one'} "
            f"the app reads (v, p, s; a and b on Compare; plan on the Planner; seeds on Results and Compare): "
            f"{'they were' if many else 'it was'} ignored.",
            key="link:unknown",
        )
        for k in unknown:
            del qp[k]
    _check_seeds(qp)
    # an emptied key reads as absent (`_write_link`'s fallback)
    params = {k: str(qp[k]) for k in LINK_KEYS if k in qp and str(qp[k])}
    if SCENARIO not in ss or (params and params != ss.get(LINK)):
        if params:
            try:
                sc, name = _from_params(params)
                ss[SCENARIO], ss[PRESET] = sc, name
            except ScenarioError as exc:
                _open_in_part(params, exc)
        elif SCENARIO not in ss:
            use_preset(DEFAULT_PRESET)
    want = link()
    if params != want:
        _write_link(qp, want)
    ss[LINK] = want


def _write_link(qp: Any, want: dict[str, str]) -> None:
    """Write the link's keys in one update of the address: a write a key was a browser history entry each,
    and Back then stopped at half-written links (a new `p` with the old `s`: a scenario nobody made, or a
    `p` without its `s`: the bare preset) and loaded them (a round-trip review)."""
    stale = [k for k in LINK_KEYS if k not in want and k in qp]
    try:
        if stale:  # a key to drop too: the whole query at once, the page's own keys kept
            qp.from_dict({**{k: qp.get_all(k) for k in qp if k not in LINK_KEYS}, **want})
        else:
            qp.update(want)
    except StreamlitAPIException:
        # a key bound to a widget (Compare's a and b) refuses a whole-query write: one update still, a
        # dropped key emptied, which `sync_link` reads as absent
        qp.update({**{k: "" for k in stale}, **want})
