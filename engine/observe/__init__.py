"""Observing real runs: reading benchmark results, replaying them, and calibrating from them.

Owns: `observation` (what a file says: setup, measurements, per-request rows, what it cannot
know; the checks on untrusted values), `bench` (vLLM's `vllm bench serve` and SGLang's
`bench_serving`: JSON, JSONL and printed blocks), `aiperf` (AIPerf's profile export), `prometheus`
(a vLLM server's /metrics, one scrape or two over a window), `formats` (their names), `detect` (the
one front door: which format a file is in), `playback` (a result as a workload, simulated on a
stated deployment, measured against simulated), `fit` (results as calibration points, a profile fitted by
engine.calibration.calibrate, each file left out in turn), `refine` (that fit matched to each file's
replay, where the steady state it is priced at misses), `shipped` (the shipped reference rows
copied from printed result blocks, as the same observations: one way in for measurements).
May import: every lower package, up to engine.explain.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.faces import lazy as _lazy

_API = {
    "FORMATS": "engine.observe.formats",
    "named_stack": "engine.observe.formats",
    "read_path": "engine.observe.detect",
    "read_pair": "engine.observe.detect",
    "is_scrape": "engine.observe.detect",
    "read_text": "engine.observe.detect",
    "Observation": "engine.observe.observation",
    "with_load": "engine.observe.observation",
    "has_load": "engine.observe.observation",
    "Deployment": "engine.observe.playback",
    "FileFit": "engine.observe.fit",
    "fit_files": "engine.observe.fit",
    "entry_with": "engine.observe.fit",
    "entry_toml": "engine.observe.fit",
    "Replay": "engine.observe.playback",
    "guess_model": "engine.observe.playback",
    "before_after": "engine.observe.playback",
    "cdf_frame": "engine.observe.playback",
    "replay": "engine.observe.playback",
    "block_observation": "engine.observe.shipped",
    "reference_blocks": "engine.observe.shipped",
}
_RENAMED: dict[str, str] = {}

__all__ = [
    "FORMATS",
    "Deployment",
    "FileFit",
    "Observation",
    "Replay",
    "before_after",
    "block_observation",
    "cdf_frame",
    "entry_toml",
    "entry_with",
    "fit_files",
    "guess_model",
    "has_load",
    "is_scrape",
    "named_stack",
    "read_pair",
    "read_path",
    "read_text",
    "reference_blocks",
    "replay",
    "with_load",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.observe.detect import is_scrape, read_pair, read_path, read_text
    from engine.observe.fit import FileFit, entry_toml, entry_with, fit_files
    from engine.observe.formats import FORMATS, named_stack
    from engine.observe.observation import Observation, has_load, with_load
    from engine.observe.playback import Deployment, Replay, before_after, cdf_frame, guess_model, replay
    from engine.observe.shipped import block_observation, reference_blocks
