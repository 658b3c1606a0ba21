"""Ollama as the catalogue plans a model named by one of its library tags (``data/ollama.yaml``, a card's
``ollama_tags``): the tag's build, the catalogue engine Ollama's runner is, and the context Ollama gives a
model when none is set. ``catalog/ollama.py`` resolves a tag; ``memory/hardware.py`` plans it.

The pydantic modules of ``catalog`` keep real annotations (no postponed ones), as ``schema.py`` says.
"""

from typing import Literal

from pydantic import Field

from inferplan.catalog.provenance import Bytes
from inferplan.catalog.schema_base import SLUG, Frozen


class OllamaTag(Frozen):
    """One Ollama library tag of a model (``qwen3:32b``, ``qwen3:32b-q8_0``): the card's build it pulls."""

    tag: str = Field(min_length=3, pattern=r"^[a-z0-9][a-z0-9._-]*:[A-Za-z0-9][A-Za-z0-9._-]*$")
    quantization: str  # the quantization id of the card's checkpoint the tag's file is (references.py checks it)
    source: str  # where the tag and its quantization are stated
    # where it is stated that Ollama loads a vision projector with the tag's model (None: a text model), which the
    # plan of the tag does not count: it plans the card's GGUF text model alone
    vision_projector_source: str | None = None
    note: str | None = None


class ContextTier(Frozen):
    """The context Ollama gives a model when none is set, from this much VRAM (all GPUs it sees) up."""

    total_vram_bytes: Bytes
    tokens: int = Field(ge=1)


class FitPlacement(Frozen):
    """Where the runner's engine places the weights when none is stated: everything on the GPUs if that keeps
    ``margin_bytes`` free on each, else the first of ``steps`` (in the order the engine tries them) that does:
    ``expert_layers`` keeps the routed experts of the fewest layers in host RAM (a mixture of experts whose other
    weights fit with every expert in host RAM), ``gpu_layers`` the most layers on the GPUs (every expert of a
    mixture of experts in host RAM)."""

    chosen_by: str = Field(min_length=1)  # the engine's setting that chooses it (llama-server --fit)
    source: str  # where it is stated that the runner leaves placement to it
    margin_bytes: Bytes  # kept free on each GPU
    steps: tuple[Literal["expert_layers", "gpu_layers"], ...] = Field(min_length=1)
    steps_source: str  # where the order is stated
    note: str | None = None


class OllamaRunner(Frozen):
    """How Ollama runs a library tag: on which catalogue engine, and at what context by default."""

    id: str = Field(pattern=SLUG)
    name: str
    engine: str  # the catalogue engine Ollama's runner is
    engine_source: str
    # num_ctx when none is set, by the total VRAM of the GPUs Ollama sees, largest first; capped at the model's
    # trained context
    default_context: tuple[ContextTier, ...] = Field(min_length=1)
    placement: FitPlacement | None = None  # None: the plan keeps every layer on the GPUs, as stated
    note: str | None = None

    def default_context_tokens(self, total_vram_bytes: float, model_tokens: int | None) -> int:
        """The context Ollama runs a model at with ``total_vram_bytes`` of VRAM and no num_ctx set."""
        tier = next((t for t in self.default_context if total_vram_bytes >= t.total_vram_bytes.value),
                    self.default_context[-1])
        return min(tier.tokens, model_tokens) if model_tokens else tier.tokens
