"""Device memory an engine's C++ runtime holds when it reads the free memory to size its KV cache.

TensorRT-LLM's TensorRT-engine runtime gives the KV cache ``free_gpu_memory_fraction`` of the device's
free memory (``cudaMemGetInfo`` plus its memory pool's free bytes) read after the engine, its execution
context, the runtime buffers and the decoder are created. Everything on the device at that moment counts:
the CUDA context, and buffers sized for every sequence slot (``max_batch_size``) times the padded
vocabulary — the engine's logits output and the decoder's copies and workspaces. A ``RuntimeBuffers``
block of a ``MemoryRule`` (``engine_memory_rules.yaml``) names them, each array with the source line it
was read from; ``memory/budget_parts.py`` sizes them and ``memory/engine_budget.py`` adds them to the rule's
non-torch memory.
"""

from __future__ import annotations

from pydantic import Field

from inferplan.catalog.schema import Frozen


class SlotVocabArray(Frozen):
    """One device array of ``max_batch_size × vocab_padded`` entries the runtime allocates at start-up."""

    name: str  # what the engine calls it, and where it is allocated
    bytes_per_entry: float = Field(gt=0)  # the element size (fp32 logits: 4; int32 counts: 4)
    source: str  # a source id of engine_memory_rules.yaml


class SlotVocabArrays(Frozen):
    """Device arrays of ``slots × vocab`` entries an engine allocates at start-up, whatever the requests ask."""

    slot_vocab_arrays: tuple[SlotVocabArray, ...] = Field(min_length=1)

    @property
    def bytes_per_slot_vocab_entry(self) -> float:
        return sum(a.bytes_per_entry for a in self.slot_vocab_arrays)

    def slot_vocab_bytes(self, slots: int, vocab: int) -> float:
        """The arrays' bytes for ``slots`` sequence slots of a ``vocab``-entry vocabulary."""
        return self.bytes_per_slot_vocab_entry * slots * vocab


class RuntimeBuffers(SlotVocabArrays):
    """What is on the device besides weights and activations when the engine reads its free memory."""

    context_constant: str  # calibration.yaml id: the CUDA context, in use before anything is loaded
    note: str = ""

    def constant_ids(self) -> tuple[str, ...]:
        return (self.context_constant,)

    def source_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.source for a in self.slot_vocab_arrays))
