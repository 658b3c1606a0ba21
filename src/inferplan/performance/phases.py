"""Phase times on one GPU of an instance (one pipeline stage): a prefill chunk and a decode step.

A step takes the time of moving its bytes and of doing its FLOPs (unpacking super-block weights
included) at the engine's achievable rates, combined as their power mean of a fitted order (about
the longer far from the ridge, more than either near it: ``overlapped``), plus communication — tensor-parallel all-reduces (two per layer: a ring over the scale-up
link, hierarchical once the group spans domains), expert all-to-alls (or, for a MoE tensor-parallel group over
the data-parallel ranks, an all-gather and a reduce-scatter per MoE layer) and pipeline-stage hops, over
the scale-out network where they leave the scale-up domain — and a fixed per-step overhead (kernel launches, sampling, scheduling) that dominates small
models on fast GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.memory.kv_cache import KvLayout
from inferplan.performance.rates import Rates
from inferplan.performance.work import ModelWork


@dataclass(frozen=True)
class StepTime:
    memory_s: float
    compute_s: float
    comm_s: float
    overhead_s: float
    overlap_exponent: float  # how memory and compute time combine (``overlapped``)
    padding_s: float = 0.0  # of compute_s: the rows weight GEMMs pad to their tiles (Rates.gemm_min_rows)
    host_s: float = 0.0  # weights in host RAM: run by the CPU or copied over PCIe (performance/offload.py)
    host_overlapped: bool = False  # the host's work runs alongside the GPU's (KTransformers): the longer sets the step

    @property
    def seconds(self) -> float:
        gpu_s = overlapped(self.memory_s, self.compute_s, self.overlap_exponent) + self.comm_s + self.overhead_s
        return max(gpu_s, self.host_s) if self.host_overlapped else gpu_s + self.host_s

    @property
    def bound(self) -> str:
        """What the step spends most of its time on; ``overhead`` when fixed costs (launches,
        scheduling, sampling) outweigh moving bytes, computing and communicating."""
        maths = overlapped(self.memory_s, self.compute_s, self.overlap_exponent)
        parts = {"memory" if self.memory_s >= self.compute_s else "compute": maths, "communication": self.comm_s,
                 "overhead": self.overhead_s, "host memory": self.host_s}
        return max(parts, key=parts.get)


def overlapped(memory_s: float, compute_s: float, exponent: float) -> float:
    """Time of a step that moves bytes for ``memory_s`` and computes for ``compute_s``: their power
    mean of order ``exponent``, ``(m^p + c^p)^(1/p)``. An infinite exponent is the plain roofline,
    the larger of the two; a finite one charges a step near the ridge, where the two are alike,
    more than either (kernels there saturate neither the memory system nor the tensor cores), and
    leaves a step far from it at the larger."""
    top = max(memory_s, compute_s)
    if math.isinf(exponent) or math.isinf(top) or not memory_s or not compute_s:
        return top
    return top * ((memory_s / top) ** exponent + (compute_s / top) ** exponent) ** (1 / exponent)


def _crossing(group: int, rates: Rates) -> tuple[int, int]:
    """(GPUs of the group in its smallest domain, domains) a group of ``group`` GPUs spans; the
    smallest share carries the largest slice of a hierarchical collective."""
    full = max(min(group, rates.domain_gpus), 1)
    domains = -(-group // full)
    return (group - (domains - 1) * full) if domains > 1 else full, domains


def scale_out_latency_s(rates: Rates, gpus: int) -> float:
    """Latency of a small collective among ``gpus`` GPUs that leaves the scale-up domain (two-node
    measurements; more domains are an extrapolation)."""
    return rates.scale_out_latency_s + 2 * (gpus - 1) * rates.scale_out_latency_per_step_s


def _over(message: float, bytes_per_s: float) -> float:
    if message <= 0:
        return 0.0
    return message / bytes_per_s if bytes_per_s else float("inf")


def local_latency_s(rates: Rates, gpus: int) -> float:
    """Latency of a small collective among ``gpus`` GPUs of one scale-up domain."""
    return rates.link_latency_s + 2 * (gpus - 1) * rates.link_latency_per_step_s


def all_to_all_s(work: ModelWork, rates: Rates, tokens: float) -> float:
    """Expert parallelism: per MoE layer, each token of this data-parallel rank sends its hidden
    state to its k experts' GPUs and gets it back (dispatch + combine). The share bound for GPUs
    in this scale-up domain crosses the scale-up link, the rest the scale-out network, at once."""
    ep = work.expert_parallel
    if ep == 1 or not work.moe_layers:
        return 0.0
    tokens_here = tokens / work.tp  # this instance's tokens; each of its TP ranks dispatches a share
    leaving = tokens_here * work.experts_per_token * work.hidden_size * work.activation_bytes * (ep - 1) / ep
    _, domains = _crossing(ep, rates)
    if domains == 1:
        per = local_latency_s(rates, ep) + _over(leaving, rates.link_bytes_per_s)
    else:
        far = leaving * (ep - min(ep, rates.domain_gpus)) / (ep - 1)
        per = scale_out_latency_s(rates, ep) + max(_over(leaving - far, rates.link_bytes_per_s), _over(far, rates.scale_out_bytes_per_s))
    return work.moe_layers * 2 * per


def allreduce_one_s(tp: int, message: float, rates: Rates, span: int | None = None) -> float:
    """One all-reduce of ``message`` bytes over ``tp`` GPUs: a ring over the scale-up link inside
    one domain; across domains hierarchical — reduce-scatter inside each domain, an all-reduce of
    each GPU's shard over the scale-out network, all-gather inside — paying the scale-out latency.
    ``span``: the GPUs a strided group's members are spread evenly over (None: ``tp`` side by side)."""
    if tp == 1:
        return 0.0
    smallest, domains = _crossing(span or tp, rates)
    inside = min(tp, max(rates.domain_gpus, 1))
    if span is not None and domains > 1:  # a strided group: its members spread evenly over the domains
        inside = smallest = max(tp // domains, 1)
    local = 2 * (inside - 1) / inside * _over(message, rates.link_bytes_per_s) if inside > 1 else 0.0
    if domains == 1:
        return local_latency_s(rates, inside) + local
    return scale_out_latency_s(rates, tp) + local + 2 * (domains - 1) / domains * _over(message / smallest, rates.scale_out_bytes_per_s)


def gather_scatter_s(work: ModelWork, rates: Rates, tokens: float) -> float:
    """A MoE tensor-parallel group spanning the data-parallel ranks without expert parallelism (vLLM's
    default all-gather/reduce-scatter dispatch): per MoE layer each GPU all-gathers the hidden states of
    every rank's tokens (each rank taken to be as busy as this one) from the GPUs of its tensor-parallel
    rank in the other data-parallel ranks, and reduce-scatters the experts' partial outputs back. The
    two move what one ring all-reduce of the gathered batch moves, in as many steps: priced as that,
    over the ranks, which sit one tensor-parallel group apart. The hidden states move in 16 bits (a
    modular kernel that quantizes them before its dispatch moves less; the router's outputs are left out)."""
    dp = work.expert_data_parallel
    if dp == 1 or work.expert_parallel > 1 or not work.moe_layers:
        return 0.0
    gathered = tokens * dp * work.hidden_size * work.activation_bytes
    return work.moe_layers * allreduce_one_s(dp, gathered, rates, span=work.tp * dp)


def allreduce_s(work: ModelWork, rates: Rates, tokens: float) -> float:
    """Two all-reduces of the hidden state per layer of this stage (plus expert all-to-alls, or the
    all-gathers and reduce-scatters of a MoE group spanning the data-parallel ranks)."""
    one = allreduce_one_s(work.tp, tokens * work.hidden_size * work.activation_bytes, rates)
    return 2 * (work.num_layers / work.pp) * one + all_to_all_s(work, rates, tokens) + gather_scatter_s(work, rates, tokens)


def stage_hop_s(work: ModelWork, rates: Rates, tokens: float) -> float:
    """Pipeline parallelism: a stage hands its activations to the next one, over the scale-out
    network for the hops between domains (over the scale-up link when that network is not known).
    Mean cost of one hop."""
    if work.pp == 1:
        return 0.0
    # each TP rank sends its slice of the hidden state (of every residual stream, under hyper-connections)
    message = tokens * work.hidden_size * work.residual_streams * work.activation_bytes / work.tp
    bandwidth = rates.link_bytes_per_s or rates.scale_out_bytes_per_s
    near = local_latency_s(rates, 2) + (_over(message, bandwidth) if bandwidth else 0.0)  # no link known: latency only
    _, domains = _crossing(work.tp * work.pp, rates)
    if domains == 1 or not rates.scale_out_bytes_per_s:
        return near
    far_hops = min(domains, work.pp)  # the chain's crossings and the wrap back to the first stage
    far = scale_out_latency_s(rates, 2) + _over(message, rates.scale_out_bytes_per_s)
    return (far_hops * far + (work.pp - far_hops) * near) / work.pp


def overhead_s(work: ModelWork, rates: Rates, sequences: float = 1.0) -> float:
    """Time per step beside the maths: a fixed part, kernel launches per decoder layer of the stage
    (more for a mixture-of-experts layer: router, top-k, gather and combine; more again for every
    hyper-connection seam), and CPU-side work per running sequence (scheduling, input preparation,
    sampling)."""
    layers_s = rates.layer_overhead_s * work.num_layers / work.pp + rates.moe_layer_overhead_s * work.moe_layers
    return rates.step_overhead_s + layers_s + rates.hc_seam_s * work.hc_seams + rates.seq_overhead_s * sequences


def decode_step(work: ModelWork, layout: KvLayout, rates: Rates, *, batch: float, context: float,
                tokens_per_seq: int = 1, prefill_tokens: float = 0.0, block_tokens: int = 1,
                micro_batch: float | None = None) -> StepTime:
    """One decode iteration for ``batch`` sequences at mean ``context`` (optionally verifying
    ``tokens_per_seq`` speculative tokens each, and fusing ``prefill_tokens`` of chunked prefill),
    its tokens in micro-batches of ``micro_batch`` (llama.cpp's n_ubatch) when it has more."""
    tokens = batch * tokens_per_seq
    kv_bytes = batch * layout.read_bytes_per_gpu(int(context))
    parts = micro_batches(tokens + prefill_tokens, micro_batch)
    read = sum(n * work.weights_read_per_gpu(t) for t, n in parts)
    weight_bytes = read + work.activation_bytes_per_gpu(tokens + prefill_tokens)
    padding_s = padding_flops(work, rates, parts) / rates.achievable_flop_per_s
    flops = work.linear_flops_per_gpu(tokens + prefill_tokens, tokens) + work.unpack_flops_per_gpu(read, rates.unpack_flops_per_weight)
    attention = (work.attention_flops_per_gpu(tokens, context, prefill=False)
                 + work.attention_flops_per_gpu(prefill_tokens, context, prefill=True))
    return StepTime(
        memory_s=(weight_bytes + kv_bytes) / rates.achievable_bytes_per_s,
        compute_s=flops / rates.achievable_flop_per_s + attention / rates.achievable_attention_flop_per_s + padding_s,
        comm_s=allreduce_s(work, rates, tokens + prefill_tokens) + stage_hop_s(work, rates, tokens + prefill_tokens),
        overhead_s=micro_batch_overhead_s(work, rates, batch, parts),
        overlap_exponent=rates.overlap_exponent,
        padding_s=padding_s,
        host_s=host_s(work, parts, kv_bytes),
        host_overlapped=work.host is not None and work.host.overlapped,
    )


def host_s(work: ModelWork, parts: list[tuple[float, float]], kv_bytes: float) -> float:
    """Time of a step's micro-batches ``parts`` on the weights the deployment keeps in host RAM."""
    if work.host is None:
        return 0.0
    total = sum(t * n for t, n in parts) or 1.0
    handover_s = work.host.handover_s(work.moe_layers)
    return sum(n * (work.host.step_s(t, work.touched_expert_share(t), kv_bytes * t / total) + handover_s) for t, n in parts)


def padding_flops(work: ModelWork, rates: Rates, parts: list[tuple[float, float]]) -> float:
    """FLOPs the weight GEMMs of a step run as ``parts`` micro-batches pad to their tiles."""
    return sum(n * work.padding_flops_per_gpu(t, rates.gemm_min_rows, rates.weight_gemm_row_blocks) for t, n in parts)


def micro_batch_overhead_s(work: ModelWork, rates: Rates, sequences: float, parts: list[tuple[float, float]]) -> float:
    """A step's fixed costs when it runs as ``parts`` micro-batches: the per-step and per-layer costs
    for each (every micro-batch is a graph of its own), the per-sequence costs once."""
    return overhead_s(work, rates, sequences) + (sum(n for _, n in parts) - 1) * overhead_s(work, rates, 0.0)


def micro_batches(tokens: float, micro_batch: float | None) -> list[tuple[float, float]]:
    """(tokens, how many) of the micro-batches a chunk of ``tokens`` runs in: whole ones of
    ``micro_batch`` tokens and the remainder (the whole chunk when not split)."""
    size = min(micro_batch or tokens, tokens)
    whole = math.floor(tokens / size + 1e-9)
    rest = tokens - whole * size
    return [(size, whole)] + ([(rest, 1)] if rest > 1e-6 else [])


def prefill(work: ModelWork, layout: KvLayout, rates: Rates, *, tokens: float, prior_context: float = 0.0,
            micro_batch: float | None = None) -> StepTime:
    """Prefill ``tokens`` new tokens of one sequence after ``prior_context`` cached ones, in
    micro-batches of ``micro_batch`` tokens (llama.cpp's n_ubatch; the whole chunk when not given):
    each reads the weights it touches again and pays the per-step overheads."""
    mean_context = prior_context + tokens / 2
    parts = micro_batches(tokens, micro_batch)
    read = sum(n * work.weights_read_per_gpu(t) for t, n in parts)
    padding_s = padding_flops(work, rates, parts) / rates.achievable_flop_per_s
    flops = work.linear_flops_per_gpu(tokens, 1) + work.unpack_flops_per_gpu(read, rates.unpack_flops_per_weight)
    attention = work.attention_flops_per_gpu(tokens, mean_context, prefill=True, spread=tokens / 2)
    kv_write = layout.sequence_bytes_per_gpu(int(prior_context + tokens), 1)
    return StepTime(
        memory_s=(read + work.activation_bytes_per_gpu(tokens) + kv_write) / rates.achievable_bytes_per_s,
        compute_s=flops / rates.achievable_flop_per_s + attention / rates.achievable_attention_flop_per_s + padding_s,
        comm_s=allreduce_s(work, rates, tokens) + stage_hop_s(work, rates, tokens),
        overhead_s=micro_batch_overhead_s(work, rates, 1.0, parts),
        overlap_exponent=rates.overlap_exponent,
        padding_s=padding_s,
        host_s=host_s(work, parts, 0.0),
        host_overlapped=work.host is not None and work.host.overlapped,
    )
