"""What an engine allocates at start-up after its KV cache is sized, outside its memory fraction.

vLLM V1 sizes the KV cache from ``total × gpu_memory_utilization``; what it allocates afterwards —
the CUDA graphs it captures (where they are not estimated into the budget) and the sampler warm-up
it runs after the capture — comes out of the ``total × (1 − gpu_memory_utilization)`` the fraction
leaves, next to the CUDA context created before the first memory reading. When those need more
than that headroom the engine fails at start-up although the KV cache was sized. A
``StartupHeadroom`` states, for one release line's ``MemoryRule`` (``engine_memory_rules.yaml``),
which of these parts the headroom must hold; the arithmetic is ``memory/startup.py``.
"""

from __future__ import annotations

from pydantic import Field

from inferplan.catalog.schema import Frozen


class StartupHeadroom(Frozen):
    """The allocations that must fit in the memory a release's fraction leaves free on each GPU."""

    context_constant: str  # calibration.yaml id: the CUDA context made before the engine reads the memory
    # calibration.yaml ids (one GPU, several GPUs): the CUDA-graph pool captured after the KV cache is sized;
    # None where the release counts its graphs inside the fraction
    graph_constants: tuple[str, str] | None = None
    # the sampler warm-up after the capture repeats the profile's dummy sampler pass over max_num_seqs rows
    # of full-vocab logits: the rule's activation.sampler_constant bytes per (row × vocab entry)
    sampler_warmup: bool = True
    sources: tuple[str, ...] = Field(min_length=1)

    def constant_ids(self) -> tuple[str, ...]:
        return (self.context_constant, *(self.graph_constants or ()))
