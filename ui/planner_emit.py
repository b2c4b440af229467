"""The Planner's launch commands: the chosen deployment for a serving stack, as a code block and a download.

Under the verdict, a choice of stack (vLLM, SGLang, TensorRT-LLM; NVIDIA Dynamo and llm-d for a
disaggregated choice) and the text `engine.planning.emit_deployment` writes for it. Fields with no
flag in the stack arrive as comments in that text; nothing here computes.
"""

from __future__ import annotations

import streamlit as st

from engine.core import ScenarioError
from engine.planning import EMIT_STACKS, emit_deployment
from engine.scenario import Scenario

LABELS = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
    "dynamo": "NVIDIA Dynamo",
    "llm-d": "llm-d",
}
"""How the page names each stack."""
MANIFESTS = ("dynamo", "llm-d")
"""Stacks whose export is a prefill/decode manifest (disaggregated deployments only)."""


def stacks_for(scenario: Scenario) -> list[str]:
    """The stacks offered for a deployment: every one for a disaggregated deployment, else the engines."""
    if scenario.deployment.mode == "disaggregated":
        return list(EMIT_STACKS)
    return [s for s in EMIT_STACKS if s not in MANIFESTS]


def emit_panel(best: Scenario | None, key: str = "plan_emit") -> None:
    """The chosen deployment's launch commands for a stack the user picks, with a download button."""
    if best is None:
        return
    # keyed and stateful: opened, it stays open when choosing a stack reruns the page, even where the
    # elements above it changed since (the finished plan's progress bar is gone on that rerun)
    with st.expander(
        "Launch commands for the chosen deployment",
        icon=":material/terminal:",
        key=f"{key}_open",
        on_change="rerun",
    ):
        stack = st.radio(
            "Serving stack",
            stacks_for(best),
            key=f"{key}_stack",
            horizontal=True,
            format_func=LABELS.__getitem__,
        )
        try:
            out = emit_deployment(best, stack)
        except ScenarioError as exc:
            st.warning(str(exc), icon=":material/warning:")
            return
        # wrapped: the comments carry the caveats (a checkpoint to quantise, a flag with no equivalent)
        # and ran past the block's right edge, readable only by scrolling sideways
        st.code(out.text, language="yaml" if out.document is not None else "bash", wrap_lines=True)
        st.download_button(
            f"Download {out.filename}",
            out.text,
            file_name=out.filename,
            mime="text/plain",
            key=f"{key}_download",
            icon=":material/download:",
        )
        st.caption(
            "One command per pool (run each pool's copies behind a router), or a Kubernetes manifest for "
            "Dynamo and llm-d. Every flag is one the stack's own parser accepts at the version "
            "docs/planner.md names; scenario fields with no flag appear as comments."
        )
