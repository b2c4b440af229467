"""Hardware and model specifications: the data the cost model reads.

A `HardwareSpec` describes one accelerator chip (peak dense FLOP/s per precision, memory
capacity and bandwidth, links, power, price) plus one or more calibration profiles: the
achievable fractions of peak compute and bandwidth and the fixed per-iteration overhead that
a particular serving stack reaches on that chip. Every number carries a source (a citation, or
``assumption: <why>`` where no public figure exists); validation refuses an entry that does not.

A `ModelSpec` (`engine.catalog.model_spec`) describes a transformer's architecture (layers,
widths, heads, MoE and MLA fields), its parameter counts derived from it.

Both are frozen pydantic models: hashable, comparable, serialisable; unknown keys are errors.
A custom entry can arrive in a share link, so every number is finite and bounded to a physically
plausible range (docs/hardware.md, "Custom entries", lists the ranges): no combination of valid
entries can make the cost model divide by zero or return an absurd time.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
import json
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from engine.catalog.peaks import check_peaks
from engine.core.errors import ScenarioError
from engine.core.no_bool import boolean_in, field_keys
from engine.core.text import Line

Precision = Literal["bf16", "fp8", "fp4", "int4"]
"""Weight precisions a scenario may pick."""
KvPrecision = Literal["bf16", "fp8"]
"""KV-cache precisions a scenario may pick."""
ComputePrecision = Literal["bf16", "fp8", "fp4", "int8"]
"""Precisions a chip may list a dense peak for."""

BYTES_PER_ELEMENT: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5, "int4": 0.5}
"""Storage bytes of one weight or KV element by precision (scales of block formats ignored)."""

GIB = float(1 << 30)
"""Bytes in one GiB. Vendors state HBM and GDDR capacities in binary units under the name GB: an
"80 GB" H100 holds 80 GiB (nvidia-smi: 81,559 MiB), so `memory_gb` counts GiB."""

OVERHEAD_LAYERS = 80
"""Layers of the model a profile's `overhead_ms` is stated for. The fixed part of an iteration is
mostly per layer (kernel launches, norms, rotary embeddings, activations and small reductions,
each a few microseconds), so a 32-layer model pays 0.4 of it and a 126-layer one 1.6 times: an
overhead fitted on Llama-3.1-405B then carries to Llama-3.1-70B and 8B (docs/calibration.md)."""

EAGER_LAYER_MS = 0.075
"""Extra fixed time per layer of an iteration when a stack runs without CUDA/HIP graphs (vLLM's
`--enforce-eager`): each of a layer's dozen-odd kernels is launched from Python. Assumption,
checked on the only rows that state it (dstack's eight MI300X batches): a scan from 0 to 1 ms
fits them best at 0.05 to 0.1 ms (docs/calibration.md, "Eager mode")."""

ACTIVATION_ELEMENT_BYTES = 2.0
"""Bytes of one activation element held during a forward pass (bf16)."""

ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"

HF_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9_.-]{1,96}")
"""A Hugging Face repository id, ``owner/name``: the Hub takes ASCII letters, digits, ``_``, ``.``
and ``-``, at most 96 of them on each side. The class is spelt out, not ``\\w``: in a pydantic
``pattern`` that is Unicode, and pydantic-core built a 50 ms automaton for it at every import."""


def _hf_repository(value: str) -> str:
    if not HF_ID_PATTERN.fullmatch(value):
        raise ValueError(
            "must be a Hugging Face repository id, owner/name, in ASCII letters, digits, '_', '.' "
            "and '-' (up to 96 on each side, the owner starting with a letter or digit)"
        )
    return value


HfId = Annotated[str, AfterValidator(_hf_repository)]
"""A checkpoint's Hugging Face repository id (`HF_ID_PATTERN`), refused in words when malformed."""

SOURCED_FIELDS = (
    "tflops",
    "memory_gb",
    "memory_tb_s",
    "scale_up_gb_s",
    "scale_out_gb_s",
    "tdp_w",
    "idle_w",
    "usd_per_hour",
)
"""Hardware fields whose value must carry a source (or ``assumption: <why>``)."""
OPTIONAL_SOURCED_FIELDS = ("capex_usd", "server_capex_usd")
"""Hardware fields that may be absent, and carry a source when present (ownership prices)."""
TIER_SOURCED_FIELDS = ("sram_gb", "sram_tb_s", "ddr_gb", "ddr_tb_s", "reconfig_s", "reconfig_j", "clock_ghz")
"""Fields of reconfigurable and dataflow chips that may be absent, and carry a source when present."""
TIER_PAIRS = (("sram_gb", "sram_tb_s"), ("ddr_gb", "ddr_tb_s"))
"""A memory tier is stated by its capacity and its bandwidth together, or not at all."""

MemoryType = Literal["HBM", "SRAM", "GDDR", "LPDDR", "DDR"]
"""What a chip's main memory (`memory_gb`, `memory_tb_s`) is: HBM on most accelerators, on-chip
SRAM where that is all there is (Groq's LPU), GDDR on PCIe cards (L4, L40S), LPDDR on edge parts.
A label for the catalog: the model reads the numbers, whatever the memory is."""
ChipClass = Literal["GPU", "ASIC", "NPU", "TPU", "SoC", "CGRA", "FPGA", "Dataflow"]
"""Kinds of chip: CGRA a coarse-grained reconfigurable array (SambaNova's RDU), FPGA a fine-grained
reconfigurable part (AMD Alveo, Versal), Dataflow a statically scheduled SRAM-centric part (Groq's
LPU, Cerebras' WSE); docs/hardware.md, "Reconfigurable and dataflow chips"."""

MIN_LINK_GB_S = 0.1
"""Slowest scale-up or scale-out link a chip may declare; 0 means it has no such link."""

Fraction = Annotated[float, Field(ge=0.01, le=1)]
Text = Annotated[str, Field(max_length=2000)]
Key = Annotated[str, Field(min_length=1, max_length=64)]
BandFigure = Literal["throughput", "ttft", "tpot"]
"""Kinds of figure a fitted profile's band may cover."""
FittedStack = Literal["vllm", "vllm-v0", "sglang", "trtllm", "vllm-ascend", "mindie"]
"""Serving stacks a profile may say it was fitted under (`engine.costmodel.SERVING_STACKS`, which the
catalog sits below; a test keeps the two equal)."""
BandRatio = Annotated[float, Field(ge=0.01, le=100)]
"""One side of a band: a ratio predicted / measured."""


class Frozen(BaseModel):
    """Base of every settings value: immutable, hashable, strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _no_booleans(cls, data: Any) -> Any:  # pydantic would read true as 1 (`engine.core.no_bool`)
        if (said := boolean_in(field_keys(cls, lambda: cls.model_fields), data)) is not None:
            raise ValueError(said)
        return data


class Spec(Frozen):
    """Base of catalog entries: a settings value whose numbers must all be finite (no NaN, no inf)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)


class CalibrationProfile(Spec):
    """Achievable fractions of peak for one chip under one serving stack, with their source."""

    eta_compute: Fraction = Field(
        description="achieved / BF16 dense peak FLOP/s, end to end (FP8 and FP4 shorten only the matmuls)"
    )
    eta_bandwidth: Fraction = Field(description="achieved / peak HBM bytes/s in streaming reads")
    overhead_ms: Annotated[float, Field(ge=0, le=1000)] = Field(
        description="fixed overhead per iteration of an 80-layer model (launches and small per-layer "
        "kernels); it scales with the model's layers (`OVERHEAD_LAYERS`)"
    )
    source: str = Field(min_length=3, max_length=2000)
    eta_experts: Fraction | None = Field(
        default=None,
        description="the rate a MoE model's routed-expert kernels reach, as a fraction of the rates the "
        "two fractions above give the dense layers (1: as fast as dense). Unset: the factor fitted to "
        "the MoE reference rows (presets/calibration.toml, docs/calibration.md)",
    )
    eta_experts_compute: Fraction | None = Field(
        default=None,
        description="the rate a MoE model's routed-expert kernels reach in their math, as a fraction of the "
        "dense layers' compute rate, where it differs from their weight streaming's (`eta_experts`): "
        "grouped GEMMs of block-scaled FP8 experts reach less of the tensor cores than a dense GEMM, "
        "while a decode step's experts stream their weights near the dense layers' rate. Unset: "
        "`eta_experts` for both",
    )
    moe_layer_ms: Annotated[float, Field(ge=0, le=100)] | None = Field(
        default=None,
        description="fixed milliseconds each MoE layer adds to an iteration of a MoE model (routing, "
        "token permutation and the grouped kernels' launches, whatever the batch). Unset: the value "
        "fitted to the stack's MoE reference rows (presets/calibration.toml, docs/calibration.md)",
    )
    span_step_ms: Annotated[float, Field(ge=0, le=1000)] | None = Field(
        default=None,
        description="fixed ms per iteration of a MoE model whose TP group spans machines (multi-node executor)",
    )
    expert_tile_tokens: Annotated[float, Field(ge=0, le=4096)] | None = Field(
        default=None,
        description="tokens of work each routed expert a MoE layer touches costs beyond its own tokens: a "
        "grouped GEMM runs an expert's tokens in tiles, so with t tokens per expert it does t + this "
        "much work (its efficiency t / (t + this) falls with few tokens per expert). Unset: the value "
        "fitted to the MoE reference rows (presets/calibration.toml, docs/calibration.md)",
    )
    stack: FittedStack | None = Field(
        default=None,
        description="the serving stack a fit of the user's own benchmark ran under (`engine.observe`): with a "
        'source starting "user\'s own", the profile counts as calibrated under this stack only',
    )
    band: Annotated[dict[BandFigure, tuple[BandRatio, BandRatio]], Field(max_length=3)] | None = Field(
        default=None,
        description="per figure, the 16th and 84th percentile ratio predicted / measured of the fit's held-out "
        "points (`engine.observe.held_out_bands`); unset: the fit had no held-out error (one file); "
        "empty: too few held-out points for a band",
    )

    def __hash__(self) -> int:
        # a settings value is hashable (`band` is a dict); equal profiles dump the same sorted JSON
        return hash(json.dumps(self.model_dump(mode="json"), sort_keys=True))

    @model_validator(mode="after")
    def _check_band(self) -> "CalibrationProfile":
        for figure, (low, high) in (self.band or {}).items():
            if low > high:
                raise ValueError(f"band.{figure}: its low ratio {low:g} exceeds its high ratio {high:g}")
        return self


class HardwareSpec(Spec):
    """One accelerator chip: peak numbers, links, power, price and calibration profiles."""

    id: str = Field(pattern=ID_PATTERN)
    name: Line = Field(min_length=1, max_length=120)
    vendor: Line = Field(min_length=1, max_length=60)
    kind: ChipClass = Field(alias="class")
    illustrative: bool = False
    tflops: dict[ComputePrecision, Annotated[float, Field(ge=0.01, le=1_000_000)]] = Field(
        description="dense peak TFLOP/s per precision"
    )
    memory_gb: Annotated[float, Field(ge=0.01, le=100_000)]
    """Memory per chip as the vendor states it; read as GiB (`GIB`), which is what "GB" of HBM means."""
    memory_tb_s: Annotated[float, Field(ge=0.001, le=100_000)]
    memory_type: MemoryType = "HBM"
    """What the main memory is (its `memory_gb` source says so); a label, the numbers decide."""
    scale_up_gb_s: Annotated[float, Field(ge=0, le=100_000)] = Field(
        description="bidirectional scale-up (NVLink-class) bandwidth per chip; 0: none (PCIe is used)"
    )
    scale_out_gb_s: Annotated[float, Field(ge=0, le=10_000)] = Field(
        description="scale-out NIC bandwidth per chip, one direction; 0: none"
    )
    scale_up_domain: Annotated[int, Field(ge=1, le=100_000)] = Field(
        default=8, description="chips one scale-up fabric joins (8 in an HGX node, 72 in an NVL72 rack)"
    )
    pcie_gb_s: Annotated[float, Field(ge=MIN_LINK_GB_S, le=10_000)] = Field(
        default=64.0, description="host link bandwidth per chip, one direction"
    )
    allreduce_latency_us: Annotated[float, Field(ge=0, le=10_000)] = 10.0
    tdp_w: Annotated[float, Field(ge=0.1, le=100_000)]
    idle_w: Annotated[float, Field(ge=0, le=100_000)]
    usd_per_hour: Annotated[float, Field(ge=0, le=10_000)]
    capex_usd: Annotated[float, Field(gt=0, le=10_000_000)] | None = Field(
        default=None, description="purchase price of one chip (ownership cost); None: not known"
    )
    server_capex_usd: Annotated[float, Field(ge=0, le=10_000_000)] | None = Field(
        default=None, description="the chip's share of its server's price (host, memory, NICs, chassis)"
    )
    sram_gb: Annotated[float, Field(ge=0.001, le=100_000)] | None = Field(
        default=None,
        description="on-chip SRAM per chip that holds weights and KV as a memory tier read before HBM (GiB, "
        "as `memory_gb`); None: no such tier (the chip's caches are not a tier)",
    )
    sram_tb_s: Annotated[float, Field(ge=0.001, le=1_000_000)] | None = Field(
        default=None, description="bandwidth of that SRAM tier per chip; at least `memory_tb_s`"
    )
    ddr_gb: Annotated[float, Field(ge=0.01, le=100_000)] | None = Field(
        default=None, description="DDR per chip read after HBM (SambaNova's third tier, GiB); None: none"
    )
    ddr_tb_s: Annotated[float, Field(ge=0.001, le=100_000)] | None = Field(
        default=None, description="bandwidth of that DDR tier per chip; at most `memory_tb_s`"
    )
    reconfig_s: Annotated[float, Field(ge=0, le=3600)] | None = Field(
        default=None,
        description="seconds to reconfigure the chip for another phase or model (a bitstream or a dataflow "
        "graph loaded); None: none beyond the serving stack's own start-up",
    )
    reconfig_j: Annotated[float, Field(ge=0, le=10_000_000)] | None = Field(
        default=None, description="energy of one reconfiguration per chip (J); None: none stated"
    )
    clock_ghz: Annotated[float, Field(ge=0.01, le=10)] | None = Field(
        default=None, description="the clock the peaks are stated at (for the catalog; peaks already hold it)"
    )
    sources: Annotated[dict[Key, Text], Field(max_length=32)] = Field(
        description="a table of where each number comes from, field = 'its source' or 'assumption: <why>' "
        "(tflops, memory_gb, memory_tb_s, scale_up_gb_s, scale_out_gb_s, tdp_w, idle_w and usd_per_hour each need one)"
    )
    profiles: Annotated[dict[Key, CalibrationProfile], Field(max_length=16)] = Field(
        description="calibration profiles by name, at least the default_profile's ('default'): a table "
        "profiles.default with eta_compute and eta_bandwidth (0 to 1, the share of peak compute and "
        "memory bandwidth reached), overhead_ms (per iteration) and source"
    )
    default_profile: Key = "default"
    notes: str = Field(default="", max_length=4000)

    def __hash__(self) -> int:
        return hash(self.model_dump_json(by_alias=True))

    @model_validator(mode="after")
    def _check(self) -> "HardwareSpec":
        if "bf16" not in self.tflops and "fp8" not in self.tflops:
            raise ValueError("tflops: needs at least a bf16 or fp8 dense peak")
        check_peaks(self.tflops)  # FP8 100 beside BF16 989 ran FP8 weights slower, unsaid (a review)
        missing = [f for f in SOURCED_FIELDS if not self.sources.get(f, "").strip()]
        if missing:
            raise ValueError(
                "sources: every number needs a source or 'assumption: <why>'; missing for "
                + ", ".join(missing)
            )
        unsourced = [
            f
            for f in OPTIONAL_SOURCED_FIELDS
            if getattr(self, f) is not None and not self.sources.get(f, "").strip()
        ]
        if unsourced:
            raise ValueError(
                "sources: a price needs a source or 'assumption: <why>'; missing for " + ", ".join(unsourced)
            )
        self._check_tiers()
        if self.idle_w > self.tdp_w:
            raise ValueError(f"idle_w: {self.idle_w} exceeds tdp_w {self.tdp_w}")
        for link in ("scale_up_gb_s", "scale_out_gb_s"):
            value = getattr(self, link)
            if 0 < value < MIN_LINK_GB_S:
                raise ValueError(
                    f"{link}: must be 0 (no such link) or at least {MIN_LINK_GB_S} GB/s (got {value})"
                )
        if not self.profiles:
            raise ValueError("profiles: at least one calibration profile is required")
        if self.default_profile not in self.profiles:
            raise ValueError(
                f"default_profile: {self.default_profile!r} is not one of {sorted(self.profiles)}"
            )
        return self

    def _check_tiers(self) -> None:
        for size, speed in TIER_PAIRS:
            if (getattr(self, size) is None) != (getattr(self, speed) is None):
                raise ValueError(f"{size}, {speed}: a memory tier needs both its capacity and its bandwidth")
        unsourced = [
            f
            for f in TIER_SOURCED_FIELDS
            if getattr(self, f) is not None and not self.sources.get(f, "").strip()
        ]
        if unsourced:
            raise ValueError(
                "sources: every number needs a source or 'assumption: <why>'; missing for "
                + ", ".join(unsourced)
            )
        if self.sram_tb_s is not None and self.sram_tb_s < self.memory_tb_s:
            raise ValueError(
                f"sram_tb_s: the SRAM tier is read before HBM, so it must be at least memory_tb_s "
                f"{self.memory_tb_s:g} (got {self.sram_tb_s:g})"
            )
        if self.ddr_tb_s is not None and self.ddr_tb_s > self.memory_tb_s:
            raise ValueError(
                f"ddr_tb_s: the DDR tier is read after HBM, so it must be at most memory_tb_s "
                f"{self.memory_tb_s:g} (got {self.ddr_tb_s:g})"
            )

    def memory_tiers(self) -> list[tuple[str, float, float]]:
        """(name, GiB, TB/s) of each memory tier per chip in the order weights and KV fill them:
        SRAM (if stated), the main memory (`memory_gb`, HBM on most chips), DDR (if stated)."""
        tiers = [("hbm", self.memory_gb, self.memory_tb_s)]
        if self.sram_gb is not None and self.sram_tb_s is not None:
            tiers.insert(0, ("sram", self.sram_gb, self.sram_tb_s))
        if self.ddr_gb is not None and self.ddr_tb_s is not None:
            tiers.append(("ddr", self.ddr_gb, self.ddr_tb_s))
        return tiers

    @property
    def tiered(self) -> bool:
        """True when the chip states an SRAM or DDR tier beside its main memory."""
        return self.sram_gb is not None or self.ddr_gb is not None

    @property
    def total_memory_gb(self) -> float:
        """Memory of every tier per chip (GiB): what the capacity checks count."""
        return sum(gb for _, gb, _ in self.memory_tiers()) if self.tiered else self.memory_gb

    @property
    def peak_memory_tb_s(self) -> float:
        """The fastest tier's bandwidth per chip: the peak a bandwidth utilisation is measured against."""
        return self.sram_tb_s if self.sram_tb_s is not None else self.memory_tb_s

    def profile(self, name: str | None = None) -> CalibrationProfile:
        """The named calibration profile, or the default one."""
        key = name or self.default_profile
        if key not in self.profiles:
            raise ScenarioError(
                f"profile {key!r} is not defined for {self.id}; choose one of {sorted(self.profiles)}"
            )
        return self.profiles[key]

    def compute_precision(self, weights: Precision) -> ComputePrecision:
        """The tensor-core precision matmuls run in for a weight precision on this chip.

        fp8 and fp4 weights run natively where the chip has that path and fall back to the next
        wider one otherwise; int4 weights are weight-only quantisation (W4A16): bf16 compute.
        """
        order: list[ComputePrecision]
        if weights == "fp4":
            order = ["fp4", "fp8", "bf16"]
        elif weights == "fp8":
            order = ["fp8", "bf16"]
        else:
            order = ["bf16", "fp8"]
        for p in order:
            if p in self.tflops:
                return p
        return next(iter(self.tflops))

    def peak_flops(self, weights: Precision) -> float:
        """Dense peak FLOP/s of one chip for matmuls on weights of this precision."""
        return self.tflops[self.compute_precision(weights)] * 1e12
