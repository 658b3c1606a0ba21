"""Ollama as the catalogue plans a model named by one of its library tags (``data/ollama.yaml``, a card's
``ollama_tags``): the tag's build, the catalogue engine Ollama's runner is, and the context Ollama gives a
model when none is set. ``catalog/ollama.py`` resolves a tag; ``memory/hardware.py`` plans it.

The pydantic modules of ``catalog`` keep real annotations (no postponed ones), as ``schema.py`` says.
"""

from typing import Literal

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


class OllamaLaunch(Frozen):
    """How Ollama is started for a tag's build (``deploy/ollama_launch.py``): its commands, and the environment
    variables and Modelfile parameters that carry the plan's settings, each group with its source."""

    release: str  # the release whose names these are, and whose image a manifest runs
    llamacpp_build: str | None = None  # the llama.cpp build whose llama-server that release starts
    llamacpp_build_source: str | None = None
    server: tuple[str, ...] = Field(min_length=1)  # starts the server (ollama serve)
    ready: tuple[str, ...] = Field(min_length=1)  # a client command that succeeds once the server answers
    pull: tuple[str, ...] = Field(min_length=1)  # fetches a tag's files
    create: tuple[str, ...] = Field(min_length=1)  # makes a model from a Modelfile
    modelfile_flag: str  # the create command's flag naming the Modelfile
    run: tuple[str, ...] = Field(min_length=1)  # chats with a model
    command_source: str
    default_port: int = Field(ge=1, le=65535)
    health_path: str  # answers once the server runs
    openai_path: str  # the OpenAI-compatible API's base path
    openai_source: str
    host_env: str  # the variable holding the address and port the server listens on
    env: dict[str, str]  # a Deployment setting -> the server's variable that takes it
    env_source: str
    kv_cache_types: dict[str, str]  # a catalogue KV-cache dtype id -> the KV-cache variable's value
    kv_cache_env: dict[str, str]  # variables a quantized KV cache needs besides (Flash Attention on)
    kv_cache_source: str
    modelfile_parameters: dict[str, str]  # a Deployment setting -> the Modelfile PARAMETER that takes it
    modelfile_source: str
    by_itself: dict[str, str] = {}  # a setting Ollama takes no value for but does as planned on its own -> how
    by_itself_source: str | None = None
    # a Deployment setting -> the engine's variable the server passes on to every engine process it starts
    engine_env: dict[str, str] = {}
    engine_env_source: str | None = None
    engine_env_note: str | None = None  # what setting it there means (every model the server loads gets it)
    images: dict[str, str] = {}  # a GPU vendor -> the container image, {release} replaced by ``release``
    image_source: str
    models_dir: str  # where the server keeps pulled models (a container's volume)

    @model_validator(mode="after")
    def _engine_env_said(self) -> "OllamaLaunch":
        if self.engine_env and (self.engine_env_source is None or not self.engine_env_note):
            raise ValueError("engine_env needs engine_env_source and engine_env_note (what setting it means for "
                             "every model the server loads)")
        return self

    def image(self, vendor: str) -> str | None:
        """The container image of ``release`` for ``vendor``'s GPUs (None: none recorded)."""
        pattern = self.images.get(vendor)
        return pattern.replace("{release}", self.release) if pattern else None

    def sources(self) -> tuple[str | None, ...]:
        return (self.command_source, self.openai_source, self.env_source, self.kv_cache_source, self.modelfile_source,
                self.by_itself_source, self.engine_env_source, self.image_source, self.llamacpp_build_source)


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


class BatchTier(Frozen):
    """One batch Ollama may choose: for a context above ``above_context_tokens`` where the predicted VRAM is at most
    ``headroom_fraction`` of the memory available and ``surcharge_bytes`` fits beside it below the fits fraction."""

    above_context_tokens: int = Field(ge=0)
    tokens: int = Field(ge=1)
    headroom_fraction: float = Field(gt=0, le=1)
    surcharge_bytes: Bytes


class SingleGpuPlacement(Frozen):
    """Of several GPUs, Ollama loads a model on one alone (llama-server started with that GPU only) where its
    predicted VRAM (``GenerationBatch``'s prediction) is at most ``fraction`` of that GPU's free memory; else it
    spreads the layers over the GPUs."""

    source: str
    fraction: float = Field(gt=0, le=1)
    note: str | None = None


class GenerationBatch(Frozen):
    """The generation batch Ollama passes llama-server as both -b and -ub when no num_batch is set: the largest of
    ``tiers`` whose context threshold the context (num_ctx x parallel) passes and whose headroom checks the
    predicted VRAM meets (``fits_fraction`` of the memory available, then the tier's own), else
    ``default_tokens``. The predicted VRAM is the model file plus a KV cache of ``predicted_kv_bytes_per_element``
    for every layer at the whole context, as Ollama estimates it; with flash attention off on CUDA the batch is
    ``default_tokens``, or ``small_gpu_tokens`` above ``small_gpu_above_context_tokens`` on a GPU of at most
    ``small_gpu_bytes``. A stated num_batch (``--ubatch-size``) turns the choice off."""

    source: str
    default_tokens: int = Field(ge=1)
    fits_fraction: float = Field(gt=0, le=1)
    tiers: tuple[BatchTier, ...] = Field(min_length=1)  # the largest batch first
    predicted_kv_bytes_per_element: float = Field(gt=0)
    small_gpu_bytes: Bytes
    small_gpu_tokens: int = Field(ge=1)
    small_gpu_above_context_tokens: int = Field(ge=0)
    note: str | None = None

    @model_validator(mode="after")
    def _largest_first(self) -> "GenerationBatch":
        if [t.tokens for t in self.tiers] != sorted((t.tokens for t in self.tiers), reverse=True):
            raise ValueError("generation_batch.tiers: list the largest batch first")
        return self


class OllamaRunner(Frozen):
    """How Ollama runs a library tag: on which catalogue engine, and at what context by default."""

    id: str = Field(pattern=SLUG)
    name: str
    engine: str  # the catalogue engine Ollama's runner is
    engine_source: str
    # num_ctx when none is set, by the total VRAM of the GPUs Ollama sees, largest first; capped at the model's
    # trained context
    default_context: tuple[ContextTier, ...] = Field(min_length=1)
    launch: OllamaLaunch | None = None  # how a deployment of a tag's build is started (None: as its engine is)
    placement: FitPlacement | None = None  # None: the plan keeps every layer on the GPUs, as stated
    generation_batch: GenerationBatch | None = None  # None: planned at the engine's default -b / -ub
    # None: a tag's build on several GPUs is planned over all of them (needs generation_batch's VRAM prediction)
    single_gpu: SingleGpuPlacement | None = None
    note: str | None = None

    def default_context_tokens(self, total_vram_bytes: float, model_tokens: int | None) -> int:
        """The context Ollama runs a model at with ``total_vram_bytes`` of VRAM and no num_ctx set."""
        tier = next((t for t in self.default_context if total_vram_bytes >= t.total_vram_bytes.value),
                    self.default_context[-1])
        return min(tier.tokens, model_tokens) if model_tokens else tier.tokens
