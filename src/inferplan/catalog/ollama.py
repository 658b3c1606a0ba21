"""Ollama library tags as names of a model that select one of its builds (``ModelCard.ollama_tags``).

A person who types ``qwen3:32b`` runs Ollama, which serves the tag's GGUF file through llama.cpp's
``llama-server`` (``data/ollama.yaml``). So a tag resolves to the model and to a build: the card's checkpoint
in the tag's quantization, on the catalogue engine Ollama's runner is, at the context Ollama gives it.
``memory.hardware`` plans that build where the deployment states no engine, weight format or context; a
stated one wins. A name spelt as another tag of a library the catalogue has tags for (``qwen3:32b-fp16``,
``qwen3:30b``, bare ``qwen3``) is refused naming the tags it lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.registry import normalise_name
from inferplan.errors import CatalogError, UnknownModelError

OLLAMA = "ollama"  # the ollama_runners record (ollama.yaml) that runs every card's ollama_tags


@dataclass(frozen=True)
class NamedBuild:
    """The build an Ollama tag selects: the model, the weight format and the engine that runs it."""

    tag: str
    model: str  # the card's id
    quantization: str
    engine: str
    vision_projector: bool = False  # Ollama loads a vision projector with it
    vision_projector_bytes: float = 0.0  # its size where the catalogue has one (0: not known, so not counted)

    def runs(self, engine: str, quantization: str | None) -> bool:
        """Whether a deployment on ``engine`` in ``quantization`` runs this build."""
        return (engine, quantization) == (self.engine, self.quantization)

    def run_by(self, engine: str, quantization: str | None) -> bool:
        """Whether a deployment on ``engine`` (an id) in ``quantization`` runs this build."""
        return (engine, quantization) == (self.engine, self.quantization)


def named_build(catalog, name: str) -> NamedBuild | None:
    """The build the Ollama tag ``name`` selects (None: ``name`` is no tag of a catalogue model)."""
    if ":" not in name:
        return None
    wanted = normalise_name(name)
    for card in catalog.models.exact(name):
        for tag in card.ollama_tags:
            if normalise_name(tag.tag) == wanted:
                runner = catalog.ollama_runners.records[OLLAMA]
                projector = tag.vision_projector_bytes
                return NamedBuild(tag.tag, card.id, tag.quantization, runner.engine,
                                  tag.vision_projector_source is not None, projector.value if projector else 0.0)
    return None


TAGS_NAMED = 3  # tags a refused front-end name offers as examples


def front_end_refusal(catalog, name: str, field_name: str, model: str | None = None) -> CatalogError | None:
    """The error for ``name`` given as an engine where it names a runner of ``ollama.yaml`` (Ollama), which is
    planned as the engine it runs with the build of one of its tags named as the model (None: not a runner). The
    tags it offers are ``model``'s own first, where the catalogue lists some, then other models'."""
    runners = catalog.ollama_runners.exact(name) if name.strip() else []
    if not runners:
        return None
    runner, engine = runners[0], catalog.engines.records[runners[0].engine]
    own = catalog.models.exact(model) if model and model.strip() else []
    cards = [*own, *(card for card in catalog.models if card not in own)]
    tags = [t.tag for card in cards for t in card.ollama_tags if "-" not in t.tag.partition(":")[2]]
    return CatalogError(
        f"{runner.name} is not an engine here: it runs {engine.name}, so name one of its tags as the model "
        f"({', '.join(tags[:TAGS_NAMED])} ...) and leave the engine out, or plan {engine.id} itself",
        field=field_name, allowed=", ".join(catalog.engines.records))


def library(tag: str) -> str:
    """The Ollama library a tag belongs to (``qwen3`` of ``qwen3:32b``; a bare library name is its own)."""
    return tag.strip().lower().partition(":")[0]


def refuse_unlisted_tag(catalog, name: str, field_name: str) -> None:
    """Raise ``UnknownModelError`` naming the tags the catalogue lists when ``name`` is no catalogue name but is
    spelt as a tag (or, bare, the name) of an Ollama library the catalogue lists tags for: a further tag of a
    listed one (``qwen3:32b-fp16``: a build the card does not list) names that card's tags; another tag of the
    library (``qwen3:30b``) or the bare library name (``qwen3``, which Ollama reads as its ``latest`` tag) names
    the library's (``mistral-small3.2``, though it reads like the alias Mistral Small 3.2, as that alias is not
    spelt so). Such a name selects a build of Ollama's the catalogue cannot say, so it is never planned as the
    card's own build. Else return."""
    spelt = name.strip().lower()
    found = catalog.models.exact(name)
    if found and (":" in spelt or any(spelt in {n.lower() for n in (c.id, c.name, *c.aliases)} for c in found)):
        return  # a tag or a name of a card (deepseek-r1 is a card's id and a library's name), not a look-alike
    matches = [(len(tag.tag), card) for card in catalog.models
               for tag in card.ollama_tags if spelt.startswith(tag.tag.lower() + "-")]
    if matches:
        card = max(matches, key=lambda m: m[0])[1]
        raise UnknownModelError(f"{name!r} is an Ollama tag of {card.name} in a build the catalogue does not "
                                "list for it", field=field_name, allowed=", ".join(t.tag for t in card.ollama_tags))
    listed = [tag.tag for card in catalog.models for tag in card.ollama_tags if library(tag.tag) == library(spelt)]
    if not listed:
        return
    which = f"is a tag of Ollama's {library(spelt)} library that" if ":" in spelt else \
        f"names Ollama's {library(spelt)} library, whose latest tag it pulls, and that tag"
    raise UnknownModelError(f"{name!r} {which} is not one the catalogue lists, so the build it pulls is not "
                            "known here", field=field_name, allowed=", ".join(listed))


def tag_note(catalog, name: str) -> str | None:
    """One line naming the build the Ollama tag ``name`` selects (None: ``name`` is no tag)."""
    named = named_build(catalog, name)
    return build_line(catalog, named) if named is not None else None


def build_line(catalog, named: NamedBuild) -> str:
    """One line naming the build ``named`` (an Ollama tag's) selects."""
    return (f"{named.tag} is Ollama's {catalog.quantizations.records[named.quantization].name} build of "
            f"{catalog.models.records[named.model].name}, planned on {catalog.engines.records[named.engine].name}")
