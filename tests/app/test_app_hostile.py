"""A share link full of Markdown and bare addresses renders as text on every page (AppTest).

The link names a pool and a class with bare addresses and Markdown emphasis, and carries a custom
chip whose id, name, vendor and profile are Markdown links and images. Every text element of every
page that shows any of it is parsed as Markdown with autolinks: none may render a link, an image,
HTML, or emphasis made of what the link carried.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from engine.catalog.entries import load_catalog
from engine.scenario.codec import DEFAULT_PRESET, from_data, to_data, to_link
from engine.scenario.resolve import resolve
from tests.app.harness import APP, text_of

MD = MarkdownIt("commonmark", {"linkify": True}).enable(["linkify", "strikethrough", "table"])
INPUTS = {"text_input", "text_area", "number_input", "chat_input", "selectbox", "multiselect"}
PAGES = ["results", "workload", "hardware", "strategy", "slo", "compare", "planner", "about"]


def hostile_link() -> dict[str, str]:
    data = to_data(from_data({**to_data(_preset()), "duration_s": 60.0}))
    data["deployment"]["pools"][0]["name"] = "www.evil-example.com/p"
    data["deployment"]["pools"][1]["name"] = "p __bold__ q"
    data["workload"]["classes"][0]["name"] = "www.evil-example.com/c"
    data["faults"] = [{"at_s": 10, "pool": "www.evil-example.com/p", "instances": 1, "duration_s": 5}]
    chip = load_catalog().hardware["h100-sxm"].model_dump(mode="json", by_alias=True)
    profile = next(iter(chip["profiles"].values()))
    chip.update(
        id="www.evil-example.com",
        name="[click me](https://evil-example.com) ![img](https://evil-example.com/i.png) <b>x</b>",
        vendor="[v](https://evil-example.com)",
        profiles={"p-evil-example.com": profile},
        default_profile="p-evil-example.com",
    )
    data["custom_hardware"] = [chip]
    data["deployment"]["pools"][1]["hardware"] = "www.evil-example.com"
    data["name"] = "[name](https://evil-example.com) evil-example.com"
    scenario = from_data(data)
    resolve(scenario)  # the link is valid: everything in it must reach the pages as text
    return to_link(scenario, DEFAULT_PRESET)


def _preset() -> Any:
    from engine.scenario.codec import load_preset

    return load_preset(DEFAULT_PRESET)


def rendered_markup(text: str) -> list[str]:
    """Links, images and HTML the Markdown in `text` renders to, and emphasis made of the link's `__bold__`.

    The pages' own **bold** is theirs; `__bold__` appears in the text only if the link's pool name
    reached Markdown unescaped.
    """
    found: list[str] = []
    emphasis = ("em_open", "strong_open") if "__bold__" in text else ()

    def walk(tokens: Any) -> None:
        for t in tokens:
            if t.type in ("link_open", "image", "html_inline", "html_block", *emphasis):
                found.append(t.type)
            if t.children:
                walk(t.children)

    walk(MD.parse(text))
    return found


def elements(node: Any) -> Iterator[Any]:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from elements(child)


@pytest.mark.parametrize("page", PAGES)
def test_hostile_link_renders_as_text(page: str) -> None:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(hostile_link())
    at.run()
    if page != "results":
        at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    bad = []
    for el in elements(at._tree):
        for attr in ("value", "label", "body", "help"):
            try:
                text = getattr(el, attr)
            except Exception:  # elements without the attribute
                continue
            if attr == "value" and getattr(el, "type", "") in INPUTS:
                continue  # what a text box holds is shown as typed, not as Markdown
            if attr == "value" and getattr(el, "type", "") == "button_group":
                continue  # its options' shown text is checked below, not the value they stand for
            if isinstance(text, str) and ("evil" in text or "__bold__" in text) and rendered_markup(text):
                bad.append((getattr(el, "type", "?"), attr, text[:120]))
        if getattr(el, "type", "") == "button_group":  # segmented controls and pills render their options
            shown = [o.content for o in el.proto.options]
            bad += [("button_group", "option", t[:120]) for t in shown if "evil" in t and rendered_markup(t)]
    assert not bad, bad


def test_a_hand_written_preset_parameter_is_read_as_the_links_preset() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["preset"] = "edge-offload"
    at.run()
    assert not at.exception
    assert at.session_state["fg_preset"] == "edge-offload"
    assert "preset" not in at.query_params and at.query_params["p"] == "edge-offload"
    bad = AppTest.from_file(APP, default_timeout=120)
    bad.query_params["preset"] = "../../etc/passwd"
    bad.run()
    assert not bad.exception
    assert bad.session_state["fg_preset"] == DEFAULT_PRESET  # refused, said, and the default shown
    assert any("could not be used" in w.value for w in bad.warning)


def test_parameters_the_app_does_not_read_are_said_and_dropped() -> None:
    """`?scenario=../../etc/passwd` is no parameter of the app's: a warning names it, and it leaves
    the address, so a share link does not carry it on. Compare's own `a` and `b` with a value that is
    not a choice are said too, and the page shows its default."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"scenario": "../../etc/passwd", "p": DEFAULT_PRESET})
    at.run()
    assert not at.exception
    assert "scenario" not in at.query_params
    assert any("'scenario'" in text_of(w.value) and "ignored" in text_of(w.value) for w in at.warning)
    cmp = AppTest.from_file(APP, default_timeout=120)
    cmp.query_params.update({"p": DEFAULT_PRESET, "a": "../../etc/passwd", "b": "current"})
    cmp.switch_page("app_pages/compare.py").run()
    assert not cmp.exception
    assert any("Scenario A" in text_of(w.value) and "not a choice" in text_of(w.value) for w in cmp.warning)
    assert cmp.selectbox(key="a").value == "current" and cmp.selectbox(key="b").value == "current"
