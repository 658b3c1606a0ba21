"""The batch limits a benchmark tool chose for a run that states none.

``trtllm-bench throughput`` run without ``--max_batch_size`` / ``--max_num_tokens`` (as TensorRT-LLM's
performance overview runs it) sizes both from the KV cache it expects to have for the dataset's mean
input + output length (source ``eng-trtllm-bench-tuning``: ``bench/build/tuning.py``
``calc_engine_setting`` and ``finetune_setting``, ``bench/build/build.py``
``get_benchmark_engine_settings``, ``bench/benchmark/utils/general.py`` ``get_settings``; v1.0 era):

- only for the formats it tunes (``tuned_formats``; others keep the engine's defaults, which the
  catalogue refuses to tag): the checkpoint's size is its stored element count × bytes per element
  (NVFP4 0.5, FP8 1, 16-bit 2) — NVFP4 checkpoints store two weights per one-byte element, so the
  tool counts them about half;
- the KV cache is ``(GPUs × device memory − that size) × the free-memory fraction`` (the throughput
  command's ``--kv_cache_free_gpu_mem_fraction``, 0.90 unless given: the perf overview used 0.95 "in
  many cases", per row unknown; at 0.95, 24 of the first 58 rows get larger limits and one prediction moves
  by more than a point, docs/speed.md §4), a token costs
  ``2 × layers × max(TP, KV heads) × head size × KV bytes``, and the requests it holds at ISL + OSL
  are ``kv_requests``;
- per pipeline micro-batch, ``min(kv_requests, 4096) / PP`` sequences, rounded up (to 32 below 256,
  at least 64; to 128 below 1024; else to 256), and ``that × (1 + ISL / OSL)`` tokens, at most 32,768,
  rounded up (at least 2,048; to 256 below 4,096; to 512 below 8,192; else to 1,024);
- chunked prefill is off by default, so the token budget is raised to the longest prompt plus the
  batch size where it is shorter.

Its numbers (the fraction, the caps, the rounding steps) are the catalogue's ``bench_tunings`` record
``trtllm-bench`` (``measurements/benchmark_clients.yaml``), each with its source.

The engine then holds ``PP × max_batch_size`` sequences at most (``engines.yaml`` ``pp_batch_limits``),
and fewer where its real KV cache holds fewer: the planner's own memory plan decides that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.catalog.latency_schema import BenchTuning, RoundingStep
from inferplan.catalog.loader import Catalog
from inferplan.catalog.points_schema import SpeedPoint
from inferplan.errors import InvalidScenarioError
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.units import fmt_gib

TOOL = "trtllm-bench"  # its settings: the catalogue's bench_tunings record of this id


@dataclass(frozen=True)
class BenchLimits:
    max_batch_size: int  # sequences per pipeline micro-batch
    max_num_tokens: int  # tokens per micro-batch step
    kv_requests: float  # requests the tool expects its KV cache to hold at ISL + OSL


def _round_up(raw: float, steps: tuple[RoundingStep, ...], least: float) -> int:
    step = next(s.multiple for s in steps if s.below is None or raw < s.below)
    return max(int(least), step * math.ceil(raw / step))


def _round_batch(raw: float, tuning: BenchTuning) -> int:
    return _round_up(raw, tuning.batch_steps, tuning.least_batch.value)


def _round_tokens(raw: float, tuning: BenchTuning) -> int:
    return _round_up(raw, tuning.token_steps, tuning.least_tokens.value)


def trtllm_bench_limits(catalog: Catalog, point: SpeedPoint) -> BenchLimits:
    """max_batch_size and max_num_tokens as trtllm-bench sets them for ``point``'s run."""
    tuning = catalog.bench_tunings.records[TOOL]
    spec = resolve_model(catalog, point.model)
    arch = spec.architecture
    if arch is None or spec.architecture_is_proxy:
        raise InvalidScenarioError(f"{point.model}: trtllm-bench sizes its batch from the model's config, which the "
                                   "catalogue does not hold", field="batch_limits_by", allowed="a model with a config")
    tp, pp = point.tensor_parallel_size, point.pipeline_parallel_size
    params = count_params(arch)
    bits = catalog.quantization(point.quantization).bits_per_weight.value
    # sub-byte and 8-bit weights (with their block scales) sit in one-byte elements; the rest one per weight
    stored = params.linear * (bits / 8 if bits <= 8 else 1) + (params.total - params.linear)
    checkpoint_bytes = stored * tuning.tuned_formats[point.quantization].value  # bytes per stored element
    kv_bits = catalog.kv_cache_dtype(point.kv_cache_dtype).bits_per_element.value
    token_bytes = 2 * arch.num_layers * max(tp, arch.num_kv_heads) * arch.head_dim * kv_bits / 8
    device, _ = device_total_bytes(catalog, catalog.accelerator(point.accelerator))
    if checkpoint_bytes >= tp * pp * device:
        raise InvalidScenarioError(
            f"trtllm-bench would refuse this run: it counts the checkpoint at {fmt_gib(checkpoint_bytes, '.1f')}, "
            f"more than the {tp * pp} GPUs' {fmt_gib(tp * pp * device, '.1f')}", field="batch_limits_by",
            allowed="a run whose checkpoint fits the GPUs")
    cache_bytes = (tp * pp * device - checkpoint_bytes) * tuning.kv_free_fraction.value
    isl, osl = max(point.input_tokens, 1), max(point.output_tokens, 1)
    kv_requests = cache_bytes / (token_bytes * (isl + osl))
    if kv_requests < 1:
        raise InvalidScenarioError(f"trtllm-bench would refuse this run: its KV cache estimate holds {kv_requests:.2f} "
                                   "requests", field="batch_limits_by", allowed="a run whose KV cache holds a request")
    raw_batch = min(kv_requests, tuning.max_sequences.value) / pp
    batch = _round_batch(raw_batch, tuning)
    tokens = max(_round_tokens(min(raw_batch * (1 + isl / osl), tuning.max_tokens.value), tuning), isl + batch)
    return BenchLimits(batch, tokens, kv_requests)

