"""KTransformers CPU expert paths: what one release and kernel method (``--kt-method``) does with the
routed experts on the host (data/kt_cpu_paths.yaml).

A path says whether the CPU's expert work overlaps the GPU's (Expert Deferral), how the experts are
laid out over a multi-socket host's NUMA nodes, the share of local DRAM bandwidth its decode kernel
streams experts at, what handing one MoE layer's work to the CPU and back adds to a step, and its
measured expert throughput per socket as a function of the tokens each expert gets in a step (the
kernels are compute-starved at a few tokens per expert and saturate at hundreds).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.provenance import Bits, FlopPerS, Ratio, Seconds
from inferplan.catalog.schema import SLUG, Frozen

# replicate: one copy of the experts per NUMA node, each socket's threads read their own (v0.2 USE_NUMA=1);
# shard: each node holds a slice and computes it (kt-kernel's NUMA-aware tensor parallelism);
# single-copy: one copy where the loader placed it, read by every socket's threads
NumaLayout = Literal["replicate", "shard", "single-copy"]


class KtRatePoint(Frozen):
    """The expert kernel's throughput on one socket at this many tokens per expert."""

    tokens_per_expert: float = Field(gt=0)
    flop_per_s: FlopPerS


class KtExpertFormat(Frozen):
    """How one ``--kt-method`` holds the CPU's routed experts in host RAM, and the GPU weight formats
    (``quantization`` ids) it runs beside."""

    kt_method: str
    # converted (AMXINT4 / AMXINT8): kt-kernel's convert_cpu_weights.py writes each expert matrix at
    # weight_bits per weight plus one scale per output row; None: the CPU reads the checkpoint's own
    # experts, at the deployment's weight format
    weight_bits: Bits | None = None
    scale_bits_per_output_row: Bits | None = None
    gpu_formats: tuple[str, ...] = Field(min_length=1)
    # deployment: the GPU part is served in the deployment's weight format; original-checkpoint: the files the
    # CPU reads are not what SGLang serves (LLAMAFILE's GGUF), so the GPU part (attention, shared experts,
    # dense layers) is served from the model's original checkpoint, in its format
    gpu_weights: Literal["deployment", "original-checkpoint"] = "deployment"
    source: str
    note: str | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> "KtExpertFormat":
        if (self.weight_bits is None) != (self.scale_bits_per_output_row is None):
            raise ValueError("weight_bits and scale_bits_per_output_row go together")
        return self


class KtCpuPath(Frozen):
    id: str = Field(pattern=SLUG)
    name: str
    release: str = Field(min_length=1)  # as Deployment.kt_release names it
    kt_methods: tuple[str, ...] = Field(min_length=1)  # --kt-method values (v0.2/v0.3: the optimize-rule backend)
    default_method: bool = False  # the method the release uses when none is named
    expert_deferral: bool  # the CPU's expert work runs alongside the GPU's step
    expert_deferral_source: str
    numa: NumaLayout
    numa_source: str
    numa_note: str
    # share of the local DRAM peak the decode kernel streams experts at (None: offload.yaml's host-memory-read-efficiency)
    decode_read_efficiency: Ratio | None = None
    prefill_flop_per_s: tuple[KtRatePoint, ...] = Field(min_length=1)  # one socket, ascending tokens per expert
    prefill_rate_scale: Ratio | None = None  # the curve's figure to this method's (e.g. BF16 -> INT8)
    # time each MoE layer's GPU-to-CPU-and-back hand-over adds to a step when the two sides take turns
    # (hidden state copied to host, the CPU task submitted and waited for, the output copied back); None: none
    layer_handover_s: Seconds | None = None
    # per method, what the experts take in host RAM (none listed: the deployment's weight format)
    expert_formats: tuple[KtExpertFormat, ...] = ()

    @model_validator(mode="after")
    def _ascending(self) -> "KtCpuPath":
        xs = [p.tokens_per_expert for p in self.prefill_flop_per_s]
        if xs != sorted(set(xs)):
            raise ValueError("prefill_flop_per_s: tokens_per_expert must be strictly ascending")
        if any(f.kt_method not in self.kt_methods for f in self.expert_formats):
            raise ValueError("expert_formats: every kt_method must be one of the path's kt_methods")
        return self
