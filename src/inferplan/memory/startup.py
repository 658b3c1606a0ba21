"""Whether an engine gets through start-up once its KV cache is sized.

vLLM V1 fills ``total × gpu_memory_utilization`` with weights, the profiled activation peak and the
KV cache; afterwards it captures CUDA graphs and warms the sampler up over ``max_num_seqs`` rows of
full-vocab logits (``catalog/startup_rules.py``). Those allocations and the CUDA context made before
the first memory reading must fit in ``total × (1 − gpu_memory_utilization)``, or the engine stops
with an out-of-memory error after printing its KV cache size. ``startup_check`` compares the two
per GPU by the release's rule; ``startup_fix`` gives the largest fraction, and the most sequences at
the stated fraction, with which the same start-up fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.memory.cuda_graphs import model_runner, runner_counts_graphs
from inferplan.memory.budget_parts import ASSUMED_VOCAB
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.runner_buffers import runner_arrays
from inferplan.units import GiB

FRACTION_STEP = 0.01  # a suggested memory fraction is a whole number of hundredths


class HeadroomCheck:
    """What start-up needs against the headroom it has, per GPU (subclasses give the two)."""

    headroom_bytes_per_gpu: float
    needed_bytes_per_gpu: float

    @property
    def starts(self) -> bool:
        return self.needed_bytes_per_gpu <= self.headroom_bytes_per_gpu

    @property
    def shortfall_bytes_per_gpu(self) -> float:
        return max(self.needed_bytes_per_gpu - self.headroom_bytes_per_gpu, 0.0)


@dataclass(frozen=True)
class StartupCheck(HeadroomCheck):
    """The memory outside the fraction on each GPU, and what start-up allocates there."""

    headroom_bytes_per_gpu: float  # total × (1 − fraction)
    context_bytes_per_gpu: float
    graph_bytes_per_gpu: float  # captured after the KV cache is sized (0: counted inside the fraction)
    sampler_bytes_per_gpu: float  # the sampler warm-up over max_num_seqs rows
    sampler_bytes_per_seq: float  # one row of it
    other_bytes_per_gpu: float = 0.0  # other processes' memory, where the rule does not count it in the fraction
    # Model Runner V2's per-slot vocabulary arrays over max_num_seqs slots, where the profile does not count them
    runner_bytes_per_gpu: float = 0.0
    runner_bytes_per_seq: float = 0.0  # one slot of them

    @property
    def fixed_bytes_per_gpu(self) -> float:
        """What start-up needs whatever max_num_seqs is."""
        return self.context_bytes_per_gpu + self.other_bytes_per_gpu + self.graph_bytes_per_gpu

    @property
    def needed_bytes_per_gpu(self) -> float:
        return self.fixed_bytes_per_gpu + self.sampler_bytes_per_gpu + self.runner_bytes_per_gpu

    def note(self, rule: MemoryRule, settings: EngineSettings) -> str:
        parts = [f"CUDA context {self.context_bytes_per_gpu / GiB:.2f} GiB"]
        if self.other_bytes_per_gpu:
            parts.append(f"other processes {self.other_bytes_per_gpu / GiB:.2f} GiB")
        if self.graph_bytes_per_gpu:
            parts.append(f"CUDA graphs {self.graph_bytes_per_gpu / GiB:.2f} GiB")
        if self.runner_bytes_per_gpu:
            parts.append(f"Model Runner V2's penalty arrays {self.runner_bytes_per_gpu / GiB:.2f} GiB")
        parts.append(f"sampler warm-up over {settings.max_num_seqs:,} sequences {self.sampler_bytes_per_gpu / GiB:.2f} GiB")
        outcome = "fit" if self.starts else f"do not fit: start-up fails after the KV cache is sized, " \
            f"{self.shortfall_bytes_per_gpu / GiB:.2f} GiB per GPU short"
        return (f"{rule.label}: outside gpu_memory_utilization {settings.memory_fraction:g} each GPU keeps "
                f"{self.headroom_bytes_per_gpu / GiB:.2f} GiB; {', '.join(parts)} "
                f"({self.needed_bytes_per_gpu / GiB:.2f} GiB) {outcome}")


def startup_check(catalog: Catalog, rule: MemoryRule, settings: EngineSettings, arch: Architecture | None,
                  total_bytes: float, gpus_in_instance: int) -> StartupCheck | None:
    """What start-up allocates outside the fraction after the KV cache is sized, per GPU, by the
    release's rule (None: the rule states no such check)."""
    startup = rule.startup
    if startup is None:
        return None
    graphs = 0.0
    constants = startup.graph_constants or after_kv_graph_constants(rule, settings, arch)
    if constants is not None and settings.cuda_graphs:  # --enforce-eager captures none
        single, multi = constants
        graphs = catalog.constant(single if gpus_in_instance == 1 else multi)
    per_seq = 0.0
    sampler = rule.activation.sampler_constant_for(settings.topk_topp_sampler)
    if startup.sampler_warmup and sampler:
        vocab = arch.vocab_size if arch else ASSUMED_VOCAB
        per_seq = catalog.constant(sampler) * vocab
    rows = min(settings.max_num_seqs, settings.max_num_batched_tokens)
    runner, _ = model_runner(rule.model_runners, settings.release, arch, settings.model_runner)
    arrays = runner_arrays(rule, arch.vocab_size if arch else ASSUMED_VOCAB, settings.max_num_seqs, settings.release, runner)
    outside = arrays.bytes_per_gpu if arrays is not None and not arrays.counted else 0.0
    return StartupCheck(headroom_bytes_per_gpu=total_bytes * (1 - settings.memory_fraction),
                        context_bytes_per_gpu=catalog.constant(startup.context_constant),
                        graph_bytes_per_gpu=graphs, sampler_bytes_per_gpu=per_seq * rows,
                        sampler_bytes_per_seq=per_seq, other_bytes_per_gpu=(
                            0.0 if "other_processes" in rule.counted else settings.other_gpu_memory_bytes),
                        runner_bytes_per_gpu=outside, runner_bytes_per_seq=outside / settings.max_num_seqs)


@dataclass(frozen=True)
class StartupFix:
    """Settings with which the same start-up fits (None: no such value)."""

    memory_fraction: float | None  # the largest whole-hundredth gpu_memory_utilization
    max_num_seqs: int | None  # the most sequences at the stated fraction


def startup_fix(check: StartupCheck, total_bytes: float) -> StartupFix:
    """The largest fraction whose headroom holds what start-up needs, and the most warm-up rows the
    stated fraction's headroom holds."""
    fraction = math.floor((1 - check.needed_bytes_per_gpu / total_bytes) / FRACTION_STEP) * FRACTION_STEP
    room = check.headroom_bytes_per_gpu - check.fixed_bytes_per_gpu
    per_seq = check.sampler_bytes_per_seq + check.runner_bytes_per_seq
    seqs = int(room // per_seq) if per_seq else 0
    if per_seq:  # the quotient's rounding can land one row off the limit either way:
        def starts(rows: int) -> bool:  # settled by the check itself, at that many rows
            return replace(check, sampler_bytes_per_gpu=check.sampler_bytes_per_seq * rows,
                           runner_bytes_per_gpu=check.runner_bytes_per_seq * rows).starts
        seqs += starts(seqs + 1)
        seqs -= seqs > 0 and not starts(seqs)
    return StartupFix(memory_fraction=round(fraction, 2) if fraction > 0 else None,
                      max_num_seqs=seqs if seqs >= 1 else None)


def after_kv_graph_constants(rule: MemoryRule, settings: EngineSettings, arch: Architecture | None) -> tuple[str, str] | None:
    """The graph-pool constants of a model runner that estimates no graphs at the release and captures them after
    the KV cache (vLLM's Model Runner V2 before 0.29), else None."""
    runners = rule.model_runners
    runner, _ = model_runner(runners, settings.release, arch, settings.model_runner)
    if runners is None or runner_counts_graphs(runners, runner, settings.release):
        return None
    return runners.after_kv_graph_constants
