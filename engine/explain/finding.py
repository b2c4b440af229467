"""One statement the advisor makes about a run (`engine.explain.advisor`): its severity, topic, words
and the numbers behind it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["critical", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    """One statement about a run: how much it matters, what it says, the numbers behind it."""

    severity: Severity
    topic: str
    text: str
    numbers: Mapping[str, float] = field(default_factory=dict)


_UNITS: tuple[tuple[str, str, str], ...] = (
    ("_pct", "%", "{:+.0%}"),  # (written by `confidence.side_text`)
    ("_ms", "ms", "{:,.1f}"),
    ("_rps", "req/s", "{:,.2f}"),
    ("_w", "W", "{:,.1f}"),
    ("_s", "s", "{:,.1f}"),
)
"""A number's key's unit token (anywhere in the key, or at its end for the shorter ones), its unit and format."""


_CAPS = {"ttft": "TTFT", "tpot": "TPOT", "tbt": "TBT", "e2e": "E2E", "kv": "KV", "slo": "SLO", "usd": "USD"}


def number_rows(numbers: Mapping[str, float]) -> list[tuple[str, str]]:
    """A finding's numbers as a reader takes them: each key in words with its unit, each value in it
    (a share as a percentage). The Results page showed the raw keys and six decimals
    (`queueing_share_of_ttft: 0.621473`: a review)."""
    rows = []
    for key, value in numbers.items():
        name, text = key, f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"
        # SLO attainment a percentage as the page writes it (0.959 beside 95.9% elsewhere: a review)
        if "share" in key or key.startswith(("met_", "slo_attainment")) or key == "load_share":
            text = f"{value:.1%}"
        else:
            for token, unit, fmt in _UNITS:
                if key.endswith(token) or (len(token) > 2 and f"{token}_" in key):
                    name, text = key.replace(token, "", 1) + f" ({unit})", fmt.format(value)
                    if token == "_pct":  # a band's side as the sentence writes it ('−43%', '> +100%', '+0%')
                        from engine.explain.confidence import side_text  # (the bands' module: display only)

                        text = side_text(value)
                    break
        words = [_CAPS.get(w, w) for w in name.split("_") if w]
        rows.append((" ".join(words), text))
    return rows
