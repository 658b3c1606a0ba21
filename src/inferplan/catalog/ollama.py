"""Ollama library tags as names of a model that select one of its builds (``ModelCard.ollama_tags``).

A person who types ``qwen3:32b`` runs Ollama, which serves the tag's GGUF file through llama.cpp's
``llama-server`` (``data/ollama.yaml``). So a tag resolves to the model and to a build: the card's checkpoint
in the tag's quantization, on the catalogue engine Ollama's runner is, at the context Ollama gives it.
``memory.hardware`` plans that build where the deployment states no engine, weight format or context; a
stated one wins. A name spelt as a further tag of a model the catalogue has tags for (``qwen3:32b-fp16``) is
refused naming the tags it lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.registry import normalise_name
from inferplan.errors import UnknownModelError

OLLAMA = "ollama"  # the ollama_runners record (ollama.yaml) that runs every card's ollama_tags


@dataclass(frozen=True)
class NamedBuild:
    """The build an Ollama tag selects: the model, the weight format and the engine that runs it."""

    tag: str
    model: str  # the card's id
    quantization: str
    engine: str


def named_build(catalog, name: str) -> NamedBuild | None:
    """The build the Ollama tag ``name`` selects (None: ``name`` is no tag of a catalogue model)."""
    if ":" not in name:
        return None
    wanted = normalise_name(name)
    for card in catalog.models.exact(name):
        for tag in card.ollama_tags:
            if normalise_name(tag.tag) == wanted:
                runner = catalog.ollama_runners.records[OLLAMA]
                return NamedBuild(tag.tag, card.id, tag.quantization, runner.engine)
    return None


def refuse_unlisted_tag(catalog, name: str, field_name: str) -> None:
    """Raise ``UnknownModelError`` naming the tags the catalogue lists when ``name`` is spelt as a further tag of a
    model it has Ollama tags for (``qwen3:32b-fp16``: a build the card does not list); else return."""
    spelt = name.strip().lower()
    if ":" not in spelt:
        return
    matches = [(len(tag.tag), card) for card in catalog.models
               for tag in card.ollama_tags if spelt.startswith(tag.tag.lower() + "-")]
    if not matches:
        return
    card = max(matches, key=lambda m: m[0])[1]
    listed = ", ".join(t.tag for t in card.ollama_tags)
    raise UnknownModelError(f"{name!r} is an Ollama tag of {card.name} in a build the catalogue does not list for it",
                            field=field_name, allowed=listed)


def tag_note(catalog, name: str) -> str | None:
    """One line naming the build the Ollama tag ``name`` selects (None: ``name`` is no tag)."""
    named = named_build(catalog, name)
    if named is None:
        return None
    return (f"{named.tag} is Ollama's {catalog.quantizations.records[named.quantization].name} build of "
            f"{catalog.models.records[named.model].name}, on {catalog.engines.records[named.engine].name} as Ollama "
            "runs it")
