"""Phase times on one GPU of an instance (one pipeline stage): a prefill chunk and a decode step.

A step takes the longer of moving its bytes and doing its FLOPs at the engine's achievable
rates, plus tensor-parallel all-reduces (two per layer, ring algorithm over the scale-up link)
and a fixed per-step overhead (kernel launches, sampling, scheduling) that dominates small
models on fast GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.memory.kv_cache import KvLayout
from inferplan.performance.rates import Rates
from inferplan.performance.work import ModelWork

ACTIVATION_BYTES = 2  # all-reduced activations are 16-bit


@dataclass(frozen=True)
class StepTime:
    memory_s: float
    compute_s: float
    comm_s: float
    overhead_s: float

    @property
    def seconds(self) -> float:
        return max(self.memory_s, self.compute_s) + self.comm_s + self.overhead_s

    @property
    def bound(self) -> str:
        parts = {"memory": self.memory_s, "compute": self.compute_s, "communication": self.comm_s}
        return max(parts, key=parts.get)


def all_to_all_s(work: ModelWork, rates: Rates, tokens: float) -> float:
    """Expert parallelism: per MoE layer, each token's hidden state goes to its k experts' GPUs and
    comes back (dispatch + combine); the share leaving this GPU crosses the scale-up link."""
    ep = work.expert_parallel
    if ep == 1 or not work.moe_layers:
        return 0.0
    tokens_here = tokens / max(ep // work.tp, 1)  # attention data parallelism spreads the batch
    message = tokens_here * work.experts_per_token * work.hidden_size * ACTIVATION_BYTES * (ep - 1) / ep
    per = 2 * (rates.link_latency_s + (message / rates.link_bytes_per_s if rates.link_bytes_per_s else float("inf")))
    return work.moe_layers * per


def allreduce_s(work: ModelWork, rates: Rates, tokens: float) -> float:
    """Two ring all-reduces of the hidden state per layer of this stage (plus expert all-to-alls)."""
    if work.tp == 1:
        return all_to_all_s(work, rates, tokens)
    message = tokens * work.hidden_size * ACTIVATION_BYTES
    per = rates.link_latency_s + (
        2 * (work.tp - 1) / work.tp * message / rates.link_bytes_per_s if rates.link_bytes_per_s else float("inf")
    )
    return 2 * (work.num_layers / work.pp) * per + all_to_all_s(work, rates, tokens)


def overhead_s(work: ModelWork, rates: Rates, sequences: float = 1.0) -> float:
    """Time per step beside the maths: a fixed part, kernel launches per decoder layer of the stage
    (more for a mixture-of-experts layer: router, top-k, gather and combine), and CPU-side work per
    running sequence (scheduling, input preparation, sampling)."""
    layers_s = rates.layer_overhead_s * work.num_layers / work.pp + rates.moe_layer_overhead_s * work.moe_layers
    return rates.step_overhead_s + layers_s + rates.seq_overhead_s * sequences


def decode_step(work: ModelWork, layout: KvLayout, rates: Rates, *, batch: float, context: float,
                tokens_per_seq: int = 1, prefill_tokens: float = 0.0, block_tokens: int = 1) -> StepTime:
    """One decode iteration for ``batch`` sequences at mean ``context`` (optionally verifying
    ``tokens_per_seq`` speculative tokens each, and fusing ``prefill_tokens`` of chunked prefill)."""
    tokens = batch * tokens_per_seq
    kv_bytes = batch * layout.read_bytes_per_gpu(int(context))
    weight_bytes = work.weights_read_per_gpu(tokens + prefill_tokens) + work.activation_bytes_per_gpu(tokens + prefill_tokens)
    flops = (
        work.linear_flops_per_gpu(tokens + prefill_tokens, tokens)
        + work.attention_flops_per_gpu(tokens, context, prefill=False)
        + work.attention_flops_per_gpu(prefill_tokens, context, prefill=True)
    )
    return StepTime(
        memory_s=(weight_bytes + kv_bytes) / rates.achievable_bytes_per_s,
        compute_s=flops / rates.achievable_flop_per_s,
        comm_s=allreduce_s(work, rates, tokens + prefill_tokens),
        overhead_s=overhead_s(work, rates, batch),
    )


def prefill(work: ModelWork, layout: KvLayout, rates: Rates, *, tokens: float, prior_context: float = 0.0) -> StepTime:
    """Prefill ``tokens`` new tokens of one sequence after ``prior_context`` cached ones."""
    mean_context = prior_context + tokens / 2
    flops = work.linear_flops_per_gpu(tokens, 1) + work.attention_flops_per_gpu(tokens, mean_context, prefill=True,
                                                                                 spread=tokens / 2)
    kv_write = layout.sequence_bytes_per_gpu(int(prior_context + tokens), 1)
    return StepTime(
        memory_s=(work.weights_read_per_gpu(tokens) + work.activation_bytes_per_gpu(tokens) + kv_write) / rates.achievable_bytes_per_s,
        compute_s=flops / rates.achievable_flop_per_s,
        comm_s=allreduce_s(work, rates, tokens),
        overhead_s=overhead_s(work, rates),
    )
