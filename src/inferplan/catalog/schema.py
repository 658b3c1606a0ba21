"""Catalogue entities: systems, models with their published builds, KV-cache element types and calibration
constants. Accelerators (``accelerator_schema.py``), weight formats (``quantization_schema.py``) and engines
(``engine_schema.py``) have modules of their own.

Each YAML file under ``catalog/data`` holds a ``sources`` registry and a list of one entity kind;
``loader.py`` validates them with these models. Field names carry their SI unit.

The pydantic modules of ``catalog`` and ``inputs`` keep real annotations (no postponed ones): pydantic
would otherwise evaluate each field's annotation from a string at every start-up.
"""

from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.checkpoint_schema import GgufFile
from inferplan.catalog.ollama_schema import OllamaTag
from inferplan.catalog.keep_schema import KeepsUnquantized
from inferplan.catalog.provenance import EUR, USD, Bits, Bytes, BytesPerS, Count, Watts
from inferplan.catalog.accelerator_schema import Accelerator, ScaleOut, ScaleUp
from inferplan.catalog.schema_base import SLUG, ComputeDtype, Frozen, Software, Status, check_engine_and_sources

# the records defined here, with the accelerator records and the catalogue's shared types, importable from here
__all__ = ["SLUG", "Accelerator", "CalibrationConstant", "Checkpoint", "ComputeDtype", "Frozen", "KvDtype",
           "ModelCard", "PriceBand", "ScaleOut", "ScaleUp", "Software", "Status", "System", "check_engine_and_sources"]


class PriceBand(Frozen):
    """A planning price band, ex VAT. EUR and USD as the source states them."""

    usd_low: USD | None = None
    usd_high: USD | None = None
    eur_low: EUR | None = None
    eur_high: EUR | None = None
    # a band for the card(s) alone: the cost_defaults id of the rest of the machine, added per system
    host: str | None = Field(default=None, pattern=SLUG)
    basis: str  # quote band, BOM estimate, roadmap ASP, list price, ...


class System(Frozen):
    id: str = Field(pattern=SLUG)
    name: str
    aliases: tuple[str, ...] = ()
    tier: Literal["node", "rack", "server", "workstation", "desktop", "lab-box", "single-gpu"]
    status: Status
    accelerator: str  # accelerator id
    accelerator_count: int = Field(ge=1)
    scale_up_domain_gpus: int = Field(ge=1)  # GPUs joined by the fast link
    os_host_gpus: Count | None = None  # GPUs one operating-system host sees (a rack's compute tray); None: all
    scale_out: ScaleOut | None = None  # this system's network to other systems
    memory_bytes: Bytes | None = None  # aggregate accelerator memory as the source states it
    power_w: Watts | None = None
    cooling: str | None = None
    price: PriceBand | None = None
    host: str | None = None
    host_memory_bytes: Bytes | None = None  # the host's RAM (CPU memory), as the source states it
    host_memory_bandwidth_bytes_per_s: BytesPerS | None = None  # the host's DRAM peak, all sockets' channels
    notes: tuple[str, ...] = ()


class Checkpoint(Frozen):
    """A published build of a model: its quantization and its size on disk."""

    name: str
    repo: str | None = None
    quantization: str  # a quantization id from quantizations.yaml
    size_bytes: Bytes | None = None
    # bits of the weights outside the routed experts when this build keeps them apart from the
    # format (gpt-oss: experts MXFP4, attention/embeddings/lm_head BF16); shares out size_bytes
    non_expert_bits_per_weight: Bits | None = None
    keeps_unquantized: KeepsUnquantized | None = None
    gguf_file: GgufFile | None = None  # GGUF builds: the file llama.cpp's --hf-repo picks and its tag
    # False: the build leaves out the model's multi-token-prediction layers, so size_bytes holds none of them
    # (llama.cpp's DeepSeek-V3 GGUFs: the main model's 671.03 B parameters)
    mtp_layers: bool = True
    # parameters the build's file holds with its MTP layers beyond the config's count of them (GLM's GGUF
    # MTP layer keeps its own copies of the embeddings and output head): left out with them, pro rata
    mtp_extra_parameters: Count | None = None
    # False: the build's file holds the text model alone; llama.cpp writes a vision model's encoder to a projector
    # file of its own (mmproj), which size_bytes leaves out
    vision_encoder: bool = True
    # the engines this build is meant for: they choose it before a build naming no engine, and other engines
    # never choose it (empty: any engine)
    engines: tuple[str, ...] = ()
    source: str | None = None  # where the repo and its format are stated, for a build stating no size


class Licence(Frozen):
    name: str
    gate: str | None = None  # what must be reviewed or triggers a separate deal


class ModelCard(Frozen):
    id: str = Field(pattern=SLUG)
    name: str
    aliases: tuple[str, ...] = ()
    family: str
    status: str  # the seed's label (current-launch ...) or "reference"
    licence: Licence | None = None
    total_params: Count | None = None
    active_params: Count | None = None
    context_tokens: Count | None = None
    checkpoints: tuple[Checkpoint, ...] = ()
    # the model's Ollama library tags: each names the card and selects one of its builds, run as Ollama runs it
    # (ollama.yaml; catalog/ollama.py)
    ollama_tags: tuple[OllamaTag, ...] = ()
    first_node: str | None = None
    serving_engines: tuple[str, ...] = ()
    config: str | None = None  # hf_configs/<file>.json, kept verbatim
    config_source: str | None = None  # source id of that config file
    kv_proxy: str | None = None  # model id whose attention layout stands in (stated as assumption)
    # listed by the what-fits grid when no model is named (False: left out of it, and named as left out;
    # all_models adds it)
    in_default_grid: bool = True
    notes: tuple[str, ...] = ()


class KvDtype(Frozen):
    id: str = Field(pattern=SLUG)
    aliases: tuple[str, ...] = ()
    bits_per_element: Bits
    residual_tokens: int = 0  # recent tokens kept at 16 bit (KIVI)
    notes: tuple[str, ...] = ()


class CalibrationConstant(Frozen):
    """A named constant the models use, with how it was reached: ``kind`` is the catalogue's (spec, measured,
    derived, assumed) or ``fitted`` (solved against measurement points by a fit); an assumed one states its
    basis, the sources it rests on or a ``basis`` in words."""

    id: str = Field(pattern=SLUG)
    value: float
    unit: str
    kind: Literal["spec", "measured", "derived", "fitted", "assumed"]
    basis: str | None = Field(None, min_length=1)  # why an assumed value, where no source says it
    fitted_on: tuple[str, ...] = ()  # measurement ids
    sources: tuple[str, ...] = ()  # source ids of published figures it was read or derived from
    method: str
    error: str  # how well it fits, in words and numbers

    @model_validator(mode="after")
    def _assumed_has_a_basis(self) -> "CalibrationConstant":
        if self.kind == "assumed" and not (self.sources or self.basis):
            raise ValueError(f"calibration constant {self.id} is assumed with no basis: name its sources or state a basis")
        return self


