"""Ollama as the catalogue plans a model named by one of its library tags (``data/ollama.yaml``, a card's
``ollama_tags``): the tag's build, the catalogue engine Ollama's runner is, and the context Ollama gives a
model when none is set. ``catalog/ollama.py`` resolves a tag; ``memory/hardware.py`` plans it.

The pydantic modules of ``catalog`` keep real annotations (no postponed ones), as ``schema.py`` says.
"""

from pydantic import Field, model_validator

from inferplan.catalog.provenance import Bytes
from inferplan.catalog.schema_base import SLUG, Frozen


class OllamaTag(Frozen):
    """One Ollama library tag of a model (``qwen3:32b``, ``qwen3:32b-q8_0``): the card's build it pulls."""

    tag: str = Field(min_length=3, pattern=r"^[a-z0-9][a-z0-9._-]*:[A-Za-z0-9][A-Za-z0-9._-]*$")
    quantization: str  # the quantization id of the card's checkpoint the tag's file is (references.py checks it)
    source: str  # where the tag and its quantization are stated
    # where it is stated that Ollama loads a vision projector with the tag's model (None: a text model)
    vision_projector_source: str | None = None
    # the projector's bytes, which Ollama keeps on the GPU beside the text model and the plan of the tag's build counts
    # there (memory/vision_projector.py); None: no sourced size, and the plan counts the text model alone
    vision_projector_bytes: Bytes | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _projector_loaded(self) -> "OllamaTag":
        if self.vision_projector_bytes is not None and self.vision_projector_source is None:
            raise ValueError(f"{self.tag}: vision_projector_bytes needs vision_projector_source, the source stating "
                             "that Ollama loads a projector with the model")
        return self


class ContextTier(Frozen):
    """The context Ollama gives a model when none is set, from this much VRAM (all GPUs it sees) up."""

    total_vram_bytes: Bytes
    tokens: int = Field(ge=1)


class OllamaRunner(Frozen):
    """How Ollama runs a library tag: on which catalogue engine, and at what context by default."""

    id: str = Field(pattern=SLUG)
    name: str
    engine: str  # the catalogue engine Ollama's runner is
    engine_source: str
    # num_ctx when none is set, by the total VRAM of the GPUs Ollama sees, largest first; capped at the model's
    # trained context
    default_context: tuple[ContextTier, ...] = Field(min_length=1)
    note: str | None = None

    def default_context_tokens(self, total_vram_bytes: float, model_tokens: int | None) -> int:
        """The context Ollama runs a model at with ``total_vram_bytes`` of VRAM and no num_ctx set."""
        tier = next((t for t in self.default_context if total_vram_bytes >= t.total_vram_bytes.value),
                    self.default_context[-1])
        return min(tier.tokens, model_tokens) if model_tokens else tier.tokens
