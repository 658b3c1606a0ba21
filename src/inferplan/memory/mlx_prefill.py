"""The activations MLX holds while mlx-lm runs one prompt chunk (the rule: ``catalog/mlx_rules.py``).

mlx-lm's ``generate_step`` runs a prompt ``prefill_step_size`` tokens at a time and evaluates only
the KV cache of each chunk, so the output head never runs on a chunk. Within a chunk every operation
of every transformer block is encoded into Metal command buffers; each buffer keeps the arrays its
operations read until it completes, is committed after ``max_ops`` dispatches or ``max_mib`` MiB of
distinct inputs, and at most ``max_active_tasks`` committed buffers are in flight. The working set is
walked here operation by operation over mlx-lm's block: RMSNorm, the q/k/v projections (with the
per-head q/k norms where the model has them), RoPE, the cache update, fused attention (written in the
layout the output projection reads, so no copy), the output projection and residual, then the gated MLP — or, for a mixture of experts, the router, softmax,
top-k, the sort of token copies by expert, the gathered expert projections, the un-sort and the
weighted sum. Weights and the KV cache count towards a buffer's MiB but are not new memory.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.mlx_rules import CommandBufferLimits, InFlightPrefill
from inferplan.units import MiB

_ROUTER_BYTES = 4  # the router's logits, softmax and indices are float32 / uint32 arrays


@dataclass(frozen=True)
class _Read:
    array: str
    bytes: float
    new_memory: bool  # an activation (False: a weight or the KV cache, resident anyway)


@dataclass(frozen=True)
class _Op:
    reads: tuple[_Read, ...]
    writes: tuple[str, float]  # the array it allocates


def _block_ops(arch: Architecture, layer: int, tokens: int, context: int, weight_bits: float,
               act_bytes: float, kv_bytes: float) -> list[_Op]:
    """One transformer block's operations over a chunk of ``tokens`` (array names carry the layer)."""
    hid, q_w, kv_w = arch.hidden_size, arch.num_attention_heads * arch.head_dim, arch.num_kv_heads * arch.head_dim

    def act(name: str, width: float) -> _Read:
        return _Read(f"{name}@{layer}", tokens * width * act_bytes, True)

    def weight(name: str, params: float) -> _Read:
        return _Read(f"{name}@{layer}", params * weight_bits / 8, False)

    def op(out: str, width: float, *reads: _Read) -> _Op:
        return _Op(reads, (f"{out}@{layer}", tokens * width * act_bytes))

    h, h2 = act("h", hid), act("h2", hid)
    cache_k = _Read(f"K@{layer}", context * kv_w * kv_bytes, False)
    cache_v = _Read(f"V@{layer}", context * kv_w * kv_bytes, False)
    q, k = ("qn", "kn") if arch.qk_norm else ("q", "k")
    ops = [op("x", hid, h), op("q", q_w, act("x", hid), weight("Wq", hid * q_w)),
           op("k", kv_w, act("x", hid), weight("Wk", hid * kv_w)), op("v", kv_w, act("x", hid), weight("Wv", hid * kv_w))]
    if arch.qk_norm:
        ops += [op("qn", q_w, act("q", q_w)), op("kn", kv_w, act("k", kv_w))]
    ops += [op("qr", q_w, act(q, q_w)), op("kr", kv_w, act(k, kv_w)),
            _Op((cache_k, act("kr", kv_w)), (cache_k.array, 0.0)), _Op((cache_v, act("v", kv_w)), (cache_v.array, 0.0)),
            op("o", q_w, act("qr", q_w), cache_k, cache_v),
            op("a", hid, act("o", q_w), weight("Wo", q_w * hid)), op("h2", hid, h, act("a", hid)),
            op("x2", hid, h2)]
    moe = arch.moe
    if moe is not None and layer < len(moe.moe_layers) and moe.moe_layers[layer]:
        ops += _expert_ops(arch, layer, tokens, act, weight, op)
        mlp_out = "y"
        if moe.shared_intermediate_size:
            ops += _dense_mlp(moe.shared_intermediate_size, "s", act, weight, op, hid)
            ops.append(op("ys", hid, act("y", hid), act("sd", hid)))
            mlp_out = "ys"
    else:
        ops += _dense_mlp(arch.intermediate_size, "", act, weight, op, hid)
        mlp_out = "d"
    ops.append(_Op((h2, act(mlp_out, hid)), (f"h@{layer + 1}", tokens * hid * act_bytes)))
    return ops


def _dense_mlp(width: int, tag: str, act, weight, op, hid: int) -> list[_Op]:
    """gate and up projections, SiLU (in place), their product, the down projection."""
    return [op(f"{tag}g", width, act("x2", hid), weight(f"{tag}Wg", hid * width)),
            op(f"{tag}u", width, act("x2", hid), weight(f"{tag}Wu", hid * width)),
            op(f"{tag}g", width, act(f"{tag}g", width)),
            op(f"{tag}m", width, act(f"{tag}g", width), act(f"{tag}u", width)),
            op(f"{tag}d", hid, act(f"{tag}m", width), weight(f"{tag}Wd", hid * width))]


def _expert_ops(arch: Architecture, layer: int, tokens: int, act, weight, op) -> list[_Op]:
    """mlx-lm's SwitchGLU over a sorted chunk: router, softmax, top-k, sort, gather, un-sort, sum."""
    moe, hid = arch.moe, arch.hidden_size
    experts, top_k, width = moe.num_experts, moe.experts_per_token, moe.expert_intermediate_size

    def small(name: str, per_token: float) -> _Read:
        return _Read(f"{name}@{layer}", tokens * per_token * _ROUTER_BYTES, True)

    def small_op(out: str, per_token: float, *reads: _Read) -> _Op:
        return _Op(reads, (f"{out}@{layer}", tokens * per_token * _ROUTER_BYTES))

    stacked = experts * hid * width
    return [small_op("r", experts, act("x2", hid), weight("Wr", hid * experts)), small_op("p", experts, small("r", experts)),
            small_op("i", top_k, small("p", experts)), small_op("ord", top_k, small("i", top_k)),
            small_op("inv", top_k, small("ord", top_k)),
            op("xs", hid * top_k, act("x2", hid), small("ord", top_k)),
            op("eu", width * top_k, act("xs", hid * top_k), weight("Weu", stacked)),
            op("eg", width * top_k, act("xs", hid * top_k), weight("Weg", stacked)),
            op("em", width * top_k, act("eu", width * top_k), act("eg", width * top_k)),
            op("ed", hid * top_k, act("em", width * top_k), weight("Wed", stacked)),
            op("eo", hid * top_k, act("ed", hid * top_k), small("inv", top_k)),
            op("y", hid, act("eo", hid * top_k), small("p", experts))]


def _walk(ops: list[_Op], limits: CommandBufferLimits, max_active_tasks: int) -> float:
    """The most activation memory alive at once: what the in-flight buffers and the open one read,
    and what has been written and is still to be read."""
    last_read = {r.array: i for i, o in enumerate(ops) for r in o.reads}
    in_flight: list[dict[str, float]] = []
    open_reads: dict[str, float] = {}
    open_mib, open_ops, peak = 0.0, 0, 0.0
    pending: dict[str, float] = {}  # written, still to be read
    for i, o in enumerate(ops):
        for r in o.reads:
            if r.array not in open_reads:
                open_reads[r.array] = r.bytes if r.new_memory else 0.0
                open_mib += r.bytes / MiB
        open_ops += 1
        pending[o.writes[0]] = o.writes[1]
        alive = dict(pending)
        for held in (*in_flight, open_reads):
            alive.update(held)
        peak = max(peak, sum(alive.values()))
        for r in o.reads:
            if last_read[r.array] == i:
                pending.pop(r.array, None)
        if open_ops > limits.max_ops or open_mib > limits.max_mib:
            in_flight.append(open_reads)
            open_reads, open_mib, open_ops = {}, 0.0, 0
            if len(in_flight) > max_active_tasks:
                in_flight.pop(0)  # evaluation waits for the oldest buffer to complete
    return peak


@functools.lru_cache(maxsize=256)
def _peak(rule: InFlightPrefill, arch: Architecture, tokens: int, context: int, weight_bits: float,
          kv_bytes: float, limits: CommandBufferLimits) -> float:
    ops = [o for layer in range(arch.num_layers)
           for o in _block_ops(arch, layer, tokens, context, weight_bits, rule.activation_bytes, kv_bytes)]
    return _walk(ops, limits, rule.max_active_tasks)


def prefill_working_set_bytes(rule: InFlightPrefill, arch: Architecture, *, chunk_tokens: int, context_tokens: int,
                              weight_bits: float, accelerator: str | None) -> tuple[float, str]:
    """The activation memory MLX holds at the peak of one prompt chunk of ``chunk_tokens`` over a
    cache of ``context_tokens`` (kept in the activations' dtype), with weights of ``weight_bits`` per
    parameter, on ``accelerator``."""
    limits = rule.limits_for(accelerator)
    peak = _peak(rule, arch, chunk_tokens, context_tokens, weight_bits, rule.activation_bytes, limits)
    return peak, (
        f"MLX prefill working set {peak / MiB:,.0f} MiB: the activations of a {chunk_tokens:,}-token prompt chunk held by "
        f"up to {rule.max_active_tasks} committed command buffers and the open one (each committed after "
        f"{limits.max_ops} dispatches or {limits.max_mib:g} MiB of inputs on this GPU class)"
    )
