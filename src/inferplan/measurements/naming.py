"""What a result file's own names mean in the catalogue: the model a file names (vLLM's ``model_id``,
llama-bench's ``model_filename``) and the weight format it states (llama-bench's ``model_type``).

A quantized checkpoint is published under its base model's repo name with the format appended
(``RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic``, ``Qwen3-30B-A3B-Q4_K_M.gguf``). ``run_model``
reads such a name as the base model in that format when the trailing words exactly name a catalogue
quantization (an id or alias of ``catalog/data/quantizations*.yaml``, which carry their sources), so
the rule is the catalogue's own names, not a list kept here. A name that still matches nothing is
refused with the closest catalogue names, and the error names the file's key it came from.
"""

from __future__ import annotations

import difflib
import re
from pathlib import PurePosixPath

from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec, looks_like_path
from inferplan.catalog.registry import normalise_name
from inferplan.errors import InvalidScenarioError, UnknownModelError
from inferplan.memory.resolve import resolve_model

MAX_FORMAT_WORDS = 3  # "FP8-dynamic", "W4A16-G128": the longest format suffix tried
CLOSE_MATCHES = 5

# llama.cpp names a file type "Q4_K - Medium" (llama_model_ftype_name, src/llama-model-loader.cpp);
# the catalogue spells it as the GGUF file name does, "Q4_K_M"
_FTYPE_SIZE = re.compile(r"\s*-\s*(Small|Medium|Large|XS|XXS|S|M|L)$", re.IGNORECASE)
_SIZE_LETTER = {"small": "S", "medium": "M", "large": "L"}


def _split_format(name: str, catalog: Catalog) -> tuple[str, str | None]:
    """``name`` without a trailing weight format that names a catalogue quantization, and that
    quantization's id (None: no such suffix)."""
    words = name.split("-")
    for n in range(min(MAX_FORMAT_WORDS, len(words) - 1), 0, -1):
        found = catalog.quantizations.exact("-".join(words[-n:]))
        if len(found) == 1:
            return "-".join(words[:-n]), found[0].id
    return name, None


def _bare(name: str) -> str:
    """A repo id's or file path's last part without a model file's extension."""
    bare = PurePosixPath(name.strip().replace("\\", "/")).name or name.strip()
    return re.sub(r"\.(gguf|safetensors|bin)$", "", bare, flags=re.IGNORECASE)


def _resolve(catalog: Catalog, name: str, field: str, stated_by_file: bool) -> ModelSpec:
    """``resolve_model``, save that a name a file states is never read as a path on this machine (a
    vLLM ``model_id`` is the server's path when it served a local folder): such a name is unknown."""
    if stated_by_file and (name.startswith(("/", "~", ".")) or "\\" in name or looks_like_path(name)):
        raise UnknownModelError(f"no model named {name!r}", field=field)
    return resolve_model(catalog, name, field)


def run_model(catalog: Catalog, name: str, field: str, stated_by_file: bool) -> tuple[ModelSpec, str | None]:
    """The model a run names, and the weight format its name states (None: none stated).
    ``field``: the key the name came from (``model``, or the file's ``model_id`` …)."""
    try:
        return _resolve(catalog, name, field, stated_by_file), None
    except UnknownModelError:
        pass
    base, quantization = _split_format(_bare(name), catalog)
    try:
        return _resolve(catalog, base, field, stated_by_file), quantization
    except UnknownModelError:
        pass
    names = {normalise_name(n): r.id for r in catalog.models.records.values() for n in (r.id, r.name, *r.aliases)}
    close = difflib.get_close_matches(normalise_name(base), list(names), n=CLOSE_MATCHES * 3, cutoff=0.6)
    ids = list(dict.fromkeys(names[c] for c in close))[:CLOSE_MATCHES]
    # a name the file states: the message names the input that states another (``model``), and no other word spelled so
    said = (f"{name!r} (the file's '{field}') matches none of the catalogue's models; state the one the run served as "
            "model") if stated_by_file else f"{name!r} names no catalogue model"
    raise InvalidScenarioError(
        said, field=field, names=("model",) if stated_by_file else None,
        allowed=(", ".join(ids) + ", the closest") if ids else "a catalogue model id (inferplan catalog list models)")


def ftype_quantization(catalog: Catalog, ftype: str, field: str) -> str:
    """The catalogue quantization of a llama.cpp file type as llama-bench prints it in ``model_type``
    ("Q4_K - Medium" -> gguf-q4_k_m, "BF16" -> bf16, "all F32" -> fp32)."""
    text = ftype.strip().removeprefix("all ").strip()
    text = _FTYPE_SIZE.sub(lambda m: "_" + _SIZE_LETTER.get(m.group(1).lower(), m.group(1).upper()), text)
    found = catalog.quantizations.exact(text.replace(" ", "_"))
    if len(found) != 1:
        raise InvalidScenarioError(f"the file's {field} states the weight type {ftype!r}, which the catalogue has no "
                                   "quantization for; state the quantization", field=field,
                                   allowed="a catalogue quantization (inferplan catalog list quantizations)")
    return found[0].id
