"""Groups of chips wider than one machine: when a collective crosses the network, and its latency.

A tensor- or expert-parallel group larger than its chip's scale-up domain (a TP16 over two 8-GPU
machines) sends its collectives over the NICs: `spans_machines` says when (`machines`: over how many),
`SCALE_OUT_LATENCY_US` what one crossing waits, `scale_out_hops` how many crossings an all-reduce over
more machines waits on (`perf.Instance.link_latency_s` puts them together).
"""

from __future__ import annotations

from engine.catalog.specs import HardwareSpec

SCALE_OUT_LATENCY_US = 50.0
"""Least latency (µs) of one collective whose chips span more than one scale-up domain (a TP group
over two 8-GPU machines): NCCL's small-message all-reduce between nodes crosses the NICs and the
switch. Assumption, five times the in-node `allreduce_latency_us`, checked against published
figures for 16 ranks on two machines: 25-33 µs at 16 B-16 KB over eight 400 Gb/s InfiniBand NICs
a machine (NVIDIA/nccl-tests issue 309, H100, NCCL 2.26.2), 30-36 µs in NCCL's own tuning model
(src/graph/tuning.cc), 123-139 µs without RDMA (GCP A3 Mega, GPUDirect-TCPXO). The measured 33 µs
scored worse held out, so the figure stays (docs/calibration.md, "The cost of a TP group over
machines, against published measurements"); over more machines, an all-reduce's is this times
`scale_out_hops`."""


def spans_machines(hw: HardwareSpec, chips: int) -> bool:
    """True when a group of `chips` chips (a tensor- or expert-parallel group) is larger than the
    chip's scale-up domain (a TP16 over two 8-GPU machines): its collectives cross the NICs and its
    stack runs a multi-node executor. The one rule for an instance, its all-to-all (`step`) and a
    measured point (`moe_fit.spans_machines`)."""
    return chips > hw.scale_up_domain


def machines(hw: HardwareSpec, chips: int) -> int:
    """The machines (scale-up domains) a group of `chips` chips fills."""
    return -(-chips // max(hw.scale_up_domain, 1))


def scale_out_hops(hw: HardwareSpec, chips: int) -> int:
    """The network crossings an all-reduce over `chips` chips waits on, in units of two machines'
    (`SCALE_OUT_LATENCY_US`): the depth of a binary tree over the machines, log2 of their count rounded
    down, as NCCL's tuning model counts a tree all-reduce's network latency (2 x log2i(nNodes) x the
    inter-node latency, src/graph/tuning.cc): 1 for two or three machines, 3 for eight. A TP64 over
    eight machines read a collective as fast as a TP16 over two (a hardware strategist's review)."""
    return max(1, machines(hw, chips).bit_length() - 1)
