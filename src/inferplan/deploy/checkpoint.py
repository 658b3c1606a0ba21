"""Which checkpoint a launch command serves: the catalogue model's published build in the planned
quantization (its Hugging Face repo; a build meant for the engine, ``Checkpoint.engines``, before one
meant for any, and never one meant for other engines), a GGUF file for llama.cpp (fetched by the tag its
file names carry, ``Checkpoint.gguf_file``), or the model as the user named it.

Where the catalogue names no checkpoint for the plan, the command carries a placeholder in angle
brackets and a note saying what to put there; nothing is guessed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import PurePath

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec, looks_like_path
from inferplan.catalog.schema import Checkpoint, ModelCard
from inferplan.errors import InferplanError, UnknownModelError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.kt_host import kt_expert_format
from inferplan.memory.precision import planned_quantization
from inferplan.memory.resolve import resolve_model


GGUF_PREFIX = "gguf-"  # quantization ids of GGUF files (quantizations.yaml)


@dataclass(frozen=True)
class ServedModel:
    argv: tuple[str, ...]  # the model argument(s) of the launcher
    checkpoint: str
    quantization: str | None  # the planned weight format (None: the checkpoint's own)
    quantization_in_checkpoint: bool  # the checkpoint is already in that format
    notes: tuple[str, ...] = ()


def served_model(d: Deployment, catalog: Catalog, flags: EngineFlags) -> ServedModel:
    card = card_of(d, catalog)
    quant = catalog.quantization(d.quantization, field_name="quantization").id if d.quantization else None
    if flags.model_source == "gguf_file":
        spec = _spec(d, catalog)
        quant = quant or (planned_quantization(catalog, d, spec, flags.engine) if spec else None)  # as fit plans it
        made_with = _made_with(catalog, flags.engine, quant)
        return _gguf(card, quant, flags, made_with) if card else _gguf_as_named(d, spec, quant, flags, made_with)
    made_with = _made_with(catalog, flags.engine, quant)
    if card is None:
        return _hf_as_named(d, _spec(d, catalog), quant, flags, made_with)
    return _kt_original(d, catalog, card, quant, flags) or _hf_repo(d, card, quant, flags, made_with)


def _kt_original(d: Deployment, catalog: Catalog, card: ModelCard, quant: str | None,
                 flags: EngineFlags) -> ServedModel | None:
    """KTransformers beside a ``--kt-method`` whose CPU files SGLang does not serve (kt_cpu_paths.yaml
    ``gpu_weights``: LLAMAFILE's GGUF): the model's original checkpoint, which the GPU part is served from, as
    fit plans it; the ``quant`` files go in ``--kt-weight-path`` (deploy/kt_args.py). None: another case."""
    if "kt_weight_path" not in flags.settings or quant is None or not card.checkpoints:
        return None
    fmt = kt_expert_format(catalog, d.kt_release, d.kt_method, quant)
    if fmt is None or fmt.gpu_weights != "original-checkpoint":
        return None
    original = card.checkpoints[0].quantization
    served = _hf_repo(d, card, original, flags, "")
    note = (f"{fmt.kt_method}: the GPU part (attention, shared experts, dense layers) is served from {card.name}'s "
            f"original {original} checkpoint, {served.checkpoint}; the CPU reads the routed experts from the {quant} "
            "files in the kt weight path")
    return dataclasses.replace(served, quantization=quant, quantization_in_checkpoint=True, notes=(*served.notes, note))


def _spec(d: Deployment, catalog: Catalog) -> ModelSpec | None:
    """The model as fit resolves it (a card, a config.json, a cached repo); None: it cannot."""
    try:
        return resolve_model(catalog, d.model)
    except InferplanError:
        return None


def _made_with(catalog: Catalog, engine: str, quant: str | None) -> str:
    """How to make a checkpoint in ``quant`` the engine's own tools convert to ("" if they don't)."""
    rules = catalog.engine(engine, field_name="engine")
    if quant is None or quant not in rules.converts_to or not rules.converts_with:
        return ""
    return f" (a published one, or one made from a 16-bit checkpoint with {rules.converts_with})"


def card_of(d: Deployment, catalog: Catalog) -> ModelCard | None:
    """The catalogue card of ``d.model``, or None for a path or a repo id the catalogue lacks."""
    try:
        return catalog.model(d.model, field_name="model")
    except UnknownModelError:
        return None


def _with_repo(card: ModelCard | None) -> list[Checkpoint]:
    return [c for c in (card.checkpoints if card else ()) if c.repo]


def _model_args(flags: EngineFlags, checkpoint: str) -> tuple[str, ...]:
    return (flags.model_flag, checkpoint) if flags.model_flag else (checkpoint,)


def _hf_as_named(d: Deployment, spec: ModelSpec | None, quant: str | None, flags: EngineFlags,
                 made_with: str) -> ServedModel:
    """A model the catalogue lacks (a config.json, a model folder, a repo id), served as given. In the planned
    weight format: as it is where its config states that format (``native_quantization``), quantized at load
    by the engine's flag where the engine makes that format from the config's 16-bit weights, else with a note
    that the checkpoint must already be in that format."""
    if d.model.endswith(".json"):  # a config.json: the engine loads the folder it sits in
        served = str(PurePath(d.model).parent)
        notes = [f"{d.model} is a config file: the engine is given its folder, {served}, which must hold the weights"]
    else:
        served = d.model
        notes = [f"{d.model} is not in the catalogue: served as given (a Hugging Face repo id or a local path)"]
    own = spec.native_quantization if spec is not None else None
    rule = flags.settings.get("quantization")
    at_load = quant is not None and quant != own and rule is not None and quant in rule.values \
        and own in rule.quantize_from
    if at_load:
        notes.append(f"its {own} weights are quantized to {quant} by {flags.engine} at load")
    elif quant is not None and quant != own:
        notes.append(f"the plan's weights are {quant}: {served} must hold a checkpoint in {quant}{made_with}"
                     + (f" (its config states {own})" if own else ""))
    return ServedModel(_model_args(flags, served), served, quant, not at_load, tuple(notes))


def _hf_repo(d: Deployment, card: ModelCard, quant: str | None, flags: EngineFlags, made_with: str) -> ServedModel:
    builds = [c for c in _with_repo(card) if not c.quantization.startswith(GGUF_PREFIX)
              and (not c.engines or flags.engine in c.engines)]
    named_first = [c for c in builds if c.engines] + [c for c in builds if not c.engines]  # a build meant for the engine
    exact = next((c for c in named_first if c.quantization == quant), None) if quant else next(iter(builds), None)
    if exact is not None:
        return ServedModel(_model_args(flags, exact.repo), exact.repo, quant, True)
    rule = flags.settings.get("quantization")
    bases = [c for c in builds if rule is not None and c.quantization in rule.quantize_from]
    if bases and quant in rule.values:  # the engine quantizes a published 16-bit build at load
        base = bases[0]
        note = f"{card.name}: {base.repo} ({base.quantization}) quantized to {quant} by {flags.engine} at load"
        return ServedModel(_model_args(flags, base.repo), base.repo, quant, False, (note,))
    placeholder = f"<{quant or 'published'} checkpoint of {card.id}>"
    note = (f"the catalogue names no {quant or ''} Hugging Face checkpoint of {card.name}".replace("  ", " ")
            + f": replace {placeholder} with its repo id or a local path{made_with}")
    return ServedModel(_model_args(flags, placeholder), placeholder, quant, True, (note,))


def _gguf(card: ModelCard, quant: str | None, flags: EngineFlags, made_with: str) -> ServedModel:
    quant = quant or (card.checkpoints[0].quantization if card.checkpoints else None)  # the plan's own precision
    if quant is None:
        placeholder = f"<{card.id}.gguf>"
        note = f"the catalogue names no checkpoint of {card.name}: replace {placeholder} with a GGUF file's path"
        return ServedModel(_model_args(flags, placeholder), placeholder, None, True, (note,))
    tag = _gguf_tag(quant, flags)
    build = next((c for c in _with_repo(card) if c.quantization == quant and quant.startswith(GGUF_PREFIX)), None)
    if build and flags.hf_repo_flag:
        return _gguf_repo(build, quant, flags)
    placeholder = f"<{card.id}-{tag}.gguf>"
    note = f"the catalogue names no {tag} GGUF of {card.name}: replace {placeholder} with the file's path{made_with}"
    return ServedModel(_model_args(flags, placeholder), placeholder, quant, True, (note,))


def _gguf_repo(build: Checkpoint, quant: str, flags: EngineFlags) -> ServedModel:
    """A published GGUF build fetched as ``REPO:TAG``, the tag its file names carry (``Checkpoint.gguf_file``;
    no tag where the data says the repo is served without one), else the llama-quantize type name; a build
    split into byte parts ``--hf-repo`` does not load is served from the joined file, a placeholder."""
    file = build.gguf_file
    if file is not None and file.byte_parts > 1:
        placeholder = f"<{file.file}>"
        n = file.byte_parts
        note = (f"{build.repo} holds {file.file} as {n} byte parts (.part1of{n} … .part{n}of{n}) that "
                f"{flags.hf_repo_flag} does not load: download them, join them in order with cat and replace "
                f"{placeholder} with the joined file's path")
        return ServedModel(_model_args(flags, placeholder), placeholder, quant, True, (note,))
    tag = file.tag if file is not None else _gguf_tag(quant, flags)
    source = f"{build.repo}:{tag}" if tag else build.repo
    if build.vision_encoder or not flags.text_only_flag:
        return ServedModel((flags.hf_repo_flag, source), source, quant, True)
    note = (f"{build.repo}'s file holds the text model alone, as the plan sizes it: {flags.text_only_flag} keeps "
            f"{flags.hf_repo_flag} from also loading the repo's vision projector onto the GPU (no image input)")
    return ServedModel((flags.hf_repo_flag, source, flags.text_only_flag), source, quant, True, (note,))


def _gguf_as_named(d: Deployment, spec: ModelSpec | None, quant: str | None, flags: EngineFlags,
                   made_with: str) -> ServedModel:
    """A model the catalogue lacks: a .gguf path as given; a local config.json or model folder (not a
    GGUF file) as a placeholder for the GGUF file made from it; else a Hugging Face GGUF repo with the
    planned type."""
    if quant is None or d.model.endswith(".gguf") or not flags.hf_repo_flag:
        note = f"{d.model} is not in the catalogue: served as given (a GGUF file)"
        return ServedModel(_model_args(flags, d.model), d.model, quant, True, (note,))
    if looks_like_path(d.model):
        tag = _gguf_tag(quant, flags)
        placeholder = f"<{spec.name if spec else 'model'}-{tag}.gguf>"
        note = (f"{d.model} is a local config, not a GGUF file: replace {placeholder} with the path of its {tag} GGUF"
                f"{made_with}")
        return ServedModel(_model_args(flags, placeholder), placeholder, quant, True, (note,))
    source = f"{d.model}:{_gguf_tag(quant, flags)}"
    note = f"{d.model} is not in the catalogue: taken as a Hugging Face repository of GGUF files"
    return ServedModel((flags.hf_repo_flag, source), source, quant, True, (note,))


def _gguf_tag(quant: str, flags: EngineFlags) -> str:
    tag = flags.gguf_tags.get(quant)
    if tag is None:
        raise UnsupportedSettingError(f"{flags.engine} serves GGUF files; {quant} has no GGUF type", field="quantization",
                                      allowed=", ".join(sorted(flags.gguf_tags)))
    return tag
