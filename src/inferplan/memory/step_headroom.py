"""Whether a prompt step's activations fit in the memory an engine leaves outside its fraction, where its rule
counts none inside it (``activation: outside_fraction``).

SGLang sizes its KV pool as (memory free at start-up) × mem_fraction_static − weights and profiles no forward pass:
the step's activations and the runtime's non-torch memory are allocated later, out of (free at start-up) ×
(1 − mem_fraction_static). Where they need more, the first long prompt runs out of memory after the pool is
allocated. A release without chunked prefill (SGLang before 0.2.13) runs a prompt whole, so its step holds the
longest prompt and the room outside the fraction bounds the context it serves. ``step_check`` compares the two
per GPU; ``fit`` marks a plan that fails it as not fitting, with the shortfall, so the longest context it offers
is one whose step fits too.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.memory.engine_budget import EngineBudget, EngineSettings
from inferplan.memory.startup import HeadroomCheck
from inferplan.units import GiB


@dataclass(frozen=True)
class StepCheck(HeadroomCheck):
    """The memory left outside the fraction on each GPU, and what a prompt step allocates there."""

    headroom_bytes_per_gpu: float  # (free at start-up) × (1 − fraction)
    activation_bytes_per_gpu: float
    runtime_bytes_per_gpu: float  # non-torch: the runtime's buffers (NCCL with more than one GPU)
    step_tokens: int

    @property
    def needed_bytes_per_gpu(self) -> float:
        return self.activation_bytes_per_gpu + self.runtime_bytes_per_gpu

    def note(self, rule: MemoryRule, settings: EngineSettings) -> str:
        outcome = "fit" if self.starts else ("do not fit: a step of that many tokens runs out of memory after the KV "
                                              f"pool is allocated, {self.shortfall_bytes_per_gpu / GiB:.2f} GiB per GPU "
                                              "short")
        return (f"{rule.label}: outside mem_fraction_static {settings.memory_fraction:g} each GPU keeps "
                f"{self.headroom_bytes_per_gpu / GiB:.2f} GiB; the activations of a {self.step_tokens:,}-token step "
                f"{self.activation_bytes_per_gpu / GiB:.2f} GiB and the runtime {self.runtime_bytes_per_gpu / GiB:.2f} GiB "
                f"({self.needed_bytes_per_gpu / GiB:.2f} GiB) {outcome}")


def step_check(catalog: Catalog, rule: MemoryRule, settings: EngineSettings, budget: EngineBudget,
               total_bytes: float) -> StepCheck | None:
    """What a prompt step allocates outside the fraction, per GPU, where the release's rule counts the activations
    there (None: the rule counts them inside its fraction, or sizes no fraction of the total)."""
    if rule.activation.model != "outside_fraction" or rule.budget != "of_total":
        return None
    in_use = (catalog.constant(rule.start_constant) if rule.start_constant else 0.0) + \
        settings.other_gpu_memory_bytes + settings.kept_free_bytes
    return StepCheck(headroom_bytes_per_gpu=max(total_bytes - in_use, 0.0) * (1 - settings.memory_fraction),
                     activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
                     runtime_bytes_per_gpu=budget.overhead_bytes_per_gpu, step_tokens=settings.max_num_batched_tokens)
