"""The advisor's finding on requests rejected or failed: how many, by reason, and what a reason that
is a size says of the sizes.

"139 requests were rejected (too_long_for_kv 139)" named neither the memory nor the request it did
not fit (a review): a reason about size now says the most an instance holds and the longest request,
and the model's context where that is the limit.
"""

from __future__ import annotations

from engine.explain.finding import Finding
from engine.policies import admission
from engine.scenario.resolve import Resolved
from engine.serving import ledger
from engine.serving.ledger import OVER_CONTEXT, TOO_LONG, TOO_LONG_LIVE
from engine.serving.run import SimResult

REASON_WORDS = {
    OVER_CONTEXT: "longer than the context",
    TOO_LONG: "too long for KV memory",
    TOO_LONG_LIVE: "too long for the KV memory free",
    ledger.NO_INSTANCE: "no instance up",
    ledger.NO_DECODE: "no decode instance up",
    ledger.LOST: "instance lost",
    ledger.UNFINISHED: "unfinished at the end",
    ledger.DEGRADED: "shed while degraded",
    ledger.LINK_DOWN: "KV link down",
    admission.OVER_TARGET: "TTFT predicted to miss its target",
    admission.QUEUE_FULL: "queue full",
}
"""Each reject or fail reason in a few words, as the pages and the advisor name it ('Rejected: predicted
ttft over slo' and '(predicted_ttft_over_slo 340)' showed the codes: a browser review)."""


def reason_words(reason: str) -> str:
    """A reject or fail reason in words (`REASON_WORDS`; another policy's own reason with its
    underscores as spaces)."""
    return REASON_WORDS.get(reason, reason.replace("_", " "))


def _sizes(result: SimResult, res: Resolved, reason: str) -> str:
    """What a size reason compares: the KV memory of the largest instance of each role, or the model's
    context, beside the longest request so rejected."""
    r = result.requests
    mine = r[r["reason"] == reason]
    if mine.empty:
        return ""
    longest = int((mine["prompt_tokens"] + mine["output_tokens"]).max())
    if reason == OVER_CONTEXT:
        return f"{res.pools[0].instance.model.max_context:,} tokens of context, the longest {longest:,}"
    held = ", ".join(f"{p.spec.name} {int(p.instance.kv_capacity_tokens):,}" for p in res.pools)
    return f"KV memory for {held} tokens an instance, the longest request {longest:,}"


def rejection_finding(result: SimResult, res: Resolved) -> Finding | None:
    """Requests rejected or failed, by reason (a size reason with its sizes); None where none was."""
    req = result.summary["requests"]
    if not (req["rejected"] or req["failed"]):
        return None
    reasons = []
    for reason, n in req["rejected_by_reason"].items():
        sized = _sizes(result, res, reason) if reason in (TOO_LONG, TOO_LONG_LIVE, OVER_CONTEXT) else ""
        # the count before its words ('longer than the context 16: 131,072 tokens of context' read the 16 as the
        # context's, and 'and 0 failed' said nothing: a browser review)
        reasons.append(f"{n:,} {reason_words(reason)}" + (f": {sized}" if sized else ""))
    said = f" ({'; '.join(reasons)})" if reasons else ""
    rejected, failed = req["rejected"], req["failed"]
    parts = (
        [f"{rejected:,} request{' was' if rejected == 1 else 's were'} rejected{said}"] if rejected else []
    )
    if failed:
        parts.append(
            f"{failed:,} failed" if parts else f"{failed:,} request{'' if failed == 1 else 's'} failed"
        )
    return Finding(
        "warning",
        "rejections",
        f"{' and '.join(parts)}; they count as SLO misses.",
        {"rejected": rejected, "failed": failed, "total": req["total"]},
    )


__all__ = ["REASON_WORDS", "reason_words", "rejection_finding"]
