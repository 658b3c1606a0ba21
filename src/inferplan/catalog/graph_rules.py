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
