"""KTransformers' launch flags: the CPU expert backend, its weights, the experts kept on the GPU, and
Expert Deferral (the CPU-GPU overlap the plan prices).

The flag names and the weight format -> ``--kt-method`` mapping are ``engine_flags.yaml`` data (the
``kt_*`` settings of an engine's record); an engine without them gets nothing from here.
"""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags, FlagRule
from inferplan.catalog.loader import Catalog
from inferplan.errors import UnknownModelError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.kt_host import DEFAULT_RELEASE, kt_method


def kt_args(d: Deployment, catalog: Catalog, flags: EngineFlags,
            quantization: str | None) -> tuple[list[str], tuple[str, ...]]:
    """The kt flags of ``d`` (routed experts on the GPU: 0 when left out, as the plan assumes) and
    notes on what the command leaves to the user; ``quantization`` None: the checkpoint's own."""
    weights = flags.settings.get("kt_weight_path")
    if weights is None:
        if d.kt_num_gpu_experts is not None:
            raise UnsupportedSettingError(f"{flags.engine} {flags.version} has no launch flag for kt_num_gpu_experts",
                                          field="kt_num_gpu_experts", allowed="leave it out, or engine ktransformers")
        return [], ()
    if d.kt_release not in (None, DEFAULT_RELEASE):
        raise UnsupportedSettingError(f"{flags.engine} {flags.version} launches the {DEFAULT_RELEASE} release, not {d.kt_release}",
                                      field="kt_release", allowed=f"leave it out, or {DEFAULT_RELEASE}")
    quantization = quantization or _native(d, catalog)
    argv: list[str] = []
    method = flags.settings.get("kt_method")
    chosen = None
    if method is not None and (d.kt_method is not None or quantization is not None):
        chosen = kt_method(catalog, None, d.kt_method, quantization)  # as the plan priced it
        argv += _pair(method, chosen)
    path = weights.values.get(chosen, weights.value) if chosen else weights.value  # LLAMAFILE: a GGUF directory
    notes = [f"replace {path} with {weights.note}" if weights.note else f"replace {path}", *_gguf_build(d, catalog, quantization, path)]
    if method is not None and chosen is None:
        notes.append(f"no CPU expert backend is recorded for {quantization or 'the checkpoint format'}: "
                     f"{method.flags[0]} is left to the engine's default")
    argv += _pair(weights, path)
    deferral = flags.settings.get("kt_max_deferred_experts_per_token")
    if deferral is not None and deferral.value is not None:
        argv += _pair(deferral, deferral.value)  # the overlap the plan prices
    experts = flags.settings.get("kt_num_gpu_experts")
    if experts is not None:
        argv += _pair(experts, str(d.kt_num_gpu_experts or 0))
    return argv, tuple(notes)


def _pair(rule: FlagRule, text: str) -> list[str]:
    return [part for flag in rule.flags for part in (flag, text)]


def _gguf_build(d: Deployment, catalog: Catalog, quantization: str | None, path: str) -> list[str]:
    """Where the catalogue names the model's published build in ``quantization`` with a GGUF file: a note
    saying to download it into the directory ``path`` stands for."""
    try:
        card = catalog.model(d.model, field_name="model")
    except UnknownModelError:
        return []
    build = next((c for c in card.checkpoints if c.quantization == quantization and c.repo and c.gguf_file), None)
    if build is None:
        return []
    return [f"{path}: a directory holding {build.repo}'s {build.gguf_file.file} (and its other parts, if split)"]


def _native(d: Deployment, catalog: Catalog) -> str | None:
    """The format of the catalogue model's first published checkpoint (None: not in the catalogue)."""
    try:
        card = catalog.model(d.model, field_name="model")
    except UnknownModelError:
        return None
    return card.checkpoints[0].quantization if card.checkpoints else None
