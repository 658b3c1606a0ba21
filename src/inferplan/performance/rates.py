"""Effective hardware rates for one deployment: which compute dtype really runs, how fast the
link is, and the calibrated efficiencies of the engine.

A quantization runs at its activation dtype only where the accelerator supports its native
format (FP8 on Hopper, NVFP4/MXFP4 on Blackwell); otherwise it falls back to 16-bit math
(W4A16 on Hopper for NVFP4 checkpoints, seed 001); where that fallback is an emulation
(``Quantization.emulated_fallbacks``) the note says so, and ``work.py`` charges its dequantized copy.
GGUF and W4A16 formats always compute in 16 bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.catalog.engine_schema import CalibrationFamilyRule, EngineDefaults
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema import Accelerator, ComputeDtype
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.memory.hardware import Hardware

# a fitted per-request cost at pipeline stage boundaries, per engine (calibration.yaml; Rates.pipeline_hop_s_per_request)
PIPELINE_HOP_CONSTANT = "pipeline-hop-s-per-request-{}"
_DTYPE_KEYS = {"fp4": "fp4", "fp8": "fp8", "int8": "int8", "bf16": "bf16", "fp16": "fp16", "int4": "int4"}


@dataclass(frozen=True)
class Rates:
    """Per-GPU peak rates and the efficiencies the engine achieves on them."""

    compute_dtype: str
    peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    link_bytes_per_s: float  # scale-up link, one direction, per GPU
    link_latency_s: float  # per small all-reduce inside the scale-up domain, fixed part
    link_latency_per_step_s: float  # ... plus this per ring step, 2(n-1) of them over n GPUs (PCIe)
    domain_gpus: int  # GPUs the scale-up link joins in this deployment
    scale_out_bytes_per_s: float  # network beyond the domain, one direction, per GPU (0: not known)
    scale_out_latency_s: float  # per small all-reduce that crosses it, fixed part
    scale_out_latency_per_step_s: float  # ... plus this per ring step (PCIe between a server's cards)
    bandwidth_efficiency: float
    compute_efficiency: float
    step_overhead_s: float  # fixed per forward step (scheduling, sampling, launch)
    layer_overhead_s: float  # per decoder layer per step (kernel launches and small ops)
    moe_layer_overhead_s: float  # more per mixture-of-experts layer (routing, top-k, gather and combine)
    seq_overhead_s: float  # per running sequence per step (scheduling, input prep, sampling)
    notes: tuple[str, ...]
    unpack_flops_per_weight: float = 0.0  # ALU work per super-block (K-quant) weight read, FLOP-equivalents
    attention_dtype: str = ""  # the dtype QK^T and PV run in ("": the compute dtype)
    family: str = ""  # calibration family (calibration_family) the constants belong to
    attention_peak_flop_per_s: float = 0.0  # its peak (0: the compute dtype's)
    request_overhead_s: float = 0.0  # per request, before its first token (receiving, tokenising, scheduling)
    request_overhead_fitted: bool = False  # fitted on the family's own TTFT points (else the pooled value)
    # per request of a pipeline micro-batch at each stage boundary it crosses, per step: the engine's
    # host work between stages (0: the engine has no fitted figure; pipeline_hop_fitted says which)
    pipeline_hop_s_per_request: float = 0.0
    pipeline_hop_fitted: bool = False
    gemm_min_rows: float = 1.0  # rows a weight GEMM computes at the least (tensor-core tiles; 1: none padded)
    # the row blocks the kernel running the quantized weights picks from, when read apart from the
    # calibrated tile (Marlin's 8 and 16; empty: gemm_min_rows covers every weight GEMM)
    weight_gemm_row_blocks: tuple[float, ...] = ()
    overlap_exponent: float = math.inf  # power mean of a step's memory and compute time (phases.overlapped)
    hc_seam_s: float = 0.0  # per hyper-connection seam per step (mHC's small kernels; read, not fitted)

    @property
    def achievable_flop_per_s(self) -> float:
        return self.peak_flop_per_s * self.compute_efficiency

    @property
    def achievable_attention_flop_per_s(self) -> float:
        return (self.attention_peak_flop_per_s or self.peak_flop_per_s) * self.compute_efficiency

    @property
    def achievable_bytes_per_s(self) -> float:
        return self.bandwidth_bytes_per_s * self.bandwidth_efficiency


def compute_dtype(accel: Accelerator, quant: Quantization, engine: EngineDefaults,
                  release: str | None = None) -> tuple[str, str | None]:
    """The dtype the matrix maths runs in, and a note when it is a fallback (``release``: the engine's, None
    its current one; an emulated fallback is named as such; an engine whose maths runs in 16 bits whatever
    the format, engines.yaml ``priced_at_16_bit``, in 16 bits)."""
    if engine.priced_at_16_bit:
        dtype = _sixteen_bit(accel, "fp16")
        note = None if quant.native_format is None else f"{engine.id} dequantizes {quant.id} weights: math runs in {dtype}"
        return dtype, note
    wanted = quant.activation_dtype
    if quant.native_format is None:
        return _sixteen_bit(accel, wanted), None
    if quant.native_on(accel):
        return wanted, None
    fallback = _sixteen_bit(accel, quant.fallback_compute)
    emulated = quant.emulation(accel, engine.id, release)
    if emulated is not None:
        return fallback, (f"{accel.name} {_lacks(accel, quant)}: {emulated.note}, so every forward dequantizes the "
                          f"weights into a {emulated.materialized_format} copy, written and read again, and the math "
                          f"runs in {fallback} (emulated)")
    experts = quant.expert_emulation(accel, engine.id, release)
    them = f"; routed experts, where the model has them, emulated in {experts.materialized_format}" if experts else ""
    return fallback, (f"{accel.name} {_lacks(accel, quant)}: math runs in {fallback} (W{quant.weight_dtype[-1]}A16-style "
                      f"fallback{them})")


def _lacks(accel: Accelerator, quant: Quantization) -> str:
    if quant.native_format in accel.native_formats:
        stacks = "/".join(s.value for s in quant.native_software)
        return f"has {quant.native_format} but no native {quant.id} kernels on {accel.software.value} (only on {stacks})"
    return f"lacks native {quant.native_format}"


def attention_dtype(accel: Accelerator, kv_dtype: str | None, engine: EngineDefaults) -> str:
    """The dtype attention's matrix products (QK^T, PV) run in: the KV cache's, 16 bits unless the
    cache is FP8 on an accelerator with native FP8 (FP8 attention kernels) and the engine's maths is not
    16-bit throughout (``priced_at_16_bit``). Never the weights' 4-bit or 8-bit integer format: a
    W4/FP4/INT8 checkpoint still attends in 16 bits."""
    if not engine.priced_at_16_bit and kv_dtype == "fp8" and "fp8" in accel.native_formats:
        return "fp8"
    return _sixteen_bit(accel, "bf16")


def _sixteen_bit(accel: Accelerator, wanted: str) -> str:
    if wanted in ("bf16", "fp16"):
        return "bf16" if ComputeDtype.BF16 in accel.peak_flop_per_s else "fp16"
    return wanted


def peak_flops(accel: Accelerator, dtype: str) -> float:
    for key in (dtype, "bf16", "fp16"):
        q = accel.peak_flop_per_s.get(ComputeDtype(_DTYPE_KEYS.get(key, "bf16")))
        if q is not None:
            return q.value
    raise KeyError(f"{accel.id} has no compute rate")


def _covers(rule: CalibrationFamilyRule, backend: str | None, accel: Accelerator) -> bool:
    return ((not rule.backends or backend in rule.backends)
            and (not rule.software or accel.software in rule.software)
            and (not rule.architectures or accel.architecture in rule.architectures)
            and (not rule.memory_type_prefixes or accel.memory_type.upper().startswith(rule.memory_type_prefixes))
            and accel.form_factor not in rule.except_form_factors)


def calibration_family(engine: EngineDefaults, backend: str | None, accel: Accelerator) -> str:
    """The calibration family of ``engine`` on ``accel``: the first of the engine's
    ``calibration_families`` (engines.yaml, each with the measurements that set it apart) covering
    the hardware, else the engine by its back end (``backends``; defaulted from the accelerator's software
    stack when not given) or by software stack (CUDA and Metal: the engine's id; ROCm: -rocm)."""
    default = engine.default_backend(accel.software)  # None: an engine without selectable back ends
    backend = (backend or default) if default else None
    rule = next((r for r in engine.calibration_families if _covers(r, backend, accel)), None)
    if rule is not None:
        return rule.family
    if backend:
        return f"{engine.id}-{backend}"
    return engine.id if accel.software.value in ("cuda", "metal") else f"{engine.id}-{accel.software.value}"


def check_backend(engine: EngineDefaults, backend: str | None, accel: Accelerator,
                  with_backends: tuple[EngineDefaults, ...]) -> None:
    """A back end is asked of an engine with selectable back ends (``with_backends``: the catalogue's engines
    that have them), and it must run on the accelerator's software stack (engines.yaml ``backends``)."""
    if backend is None:
        return
    if not engine.backends:
        having = f"only {' and '.join(e.short_name for e in with_backends)} has" if with_backends else "none of the catalogue's engines has"
        raise InvalidScenarioError(f"{having} selectable back ends (asked "
                                   f"for {backend}); {engine.id} runs on {accel.name}'s own stack "
                                   f"({accel.software.value})", field="backend", names=("engine",),
                                   allowed=", or ".join(("leave it out", *(f"engine {e.id}" for e in with_backends))))
    usable = engine.backends_on(accel.software)
    if backend not in usable:
        why = (f"{engine.short_name}'s {backend} back end does not run on {accel.name} ({accel.software.value})"
               if backend in {b.id for b in engine.backends} else f"{engine.short_name} has no {backend} back end")
        raise InvalidScenarioError(why, field="backend",
                                   allowed=" | ".join(usable) or f"none: {engine.id} has no back end for this accelerator")


def link_latency(catalog: Catalog, link: str) -> tuple[float, float]:
    """(fixed latency, latency per ring step) of a small all-reduce over a scale-up ``link``:
    NVLink / Infinity Fabric a fixed few microseconds (custom one-shot kernels); PCIe per step of
    NCCL's ring, so 8 GPUs pay more than 2; a NIC used as the scale-up link (ConnectX between two
    DGX Sparks) the scale-out latency; other fabrics (Gaudi's RoCE ports, NeuronLink, UALink), for
    which no measurement was found, an assumed figure."""
    if link.startswith(("nvlink", "infinity")):
        return catalog.constant("allreduce-latency-s-nvlink"), 0.0
    if link.startswith("pcie") or link == "none":
        return 0.0, catalog.constant("allreduce-latency-s-pcie-per-step")
    if link.startswith("connectx"):
        return catalog.constant("allreduce-latency-s-scale-out"), 0.0
    return catalog.constant("allreduce-latency-s-other-fabric"), 0.0


def overlap_exponent(catalog: Catalog) -> float:
    """The order of the power mean a step's memory and compute time combine by (``phases.overlapped``):
    at least 1, since below it a step would take longer than its memory and compute time together."""
    p = catalog.constant("roofline-overlap-exponent")
    if not p >= 1.0:
        raise CatalogError(f"the order of the power mean is {p}", field="calibration.yaml roofline-overlap-exponent",
                           allowed="1 (memory and compute time summed) or more (a large number: about the larger)")
    return p


TILED_STACKS = ("cuda", "rocm")  # where vLLM's and SGLang's GEMMs are their own tensor-core kernels


def pads_gemm_rows(catalog: Catalog, engine: str, accel: Accelerator) -> bool:
    """Whether ``engine``'s small-batch weight GEMMs on ``accel`` run tensor-core tiles (engines.yaml
    ``pads_gemm_rows``, on CUDA or ROCm: vLLM on Apple GPUs runs MLX's vector kernels, on Gaudi and
    Neuron the vendors' own)."""
    return bool(catalog.engine(engine).pads_gemm_rows) and accel.software.value in TILED_STACKS


def gemm_min_rows(catalog: Catalog, engine: str, accel: Accelerator) -> float:
    """Rows a small-batch weight GEMM of ``engine`` on ``accel`` computes at the least: the calibrated
    tile (``gemm-min-rows``) where its kernels pad (``pads_gemm_rows``), else 1 (vector kernels
    compute only the rows there are)."""
    if not pads_gemm_rows(catalog, engine, accel):
        return 1.0
    rows = catalog.constant("gemm-min-rows")
    if not rows >= 1.0:
        raise CatalogError(f"the smallest GEMM tile is {rows} rows", field="calibration.yaml gemm-min-rows",
                           allowed="1 (no padding) or more rows")
    return rows


def weight_gemm_row_blocks(catalog: Catalog, engine: str, accel: Accelerator, quant: Quantization,
                           dtype: str) -> tuple[float, ...]:
    """The row blocks the kernel ``engine`` runs ``quant``'s weights with picks from, when it is a
    weight-only kernel read apart from the calibrated tile (engines.yaml ``weight_only_gemm_row_blocks``:
    Marlin's 8 and 16 rows for 4-bit weights beside 16-bit activations, on CUDA; vLLM's Machete 16
    on Hopper); empty: the calibrated tile (``gemm_min_rows``) covers every weight GEMM."""
    spec = catalog.engine(engine)
    blocks = spec.weight_only_gemm_row_blocks_by_architecture.get(accel.architecture, spec.weight_only_gemm_row_blocks)
    if (not blocks or not pads_gemm_rows(catalog, engine, accel) or accel.software.value != "cuda"
            or quant.weight_dtype not in spec.weight_only_gemm_row_blocks_weights or dtype not in ("bf16", "fp16")):
        return ()
    if blocks[0] < 1 or list(blocks) != sorted(set(blocks)):
        raise CatalogError(f"{engine}'s weight-only row blocks are {list(blocks)}",
                           field=f"engines.yaml {engine} weight_only_gemm_row_blocks",
                           allowed="rows of 1 or more, smallest first, each once")
    return blocks


def rates_for(catalog: Catalog, accel: Accelerator, quant: Quantization, engine: str, backend: str | None,
              hardware: Hardware | None = None, kv_dtype: str | None = None, release: str | None = None) -> Rates:
    """Rates of ``engine`` (at ``release``; None: its current one) on ``accel``; ``hardware`` (a resolved
    deployment) sets the scale-up domain and the scale-out network, else the accelerator's own; ``kv_dtype``
    the dtype attention runs in (16 bits when not given)."""
    record = catalog.engine(engine)
    dtype, note = compute_dtype(accel, quant, record, release)
    attention = attention_dtype(accel, kv_dtype, record)
    key = calibration_family(record, backend, accel)
    link = accel.scale_up
    link_bw = link.bandwidth_bytes_per_s.value / 2 if link else 0.0  # datasheets quote both directions
    latency, per_step = link_latency(catalog, link.link if link else "none")
    domain = hardware.domain_gpus if hardware else (link.max_domain_gpus if link else 1)
    scale_out = hardware.scale_out if hardware else accel.scale_out
    if scale_out is not None:
        out_bw, out_latency, out_step = scale_out.bandwidth_bytes_per_s.value, catalog.constant("allreduce-latency-s-scale-out"), 0.0
    elif hardware is not None and hardware.pcie_server_gpus:
        # past the bridge the cards share the server's PCIe: its ring latency, the card's PCIe link
        pcie = link.pcie_bandwidth_bytes_per_s if link else None
        out_bw = pcie.value / 2 if pcie else link_bw
        out_latency, out_step = 0.0, catalog.constant("allreduce-latency-s-pcie-per-step")
    else:
        out_bw, out_latency, out_step = 0.0, catalog.constant("allreduce-latency-s-scale-out"), 0.0
    constants = catalog.calibration.records
    # the constants' family: the calibration family when it has its own, else the engine's pooled
    # ones (Rates.family keeps the calibration family, whose track record the estimate quotes)
    fitted = key if f"decode-bandwidth-efficiency-{key}" in constants else engine
    notes = (note,) if note else ()
    hop = constants.get(PIPELINE_HOP_CONSTANT.format(engine))
    return Rates(
        compute_dtype=dtype,
        peak_flop_per_s=peak_flops(accel, dtype),
        bandwidth_bytes_per_s=accel.memory_bandwidth_bytes_per_s.value,
        link_bytes_per_s=link_bw,
        link_latency_s=latency,
        link_latency_per_step_s=per_step,
        domain_gpus=domain,
        scale_out_bytes_per_s=out_bw,
        scale_out_latency_s=out_latency,
        scale_out_latency_per_step_s=out_step,
        bandwidth_efficiency=catalog.constant(f"decode-bandwidth-efficiency-{fitted}"),
        compute_efficiency=catalog.constant(f"prefill-compute-efficiency-{fitted}"),
        step_overhead_s=catalog.constant(f"decode-step-overhead-s-{fitted}"),
        layer_overhead_s=catalog.constant(f"decode-layer-overhead-s-{fitted}"),
        moe_layer_overhead_s=catalog.constant(f"decode-moe-layer-overhead-s-{fitted}"),
        seq_overhead_s=catalog.constant(f"decode-seq-overhead-s-{fitted}"),
        request_overhead_s=catalog.constant(f"ttft-request-overhead-s-{fitted}"),
        request_overhead_fitted=catalog.calibration.records[f"ttft-request-overhead-s-{fitted}"].method.startswith("fitted on"),
        unpack_flops_per_weight=catalog.constant(f"unpack-flops-per-weight-{fitted}") if quant.super_block_scales else 0.0,
        attention_dtype=attention,
        attention_peak_flop_per_s=peak_flops(accel, attention),
        pipeline_hop_s_per_request=hop.value if hop else 0.0,
        pipeline_hop_fitted=hop is not None,
        overlap_exponent=overlap_exponent(catalog),
        gemm_min_rows=gemm_min_rows(catalog, engine, accel),
        weight_gemm_row_blocks=weight_gemm_row_blocks(catalog, engine, accel, quant, dtype),
        hc_seam_s=catalog.constant("hc-seam-s"),
        family=key,
        notes=notes,
    )
