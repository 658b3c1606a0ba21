"""vLLM's start-up estimate of CUDA-graph memory, as data (``data/engine_memory_rules.yaml``, a memory rule's
``cuda_graph_estimate``).

From the releases that count it (``profile_cudagraph_memory`` in ``v1/worker/gpu_model_runner.py``), vLLM
captures the two largest graphs of each cudagraph mode, takes the first capture's memory and the second's
increase, and estimates the mode's graphs as first capture + increase × (graphs − 1); the modes share one
pool, so the estimate is the largest first capture plus every mode's increases. How many graphs a mode
captures follows from the capture-size list (``config/vllm.py`` ``_set_cudagraph_sizes``), which max_num_seqs
and max_num_batched_tokens bound. ``CaptureSizes`` states that list; ``GraphBytes`` a printed estimate's
bytes per graph for some models. The arithmetic is in ``memory/cuda_graphs.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from inferplan.catalog.provenance import release_key
from inferplan.catalog.runner_buffers import RunnerBuffers
from inferplan.catalog.schema import Frozen


class CaptureSizes(Frozen):
    """The default capture-size list: ``small`` sizes, then steps of ``step_below`` up to ``boundary``
    (excluded), then steps of ``step_from`` up to the largest size, min(max_num_seqs × ``per_seq``,
    ``limit``, max_num_batched_tokens); max_num_batched_tokens itself where it is at most that size."""

    small: tuple[int, ...] = Field(min_length=1)
    step_below: int = Field(ge=1)
    boundary: int = Field(ge=1)
    step_from: int = Field(ge=1)
    per_seq: int = Field(ge=1)
    limit: int = Field(ge=1)


class GraphBytes(Frozen):
    """The bytes one captured graph adds in vLLM's estimate for the models named, read from a printed
    estimate (its total over the graphs it names)."""

    model_types: tuple[str, ...] = Field(min_length=1)  # config.json model_type values
    bytes_per_graph: float = Field(gt=0)
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""


class CudaGraphEstimate(Frozen):
    """How a release line sizes its CUDA-graph estimate: the cudagraph mode it runs by default, the
    capture sizes, and bytes per graph where a source prints them (else the rule's cuda_graph_constant)."""

    mode: Literal["full_and_piecewise", "piecewise", "full_decode_only"]
    capture_sizes: CaptureSizes
    per_graph: tuple[GraphBytes, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""

    def bytes_for(self, model_type: str | None) -> GraphBytes | None:
        """The per-graph figure of ``model_type`` (None: no source prints one)."""
        return next((g for g in self.per_graph if model_type is not None and model_type in g.model_types), None)


class RunnerDefault(Frozen):
    """Which of vLLM's two GPU model runners a release picks where VLLM_USE_V2_MODEL_RUNNER is not set, from
    ``first_release`` until the next entry (``config/vllm.py`` ``use_v2_model_runner``): Model Runner V2 for
    every model (``v2_all``), for the config.json ``architectures`` listed, and for models without a mixture of
    experts (``v2_dense``); the listed ones only when dense and without a checkpoint quantization_config
    (``listed_dense_unquantized``); hybrid (Mamba or linear-attention) models stay on V1 always, or unless
    listed (``hybrid_v1``)."""

    first_release: str
    v2_all: bool = False
    v2_architectures: tuple[str, ...] = ()
    v2_dense: bool = False
    listed_dense_unquantized: bool = False
    hybrid_v1: Literal["always", "unlisted", "never"] = "never"
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def picks_v2(self, hf_architecture: str | None, moe: bool, hybrid: bool, quantized: bool) -> bool:
        """Whether a model with these traits runs on Model Runner V2 by default."""
        listed = hf_architecture is not None and hf_architecture in self.v2_architectures
        if hybrid and (self.hybrid_v1 == "always" or (self.hybrid_v1 == "unlisted" and not listed)):
            return False
        if self.v2_all:
            return True
        if listed and self.listed_dense_unquantized:
            return not moe and not quantized
        return listed or (self.v2_dense and not moe)


class ModelRunners(Frozen):
    """vLLM's model-runner choice over a rule's releases (a plan's stated ``model_runner`` overrides it, launched
    with engine_flags.yaml ``runner_env``), and what Model Runner V2 does to the CUDA-graph estimate: before ``v2_estimates_from`` its ``profile_cudagraph_memory`` returns 0, so no graph memory is
    counted and the graphs are captured after the KV cache is sized; from it V2 profiles its own estimate."""

    defaults: tuple[RunnerDefault, ...] = Field(min_length=1)  # oldest first_release first
    v2_estimates_from: str | None = None  # None: no release of the rule's range estimates under V2
    v2_only: bool = False  # the releases ship no V1 runner (a stated model_runner V1 is refused)
    # calibration.yaml ids (one GPU, several GPUs): the CUDA-graph pool V2 captures after the KV cache where it
    # estimates none, checked with the start-up headroom (memory/startup.py)
    after_kv_graph_constants: tuple[str, str] | None = None
    v2_buffers: RunnerBuffers | None = None  # Model Runner V2's per-slot vocabulary arrays (None: not stated)
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""

    def source_ids(self) -> tuple[str, ...]:
        return (*self.sources, *(s for r in self.defaults for s in r.sources),
                *(self.v2_buffers.source_ids() if self.v2_buffers else ()))

    def default_at(self, release: str) -> RunnerDefault | None:
        """The entry in force at ``release`` (None: before the first)."""
        named = [r for r in self.defaults if release_key(r.first_release) <= release_key(release)]
        return max(named, key=lambda r: release_key(r.first_release)) if named else None

    def v2_estimates(self, release: str) -> bool:
        """Whether Model Runner V2 counts a CUDA-graph estimate at ``release``."""
        return self.v2_estimates_from is not None and release_key(release) >= release_key(self.v2_estimates_from)
