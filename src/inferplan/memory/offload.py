"""Weights (and KV cache) kept in host RAM: llama.cpp ``-ngl`` / ``--n-cpu-moe``, vLLM and SGLang ``--cpu-offload-gb``.

llama.cpp's ``-ngl N`` takes N of the n_layer + 1 slots (the repeating layers, then the output layer)
from the end and runs the others on the CPU, their KV cache with them (unless ``--no-kv-offload``). Which
layers those are is the build's (``memory_rules`` ``gpu_layer_order``): up to b7437 the last N repeating
layers, the output layer only when N exceeds them; from PR #18148 the output layer first and the last
N - 1 repeating layers. ``--n-cpu-moe N`` keeps the routed-expert tensors of
the first N layers in host RAM (llama.cpp PR #15077). vLLM's and SGLang's ``--cpu-offload-gb`` keep that many GiB
of each GPU's weights in host RAM and copy them to the GPU in every forward pass (engines.yaml
sources); they take them from the decoder layers only (``make_layers`` hands the layers it builds to the
offloader, and nothing else is), so the token embeddings and the lm_head stay on the GPU whatever the GiB
asked. Which engine takes which field is data: ``engines.yaml`` ``offload_settings``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.kt_host import KtHost
from inferplan.memory.kv_cache import KvLayout
from inferplan.memory.stages import StageWeights, stage_bounds, stage_layer_counts
from inferplan.memory.weights import WeightEstimate
from inferplan.units import GB, GiB

OFFLOAD_FIELDS = ("n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kv_offloading_size", "kv_offloading_backend",
                  "hicache_ratio", "hicache_size", "kt_num_gpu_experts", "kt_method", "kt_release")


@dataclass(frozen=True)
class OffloadSplit:
    """What of one instance's weights and KV cache sits in host RAM, and how a step reaches it."""

    # cpu: the CPU computes those layers (llama.cpp); stream: copied to the GPU each step (vLLM);
    # kt: the CPU computes the routed experts alongside the GPU's work (KTransformers, memory/kt_offload.py)
    mode: Literal["cpu", "stream", "kt"]
    host_dense_bytes: float  # non-expert weights in host RAM (read whole every step)
    host_expert_bytes: float  # routed-expert weights in host RAM (a step reads the experts its tokens pick)
    host_kv_fraction: float  # share of the KV cache in host RAM (layers on the CPU)
    gpu_bytes_freed: float  # weight bytes that stay off the fullest GPU
    note: str
    host_bandwidth_bytes_per_s: float | None = None  # the host's DRAM bandwidth, when the deployment states it
    expert_flops_per_token: float = 0.0  # kt: FLOPs of one token's routed experts the CPU runs
    kt_host: KtHost | None = None  # kt: the release, kernel method and sockets the CPU side runs with
    stage_gpu_layers: tuple[int, ...] = ()  # cpu: the repeating layers each pipeline stage's GPUs hold

    @property
    def host_weight_bytes(self) -> float:
        copies = self.kt_host.expert_copies if self.kt_host is not None else 1  # kt: a copy per NUMA node
        return self.host_dense_bytes + self.host_expert_bytes * copies


def check_offload_flags(d: Deployment, engines: list[EngineDefaults], engine: EngineDefaults) -> None:
    """Refuse an offload field the engine's launcher does not take, naming the engines that do."""
    for name in OFFLOAD_FIELDS:
        if getattr(d, name) is not None and name not in engine.offload_settings:
            takers = [e.id for e in engines if name in e.offload_settings]
            raise InvalidScenarioError(f"{engine.name} does not take {name}: {', '.join(takers) or 'no engine'} does",
                                       field=name, allowed=f"leave it out, or engine {' | '.join(takers)}")


def offload_split(d: Deployment, spec: ModelSpec, w: WeightEstimate, gpus_in_instance: int,
                  weights_per_gpu: float, stages: tuple[StageWeights, ...],
                  output_first: bool = False) -> OffloadSplit | None:
    """The host share of the weights the offload fields ask for (None: no offload), ``stages`` the weights each
    pipeline stage's GPU holds with none offloaded; ``output_first``: the llama.cpp build offloads the output
    layer before the repeating layers (``GpuLayerOrder``)."""
    fullest = max(stages, key=lambda s: s.bytes_per_gpu)
    if d.cpu_offload_gb:
        ends_per_gpu = fullest.lookup_bytes_per_gpu + fullest.output_bytes_per_gpu  # left on the GPU
        decoder = max(weights_per_gpu - ends_per_gpu, 0.0)  # only the decoder layers' weights leave the GPU
        host = min(d.cpu_offload_gb * GiB, decoder)
        experts = host * gpus_in_instance * min(w.expert_bytes / body, 1.0) if (body := _body_bytes(w)) else 0.0
        capped = (f" (all of its decoder layers' weights; the embeddings and lm_head, {ends_per_gpu / GiB:.2f} GiB, "
                  "stay on the GPU)" if d.cpu_offload_gb * GiB > decoder else "")
        return OffloadSplit("stream", host * gpus_in_instance - experts, experts, 0.0, host, note=
                            f"--cpu-offload-gb {d.cpu_offload_gb:g}: {host / GiB:.2f} GiB of each GPU's weights in host RAM"
                            f"{capped}, copied to the GPU in every forward pass", host_bandwidth_bytes_per_s=_bandwidth(d))
    check_expert_layers(d, spec)
    if d.n_gpu_layers is None and not d.n_cpu_moe:
        return None
    arch = None if spec.architecture_is_proxy else spec.architecture
    if arch is None:
        raise InvalidScenarioError(f"{spec.name} has no published layer layout to split between GPU and CPU",
                                   field="n_gpu_layers" if d.n_gpu_layers is not None else "n_cpu_moe",
                                   allowed="leave it out")
    layers = arch.num_layers
    if all_layers_on_gpu(d.n_gpu_layers, layers) and not d.n_cpu_moe:
        return None  # -ngl 99: every layer and the output layer on the GPU, as with -ngl left out
    on_gpu, head_on_host, slots = gpu_layers(d.n_gpu_layers, layers, output_first)
    cpu_layers = layers - on_gpu  # the first ones: llama.cpp offloads from the end
    body = _body_bytes(w)
    per_layer_expert = w.expert_bytes / layers
    per_layer_dense = (body - w.expert_bytes) / layers
    moe_first = min(d.n_cpu_moe or 0, layers)
    expert_layers = max(cpu_layers, moe_first)  # --n-cpu-moe's first layers overlap the CPU layers
    host_dense = cpu_layers * per_layer_dense + (w.head_bytes if head_on_host else 0.0)
    host_expert = expert_layers * per_layer_expert
    pp = len(stages)
    # each GPU's share of the GPU slots, the output layer's the last one; experts of a layer below --n-cpu-moe's
    # first ones stay in host RAM, whichever GPU holds the rest of that layer
    bounds = stage_bounds(slots, pp)
    head_stage = max(i for i, (start, end) in enumerate(bounds) if end > start) if slots else -1
    bounds = tuple((start, min(end, on_gpu)) for start, end in bounds)  # the repeating layers of each stage
    held = max(((end - start) * per_layer_dense + max(cpu_layers + end - max(cpu_layers + start, moe_first), 0)
                * per_layer_expert + (w.head_bytes if not head_on_host and i == head_stage else 0.0))
               / (gpus_in_instance // pp) for i, (start, end) in enumerate(bounds))
    output = "" if head_on_host else " and the output layer"
    parts = [f"-ngl {d.n_gpu_layers}: {on_gpu} of {layers} layers{output} on the GPU" if d.n_gpu_layers is not None else "",
             f"--n-cpu-moe {d.n_cpu_moe}: the experts of the first {moe_first} layers in host RAM" if d.n_cpu_moe else ""]
    note = "; ".join(p for p in parts if p) + (f"; {(host_dense + host_expert) / GiB:.2f} GiB of weights and "
                                               f"{cpu_layers}/{layers} of the KV cache in host RAM, run by the CPU")
    return OffloadSplit("cpu", host_dense, host_expert, cpu_layers / layers, fullest.bytes_per_gpu - held, note,
                        _bandwidth(d), stage_gpu_layers=tuple(end - start for start, end in bounds))


def output_layer_first(catalog, engine: str, release: str | None) -> bool:
    """Whether ``engine`` at ``release`` (None: its default) fills the GPU with the output layer before the
    repeating layers under ``-ngl`` (the memory rule's ``gpu_layer_order``)."""
    order = memory_rule(catalog, engine, release).gpu_layer_order
    return order is not None and order.output_layer == "first"


def gpu_layers(n_gpu_layers: int | None, layers: int, output_first: bool) -> tuple[int, bool, int]:
    """llama.cpp's ``-ngl``: the repeating layers on the GPU (the last ones), whether the output layer stays on
    the CPU, and the GPU slots the layer split shares out over the GPUs (the output layer's one last).
    Left out or above ``layers``: every layer, split as the whole model's is."""
    if n_gpu_layers is None or n_gpu_layers > layers:
        return layers, False, layers
    if output_first and n_gpu_layers:
        return n_gpu_layers - 1, False, n_gpu_layers
    return n_gpu_layers, True, n_gpu_layers


def _body_bytes(w: WeightEstimate) -> float:
    """The decoder layers' weights: all but the token embeddings and an lm_head of its own."""
    return w.total_bytes - w.embedding_bytes - (0.0 if w.head_is_embedding else w.head_bytes)


def check_expert_layers(d: Deployment, spec: ModelSpec) -> None:
    """Refuse ``n_cpu_moe`` for a model whose published layout has no routed experts: it would keep nothing
    in host RAM (a model with no published layout is refused by ``offload_split`` for either field)."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    if d.n_cpu_moe is not None and arch is not None and arch.moe is None:
        raise InvalidScenarioError(f"{spec.name} is a dense model: it has no routed experts for n_cpu_moe to keep in "
                                   "host RAM", field="n_cpu_moe",
                                   allowed="n_cpu_moe on a model with routed experts; on a dense model, leave it out "
                                           "and use n_gpu_layers to keep whole layers in host RAM")


def all_layers_on_gpu(n_gpu_layers: int | None, layers: int) -> bool:
    """Whether llama.cpp's ``-ngl`` puts the whole model on the GPU: left out, or above the repeating
    layers (llama.cpp counts the output layer as one more, so ``-ngl 99`` is every layer of a smaller model)."""
    return n_gpu_layers is None or n_gpu_layers > layers


def _bandwidth(d: Deployment) -> float | None:
    return d.host_memory_bandwidth_gb_per_s * GB if d.host_memory_bandwidth_gb_per_s else None


def host_kv_tier_bytes(d: Deployment, kv_cache_bytes_per_gpu: float, gpus_in_instance: int) -> float:
    """Host RAM one instance gives a second KV-cache tier (0: none): vLLM's --kv-offloading-size for the
    instance; SGLang HiCache's --hicache-size GB per GPU, else --hicache-ratio times each GPU's pool."""
    if d.kv_offloading_size:
        return d.kv_offloading_size * GiB
    if d.hicache_size:
        return d.hicache_size * GB * gpus_in_instance
    if d.hicache_ratio:
        return d.hicache_ratio * kv_cache_bytes_per_gpu * gpus_in_instance
    return 0.0


def host_kv_layout(layout: KvLayout, host_fraction: float, num_layers: int,
                   stage_gpu_layers: tuple[int, ...] = ()) -> KvLayout:
    """The GPUs' share of a KV layout when ``host_fraction`` of the ``num_layers`` layers (the first ones) run
    on the CPU and keep theirs in host RAM. llama.cpp puts each layer's cache on that layer's device
    (src/llama-kv-cache.cpp: ``model.dev_layer(il)``), and under its layer split shares the GPU layers over the
    GPUs in proportion to ``--tensor-split``, else to their free memory (src/llama-model.cpp ``load_tensors``):
    on GPUs alike, as evenly as they go. So each pipeline stage keeps the cache of its own share of the GPU
    layers (``stage_gpu_layers``, as its weights are split; else as evenly as they go), not of all of them."""
    keep = 1 - host_fraction
    if not layout.stages:
        return _kept(layout, keep)
    pp = len(layout.stages)
    kept_counts = stage_gpu_layers if len(stage_gpu_layers) == pp else stage_layer_counts(round(num_layers * keep), pp)
    stages = tuple(_kept(stage, kept / held if held else 0.0) for stage, kept, held in
                   zip(layout.stages, kept_counts, stage_layer_counts(num_layers, pp)))
    busiest = max(stages, key=lambda s: s.bytes_per_token_per_gpu)  # the per-GPU figures: the fullest stage's
    return dataclasses.replace(
        layout, stages=stages, **{f: getattr(busiest, f) for f in _PER_GPU})


_PER_GPU = ("growing_bytes_per_token_per_gpu", "window_bytes_per_token_per_gpu", "state_bytes_per_seq_per_gpu",
            "residual_extra_bytes_per_token_per_gpu", "sparse_bytes_per_token_per_gpu")


def _kept(layout: KvLayout, keep: float) -> KvLayout:
    """``layout``'s per-GPU figures times ``keep``, the share of its layers that stay on the GPU."""
    return dataclasses.replace(layout, **{f: getattr(layout, f) * keep for f in _PER_GPU})
