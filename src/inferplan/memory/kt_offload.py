"""KTransformers: the routed experts in host RAM, run by the CPU, except ``kt_num_gpu_experts`` per layer.

KTransformers serves through SGLang with the kt-kernel CPU expert backend: attention, shared experts,
dense layers and the KV cache stay on the GPU; of each mixture-of-experts layer's routed experts,
``--kt-num-gpu-experts`` stay on the GPU and the others sit in host RAM, where kt-kernel's AMX /
AVX-512 / llamafile kernels run them (``--kt-num-gpu-experts``: "Number of GPU experts per MoE
layer", kvcache-ai/sglang server_args.py; engines.yaml sources). Which engine takes the field is data:
``engines.yaml`` ``offload_settings``. The CPU copy of the experts takes the bytes of its ``--kt-method``'s format
(kt_cpu_paths.yaml ``expert_formats``), whatever the GPU part is served in: kt-kernel's AMXINT4 /
AMXINT8 conversion writes 4 / 8 bits per weight and a 32-bit scale per output row; BF16, FP8,
FP8_PERCHANNEL, RAWINT4 and LLAMAFILE read the checkpoint's (or GGUF file's) own experts, at the
deployment's weight format. The GPU part takes the deployment's weight format too, except beside a method
whose CPU files SGLang does not serve (kt_cpu_paths.yaml ``gpu_weights``: LLAMAFILE's GGUF), where it is
served from the model's original checkpoint, in that checkpoint's format (``kt_gpu_quantization``). A release that keeps a copy per NUMA node (v0.2 USE_NUMA=1) holds it once
per socket (memory/kt_host.py).
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.quantization_schema import Quantization
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.catalog.architecture import Architecture, MoeDims
from inferplan.catalog.kt_schema import KtExpertFormat
from inferplan.memory.kt_host import KtHost, kt_expert_format, kt_path
from inferplan.memory.offload import OffloadSplit
from inferplan.units import GB, GiB
from inferplan.memory.weights import WeightEstimate, weight_bytes

FIELD = "kt_num_gpu_experts"


def kt_gpu_quantization(catalog: Catalog, d: Deployment, spec: ModelSpec, engine: EngineDefaults,
                        quant: Quantization) -> tuple[Quantization, str | None]:
    """The format of the weights on the GPU beside KTransformers' CPU experts in ``quant``, and a note where it
    is not ``quant``: the model's original checkpoint's, where the ``--kt-method`` reads CPU files SGLang does
    not serve (kt_cpu_paths.yaml ``gpu_weights``). Another engine, or a model with no routed experts: ``quant``."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    if FIELD not in engine.offload_settings or arch is None or arch.moe is None:
        return quant, None
    fmt = kt_expert_format(catalog, d.kt_release, d.kt_method, quant.id)
    if fmt is None or fmt.gpu_weights != "original-checkpoint":
        return quant, None
    if spec.native_quantization is None or spec.native_quantization == quant.id:
        raise InvalidScenarioError(f"KTransformers {fmt.kt_method} serves the GPU part of {spec.name} from its original "
                                   f"checkpoint, and the catalogue names none beside the {quant.id} files",
                                   field="quantization", allowed="a model with a published original checkpoint")
    original = catalog.quantization(spec.native_quantization)
    return original, (f"{fmt.kt_method}: the CPU reads the routed experts from the {quant.id} files; the GPU part "
                      f"(attention, shared experts, dense layers) is {spec.name}'s original {original.id} checkpoint "
                      f"({fmt.source})")


def kt_split(d: Deployment, spec: ModelSpec, w: WeightEstimate, engine: EngineDefaults,
             gpus_in_instance: int, catalog: Catalog, quant: Quantization) -> OffloadSplit | None:
    """The host share of the routed experts on an engine that takes ``kt_num_gpu_experts`` (None:
    another engine), with ``w`` the weights the GPU part is served from and ``quant`` the deployment's format.
    Left out, no routed expert stays on the GPU (kt-kernel's CPU-only placement)."""
    if FIELD not in engine.offload_settings:
        return None
    moe = None if spec.architecture_is_proxy or spec.architecture is None else spec.architecture.moe
    if moe is None:
        raise InvalidScenarioError(f"{spec.name} has no routed experts to keep in host RAM: {engine.name} runs "
                                   "mixture-of-experts models only", field=FIELD if d.kt_num_gpu_experts is not None else "model",
                                   allowed="a mixture-of-experts model, or another engine")
    on_gpu = d.kt_num_gpu_experts or 0
    if on_gpu > moe.num_experts:
        raise InvalidScenarioError(f"{spec.name} has {moe.num_experts} routed experts per layer; "
                                   f"{on_gpu} cannot stay on the GPU", field=FIELD,
                                   allowed=f"0..{moe.num_experts}")
    cpu_share = (moe.num_experts - on_gpu) / moe.num_experts
    arch = spec.architecture
    fmt = kt_expert_format(catalog, d.kt_release, d.kt_method, quant.id)
    converted = fmt is not None and fmt.weight_bits is not None
    read = w.expert_bytes if w.quantization == quant.id else weight_bytes(spec, quant).expert_bytes  # the CPU's files
    host_experts = (converted_expert_bytes(fmt, arch, moe) if converted else read) * cpu_share
    expert_params = arch.mlp_projections * (moe.latent_size or arch.hidden_size) * moe.expert_intermediate_size
    routed_params = moe.experts_per_token * expert_params * sum(moe.moe_layers)  # one token's routed experts
    flops_per_token = 2 * routed_params * cpu_share  # the CPU's share, with experts placed evenly
    host = KtHost(kt_path(catalog, d.kt_release, d.kt_method, quant.id), d.host_sockets or 1,
                  moe.experts_per_token / moe.num_experts)
    copies = f", one copy on each of {host.expert_copies} NUMA nodes" if host.expert_copies > 1 else ""
    note = (f"--kt-num-gpu-experts {on_gpu}: {moe.num_experts - on_gpu} of {moe.num_experts} routed experts per layer "
            f"({host_experts / GiB:.2f} GiB{_format(fmt) if converted else ''}{copies}) in host RAM, run by the CPU "
            f"({host.path.name}); attention, shared experts, dense layers and the KV cache on the GPU")
    gpu_freed = w.expert_bytes * cpu_share / gpus_in_instance  # the GPU part's experts, in its own format
    return OffloadSplit("kt", 0.0, host_experts, 0.0, gpu_freed, note,
                        d.host_memory_bandwidth_gb_per_s * GB if d.host_memory_bandwidth_gb_per_s else None,
                        expert_flops_per_token=flops_per_token,
                        kt_host=host)


def converted_expert_bytes(fmt: KtExpertFormat, arch: Architecture, moe: MoeDims) -> float:
    """Bytes of every routed expert in kt-kernel's converted format: each matrix of n outputs and k
    inputs takes n x k weights at ``weight_bits`` and one scale of ``scale_bits_per_output_row`` per
    output (gate and up: n = the expert's intermediate size; down: n = the model width)."""
    width = moe.latent_size or arch.hidden_size
    weights = arch.mlp_projections * width * moe.expert_intermediate_size
    rows = (arch.mlp_projections - 1) * moe.expert_intermediate_size + width
    per_expert = (weights * fmt.weight_bits.value + rows * fmt.scale_bits_per_output_row.value) / 8
    return per_expert * moe.num_experts * sum(moe.moe_layers)


def _format(fmt: KtExpertFormat) -> str:
    return (f" at {fmt.kt_method}: {fmt.weight_bits.value:g}-bit weights and a {fmt.scale_bits_per_output_row.value:g}-bit "
            "scale per output row")
