"""The CUDA-graph memory vLLM reserves before sizing its KV cache, computed as the engine estimates it.

``profile_cudagraph_memory`` (vLLM 0.20 and later, ``v1/worker/gpu_model_runner.py``) captures each
cudagraph mode's two largest graphs and estimates the mode as first capture + the second's increase ×
(graphs − 1); the modes share one pool, so it adds the largest first capture to every mode's increases.
PIECEWISE graphs are captured at every capture size, FULL decode graphs at the sizes from one decode
query to max_num_seqs of them (``v1/cudagraph_dispatcher.py``). With speculative decoding a decode query
is 1 + the draft tokens: the largest size scales by it, and with FULL decode graphs every size is rounded
up to a multiple of it (``compilation.py`` ``adjust_cudagraph_sizes_for_spec_decode``). The capture sizes and the bytes per graph are data
(``catalog/graph_rules.py``); a printed estimate gives only a total, so the first capture is taken as one
more graph. Without a figure for the model the rule's flat constant is used.

Which model runner a release picks (``model_runner``) is data too: Model Runner V2 counts no estimate before the
release the rule names (its ``profile_cudagraph_memory`` returns 0 and the graphs are captured after the KV cache).
"""

from __future__ import annotations

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.graph_rules import CaptureSizes, CudaGraphEstimate, ModelRunners
from inferplan.units import GiB


def capture_sizes(sizes: CaptureSizes, max_num_seqs: int, max_num_batched_tokens: int, decode_query_len: int = 1,
                  full_decode: bool = False) -> list[int]:
    """The batch sizes vLLM captures graphs at by default (``config/vllm.py`` ``_set_cudagraph_sizes``), for
    decode queries of ``decode_query_len`` tokens, rounded to multiples of it where FULL decode graphs run."""
    largest = min(max_num_seqs * decode_query_len * sizes.per_seq, sizes.limit, max_num_batched_tokens)
    found = [s for s in sizes.small if s <= largest]
    found += range(sizes.step_below, min(largest + 1, sizes.boundary), sizes.step_below) if largest >= sizes.step_below else []
    found += range(sizes.boundary, largest + 1, sizes.step_from) if largest >= sizes.boundary else []
    if max_num_batched_tokens <= largest:
        found.append(max_num_batched_tokens)
    if full_decode and decode_query_len > 1:
        top = max(found)
        rounded = {-(-s // decode_query_len) * decode_query_len for s in found}
        found = [s for s in rounded if s <= top] or ([decode_query_len] if decode_query_len <= top else [])
    return sorted(set(found))


def graphs_by_mode(estimate: CudaGraphEstimate, max_num_seqs: int, max_num_batched_tokens: int,
                   decode_query_len: int = 1) -> dict[str, int]:
    """How many graphs each cudagraph mode captures: PIECEWISE at every size, FULL decode graphs at the
    sizes from one decode query to max_num_seqs of them."""
    sizes = capture_sizes(estimate.capture_sizes, max_num_seqs, max_num_batched_tokens, decode_query_len,
                          full_decode=estimate.mode != "piecewise")
    decode = len([s for s in sizes if decode_query_len <= s <= max_num_seqs * decode_query_len])
    return {"full_and_piecewise": {"PIECEWISE": len(sizes), "FULL": decode},
            "piecewise": {"PIECEWISE": len(sizes)},
            "full_decode_only": {"FULL": decode}}[estimate.mode]


def estimated_graph_bytes(estimate: CudaGraphEstimate | None, arch: Architecture | None, max_num_seqs: int,
                          max_num_batched_tokens: int, decode_query_len: int = 1) -> tuple[float, str] | None:
    """The engine's estimate per GPU and a note naming the figure used; None where no source gives the
    model's bytes per graph (the rule's flat constant applies)."""
    if estimate is None:
        return None
    figure = estimate.bytes_for(arch.model_type if arch is not None else None)
    if figure is None:
        return None
    counts = graphs_by_mode(estimate, max_num_seqs, max_num_batched_tokens, decode_query_len)
    per = figure.bytes_per_graph
    total = per + sum(per * (n - 1) for n in counts.values() if n)
    shown = ", ".join(f"{mode}={n}" for mode, n in counts.items())
    return total, (f"CUDA-graph estimate as the engine profiles it: {shown} graphs at max_num_seqs {max_num_seqs} "
                   f"(max_num_batched_tokens {max_num_batched_tokens}, {decode_query_len} token(s) per decode query); first capture + (graphs − 1) per mode × "
                   f"{per / GiB * 1024:.1f} MiB per graph ({', '.join(figure.sources)}, {figure.kind}) = "
                   f"{total / GiB:.2f} GiB")


def model_runner(runners: ModelRunners | None, release: str | None, arch: Architecture | None,
                 stated: str | None = None) -> tuple[str | None, str]:
    """The model runner a release runs the model on ("V1"/"V2"; None: the rule names no choice) and a note
    saying why: ``stated`` (Deployment.model_runner, launched with VLLM_USE_V2_MODEL_RUNNER) where given, else the
    release's default for the model's architecture, mixture of experts, hybrid layers and quantization."""
    if runners is None or release is None:
        return None, ""
    if stated is not None:
        return stated.upper(), f"Model Runner {stated.upper()}, as stated (model_runner)"
    entry = runners.default_at(release)
    if entry is None:
        return None, ""
    if arch is None:
        runner = "V2" if entry.v2_all else "V1"
        return runner, f"Model Runner {runner}: vLLM {release}'s default where the model's architecture is not known"
    hybrid = arch.linear is not None or arch.mamba is not None
    v2 = entry.picks_v2(arch.hf_architecture, arch.moe is not None, hybrid, arch.quant is not None)
    traits = ", ".join(t for t in (arch.hf_architecture, "MoE" if arch.moe else "dense", "hybrid" if hybrid else "",
                                   "quantized checkpoint" if arch.quant else "") if t)
    return ("V2" if v2 else "V1"), (f"Model Runner {'V2' if v2 else 'V1'}: vLLM {release}'s default for {traits} "
                                    f"({', '.join(entry.sources)}; model_runner V1 or V2 overrides it)")


def runner_counts_graphs(runners: ModelRunners | None, runner: str | None, release: str | None) -> bool:
    """Whether the runner's start-up counts a CUDA-graph estimate (V2 only from the release the rule names)."""
    return runner != "V2" or runners is None or release is None or runners.v2_estimates(release)
