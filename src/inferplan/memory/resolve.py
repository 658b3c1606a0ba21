"""Resolve a ``model`` argument to a ``ModelSpec``: a catalogue card, a config.json path or model
folder, or a repo id in the local Hugging Face cache; and summarise a local import.

A catalogue card states its parameter counts; an imported config.json does not, so they are
counted here from its architecture (``params.py``), with its KV cache layout (``kv_cache.py``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.hf_import import ImportedModel, hf_cache_snapshot, import_model
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.models import (
    CheckpointSize,
    ModelSpec,
    config_context,
    formats_from_config,
    kept_from_config,
    looks_like_path,
    spec_from_card,
)
from inferplan.catalog.memo import per_catalog
from inferplan.errors import InferplanError, UnknownModelError
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.params import count_params


def resolve_model(catalog: Catalog, name: str, field_name: str = "model") -> ModelSpec:
    """A catalogue id/alias, a config.json or model folder, or a repo id in the local HF cache."""
    try:
        if looks_like_path(name):
            return spec_from_import(name, catalog)
        try:
            return _card_spec(catalog, name, field_name)
        except UnknownModelError:
            if "/" in name and hf_cache_snapshot(name) is not None:
                return spec_from_import(name, catalog)
            raise
    except InferplanError as exc:
        if exc.field == "model":  # the import names the usual field; this caller's may differ (models)
            exc.field = field_name
        raise


@per_catalog(maxsize=512)  # a plan or a fits matrix asks for the same few models many times
def _card_spec(catalog: Catalog, name: str, field_name: str) -> ModelSpec:
    return spec_from_card(catalog, catalog.model(name, field_name))


GENERIC_CONFIG_STEMS = ("config", "params")  # file names that say nothing about the model


def import_name(location: str, imported: ImportedModel) -> str:
    """What an imported model is called: a folder's name; for a config file, the config's own
    ``_name_or_path``, else the file's name unless it is a generic one (config.json), else its
    architecture class; a cached repo by its id. Never a config file's parent folder."""
    path = Path(location).expanduser()
    if path.is_dir():
        return path.resolve().name or location
    if path.suffix == ".json" or path.is_file():
        if imported.config_name and imported.config_name.strip():
            stated = imported.config_name.strip().rstrip("/")
            return Path(stated).name if stated.startswith(("/", ".", "~")) else stated
        if path.stem.lower() not in GENERIC_CONFIG_STEMS:
            return path.stem
        return imported.architecture.hf_architecture
    return location


def spec_from_import(location: str, catalog: Catalog | None = None) -> ModelSpec:
    """The spec of an imported config; ``catalog`` (the packaged one if not given) sizes the formats
    a mixed-precision quantization_config names per module."""
    imported = import_model(location)
    arch = imported.architecture
    params = count_params(arch)
    native = arch.quant.quantization if arch.quant else _dtype_quant(arch.torch_dtype)
    checkpoints = ()
    if imported.checkpoint_bytes:
        checkpoints = (CheckpointSize(native, imported.checkpoint_bytes, "local", imported.checkpoint_source or ""),)
    return ModelSpec(
        id=import_name(location, imported),
        name=import_name(location, imported),
        architecture=arch,
        architecture_is_proxy=False,
        total_params=float(params.total),
        active_params=float(params.active),
        checkpoints=checkpoints,
        native_quantization=native,
        context_tokens=config_context(arch, proxy=False),
        assumptions=("parameter counts computed from config.json",),
        kept_unquantized=kept_from_config(arch),
        layer_formats=formats_from_config(catalog or load_catalog(), arch) if arch.quant and arch.quant.layer_formats else (),
    )


def _dtype_quant(torch_dtype: str) -> str:
    return {"float16": "fp16", "float32": "fp32"}.get(torch_dtype, "bf16")


class ImportSummary(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str  # as ``import_name`` calls it
    path: str
    hf_architecture: str
    model_type: str
    num_layers: int
    layer_kinds: dict[str, int]
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    sliding_window: int | None
    mla: bool
    experts: int | None
    experts_per_token: int | None
    quantization: str | None
    total_params: int
    active_params: int
    checkpoint_bytes: int | None
    checkpoint_source: str | None
    kv_cache_bytes_per_token_bf16: float
    state_bytes_per_sequence_bf16: float
    context_tokens: int | None = None
    assumptions: tuple[str, ...] = ()


def describe_import(location: str) -> ImportSummary:
    imported = import_model(location)
    arch = imported.architecture
    params = count_params(arch)
    layout = kv_layout(arch, kv_bits=16)
    kinds: dict[str, int] = {}
    for k in arch.layer_kinds:
        kinds[k.value] = kinds.get(k.value, 0) + 1
    assumed = ["parameter counts computed from config.json"]
    if arch.torch_dtype and not arch.quant:
        assumed.append(f"weights stored as the config's torch_dtype ({arch.torch_dtype})")
    if not imported.checkpoint_bytes:
        assumed.append("no weight files beside the config: sizes come from the parameter count")
    assumed.append("KV cache per token at 16 bits (bf16); --kv-cache-dtype changes it when planning")
    return ImportSummary(
        name=import_name(location, imported),
        path=imported.path,
        hf_architecture=arch.hf_architecture,
        model_type=arch.model_type,
        num_layers=arch.num_layers,
        layer_kinds=kinds,
        hidden_size=arch.hidden_size,
        num_attention_heads=arch.num_attention_heads,
        num_kv_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        vocab_size=arch.vocab_size,
        sliding_window=arch.sliding_window,
        mla=arch.mla is not None,
        experts=arch.moe.num_experts if arch.moe else None,
        experts_per_token=arch.moe.experts_per_token if arch.moe else None,
        quantization=arch.quant.quantization if arch.quant else None,
        total_params=params.total,
        active_params=params.active,
        checkpoint_bytes=imported.checkpoint_bytes,
        checkpoint_source=imported.checkpoint_source,
        kv_cache_bytes_per_token_bf16=layout.bytes_per_token,
        state_bytes_per_sequence_bf16=layout.state_bytes_per_seq,
        context_tokens=config_context(arch, proxy=False),
        assumptions=tuple(assumed),
    )
