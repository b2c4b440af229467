"""docs/scenario.md's listing of the format is a scenario that loads as written: copied verbatim, it
was refused for four problems (a peak hour on a flat shape, a class pinned to a pool it does not
have, a disaggregated deployment without a decode pool, an empty custom chip)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_format_listing_loads_as_written() -> None:
    from engine.scenario.codec import loads_toml

    text = (ROOT / "docs" / "scenario.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    assert block, "docs/scenario.md has no TOML listing"
    sc = loads_toml(block.group(1))
    assert {p.role for p in sc.deployment.pools} == {"prefill", "decode"}
    assert sc.workload.trace is not None and sc.faults  # the optional blocks are in it, not left out
