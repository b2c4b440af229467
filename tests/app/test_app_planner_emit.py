"""App tests of the Planner's launch commands (ui.planner_emit): the code block, the stack choice, the download."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.scenario import codec
from engine.scenario.naming import named
from tests.planning.test_emit import _parse

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _panel(preset: str) -> AppTest:
    def app(preset: str) -> None:
        from engine.scenario import codec
        from ui.planner_emit import emit_panel

        emit_panel(codec.load_preset(preset))

    at = AppTest.from_function(app, args=(preset,), default_timeout=60)
    return at.run()


def _argv_after(code: str, program: str) -> tuple[str, ...]:
    words = [w for w in code.split() if w != "\\"]
    start = words.index(program) + 1
    end = next((i for i in range(start, len(words)) if words[i].startswith("#")), len(words))
    return tuple(words[start:end])


def test_a_colocated_choice_offers_the_engines_and_shows_a_parsable_command() -> None:
    at = _panel("chat-colocated")
    assert not at.exception
    radio = at.radio(key="plan_emit_stack")
    assert list(radio.options) == ["vLLM", "SGLang", "TensorRT-LLM"]  # no manifest for a colocated choice
    (code,) = at.code
    assert code.language == "bash" and "vllm serve meta-llama/Llama-3.1-70B" in code.value
    assert code.proto.wrap_lines  # the long comments (the caveats) wrap instead of running off the block
    _parse("vllm", _argv_after(code.value, "serve"))
    radio.set_value("sglang").run()
    assert "python -m sglang.launch_server" in at.code[0].value
    _parse("sglang", _argv_after(at.code[0].value, "sglang.launch_server"))
    download = at.get("download_button")
    assert len(download) == 1


def test_a_disaggregated_choice_offers_dynamo_and_llm_d_manifests() -> None:
    at = _panel("chat-disaggregated")
    radio = at.radio(key="plan_emit_stack")
    assert "NVIDIA Dynamo" in radio.options and "llm-d" in radio.options
    radio.set_value("dynamo").run()
    assert not at.exception
    assert at.code[0].language == "yaml" and 'kind: "DynamoGraphDeployment"' in at.code[0].value
    radio.set_value("llm-d").run()
    assert 'kind: "DisaggregatedSet"' in at.code[0].value


@pytest.mark.slow
def test_the_planner_page_shows_the_chosen_deployments_commands() -> None:
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page("app_pages/planner.py").run()
    at.number_input(key="plan_target").set_value(8.0)
    at.multiselect(key="plan_hardware").set_value(["h100-sxm"])
    at.multiselect(key="plan_tp").set_value([2])
    at.selectbox(key="plan_window").set_value(60.0)
    at.button[0].click().run()
    assert not at.exception
    assert any(e.label == "Launch commands for the chosen deployment" for e in at.expander)
    p = at.session_state["fg_plan"][1]
    chosen = p.scenario_of(p.best_run)  # as planned: the page names it by the preset's id
    code = at.code[0].value
    for pool in chosen.deployment.pools:
        assert f"# pool {pool.name}: {pool.role}, {pool.count} x {pool.hardware}" in code
    # the header names the deployment as Results would once loaded, not the preset it was planned from
    preset = at.session_state["fg_preset"]
    shown = named(chosen, codec.load_preset(preset), preset).name
    assert shown != codec.load_preset(preset).name
    assert f"# scenario {shown!r}" in code
    # the expander keeps its open state in the session (it stays open when a stack is picked)
    assert "plan_emit_open" in at.session_state
