"""Prefill CUDA graphs an engine captures by default, and what its default memory fraction keeps out for them.

SGLang captures CUDA graphs of the prefill (extend) forward at a list of token counts from 0.5.10 on (piecewise
graphs through torch.compile, then "breakable" graphs on CUDA), unless a model or a setting turns them off, and
its own ``mem_fraction_static`` keeps memory out for them: ``mib_per_size`` for each captured size, or a flat
``latent_attention_mib`` for a model with latent (MLA) attention. The term is added to the reserve before its
floor (``engine_tiers.MemoryFractionReserve``), as the engine adds it. Which models and settings capture the
graphs changed release by release; each entry holds one release's, from its ``first_release`` to the next
entry's. ``memory/prefill_graphs.py`` applies them; the entries live on a memory rule's ``gpu_memory_defaults``.

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

import datetime as dt
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from inferplan.inputs import Input

# the settings of a plan that turn the graphs off in a release (``off_with``):
# pipeline_parallel: more than one pipeline stage; host_offload: --cpu-offload-gb or a HiCache host tier;
# speculative: a speculative draft; dp_attention: SGLang's DP attention (data-parallel ranks with expert parallelism)
OffSetting = Literal["pipeline_parallel", "host_offload", "speculative", "dp_attention"]


class SizeRun(Input):
    """Token counts ``start``, ``start + step`` ... up to ``stop`` (None: up to the largest size captured)."""

    model_config = ConfigDict(defer_build=True)

    start: int = Field(ge=1)
    stop: int | None = Field(None, ge=1)
    step: int = Field(ge=1)


class PrefillGraphs(Input):
    """The prefill CUDA graphs a release captures by default and the memory its default fraction keeps out for them."""

    model_config = ConfigDict(defer_build=True)

    first_release: str  # inclusive, inside the rule's range
    backend: str  # the engine's name for the capture (SGLang: tc_piecewise, breakable)
    off_flag: str  # the launch flag that turns them off
    software: tuple[str, ...] = Field(min_length=1)  # the stacks (Software values) it captures on by default
    capture_sizes: tuple[SizeRun, ...] = Field(min_length=1)  # token counts, up to the largest (the chunk)
    mib_per_size: float = Field(gt=0)  # kept out per captured size (models without latent attention)
    # latent (MLA) attention: a flat figure ("flat"), no graphs ("off"), or graphs only with sparse (DSA) attention
    latent_attention: Literal["flat", "off", "sparse_only"]
    latent_attention_mib: float = Field(gt=0)
    largest_clamped_by_context: bool = False  # a stated context shorter than the chunk caps the largest size
    off_with: tuple[OffSetting, ...] = ()
    off_architectures: tuple[str, ...] = ()  # config.json architectures the release captures none for
    # multimodal models (a vision tower) capture none, except these architectures
    multimodal_architectures: tuple[str, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "derived"]  # read in the release's code, or worked out from it
    note: str = ""

    @model_validator(mode="after")
    def _runs_ascend(self) -> "PrefillGraphs":
        runs = self.capture_sizes
        if any(r.stop is None for r in runs[:-1]) or any(
                a.stop is None or a.stop >= b.start for a, b in zip(runs, runs[1:])):
            raise ValueError("capture_sizes runs go up without overlap; only the last may run to the largest size")
        return self

    def sizes(self, largest: int) -> tuple[int, ...]:
        """The token counts captured when the largest is ``largest``."""
        return tuple(s for r in self.capture_sizes
                     for s in range(r.start, min(largest if r.stop is None else r.stop, largest) + 1, r.step))
