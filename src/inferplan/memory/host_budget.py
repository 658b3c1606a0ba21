"""Host RAM for what one instance keeps off the GPU: offloaded weights, the CPU layers' KV cache, a
host KV-cache tier (vLLM ``--kv-offloading-size``, SGLang HiCache).

Where the host RAM comes from: ``host_memory_gb`` when stated, else the system card's
``host_memory_bytes`` (catalog/data/systems.yaml); a bare accelerator has none and the field is asked
for. On a unified-memory accelerator (DGX Spark's GB10, Apple M-series) host RAM and GPU memory are
one pool: what the GPU side holds and what is offloaded are counted together against the
accelerator's memory, and ``host_memory_gb`` is refused (it would be a second pool that does not
exist). Part of the RAM is kept for the operating system and the engine process
(offload.yaml ``host-memory-reserve-bytes``; SGLang HiCache keeps its own 10 GiB back).
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.schema import Accelerator
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.hardware import Hardware
from inferplan.memory.kv_cache import KvLayout
from inferplan.memory.offload import OffloadSplit
from inferplan.memory.weights import WeightEstimate
from inferplan.units import GiB, fmt_gb


@dataclass(frozen=True)
class HostPool:
    """The host RAM an instance may fill: where it comes from, and what is kept back."""

    total_bytes: float  # the RAM stated, on the system card, or the unified pool (0: unstated, not known)
    reserved_bytes: float  # kept for the OS and the engine process
    origin: str  # "stated" | "system" | "unified" | "unstated" (llama.cpp's split, on a machine of unknown RAM)

    @property
    def available_bytes(self) -> float:
        return max(self.total_bytes - self.reserved_bytes, 0.0)


def unified_pool_bytes(catalog: Catalog, accel: Accelerator) -> float:
    """The memory a unified-memory accelerator's OS sees: the CUDA-visible total on a CUDA device
    (the rest is firmware and carve-outs), all of it on Apple."""
    return device_total_bytes(catalog, accel, None)[0]


def host_pool(catalog: Catalog, d: Deployment, hw: Hardware, hicache: bool, layers_on_cpu: bool = False) -> HostPool:
    """The host RAM of the deployment's machine, and the share kept back; raises naming
    ``host_memory_gb`` where it is needed and not known, or stated where it is the GPU's memory.
    ``layers_on_cpu``: what is in host RAM is llama.cpp's split alone (layers or experts the CPU runs, no host KV
    tier), which on a machine of unknown RAM is planned as the split ``--fit`` chooses is: the pool is "unstated"
    and the notes say what it needs. Other offloads (a weight stream, KTransformers' experts, a host KV tier) ask
    for the RAM, so that nothing is planned against RAM taken as unlimited."""
    reserve = catalog.constant("host-memory-reserve-bytes")
    if hicache:  # SGLang sizes its host pool against the available memory less its own reserve
        reserve = max(reserve, catalog.constant("sglang-hicache-host-reserve-bytes"))
    if hw.accel.unified_memory:
        pool = unified_pool_bytes(catalog, hw.accel)
        if d.host_memory_gb is not None:
            raise InvalidScenarioError(
                f"{hw.accel.name} has unified memory: host RAM is the same {pool / GiB:.1f} GiB the GPU uses, "
                "counted once for the GPU side and what is offloaded", field="host_memory_gb",
                allowed="leave it out (the accelerator's memory is the host RAM)")
        return HostPool(pool, reserve, "unified")
    if d.host_memory_gb is not None:
        return HostPool(d.host_memory_gb * GiB, reserve, "stated")
    card = hw.system.host_memory_bytes if hw.system is not None else None
    if card is None and (d.placement_chosen_by or layers_on_cpu):  # llama.cpp's split: say what it needs
        return HostPool(0.0, reserve, "unstated")
    if card is None:
        where = f"{hw.system.name} states no host RAM" if hw.system is not None else "no system was given"
        raise InvalidScenarioError(f"weights or KV cache offloaded to host RAM: state how much host memory there is ({where})",
                                   field="host_memory_gb", allowed="host RAM in GiB, e.g. 64")
    return HostPool(card.capacity_gib * GiB, reserve, "system")


def unstated_host_note(used_bytes: float, reserved_bytes: float) -> str:
    """What a split on a machine of unknown host RAM needs, with what the OS and the engine keep."""
    return (f"it needs {(used_bytes + reserved_bytes) / GiB:.1f} GiB of host RAM with what the OS and the engine keep "
            "(--host-memory-gb not stated: check the machine has it)")


def known_host_bytes(catalog: Catalog, d: Deployment) -> tuple[float, str] | None:
    """The host RAM of a deployment that is not on unified memory, and where it comes from: stated,
    else the system card's (None: neither)."""
    if d.host_memory_gb is not None:
        return d.host_memory_gb * GiB, "stated"
    card = catalog.system(d.system, "system").host_memory_bytes if d.system else None
    return (card.capacity_gib * GiB, "on the system card") if card is not None else None


def check_hicache_tier(d: Deployment, tier_bytes_per_gpu: float, device_kv_bytes_per_gpu: float) -> None:
    """Refuse a HiCache host pool no larger than the GPU's own pool: SGLang before PR #28614 asserts at
    start-up that the host pool holds more tokens (offload.yaml ``sglang-hicache-min-host-to-device-ratio``)."""
    if not (d.hicache_ratio or d.hicache_size) or tier_bytes_per_gpu > device_kv_bytes_per_gpu:
        return
    field = "hicache_size" if d.hicache_size else "hicache_ratio"
    raise InvalidScenarioError(
        f"SGLang's HiCache host pool ({tier_bytes_per_gpu / GiB:.2f} GiB per GPU) must be larger than the GPU's KV pool "
        f"({device_kv_bytes_per_gpu / GiB:.2f} GiB): releases before PR #28614 refuse to start", field=field,
        allowed=f"{field} above {fmt_gb(device_kv_bytes_per_gpu)} per GPU" if d.hicache_size else f"{field} above 1")


def host_memory_use(catalog: Catalog, d: Deployment, hw: Hardware, split: OffloadSplit | None, layout: KvLayout,
                    max_len: int, w: WeightEstimate, engine: EngineDefaults, kv_tier: float, *,
                    gpu_bytes_per_gpu: float, gpu_kv_bytes_per_gpu: float, gpus: int) -> tuple[float, float | None, list[str], HostPool | None]:
    """Host RAM the instance uses, the RAM it may use (the pool less what is kept back; None: nothing
    in host RAM), the notes saying where each figure comes from, and the pool (None: nothing in host RAM)."""
    if split is None and not kv_tier:
        return 0.0, None, [], None
    check_hicache_tier(d, kv_tier / gpus, gpu_kv_bytes_per_gpu)
    pool = host_pool(catalog, d, hw, bool(kv_tier and (d.hicache_ratio or d.hicache_size)),
                     layers_on_cpu=split is not None and split.mode == "cpu" and not kv_tier)
    lookup = w.embedding_bytes if engine.embeddings_on_host and not hw.accel.unified_memory else 0.0
    kv = split.host_kv_fraction * layout.sequence_bytes_per_gpu(max_len, 1) * _layout_gpus(layout) if split else 0.0
    weights = split.host_weight_bytes if split else 0.0
    offloaded = weights + kv + kv_tier + (lookup if split else 0.0)
    gpu_side = gpu_bytes_per_gpu * gpus if pool.origin == "unified" else 0.0
    used = offloaded + gpu_side
    parts = [f"{gpu_side / GiB:.2f} GiB on the GPU side" if gpu_side else "",
             f"{weights / GiB:.2f} GiB of offloaded weights" if split else "",
             f"{kv / GiB:.2f} GiB of the CPU layers' KV cache" if kv else "",
             f"{kv_tier / GiB:.2f} GiB of host KV tier" if kv_tier else ""]
    if pool.origin == "unstated":
        return used, None, [f"host memory: {used / GiB:.2f} GiB used, {(used + pool.reserved_bytes) / GiB:.2f} GiB with what "
                            f"the OS and the engine process keep: {', '.join(p for p in parts if p)}; the machine's host RAM "
                            "is not stated (host_memory_gb): check it has that much"], pool
    where = {"stated": "host_memory_gb", "system": f"the {hw.system.name if hw.system else ''} system card",
             "unified": f"{hw.accel.name}'s unified memory, one pool for the GPU and the CPU"}[pool.origin]
    notes = [f"host memory: {used / GiB:.2f} GiB of {pool.available_bytes / GiB:.2f} GiB used ({pool.total_bytes / GiB:.2f} GiB "
             f"from {where}, less {pool.reserved_bytes / GiB:.2f} GiB kept for the OS and the engine process): "
             + ", ".join(p for p in parts if p)]
    if split and split.host_kv_fraction >= 1:
        notes.append(f"no layer on the GPU: the whole KV cache ({max_len:,} tokens, llama.cpp's -c) is in host RAM")
    if used > pool.available_bytes:
        field = "the accelerator's memory" if pool.origin == "unified" else "host memory (host_memory_gb)"
        notes.append(f"{field} short by {(used - pool.available_bytes) / GiB:.2f} GiB: it does not fit")
    return used, pool.available_bytes, notes, pool


def _layout_gpus(layout: KvLayout) -> float:
    """GPUs a layout's per-GPU figures are spread over (its whole-instance bytes over one GPU's)."""
    per_gpu = layout.growing_bytes_per_token_per_gpu + layout.window_bytes_per_token_per_gpu
    return (layout.growing_bytes_per_token + layout.window_bytes_per_token) / per_gpu if per_gpu else 1.0
