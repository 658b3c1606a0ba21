"""Whether SGLang gets through start-up once its KV pool is sized, where its attention backend keeps a
workspace sized from the pool (AITER on ROCm: ``catalog/startup_rules.py`` ``AttentionWorkspace``).

SGLang sizes the pool as (memory free at start-up) × mem_fraction_static − weights, so the memory left
after it is (free at start-up) × (1 − mem_fraction_static). Out of that it then allocates a request
table of ``requests × context`` int32 slots and the backend's paged-attention workspace; when they need
more the scheduler fails with out of memory after printing the pool's size. ``workspace_check``
compares the two per GPU; ``fraction_fix`` gives the largest whole-hundredth fraction whose headroom
holds what the stated one needs (a lower fraction shrinks the pool, so it never needs more).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.catalog.startup_rules import AttentionWorkspace
from inferplan.memory.startup import FRACTION_STEP, HeadroomCheck
from inferplan.units import GiB


@dataclass(frozen=True)
class WorkspaceCheck(HeadroomCheck):
    """The memory left after the KV pool on each GPU, and what the attention backend allocates there."""

    backend: str
    headroom_bytes_per_gpu: float  # (free at start-up) × (1 − fraction)
    free_at_start_bytes_per_gpu: float
    requests: int
    request_table_bytes_per_gpu: float
    workspace_bytes_per_gpu: float

    @property
    def needed_bytes_per_gpu(self) -> float:
        return self.request_table_bytes_per_gpu + self.workspace_bytes_per_gpu

    def note(self, rule: MemoryRule, settings) -> str:
        outcome = "fit" if self.starts else ("do not fit: start-up fails after the KV pool is allocated, "
                                              f"{self.shortfall_bytes_per_gpu / GiB:.2f} GiB per GPU short")
        return (f"{rule.label}: outside mem_fraction_static {settings.memory_fraction:g} each GPU keeps "
                f"{self.headroom_bytes_per_gpu / GiB:.2f} GiB; the request table for {self.requests:,} requests "
                f"{self.request_table_bytes_per_gpu / GiB:.2f} GiB and the {self.backend} attention workspace "
                f"{self.workspace_bytes_per_gpu / GiB:.2f} GiB ({self.needed_bytes_per_gpu / GiB:.2f} GiB) {outcome}")


def latent_attention(spec) -> bool:
    """Whether a model's attention is latent (MLA): the paged-attention workspace ``workspace_check``
    plans is not kept for it."""
    return spec.architecture is not None and LayerKind.MLA in spec.architecture.layer_kinds


def latent_kv_heads_per_gpu(spec, tensor_parallel_size: int) -> int | None:
    """An MLA model's KV heads per GPU as SGLang counts them to pick its ROCm attention backend: the
    config's KV heads over the tensor-parallel size, at least one (``model_config.get_num_kv_heads``);
    None for a model without latent attention."""
    if not latent_attention(spec):
        return None
    return max(1, spec.architecture.num_kv_heads // tensor_parallel_size)


def workspace_bytes(ws: AttentionWorkspace, requests: int, query_heads_per_gpu: int, head_dim: int,
                    context_tokens: int) -> int:
    """The backend's paged-attention workspace: float32 partial outputs and two statistics per
    (request, query head, partition of the context)."""
    partitions = math.ceil(context_tokens / ws.partition_tokens)
    return requests * query_heads_per_gpu * partitions * (head_dim * ws.bytes_per_output_element
                                                          + ws.bytes_per_partition_stats)


def workspace_check(catalog: Catalog, rule: MemoryRule, software: str, arch: Architecture | None,
                    latent_attention: bool, memory_fraction: float, total_bytes: float, pool_tokens: int,
                    context_tokens: int, attention_tp: int) -> WorkspaceCheck | None:
    """What the attention backend allocates after the pool, per GPU (None: the rule has no such backend,
    the GPU's stack does not run it by default, the model has latent attention — no workspace — or its
    attention shape is unknown)."""
    ws = rule.attention_workspace
    if ws is None or software != ws.software or latent_attention or arch is None or context_tokens <= 0:
        return None
    requests = ws.request_table.requests(pool_tokens, context_tokens)
    free_at_start_bytes = total_bytes - (catalog.constant(rule.start_constant) if rule.start_constant else 0.0)
    heads = arch.num_attention_heads // attention_tp
    return WorkspaceCheck(
        backend=ws.attention_backend, headroom_bytes_per_gpu=free_at_start_bytes * (1 - memory_fraction),
        free_at_start_bytes_per_gpu=free_at_start_bytes, requests=requests,
        request_table_bytes_per_gpu=float(requests * context_tokens * ws.request_table_bytes_per_slot),
        workspace_bytes_per_gpu=float(workspace_bytes(ws, requests, heads, arch.head_dim, context_tokens)))


def fraction_fix(check: WorkspaceCheck, scale: float = 1.0) -> float | None:
    """The largest whole-hundredth fraction to give the engine whose headroom holds what the planned
    fraction's pool needs, where the engine multiplies the fraction it is given by ``scale`` (None:
    none does)."""
    fraction = math.floor((1 - check.needed_bytes_per_gpu / check.free_at_start_bytes_per_gpu) / scale
                          / FRACTION_STEP) * FRACTION_STEP
    return round(fraction, 2) if fraction > 0 else None
