"""Help for fields whose name alone would read otherwise elsewhere, keyed ``Class.field``.

`ui.labels.HELP` is keyed by a field's name, which is right where one name means one thing
(`ttft_ms`, `tp`); these fields share a name with another meaning (`max_output_tokens` caps the
answers while degraded, and bounds an edge candidate's) or are only understood beside their class's
other fields. A field's own description still wins (`ui.forms.model_form`).
"""

FIELD_HELP: dict[str, str] = {
    "Prefix.tokens": "Tokens of the shared prefix (a system prompt) sent before every prompt of the class, on "
    "top of the prompt's own tokens above (0: none).",
    "Degrade.below_capacity": "Degrade while the live share of the entry pools' prefill capacity (every pool of a "
    "colocated deployment, the prefill pools of a disaggregated one) is below this, 0 to 1. 0: never on capacity.",
    "Degrade.above_backlog": "Degrade while more requests than this wait per live entry instance (prompts queued, "
    "and prefilled prompts waiting for decode memory). Empty: never on backlog.",
    "Degrade.max_output_tokens": "While degraded, each admitted request's answer is cut to this many tokens "
    "(a real server lowers the request's max_tokens). 0: no cap.",
    "Degrade.shed_below_priority": "While degraded, classes with a priority below this are rejected (reason "
    "degraded). 0: none shed.",
    "Elastic.threshold": "Requests queued per instance of a role above which an idle instance of the other role "
    "switches over (prefill queue, or prompts waiting for decode memory).",
    "Elastic.switch_s": "Seconds a switch takes, during which the instance serves nothing.",
    "Elastic.check_s": "How often, in seconds, the backlogs are compared with the threshold.",
    "Elastic.drain": "When the backlog stays over the threshold for the sustain time and no instance of the other "
    "role is idle, drain the least loaded one (no new work; it finishes what it holds), then switch it.",
    "Elastic.sustain_s": "Seconds a backlog must stay over the threshold before an instance is drained to switch.",
    "Elastic.restore": "Send moved instances back to their own pool's role once both backlogs have stayed at most "
    "a quarter of the threshold for the restore time, one at a time.",
    "Elastic.restore_after_s": "Seconds both backlogs must stay low before a moved instance returns home (the "
    "hysteresis that keeps a fluctuating load from switching back and forth).",
    "Fault.kind": "instances: some of the pool's instances are lost; link: a prefill pool's KV link runs slower "
    "or goes down while its instances keep running.",
    "Fault.pool": "The pool the fault strikes: its instances, or (a link fault) its KV link to the decode pools.",
    "Fault.link_factor": "Share of the KV link's bandwidth left while the fault lasts, 0 to 1: 0.1 runs transfers "
    "ten times slower; 0 takes the link down.",
    "Fault.link_down": "With the link down (factor 0): queue parks hand-offs until it is back; reject fails them "
    "(reason link_down). A link down for good fails them either way.",
    "Edge.power_budget_w": "The edge site's power budget in W: a request is offloaded when starting it would take "
    "the site's draw (idle power of every edge chip plus busy power of the instances holding work) over it.",
    "Edge.max_prompt_tokens": "Longest prompt served at the edge; longer ones go to the data centre.",
    "Edge.max_output_tokens": "Longest answer (the request's max_tokens cap) served at the edge; longer ones go to "
    "the data centre.",
    "Edge.offload_latency_ms": "WAN round trip from the edge site to the data centre, paid by every offloaded "
    "request.",
    "Edge.offload_queue": "Requests waiting per edge instance beyond which a candidate is offloaded instead.",
    "Edge.backhaul_mbps": "Backhaul bandwidth from the edge to the data centre that an offloaded prompt crosses. "
    "Empty: no limit.",
    "Network.user_rtt_ms": "Round trip from the device to its next hop (the gateway, else the first serving site), "
    "added to TTFT and E2E, not to TPOT.",
    "Network.uplink_mbps": "The users' uplink that each prompt crosses. Empty: no limit.",
    "Network.bytes_per_token": "Bytes a prompt token takes on the wire (text is about 4 bytes a token).",
    "Gateway.rtt_ms": "Round trip from the gateway to the first serving site.",
    "Gateway.batch_window_ms": "A batch leaves the gateway this long after its first request arrives...",
    "Gateway.batch_max": "...or as soon as it holds this many requests.",
    "Gateway.bandwidth_mbps": "The gateway's link to the serving site, which a batch's prompts cross together. "
    "Empty: no limit.",
    "ControlPlane.decision_ms": "The router's and scheduler's decision for one request (parsing, scoring instances, "
    "a cache match), paid before it is queued.",
    "ControlPlane.routers": "Workers making those decisions, one at a time each (a request waits for a free one). "
    "Empty: no contention.",
    "ControlPlane.kv_index_lookup_us": "Lookup of one prompt block in a pooled KV store's index, paid per full block "
    "with that tier on.",
    "KvLink.shared_gb_s": "A fabric every KV hand-off also crosses, one at a time (they contend for it), in GB/s. "
    "Empty: none; each instance pair has only its own link.",
    "Speculative.method": "mtp: a multi-token-prediction head (1 token drafted, 85% accepted by default); draft: a "
    "small draft model of the same family (4 tokens, 70%).",
    "Speculative.acceptance": "Probability each drafted token is accepted, 0 to 1. Empty: the method's default.",
    "Speculative.draft_model": "The draft model's catalog id, needed for method draft.",
}
