"""Weight memory an engine's MoE kernel adds on top of the checkpoint for an expert format it emulates.

vLLM runs MXFP4 experts on GPUs without native MXFP4 with the kernel its release picks for the model,
the GPU generation and the install (``catalog/data/engine_moe_kernels.yaml``): Marlin allocates every
expert matrix padded to its tile multiples (gpt-oss: hidden 2880 -> 3072, intermediate 2880 -> 2944 at
TP 1), the Triton path keeps the checkpoint's shapes and holds the block scales twice. gpt-oss's
experts (GptOssMxfp4MoEMethod) take the Triton path on Hopper where the install has triton_kernels;
DeepSeek-V4's (Mxfp4MoEMethod) have their own backend list, which on Hopper ends at Marlin.
"""

from __future__ import annotations

import math

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import parse_engine_version, release_key
from inferplan.catalog.moe_kernels import SharedWorkspaceRequest, moe_kernel
from inferplan.catalog.schema import Accelerator
from inferplan.units import GiB, MiB


def padding_factor(hidden: int, intermediate_share: int, hidden_multiple: int, intermediate_multiple: int) -> float:
    """Padded over checkpoint elements of an expert's matrices: gate_up (2 x intermediate x hidden) and
    down (hidden x intermediate) are both rounded up in the same two dimensions."""
    h = math.ceil(hidden / hidden_multiple) * hidden_multiple
    i = math.ceil(intermediate_share / intermediate_multiple) * intermediate_multiple
    return h * i / (hidden * intermediate_share)


def extra_weight_bytes(catalog: Catalog, engine: str, quant_id: str, accel: Accelerator, expert_bytes_per_gpu: float,
                       *, arch: Architecture | None = None, tp: int = 1, expert_parallel: bool = False,
                       release: str | None = None, kernel: str | None = None) -> tuple[float, str | None]:
    """Bytes per GPU the MoE kernel of ``engine`` at ``release`` allocates beyond ``expert_bytes_per_gpu``
    of checkpoint experts on ``accel`` (``kernel``: the one the install ran, else the release's rule),
    and a note naming the kernel; 0 where the GPU runs the format natively or no kernel is described."""
    fmt = catalog.quantization(quant_id).native_format
    if not expert_bytes_per_gpu or fmt is None or fmt in accel.native_formats:
        return 0.0, None
    picked = moe_kernel(catalog, engine, fmt, accel.architecture, release, kernel,
                        model_type=arch.model_type if arch is not None else None)
    if picked is None:
        return 0.0, None
    k, rule = picked
    factor = 1.0
    if arch is not None and arch.moe is not None and arch.moe.expert_intermediate_size:
        share = arch.moe.expert_intermediate_size // (1 if expert_parallel else tp)
        factor = padding_factor(arch.hidden_size, max(share, 1), k.hidden_multiple, k.intermediate_multiple)
    copies = catalog.constant(k.extra_scale_copies_constant) if k.extra_scale_copies_constant else 0.0
    bits = catalog.quantization(fmt).bits_per_weight.value  # the native format's block: 4-bit values + a scale
    scale_share = (bits - 4) / bits  # the scale's share of each block
    extra = expert_bytes_per_gpu * (factor - 1.0) + copies * expert_bytes_per_gpu * factor * scale_share
    if not extra:
        return 0.0, None
    why = f"the {rule.id} rule: {rule.install}" if rule else "as the deployment names it"
    parts = [f"experts padded x{factor:.4f}"] if factor != 1.0 else []
    if copies:
        parts.append(f"{copies:g} extra copy of the expert block scales")
    return extra, (f"{engine} runs the {fmt} experts on {accel.name} with {k.name} ({why}): "
                   f"{', '.join(parts)}: +{extra / GiB:.2f} GiB per GPU")


def _aligned(*pieces: float) -> int:
    """Bytes of one workspace request: each piece rounded up to 256 bytes (WorkspaceManager.get_simultaneous)."""
    return sum(math.ceil(p / 256) * 256 for p in pieces)


def expert_input_width(arch: Architecture) -> int:
    """The width of the activations the routed experts take and return (the fused-MoE kernel's K): the latent
    width of a LatentMoE model, whose experts work behind a hidden -> latent projection, else the hidden size."""
    return arch.moe.latent_size if arch.moe is not None and arch.moe.latent_size else arch.hidden_size


def expert_batch(arch: Architecture, *, tokens: int, tp: int, expert_parallel: bool,
                 data_parallel: int = 1) -> tuple[int, int, str]:
    """The tokens one MoE layer's kernel gets from a batch of ``tokens`` per data-parallel rank, the GPU's share
    of an expert's intermediate size, and how the batch was taken. ``data_parallel``: the ranks whose tokens the
    dispatch all-gathers onto every GPU's experts (1: none); under expert parallelism each GPU holds whole
    experts, without it the experts' tensor-parallel group spans TP x those ranks."""
    dp = max(data_parallel, 1)
    share = max(arch.moe.expert_intermediate_size // (1 if expert_parallel else tp * dp), 1)
    said = f"({dp} DP ranks × {tokens:,} tokens, all-gathered)" if dp > 1 else f"{tokens:,} tokens"
    return tokens * dp, share, said


def modular_workspace(shapes: str, *, tokens: int, topk: int, inter: int, width: int, element_bytes: float,
                      gate_rows: int = 2, grouped: int = 1) -> tuple[int, str]:
    """Bytes of vLLM's modular MoE kernel's two workspaces for ``tokens`` tokens, by the experts'
    workspace_shapes, and how they were sized (``inter``: the GPU's share I of an expert's intermediate size;
    ``width``: the experts' input width K, expert_input_width). ``marlin`` holds top-k x (max(I, K) +
    max(2I, K)) elements per token whatever the activation; ``triton`` top-k x (max(I, K) + max(gI, K)), g the
    gate/up rows per intermediate row (``gate_rows``: 2 gated, 1 for a plain activation, whose output is as
    wide as its input); ``humming`` max(K, top-k x I, ``grouped`` x K) + top-k x max(K, gI), ``grouped`` the
    top-k under expert parallelism (its grouped GEMM) and 1 otherwise. Each piece is rounded up to 256 bytes."""
    if shapes == "humming":  # output, down_output, quanted_down_input, gate_up_output, quanted input, alternating
        total = _aligned(tokens * max(width, topk * inter, grouped * width) * element_bytes,
                         tokens * topk * max(width, gate_rows * inter) * element_bytes)
        return total, (f"(max({width}, {topk} × {inter}, {grouped} × {width}) + top-{topk} × max({width}, "
                       f"{gate_rows} × {inter})) × {element_bytes:g} B")
    rows = gate_rows if shapes == "triton" else 2  # MarlinExperts sizes workspace2 by 2N for every activation
    total = _aligned(tokens * topk * max(inter, width) * element_bytes, tokens * topk * max(rows * inter, width) * element_bytes)
    up = f"{rows} × {inter}" if rows > 1 else f"{inter}"
    return total, f"top-{topk} × (max({inter}, {width}) + max({up}, {width})) × {element_bytes:g} B"


def shared_request_bytes(req: SharedWorkspaceRequest, arch: Architecture, *, context_tokens: int, tokens: int,
                         release: str | None) -> tuple[int, str]:
    """Bytes of one of the model's other requests of the kept workspace (SharedWorkspaceRequest), and its sum."""
    c, window = arch.compressed, arch.sliding_window or 0
    if c is None:
        return 0, ""
    if req.shapes == "deepseek_v4_prefill_gather":
        rows = math.ceil(context_tokens / c.csa_ratio) + window + tokens
        pieces = [req.rows * rows * arch.head_dim * req.element_bytes]
        said = f"{req.rows} × ({rows - window - tokens} + {window} + {tokens}) × {arch.head_dim} × {req.element_bytes:g} B"
        if req.index_table_from and (release is None or release_key(release) >= release_key(req.index_table_from)):
            width = math.ceil((c.index_topk + window) / 128) * 128
            pieces += [tokens * width * 4, tokens * 4]
            said += f" + int32 index tables of {tokens} × ({width} + 1)"
        return _aligned(*pieces), f"the attention's prefill gather {said}"
    keys = req.rows * context_tokens // c.csa_ratio
    total = _aligned(keys * c.index_head_dim * req.element_bytes, keys * 4, req.extra_bytes)
    return total, (f"the indexer's key gather {keys:,} × ({c.index_head_dim} × {req.element_bytes:g} + 4) B + "
                   f"{req.extra_bytes / MiB:g} MiB")


def workspace_bytes(catalog: Catalog, engine: str, quant_id: str, accel: Accelerator, tokens: int, *,
                    arch: Architecture | None, tp: int = 1, expert_parallel: bool = False, release: str | None = None,
                    kernel: str | None = None, data_parallel: int = 1,
                    context_tokens: int | None = None) -> tuple[float, str | None]:
    """Bytes per GPU of the workspace the release's MoE kernel keeps after a forward pass of ``tokens``
    tokens per data-parallel rank (its start-up profile: max_num_batched_tokens; ``data_parallel``: the ranks
    whose tokens meet on the experts, memory/expert_split.py), where its rule describes one, and a note; 0 where the format runs natively, its rule states no workspace or ``kernel`` names
    another kernel. The buffer is one: where the model's attention asks it for more at ``context_tokens``
    (the rule's shared_with), the largest request is kept."""
    fmt = catalog.quantization(quant_id).native_format
    if fmt is None or fmt in accel.native_formats or arch is None or arch.moe is None:
        return 0.0, None
    picked = moe_kernel(catalog, engine, fmt, accel.architecture, release, model_type=arch.model_type)
    if picked is None or picked[1] is None or picked[1].workspace is None or kernel not in (None, picked[0].id):
        return 0.0, None
    k, rule = picked
    ws = rule.workspace
    gathered, share, batch = expert_batch(arch, tokens=tokens, tp=tp, expert_parallel=expert_parallel,
                                          data_parallel=data_parallel if ws.data_parallel_gather else 1)
    inter = math.ceil(share / k.intermediate_multiple) * k.intermediate_multiple
    topk = arch.moe.experts_per_token
    width = math.ceil(expert_input_width(arch) / k.hidden_multiple) * k.hidden_multiple
    moe, shown = modular_workspace(ws.shapes, tokens=gathered, topk=topk, inter=inter, width=width,
                                   element_bytes=ws.element_bytes, gate_rows=arch.mlp_projections - 1,
                                   grouped=topk if expert_parallel else 1)
    parts = [(moe, f"the {k.name} MoE kernel's {batch} × {shown}")]
    number = parse_engine_version(release)[0] if release else None
    for req in ws.shared_with if context_tokens else ():
        parts.append(shared_request_bytes(req, arch, context_tokens=context_tokens, tokens=tokens, release=number))
    total = max(size for size, _ in parts)
    sources = ", ".join(dict.fromkeys((*ws.sources, *(q for r in ws.shared_with for q in r.sources))))
    said = "; ".join(f"{what} = {size / GiB:.2f} GiB" for size, what in parts if what)
    return float(total), (f"{engine} keeps one workspace after the start-up profile, as large as its largest request "
                          f"({rule.id}: {said}; {sources}): +{total / GiB:.2f} GiB in the activation peak")
