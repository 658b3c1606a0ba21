"""The options an unknown one most likely meant, for ``no such option`` (``cli_usage``).

Three sources, in this order, each kept to the options the command takes:

- the names people type for an option a command spells otherwise (``--accelerator`` for fit's
  ``--gpu``, ``--gpu`` for search's ``--accelerators``): ``option_aliases.yaml``;
- an engine's own spelling of a setting a command plans (SGLang's ``--tp-size``, llama.cpp's
  ``--ctx-size``): ``catalog/data/engine_flags.yaml``, read through the catalogue;
- a misspelling: options whose name is close to the one typed, letter by letter, or that start
  with it.

Names compare in lower case, without their leading dashes, with ``_`` read as ``-``.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from importlib.resources import files

import yaml
from pydantic import BaseModel, ConfigDict, Field

from inferplan.errors import InferplanError

CLOSEST_AT_MOST = 3  # options named as the closest
SIMILAR_RATIO = 0.75  # difflib ratio of two names, at least, for a misspelling
PREFIX_LETTERS = 4  # a typed name this long or longer suggests the options it begins


class OptionAlias(BaseModel):
    """Names typed for what a command spells as one of ``options``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    means: str
    names: tuple[str, ...] = Field(min_length=1)
    options: tuple[str, ...] = Field(min_length=1)
    commands: tuple[str, ...] | None = None  # the commands it applies to (None: every one)


class OptionAliases(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    aliases: tuple[OptionAlias, ...]


def normal(name: str) -> str:
    """``--Max_Model_Len`` -> ``max-model-len``."""
    return name.strip().lstrip("-").lower().replace("_", "-")


@lru_cache(maxsize=1)
def option_aliases() -> OptionAliases:
    text = files("inferplan.shells").joinpath("option_aliases.yaml").read_text(encoding="utf-8")
    return OptionAliases.model_validate(yaml.safe_load(text))


@lru_cache(maxsize=1)
def engine_spellings() -> dict[str, str]:
    """An engine's flag (normalised) -> the inferplan flag of the setting it carries; a flag that
    carries several settings (llama.cpp's --split-mode) is left out. Empty when the catalogue does not load."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.shells.cli_common import FLAGS

    try:
        catalog = load_catalog()
    except InferplanError:
        return {}
    found: dict[str, set[str]] = {}
    for record in catalog.engine_flags:
        for setting, rule in record.settings.items():
            if setting in FLAGS:
                for flag in rule.flags:
                    found.setdefault(normal(flag), set()).add(FLAGS[setting])
    return {name: next(iter(ours)) for name, ours in found.items() if len(ours) == 1}


def closest_options(typed: str, command: str, options: list[str]) -> list[str]:
    """The options of ``command`` (as named after ``inferplan``) that ``typed`` most likely meant,
    likeliest first, at most ``CLOSEST_AT_MOST``; ``options``: every name the command takes."""
    name = normal(typed)
    takes = {normal(o): o for o in options}  # a name -> the command's last spelling of it
    found: list[str] = []
    for alias in option_aliases().aliases:
        if (alias.commands is None or command in alias.commands) and name in {normal(n) for n in alias.names}:
            found += [takes[normal(o)] for o in alias.options if normal(o) in takes]
    ours = engine_spellings().get(name)
    if ours is not None and normal(ours) in takes:
        found.append(takes[normal(ours)])
    # the names spelled as long options, in the order the command lists its long options
    longs = [n for n in dict.fromkeys(normal(o) for o in options if o.startswith("--")) if takes[n].startswith("--")]
    found += [takes[n] for n in difflib.get_close_matches(name, longs, n=CLOSEST_AT_MOST, cutoff=SIMILAR_RATIO)]
    if len(name) >= PREFIX_LETTERS:
        found += [takes[n] for n in longs if n.startswith(name)]
    return list(dict.fromkeys(o for o in found if o != typed))[:CLOSEST_AT_MOST]
