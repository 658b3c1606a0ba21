"""The time a step spends on weights kept in host RAM (memory/offload.py says which).

llama.cpp runs the layers (or experts) held in host RAM on the CPU, which streams their weights at
the host's DRAM bandwidth (the routed experts a token picks at a lower share of it than whole layers:
``host-memory-expert-read-efficiency``); from a batch of ``llamacpp-op-offload-min-batch-tokens`` tokens on its
CUDA back end copies them over PCIe and runs them on the GPU instead (PR #6083) — each micro-batch
of a prompt pays that copy. vLLM's and SGLang's ``--cpu-offload-gb`` copy their offloaded weights over PCIe in
every forward pass (SGLang's OffloaderV1 copies each offloaded layer as it is called, with no prefetch). The rates are offload.yaml's constants (the DRAM bandwidth may be stated per
deployment); a step pays this time after its GPU work (the layers run in sequence).
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import MemoryPlan
from inferplan.memory.offload import OffloadSplit
from inferplan.performance.kt_cpu import KtCpu, kt_cpu


@dataclass(frozen=True)
class HostOffload:
    """One GPU's share of the weights in host RAM and the rates a step reaches them at."""

    mode: str  # cpu | stream
    dense_bytes: float
    expert_bytes: float
    kv_fraction: float  # of the KV cache, in host RAM (read by the CPU)
    read_bytes_per_s: float  # the CPU streaming host DRAM (whole layers' weights, the KV cache)
    copy_bytes_per_s: float  # host-to-device over PCIe
    min_copy_tokens: float  # cpu mode: from this batch the GPU runs them after a copy
    # kt: the CPU side (performance/kt_cpu.py) and the FLOPs of one token's share of the routed experts
    kt: KtCpu | None = None
    expert_flops_per_token: float = 0.0
    expert_read_bytes_per_s: float | None = None  # the CPU streaming the routed experts a token picks (None: read_bytes_per_s)

    @property
    def overlapped(self) -> bool:
        """The CPU's work runs alongside the GPU's (KTransformers with Expert Deferral), not after it."""
        return self.kt is not None and self.kt.overlapped

    def handover_s(self, moe_layers: int) -> float:
        """What handing ``moe_layers`` layers' expert work to the CPU and back adds to one micro-batch."""
        return moe_layers * self.kt.layer_handover_s if self.kt is not None else 0.0

    def step_s(self, tokens: float, touched_expert_share: float, gpu_kv_read_bytes: float) -> float:
        """A step of ``tokens`` tokens (one micro-batch) that touches this share of the experts."""
        if self.kt is not None:
            return self.kt.expert_s(self.expert_bytes, self.expert_flops_per_token, tokens, touched_expert_share)
        if self.mode == "stream" or tokens >= self.min_copy_tokens:
            return (self.dense_bytes + self.expert_bytes) / self.copy_bytes_per_s
        kv = gpu_kv_read_bytes * self.kv_fraction / (1 - self.kv_fraction) if self.kv_fraction < 1 else 0.0
        experts = self.expert_read_bytes_per_s or self.read_bytes_per_s
        return (self.dense_bytes + kv) / self.read_bytes_per_s + self.expert_bytes * touched_expert_share / experts


def host_offload(split: OffloadSplit | None, gpus: int, catalog: Catalog, pcie_bytes_per_s: float | None) -> HostOffload | None:
    if split is None:
        return None
    dram = split.host_bandwidth_bytes_per_s or catalog.constant("host-memory-bytes-per-s-default")
    pcie = pcie_bytes_per_s or catalog.constant("pcie-host-to-device-bytes-per-s-default")
    if split.mode == "kt":
        return HostOffload(
            mode="kt", dense_bytes=0.0, expert_bytes=split.host_expert_bytes, kv_fraction=0.0,  # one CPU for all GPUs
            read_bytes_per_s=dram * catalog.constant("host-memory-read-efficiency"),
            copy_bytes_per_s=pcie * catalog.constant("pcie-copy-efficiency"), min_copy_tokens=float("inf"),
            kt=kt_cpu(split.kt_host, catalog, dram), expert_flops_per_token=split.expert_flops_per_token)
    return HostOffload(
        mode=split.mode, dense_bytes=split.host_dense_bytes / gpus, expert_bytes=split.host_expert_bytes / gpus,
        kv_fraction=split.host_kv_fraction, read_bytes_per_s=dram * catalog.constant("host-memory-read-efficiency"),
        expert_read_bytes_per_s=dram * catalog.constant("host-memory-expert-read-efficiency"),
        copy_bytes_per_s=pcie * catalog.constant("pcie-copy-efficiency"),
        min_copy_tokens=catalog.constant("llamacpp-op-offload-min-batch-tokens") if split.mode == "cpu" else 0.0)


def pcie_bytes_per_s(accel: Accelerator) -> float | None:
    """One direction of the card's own PCIe link where the catalogue states it (both directions there)."""
    link = accel.scale_up
    if link is None:
        return None
    if link.pcie_bandwidth_bytes_per_s is not None:
        return link.pcie_bandwidth_bytes_per_s.value / 2
    return link.bandwidth_bytes_per_s.value / 2 if link.link.startswith("pcie") else None


def host_kv_load_s(mp: MemoryPlan, w: Workload, catalog: Catalog) -> float:
    """Time a request's prefix-cache hits found in the host-RAM KV tier take to come back to the GPU
    over PCIe (each GPU loads its share; the tokens are not recomputed)."""
    if not (w.prefix_cache_hit_rate and w.prefix_cache_host_share):
        return 0.0
    if not mp.result.host_kv_cache_tokens:
        raise InvalidScenarioError("cached tokens in host RAM need a host KV tier on the deployment",
                                   field="prefix_cache_host_share",
                                   allowed="0, or a deployment with kv_offloading_size (vLLM) or hicache_ratio / hicache_size (SGLang)")
    tokens = int(w.input_len * w.prefix_cache_hit_rate * w.prefix_cache_host_share)
    pcie = pcie_bytes_per_s(mp.accelerator) or catalog.constant("pcie-host-to-device-bytes-per-s-default")
    return mp.layout.sequence_bytes_per_gpu(tokens, 1) / (pcie * catalog.constant("pcie-copy-efficiency"))
