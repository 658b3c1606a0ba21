"""The first release of an engine that loads a model architecture or a weight format, as data
(``data/engine_support.yaml``).

An engine release loads a checkpoint only when its model registry names the checkpoint's
architecture (the ``architectures`` entry of its config.json) and its quantization registry takes
the checkpoint's ``quant_method``. A ``SupportFloor`` records the first release that does, for one
architecture, one weight format (a quantizations.yaml id), or one format on one architecture. A
release before a floor is refused (``check_engine_loads``, called by ``memory/fit.py`` for every plan), so a plan pinned
to an old release does not print a launch command that fails at load. An architecture or format
with no floor recorded is never refused.

A ``GpuRefusal`` records GPU architectures on which an engine's releases do not run a model
architecture at all, whatever the checkpoint's format (DeepSeek-V4 on TensorRT-LLM before Blackwell), or
do not run a weight format on any model (MXFP4 on TensorRT-LLM before Hopper, which has no MoE kernel for
it there), or (``moe_only``) do not run a weight format's routed experts, so refuse it on a mixture-of-experts
model alone (NVFP4 through Petit, whose kernels quantize the linear layers and give FusedMoE no method):
``check_engine_runs_model_on`` refuses the plan, naming the engines and GPU architectures that remain. A
refusal asked of an engine's unstated release is asked of its current one (engine_memory_rules.yaml
``current_release``), the release a plan is made at.

An ``IntegratedGpuRefusal`` records releases that do not start on a CUDA integrated GPU (accelerators'
``integrated_gpu``: GB10, Jetson) whatever the model, such as SGLang releases that size their defaults from
nvidia-smi's ``memory.total``, which such a GPU reports as ``[N/A]``: ``check_engine_starts_on`` refuses the plan,
naming engine_version and the releases outside the range.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from pydantic import Field, model_validator

from inferplan.catalog.memory_rules import current_release, parse_engine_version, release_key
from inferplan.catalog.provenance import Kind, release_order
from inferplan.catalog.schema import SLUG, Frozen, check_engine_and_sources
from inferplan.errors import CatalogError, InvalidScenarioError, UnsupportedSettingError


class EngineReleaseRecord(Frozen):
    """What both kinds of record hold: the engine, the model architecture and/or weight format they are
    about, and their provenance."""

    id: str = Field(pattern=SLUG)
    engine: str  # engines.yaml id
    architecture: str | None = None  # a Hugging Face architectures name ("Qwen3ForCausalLM")
    quantization: str | None = None  # a quantizations.yaml id ("fp8-block")
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Kind
    note: str = ""


class SupportFloor(EngineReleaseRecord):
    """The first release of ``engine`` that loads ``architecture``, ``quantization``, or that
    quantization on that architecture (both given)."""

    first_release: str  # inclusive

    @model_validator(mode="after")
    def _subject(self) -> "SupportFloor":
        if self.architecture is None and self.quantization is None:
            raise ValueError("a support floor names an architecture, a quantization, or both")
        release_key(self.first_release)
        return self

    def applies(self, engine: str, architecture: str | None, quantization: str) -> bool:
        return self.engine == engine and (self.architecture is None or self.architecture == architecture) and \
            (self.quantization is None or self.quantization == quantization)

    def subject(self) -> str:
        """What the floor is for, in words: "Qwen3ForCausalLM", "fp8-block checkpoints", "fp8-block Qwen3ForCausalLM"."""
        if self.quantization is None:
            return str(self.architecture)
        return f"{self.quantization} {self.architecture or 'checkpoints'}"


def unsupported(catalog, engine: str, release: str, architecture: str | None,
                quantization: str) -> tuple[SupportFloor, ...]:
    """The floors ``release`` of ``engine`` is below for a checkpoint of ``architecture`` in
    ``quantization``, highest first (empty: the release loads it, as far as the catalogue knows)."""
    key = release_key(release)
    above = [f for f in catalog.engine_support if f.applies(engine, architecture, quantization)
             and key < release_key(f.first_release)]
    return tuple(sorted(above, key=lambda f: release_key(f.first_release), reverse=True))


def loading_release(catalog, engine: str, release: str | None, architecture: str | None,
                    quantization: str) -> str | None:
    """``release``, or where it predates a floor for the checkpoint the first release that loads it (the
    release a measurement with no release of its own is planned at; None stays None: the default)."""
    if release is None:
        return None
    floors = unsupported(catalog, engine, parse_engine_version(release)[0], architecture, quantization)
    return floors[0].first_release if floors else release


def check_engine_loads(catalog, engine: str, engine_version: str | None, architecture: str | None,
                       quantization: str) -> None:
    """Raise InvalidScenarioError when the release planned (``engine_version``, a release with an
    optional variant; None: none stated or defaulted, never refused) cannot load the checkpoint: field
    ``engine_version`` for its architecture, else ``quantization`` for its weight format."""
    if engine_version is None:
        return
    release = parse_engine_version(engine_version)[0]
    floors = unsupported(catalog, engine, release, architecture, quantization)
    if not floors:
        return
    name = catalog.engines.records[engine].name
    floor = next((f for f in floors if f.quantization is None), floors[0])
    loads = f"{name} ≥ {floor.first_release} loads {floor.subject()}"
    said = f"{name} {release} cannot load {floor.subject()}, first loaded by {floor.first_release} (source {floor.sources[0]})"
    if floor.quantization is None:
        raise InvalidScenarioError(said, field="engine_version", allowed=loads)
    raise InvalidScenarioError(said, field="quantization", allowed=f"{loads}; or another quantization at {release}")


class GpuRefusal(EngineReleaseRecord):
    """Releases ``first_release``..``last_release`` of ``engine`` (inclusive; None: unbounded) do not run
    ``architecture`` (whatever its format), or weights in ``quantization`` (whatever the model), on a GPU of
    any of ``gpu_architectures`` (accelerators.yaml ``architecture``); one of the two is named. ``moe_only``:
    the format's routed experts do not run there (a model with them is refused, a dense one is not)."""

    gpu_architectures: tuple[str, ...] = Field(min_length=1)
    moe_only: bool = False
    first_release: str | None = None
    last_release: str | None = None  # the newest release the sources cover

    @model_validator(mode="after")
    def _releases(self) -> "GpuRefusal":
        if (self.architecture is None) == (self.quantization is None):
            raise ValueError("a GPU refusal names a model architecture or a quantization, not both")
        if self.moe_only and self.quantization is None:
            raise ValueError("moe_only refuses a quantization's routed experts: name the quantization")
        for release in (self.first_release, self.last_release):
            if release is not None:
                release_key(release)
        return self

    def applies(self, engine: str, release: str | None, architecture: str | None, gpu_architecture: str,
                quantization: str | None = None, moe: bool = False) -> bool:
        """Whether the refusal covers ``release`` (None: a release not known, always covered) of a model of
        ``architecture`` in ``quantization``, with routed experts when ``moe``."""
        subject = self.architecture == architecture if self.quantization is None else self.quantization == quantization
        if self.moe_only and not moe:
            return False
        if self.engine != engine or not subject or gpu_architecture not in self.gpu_architectures:
            return False
        if release is None:
            return True
        key = release_key(release)
        return (self.first_release is None or key >= release_key(self.first_release)) and \
            (self.last_release is None or key <= release_key(self.last_release))


def gpu_refusal(catalog, engine: str, release: str | None, architecture: str | None, accel,
                quantization: str | None = None, moe: bool = False) -> GpuRefusal | None:
    """The refusal of ``engine`` at ``release`` (None: its current release, where one is recorded) running
    ``architecture`` in ``quantization`` (with routed experts when ``moe``) on ``accel`` (None: none recorded)."""
    if release is None:
        current = current_release(catalog, engine)
        release = current.release if current is not None else None
    return next((r for r in catalog.gpu_refusals
                 if r.applies(engine, release, architecture, accel.architecture, quantization, moe)), None)


def check_engine_runs_model_on(catalog, engine: str, engine_version: str | None, architecture: str | None,
                               model_name: str, quant, accel, moe: bool = False, *,
                               formats: Collection[str]) -> None:
    """Raise ``engine_refusal``'s error, if any."""
    refused = engine_refusal(catalog, engine, engine_version, architecture, model_name, quant, accel, moe,
                             formats=formats)
    if refused is not None:
        raise refused


def engine_refusal(catalog, engine: str, engine_version: str | None, architecture: str | None,
                   model_name: str, quant, accel, moe: bool = False, *,
                   formats: Collection[str]) -> InvalidScenarioError | None:
    """The error (field ``gpu``; ``quantization`` for a ``moe_only`` refusal) when the engine's release does
    not run the model's architecture on ``accel``'s GPU architecture, whatever the format, or its weights'
    format (``quant``), whatever the model or (``moe_only``) on a model with routed experts (``moe``);
    ``allowed`` says what remains (``_remaining``), other formats among ``formats``, the weight formats the
    model exists in for the engine (the caller's ``memory.precision.model_formats``). None: no refusal recorded."""
    release = parse_engine_version(engine_version)[0] if engine_version else None
    refusal = gpu_refusal(catalog, engine, release, architecture, accel, quant.id, moe)
    if refusal is None:
        return None
    name = catalog.engines.records[engine].name
    at = f" {release}" if release else ""
    what = (f"{model_name} ({architecture}) on {accel.name} ({accel.architecture}), whatever the checkpoint's format"
            if refusal.quantization is None else
            f"{quant.id} routed experts ({model_name}, a mixture-of-experts model) on {accel.name} "
            f"({accel.architecture})" if refusal.moe_only else
            f"{quant.id} weights ({model_name}) on {accel.name} ({accel.architecture}), whatever the model")
    field = "quantization" if refusal.moe_only else "gpu"  # the experts' format, on every GPU of the stack alike
    options = _remaining(catalog, refusal, release, architecture, quant, accel, moe, formats)
    return InvalidScenarioError(f"{name}{at} does not run {what} (source {refusal.sources[0]})", field=field,
                                allowed="; or ".join(options) or "none in the catalogue")


def _remaining(catalog, refusal: GpuRefusal, release: str | None, architecture: str | None, quant, accel,
               moe: bool, model_formats: Collection[str]) -> list[str]:
    """What a refusal leaves: the other engines that run the model's weights on ``accel``, the GPU
    architectures of its software stack where the engine does, the engine's releases after the range, and
    for a ``moe_only`` refusal the model's other formats (``model_formats``) the engine runs there."""
    engine = refusal.engine
    engines = [e.id for e in catalog.engines if e.id != engine and (not e.runs_on or accel.software in e.runs_on)
               and e.loads(quant, accel=accel) and gpu_refusal(catalog, e.id, None, architecture, accel, quant.id,
                                                               moe) is None]
    gpus = sorted({a.architecture for a in catalog.accelerators if a.software == accel.software
                   and gpu_refusal(catalog, engine, release, architecture, a, quant.id, moe) is None})
    options = [f"another engine: {', '.join(engines)}"] if engines else []
    options += [f"a GPU of architecture {', '.join(gpus)} with {engine}"] if gpus else []
    options += [f"{catalog.engines.records[engine].name} after {refusal.last_release}"] if refusal.last_release else []
    if refusal.moe_only:
        formats = [q.id for q in catalog.quantizations if q.id != quant.id and q.id in model_formats
                   and catalog.engines.records[engine].loads(q, accel=accel, release=release)
                   and gpu_refusal(catalog, engine, release, architecture, accel, q.id, moe) is None]
        options += [f"another quantization with {engine}: {', '.join(formats)}"] if formats else []
    return options


class IntegratedGpuRefusal(Frozen):
    """Releases ``first_release``..``last_release`` of ``engine`` (inclusive; a post release after its base,
    ``release_order``, and ``last_release``'s post releases inside) do not start on a CUDA integrated GPU."""

    id: str = Field(pattern=SLUG)
    engine: str  # engines.yaml id
    first_release: str
    last_release: str
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Kind
    note: str = ""

    @model_validator(mode="after")
    def _releases(self) -> "IntegratedGpuRefusal":
        if release_order(self.last_release) < release_order(self.first_release):
            raise ValueError("last_release is first_release or later")
        return self

    def covers(self, release: str) -> bool:
        return release_order(self.first_release) <= release_order(release) and \
            release_key(release) <= release_key(self.last_release)


def check_engine_starts_on(catalog, engine: str, engine_version: str | None, accel) -> None:
    """Refuse (field engine_version) a release that does not start on ``accel``, a CUDA integrated GPU."""
    if not engine_version or not accel.integrated_gpu:
        return
    release = parse_engine_version(engine_version)[0]
    refusal = next((r for r in catalog.integrated_gpu_refusals if r.engine == engine and r.covers(release)), None)
    if refusal is not None:
        name = catalog.engines.records[engine].name
        raise UnsupportedSettingError(
            f"{name} {release} does not start on {accel.name}, an integrated GPU: {refusal.note} (source "
            f"{refusal.sources[0]})", field="engine_version",
            allowed=f"a release before {refusal.first_release} or after {refusal.last_release}, or a GPU with memory "
                    "of its own")


def check_engine_support(catalog) -> None:
    """Every floor names a known engine, quantization and sources; no two floors share a subject."""
    seen: dict[tuple[str, str | None, str | None], str] = {}
    for floor in catalog.engine_support:
        where = f"engine_support:{floor.id}"
        check_engine_and_sources(catalog, where, floor.id, floor.engine, floor.sources)
        if floor.quantization is not None and floor.quantization not in catalog.quantizations:
            raise CatalogError(f"{where}: unknown quantization {floor.quantization!r}", field=floor.id)
        subject = (floor.engine, floor.architecture, floor.quantization)
        if subject in seen:
            raise CatalogError(f"{where}: the same subject as {seen[subject]}", field=floor.id)
        seen[subject] = floor.id
    for refusal in catalog.integrated_gpu_refusals:
        check_engine_and_sources(catalog, f"integrated_gpu_refusals:{refusal.id}", refusal.id, refusal.engine,
                                 refusal.sources)
    gpu_architectures = {a.architecture for a in catalog.accelerators}
    for refusal in catalog.gpu_refusals:
        where = f"gpu_refusals:{refusal.id}"
        check_engine_and_sources(catalog, where, refusal.id, refusal.engine, refusal.sources)
        if refusal.quantization is not None and refusal.quantization not in catalog.quantizations:
            raise CatalogError(f"{where}: unknown quantization {refusal.quantization!r}", field=refusal.id)
        unknown = set(refusal.gpu_architectures) - gpu_architectures
        if unknown:
            raise CatalogError(f"{where}: unknown GPU architectures {sorted(unknown)}", field=refusal.id,
                               allowed=", ".join(sorted(gpu_architectures)))
