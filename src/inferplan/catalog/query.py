"""Catalogue queries the shells call: list a kind, show one entry, summarise an import."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.hf_import import import_model
from inferplan.catalog.loader import SECTIONS, load_catalog
from inferplan.errors import AmbiguousNameError, CatalogError, InferplanError

KINDS = {k.replace("_", "-"): k for k in SECTIONS} | {"sources": "sources"}


def _kind(kind: str) -> str:
    key = KINDS.get(kind.strip().lower())
    if key is None:
        raise CatalogError(f"unknown catalogue kind {kind!r}", field="kind", allowed=", ".join(KINDS))
    return key


def list_entries(kind: str) -> list[BaseModel]:
    catalog = load_catalog()
    key = _kind(kind)
    if key == "sources":
        return list(catalog.sources.values())
    return list(getattr(catalog, key))


def show_entry(name: str, kind: str | None = None) -> tuple[str, BaseModel]:
    """Find ``name`` in one kind, or in every kind when ``kind`` is None."""
    catalog = load_catalog()
    if not name.strip():
        raise CatalogError("name an entry (an id or alias)", field="name")
    keys = [_kind(kind)] if kind else [k for k in SECTIONS]
    if keys == ["sources"] or (not kind and name in catalog.sources):
        if name in catalog.sources:
            return "sources", catalog.sources[name]
        raise CatalogError(f"no source with id {name!r}; see `inferplan catalog list sources`", field="name")
    exact = [(key, hit[0]) for key in keys if len(hit := getattr(catalog, key).exact(name)) == 1]
    if len(exact) == 1:
        return exact[0]
    found: list[tuple[str, BaseModel]] = []
    ambiguous: list[AmbiguousNameError] = []
    for key in keys:
        registry = getattr(catalog, key)
        try:
            found.append((key, registry.get(name, field_name="name", error=CatalogError)))
        except AmbiguousNameError as exc:
            if kind:
                raise
            ambiguous.append(exc)
        except InferplanError:
            continue
    if ambiguous and not any(e.id == name for _, e in found):
        # several models called 'gpt-oss…' outweigh one engine build whose text mentions it
        raise AmbiguousNameError("; ".join([str(a) for a in ambiguous] + [f"also {_spelling(k)}: {e.id}" for k, e in found]),
                                 field="name", allowed=", ".join(a.allowed or "" for a in ambiguous))
    if not found:
        raise CatalogError(f"nothing in the catalogue is called {name!r}", field="name")
    if len(found) > 1:
        # an exact id wins over matches in other kinds
        exact = [f for f in found if f[1].id == name]
        if len(exact) == 1:
            return exact[0]
        raise AmbiguousNameError(
            f"{name!r} is in several kinds: " + ", ".join(f"{_spelling(k)}:{e.id}" for k, e in found),
            field="kind",
            allowed=", ".join(_spelling(k) for k, _ in found),
        )
    return found[0]


def _spelling(key: str) -> str:
    """A section's name as `--kind` takes it (serving_profiles -> serving-profiles)."""
    return key.replace("_", "-")


class ImportSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

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


def describe_import(location: str) -> ImportSummary:
    from inferplan.memory.kv_cache import kv_layout  # memory sits above catalog
    from inferplan.memory.params import count_params

    imported = import_model(location)
    arch = imported.architecture
    params = count_params(arch)
    layout = kv_layout(arch, kv_bits=16)
    kinds: dict[str, int] = {}
    for k in arch.layer_kinds:
        kinds[k.value] = kinds.get(k.value, 0) + 1
    return ImportSummary(
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
    )


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    id: str
    name: str


def search(query: str, limit: int = 50) -> list[SearchHit]:
    """Catalogue entries whose id, name or an alias contains ``query`` (normalised)."""
    from inferplan.catalog.loader import normalise_name

    catalog = load_catalog()
    wanted = normalise_name(query)
    if not wanted:
        raise CatalogError("search needs some text", field="q")
    hits = []
    for key in SECTIONS:
        for record in getattr(catalog, key):
            names = [record.id, getattr(record, "name", record.id), *getattr(record, "aliases", ())]
            if any(wanted in normalise_name(n) for n in names):
                hits.append(SearchHit(kind=key.replace("_", "-"), id=record.id, name=str(getattr(record, "name", record.id))))
    return hits[:limit]
