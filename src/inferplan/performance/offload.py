"""The time a step spends on weights kept in host RAM (memory/offload.py says which).

llama.cpp runs the layers (or experts) held in host RAM on the CPU, which streams their weights at
the host's DRAM bandwidth (the routed experts a token picks at a lower share of it than whole layers:
``host-memory-expert-read-efficiency``); from a batch of ``llamacpp-op-offload-min-batch-tokens`` tokens on its
CUDA back end copies them over PCIe and runs them on the GPU instead (PR #6083) — each micro-batch
of a prompt pays that copy. vLLM's and SGLang's ``--cpu-offload-gb`` copy their offloaded weights over PCIe in
every forward pass (SGLang's OffloaderV1 copies each offloaded layer as it is called, with no prefetch).
The DRAM bandwidth is the deployment's, else the system card's, else a unified-memory accelerator's
own (read in place, no PCIe copy), else offload.yaml's desktop default; PCIe is the card's host link
where the catalogue states it. A step pays this time after its GPU work (the layers run in sequence).
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import MemoryPlan
from inferplan.performance.kt_cpu import KtCpu, kt_cpu
from inferplan.units import GB, fmt_gb_per_s, fmt_gib


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
    note: str = ""  # the host bandwidth used, where it came from, and the bytes kept in host RAM
    # kt: the routed experts (in the GPU part's own format) each GPU does not hold; the host's copy may be in
    # another format and is the whole instance's (None: expert_bytes, one GPU's share in the GPU's format)
    kt_gpu_expert_bytes_freed: float | None = None

    @property
    def gpu_expert_bytes_freed(self) -> float:
        """Routed-expert bytes of one GPU's share that its memory does not hold, so a step does not read there."""
        return self.expert_bytes if self.kt_gpu_expert_bytes_freed is None else self.kt_gpu_expert_bytes_freed

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


def host_bandwidth(mp: MemoryPlan, catalog: Catalog, stated_gb_per_s: float | None = None) -> tuple[float, str]:
    """The host DRAM bandwidth a step reads offloaded weights at, and where it comes from: stated
    (``host_memory_bandwidth_gb_per_s``), else the system card's, else a unified-memory accelerator's own
    memory, else offload.yaml's desktop default."""
    stated = mp.offload.host_bandwidth_bytes_per_s if mp.offload is not None else None
    stated = stated or (stated_gb_per_s * GB if stated_gb_per_s else None)
    system = mp.hardware.system.host_memory_bandwidth_bytes_per_s if mp.hardware.system is not None else None
    if stated:
        return stated, "stated (host_memory_bandwidth_gb_per_s)"
    if system is not None:
        return system.value, f"the {mp.hardware.system.name} system card"
    if mp.accelerator.unified_memory:
        return mp.accelerator.memory_bandwidth_bytes_per_s.value, f"{mp.accelerator.name}'s unified memory"
    return catalog.constant("host-memory-bytes-per-s-default"), "offload.yaml's assumed desktop host (dual-channel DDR5-5600)"


def host_offload(mp: MemoryPlan, gpus: int, catalog: Catalog) -> HostOffload | None:
    split = mp.offload
    if split is None:
        return None
    dram, origin = host_bandwidth(mp, catalog)
    pcie = pcie_bytes_per_s(mp.accelerator) or catalog.constant("pcie-host-to-device-bytes-per-s-default")
    copy = pcie * catalog.constant("pcie-copy-efficiency")
    if mp.accelerator.unified_memory:  # no copy: the GPU reads the offloaded weights where they are
        copy = dram * catalog.constant("host-memory-read-efficiency")
    if split.mode == "kt":
        return HostOffload(
            mode="kt", dense_bytes=0.0, expert_bytes=split.host_expert_bytes, kv_fraction=0.0,  # one CPU for all GPUs
            read_bytes_per_s=dram * catalog.constant("host-memory-read-efficiency"),
            copy_bytes_per_s=copy, min_copy_tokens=float("inf"),
            kt=kt_cpu(split.kt_host, catalog, dram), expert_flops_per_token=split.expert_flops_per_token,
            kt_gpu_expert_bytes_freed=split.gpu_bytes_freed,
            note=_note(split.host_expert_bytes, _read_per_token(mp, 0.0, split.host_expert_bytes), dram, origin))
    return HostOffload(
        mode=split.mode, dense_bytes=split.host_dense_bytes / gpus, expert_bytes=split.host_expert_bytes / gpus,
        kv_fraction=split.host_kv_fraction, read_bytes_per_s=dram * catalog.constant("host-memory-read-efficiency"),
        expert_read_bytes_per_s=dram * catalog.constant("host-memory-expert-read-efficiency"),
        copy_bytes_per_s=copy,
        min_copy_tokens=catalog.constant("llamacpp-op-offload-min-batch-tokens") if split.mode == "cpu" else 0.0,
        note=_note(split.host_dense_bytes + split.host_expert_bytes,
                   _read_per_token(mp, split.host_dense_bytes, split.host_expert_bytes), dram, origin,
                   "" if split.mode == "cpu" else f"; copied to the GPU at {fmt_gb_per_s(copy)} in every forward pass"))


def _read_per_token(mp: MemoryPlan, dense_bytes: float, expert_bytes: float) -> float:
    """Host-RAM bytes one decoded token reads at batch 1: the dense part whole, the routed experts it picks."""
    arch = None if mp.spec.architecture_is_proxy else mp.spec.architecture
    moe = arch.moe if arch is not None else None
    share = moe.experts_per_token / moe.num_experts if moe is not None and moe.num_experts else 1.0
    return dense_bytes + expert_bytes * share


def _note(host_weight_bytes: float, read_bytes_per_token: float, dram: float, origin: str, tail: str = "") -> str:
    return (f"weights in host RAM: {fmt_gib(host_weight_bytes)}, {fmt_gib(read_bytes_per_token)} of them read per "
            f"decoded token at batch 1 (the dense part whole, the routed experts it picks), at {fmt_gb_per_s(dram)} of host "
            f"memory bandwidth from {origin}{tail}")


def pcie_bytes_per_s(accel: Accelerator) -> float | None:
    """One direction of the card's own PCIe link where the catalogue states it (``host_link_bytes_per_s``
    one way; a PCIe scale-up link or a bridged card's link both ways)."""
    if accel.host_link_bytes_per_s is not None:
        return accel.host_link_bytes_per_s.value
    link = accel.scale_up
    if link is None:
        return None
    if link.pcie_bandwidth_bytes_per_s is not None:
        return link.pcie_bandwidth_bytes_per_s.value / 2
    return link.bandwidth_bytes_per_s.value / 2 if link.link.startswith("pcie") else None


def host_kv_load_s(mp: MemoryPlan, w: Workload, catalog: Catalog, host_gb_per_s: float | None = None) -> float:
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
    link = pcie * catalog.constant("pcie-copy-efficiency")
    dram = host_bandwidth(mp, catalog, host_gb_per_s)[0] * catalog.constant("host-memory-read-efficiency") / _gpus(mp)
    return mp.layout.sequence_bytes_per_gpu(tokens, 1) / min(link, dram)  # the slower of the link and the host's share


def _gpus(mp: MemoryPlan) -> int:
    """GPUs of one instance: each loads its share of the cached tokens from the one host at once."""
    return mp.result.parallel.tensor_parallel_size * mp.result.parallel.pipeline_parallel_size
