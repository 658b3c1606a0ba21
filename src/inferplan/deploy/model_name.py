"""Which model names a launch command takes when the catalogue lacks them.

A catalogue id or alias, a config.json or model folder, or a repository in the local Hugging Face
cache is planned as ``fit`` plans it (its memory checked). Any other name is served as given only
when it is a Hugging Face repository id (``owner/name``), with a note that its memory was not
checked; a typo such as ``qwen3-8bb`` or a phrase is refused with the closest catalogue ids, as
every other command refuses it.
"""

from __future__ import annotations

import re

from inferplan.catalog.loader import Catalog
from inferplan.errors import UnknownModelError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.resolve import resolve_model

# Hugging Face's rule for a repository id (huggingface_hub utils/_validators.py, "Repo id must use
# alphanumeric chars or '-', '_', '.', '--' and '..' are forbidden, '-' and '.' cannot start or end
# the name, max length is 96"; checked 2026-12-05), with the owner required
_PART = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?")
REPO_ID_ALLOWED = "a catalogue model id or alias, or a Hugging Face repo id (owner/name)"


def is_repo_id(name: str) -> bool:
    """Whether ``name`` is shaped as a Hugging Face repository id, ``owner/name``."""
    parts = name.split("/")
    return len(parts) == 2 and all(_PART.fullmatch(p) and "--" not in p and ".." not in p for p in parts)


def unchecked_model_note(d: Deployment, catalog: Catalog) -> str | None:
    """None when ``d.model`` is planned (its memory checked); a note for a repo id the catalogue and the
    cache lack; otherwise ``UnknownModelError`` naming the closest catalogue ids."""
    try:
        resolve_model(catalog, d.model)
        return None
    except UnknownModelError as exc:
        if not is_repo_id(d.model):
            if exc.allowed is None:
                exc.allowed = REPO_ID_ALLOWED
            raise
    return (f"{d.model} is not in the catalogue or the local Hugging Face cache: its memory was not checked "
            "(download the repo, or import its config.json with `inferplan model import`, to check it)")
