"""Catalogue queries the shells call: list a kind, show one entry, search names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.list_order import buyer_order, model_order
from inferplan.catalog.loader import SECTIONS, load_catalog
from inferplan.errors import AmbiguousNameError, CatalogError, InferplanError

KINDS = {k.replace("_", "-"): k for k in SECTIONS} | {"sources": "sources"}
# where each shell lists the names an entry goes by: the CLI has no search, the API's GET /api/search has
ENTRY_NAME = ("an id or alias of a catalogue entry, as `inferplan catalog list KIND` or the API's "
              "GET /api/catalog/KIND lists them (the API's GET /api/search?q= finds one from part of its name)")
# the words the CLI's own flags use for two kinds (--gpu, --model): accepted, not listed among the kinds
KIND_WORDS = {"gpus": "accelerators", "gpu": "accelerators", "model": "models", "system": "systems"}


def kind_name(kind: str) -> str:
    """The catalogue kind a word names, as the kinds are spelled (``gpus`` -> ``accelerators``)."""
    return _kind(kind).replace("_", "-")


def _kind(kind: str) -> str:
    word = kind.strip().lower()
    key = KINDS.get(word) or KIND_WORDS.get(word)
    if key is None:
        raise CatalogError(f"unknown catalogue kind {kind!r}", field="kind", allowed=", ".join(KINDS))
    return key


def list_entries(kind: str) -> list[BaseModel]:
    catalog = load_catalog()
    key = _kind(kind)
    if key == "sources":
        return list(catalog.sources.values())
    if key == "accelerators":
        return buyer_order(catalog.accelerators)  # a buyer's order, not the files' (catalog/list_order.py)
    if key == "models":
        return model_order(catalog.models)
    return list(getattr(catalog, key))


def show_entry(name: str, kind: str | None = None) -> tuple[str, BaseModel]:
    """Find ``name`` in one kind, or in every kind when ``kind`` is None."""
    catalog = load_catalog()
    if not name.strip():
        raise CatalogError("name an entry (an id or alias)", field="name", allowed=ENTRY_NAME)
    keys = [_kind(kind)] if kind else [k for k in SECTIONS]
    if keys == ["sources"] or (not kind and name in catalog.sources):
        if name in catalog.sources:
            return "sources", catalog.sources[name]
        raise CatalogError(f"no source with id {name!r}; see `inferplan catalog list sources`", field="name",
                           allowed="the id of a source the catalogue lists")
    exact = [(key, hit[0]) for key in keys if len(hit := getattr(catalog, key).exact(name)) == 1]
    if len(exact) == 1:
        return exact[0]
    found: list[tuple[str, BaseModel]] = []
    ambiguous: list[tuple[str, AmbiguousNameError]] = []
    for key in keys:
        registry = getattr(catalog, key)
        try:
            found.append((key, registry.get(name, field_name="name", error=CatalogError)))
        except AmbiguousNameError as exc:
            if kind:
                raise
            ambiguous.append((key, exc))
        except InferplanError as exc:
            missed = exc  # one kind asked for: its own refusal names the closest ids
            continue
    if ambiguous and not any(e.id == name for _, e in found):
        # several models called 'gpt-oss…' outweigh one engine build whose text mentions it
        raise _in_several_kinds(name, ambiguous, found)
    if not found and kind:
        raise CatalogError(f"nothing among {_spelling(keys[0])} is called {name!r}", field="name",
                           allowed=missed.allowed)
    if not found:
        raise CatalogError(f"nothing in the catalogue is called {name!r}", field="name", allowed=ENTRY_NAME)
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


def _in_several_kinds(name: str, ambiguous: list, found: list) -> AmbiguousNameError:
    """The refusal of a name matching several entries of several kinds: the candidates of the kind
    most likely meant (models, then GPUs, then systems, else the first), the other kinds counted, with
    how to list theirs (``kind``); allowed says how to narrow."""
    matches = {key: exc.candidates for key, exc in ambiguous} | {key: (entry.id,) for key, entry in found}
    kinds = sorted(matches, key=lambda k: (LIKELY_MEANT.index(k) if k in LIKELY_MEANT else len(LIKELY_MEANT)))
    lead = dict(ambiguous).get(kinds[0])
    said = str(lead) if lead is not None else f"{name!r} is one of the {_spelling(kinds[0])}: {matches[kinds[0]][0]}"
    others = ", ".join(f"{len(matches[k])} {_spelling(k)}" for k in kinds[1:])
    return AmbiguousNameError(f"{said}; it also matches {others}: kind {_spelling(kinds[1])} (or another of them) "
                              "lists those", field="name", names=("kind",),
                              allowed=f"an exact id, or one kind: {', '.join(_spelling(k) for k in kinds)}")


LIKELY_MEANT = ("models", "accelerators", "systems")  # the kinds a name typed at a planning command names


def _spelling(key: str) -> str:
    """A section's name as `--kind` takes it (serving_profiles -> serving-profiles)."""
    return key.replace("_", "-")


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: str
    id: str
    name: str


def search(query: str, limit: int = 50) -> list[SearchHit]:
    """Catalogue entries whose id, name or an alias contains ``query`` (normalised)."""
    from inferplan.catalog.registry import normalise_name, record_aliases

    catalog = load_catalog()
    wanted = normalise_name(query)
    if not wanted:
        raise CatalogError("search needs some text", field="q",
                           allowed="letters or digits of an id, a name or an alias")
    hits = []
    for key in SECTIONS:
        for record in getattr(catalog, key):
            names = [record.id, getattr(record, "name", record.id), *record_aliases(record)]
            if any(wanted in normalise_name(n) for n in names):
                hits.append(SearchHit(kind=key.replace("_", "-"), id=record.id, name=str(getattr(record, "name", record.id))))
    return hits[:limit]
