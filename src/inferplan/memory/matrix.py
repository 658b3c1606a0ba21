"""The what-fits matrix: models × hardware × builds, one ``fit`` per cell.

A cell is one memory fit and about 5 KB of answer. A cold cell (its model, hardware and build not yet planned
in the process) takes 8-11 ms of one core on a 2-core machine: every model with a config on 16 GPUs computes
1,392 cells in 15.4 s, on four of them 348 in 2.7 s (a repeat, memoised, 0.1 s and 0.02 s).
The lists a question may name (60 models, 60 GPUs, 30 systems, 10 quantizations) multiply to 54,000 cells, about
10 minutes and 250 MB. So a matrix of more than ``MAX_FITS_CELLS`` cells is refused, counted as they are computed
before any is (``check_size``: with no quantizations named, every build a model is computed in), naming the
longest list to shorten."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

from inferplan.catalog.loader import Catalog, is_count, load_catalog
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs import Input
from inferplan.inputs.deployment import MAX_CONTEXT_TOKENS, Deployment
from inferplan.memory.fit import MemoryFit, ParallelPlan, fit
from inferplan.memory.hardware import default_engine
from inferplan.memory.precision import check_kv_dtype, has_routed_experts, how_it_runs, model_formats
from inferplan.memory.resolve import resolve_model
from inferplan.memory.slots import with_slots
from inferplan.units import whole_count

DEFAULT_GPUS = ("h100-sxm", "rtx-pro-6000-blackwell", "h200-sxm", "b300")  # 80 / 96 / 141 / 288 GB
MAX_FITS_CELLS = 1_000  # about 11 s of one core cold and a 5 MB answer; the default grid on the default GPUs is 304


class FitsCell(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    model: str
    hardware: str
    quantization: str
    engine: str  # the engine the cell is planned on: the one asked for, else its column's (``column_engine``)
    result: MemoryFit | None  # None when the cell could not be planned
    error: str | None = None
    error_field: str | None = None  # the input the error names, as a Deployment field (max_model_len)
    error_names: tuple[str, ...] | None = None  # the inputs its prose names (InferplanError.names)
    # the fewest GPUs of this accelerator that hold the model at this length (a system's cell runs
    # one instance across the node, which says nothing about how few GPUs it needs)
    smallest_fit: ParallelPlan | None = None
    # how the engine runs the format's maths there (``memory.precision.how_it_runs``): native, a fused fallback,
    # or emulated (the weights dequantized every forward)
    runs: str = "native"

    @computed_field
    @property
    def requests_at_once(self) -> int | None:
        """Whole requests of the cell's context one instance (× its data-parallel copies) admits together where
        it fits: on an engine with a context per slot the most slots whose cache fits (``most_slots``), else the
        whole sequences its KV cache holds, at most the engine's running cap (``units.whole_count`` of
        ``MemoryFit.sequences_at_once``: 3 where it holds 3.7). None where the cell does not fit or could not be
        planned."""
        r = self.result
        if r is None or not r.fits:
            return None
        return r.most_slots if r.most_slots is not None else whole_count(r.sequences_at_once)


Name = Annotated[str, Field(min_length=1, max_length=200)]


class FitsRequest(Input):
    """The what-fits matrix question (empty lists: the defaults)."""

    models: list[Name] = Field(default_factory=list, max_length=60, description=(
        "model ids; empty: the default grid (the catalogue's models with a config, less those it marks out of it: "
        "left_out names them), or with all_models every model with a config"))
    all_models: bool = Field(False, description="every catalogue model with a config, the ones the default grid leaves "
                                                "out too (with models empty)")
    gpus: list[Name] = Field(default_factory=list, max_length=60)
    systems: list[Name] = Field(default_factory=list, max_length=30)
    quantizations: list[Name] = Field(default_factory=list, max_length=10, description=(
        "weight formats ('native': each model's first checkpoint); empty: each model's best published build"))
    engine: str | None = Field(None, description="one engine for every column; none: each column's hardware's own "
                                                 "(llama.cpp on Apple silicon, vLLM elsewhere), as a deployment naming none")
    max_model_len: int | None = Field(None, ge=1, le=10_000_000, description="default: 8192, or a model's context when shorter")
    kv_cache_dtype: str = "auto"
    gpu_count: int = Field(1, ge=1, le=64, description="GPUs of each listed accelerator, run as one instance")


DEFAULT_LENGTH = 8192  # tokens of context a cell is sized for when the request names none


class FitsMatrix(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    cells: tuple[FitsCell, ...]
    # catalogue models with a config the default grid leaves out (``in_default_grid: false``); empty when
    # the models were named or all of them asked for (``all_models``)
    left_out: tuple[str, ...] = ()


def fits_matrix(
    *,
    models: list[str] | None = None,
    gpus: list[str] | None = None,
    systems: list[str] | None = None,
    quantizations: list[str] | None = None,
    engine: str | None = None,
    max_model_len: int | None = None,
    kv_cache_dtype: str = "auto",
    gpu_count: int = 1,
    all_models: bool = False,
    every_build: bool = False,
    catalog: Catalog | None = None,
    size_checked: bool = False,
) -> FitsMatrix:
    """Every model × hardware × quantization cell; ``native`` means each model's own checkpoint, and with
    no ``quantizations`` each model shows its best published build (``_best_builds``), or with ``every_build``
    each build the engine loads and each format it makes from one (``model_formats``), for a caller that
    picks among them. Each of
    ``gpus`` is ``gpu_count`` GPUs of that accelerator run as one instance (the engine's split over them),
    its cell's hardware written ``N× id`` when more than one. No ``engine``: each column is planned on its
    hardware's own engine (``column_engine``), and a model's builds are those any column's engine loads. No ``models``: the default grid (``_grid_models``),
or with ``all_models`` every catalogue model with a config. ``size_checked``: the caller has run ``check_size`` on
these same lists (the API, before the request waits for a turn), so it is not run again."""
    catalog = catalog or load_catalog()
    if not size_checked:
        check_size(catalog, models=models, gpus=gpus, systems=systems, quantizations=quantizations, all_models=all_models,
                   engine=engine, every_build=every_build)
    # what every cell shares is checked once: a bad engine or length is the request's error, not each cell's
    if engine is not None:
        catalog.engine(engine, field_name="engine")
    if max_model_len is not None and not 1 <= max_model_len <= MAX_CONTEXT_TOKENS:
        raise InvalidScenarioError(f"max_model_len {max_model_len} is out of range", field="max_model_len",
                                   allowed=f"1..{MAX_CONTEXT_TOKENS:,}")
    for g in gpus or []:
        if is_count(g):  # gpus lists accelerator types here; a count is gpu_count
            raise InvalidScenarioError(f"{g.strip()!r} is a number, not an accelerator: gpus lists accelerator types "
                                       f"here; did you mean a count? (gpu_count {g.strip()})", field="gpus",
                                       allowed="accelerator ids or names, e.g. h100-sxm,rtx-4090")
        catalog.accelerator(g, field_name="gpus")
    for name in systems or []:
        catalog.system(name, field_name="systems")
    for q in quantizations or []:
        if q != "native":
            catalog.quantization(q, field_name="quantizations")
    model_ids, left_out = _grid_models(catalog, models, all_models)
    specs = [(model, resolve_model(catalog, model, field_name="models")) for model in model_ids]
    hardware = [("system", s) for s in systems or []] + [("gpu", g) for g in gpus or []]
    count = {"gpus": gpu_count} if gpu_count > 1 else {}
    if not hardware:
        hardware = [("gpu", g) for g in _default_gpus(catalog)]
    engines = {(kind, name): column_engine(catalog, engine, kind, name) for kind, name in hardware}
    if kv_cache_dtype != "auto":
        _check_kv_dtype(catalog, engines, kv_cache_dtype)
    cells = []
    for model, spec in specs:
        held_bits = 0.0  # every_build: the most bits per weight of a format every column holds
        for quant in quantizations or _column_builds(catalog, spec, engines.values(), every_build):
            q = spec.native_quantization or "bf16" if quant == "native" else quant
            if _made_below(catalog, spec, q, held_bits):  # a caller picking the most bits never takes it
                continue
            start = len(cells)
            for kind, name in hardware:
                label = f"{gpu_count}× {name}" if kind == "gpu" and count else name  # the cell's hardware
                layout = {"tensor_parallel_size": 1}
                if kind == "system":  # one instance across the node (TP ≤ 8; over PCIe where no NVLink)
                    layout = {"tensor_parallel_size": min(8, catalog.system(name).accelerator_count)}
                elif count:  # the engine's own split over the GPUs (as --gpus alone)
                    layout = count
                try:
                    # unstated, the length is DEFAULT_LENGTH or the model's own context when shorter (Llama 2: 4,096)
                    length = max_model_len or min(DEFAULT_LENGTH, spec.context_tokens or DEFAULT_LENGTH)
                    d = Deployment(
                        model=model, engine=engines[kind, name], quantization=q, max_model_len=length,
                        kv_cache_dtype=kv_cache_dtype, **layout, **{kind: name},
                    )
                    result = fit(d, catalog)
                    result = with_slots(d, result, catalog) if result.fits else result  # llama.cpp: whole slots
                    runs = how_it_runs(catalog.quantization(q), catalog.accelerator(result.accelerator), result.engine,
                                       result.engine_release, has_routed_experts(spec))
                    cells.append(FitsCell(model=spec.id, hardware=label, quantization=q, engine=d.engine, result=result,
                                          smallest_fit=_smallest(catalog, d, result), runs=runs))
                except InferplanError as exc:
                    cells.append(FitsCell(model=spec.id, hardware=label, quantization=q, engine=engines[kind, name],
                                          result=None, error=exc.describe(),
                                          error_field=exc.field, error_names=exc.names))
                except ValidationError as exc:
                    cells.append(FitsCell(model=spec.id, hardware=label, quantization=q, engine=engines[kind, name],
                                          result=None, error=exc.errors()[0]["msg"]))
            held = cells[start:]
            if every_build and held and all(c.result is not None and c.result.fits for c in held):
                held_bits = max(held_bits, catalog.quantization(q).bits_per_weight.value)
    return FitsMatrix(cells=tuple(cells if quantizations or every_build else _best_builds(catalog, cells)),
                      left_out=left_out)


def _check_kv_dtype(catalog: Catalog, engines: dict[tuple[str, str], str], kv_cache_dtype: str) -> None:
    """A stated KV-cache type every column's engine runs; where the columns' engines differ, one that some
    refuses is an error naming that column and the types all of them run (or one engine for every column)."""
    if len(set(engines.values())) == 1:
        check_kv_dtype(catalog, next(iter(engines.values())), kv_cache_dtype)
        return
    kv = catalog.kv_cache_dtype(kv_cache_dtype)
    runs = {e: catalog.engine(e).kv_cache_dtypes for e in dict.fromkeys(engines.values())}
    refused = [(name, e) for (_, name), e in engines.items() if runs[e] and kv.id not in runs[e]]
    if not refused:
        return
    name, e = refused[0]
    first = next(iter(runs.values()))
    shared = [t for t in first if all(not r or t in r for r in runs.values())]
    raise InvalidScenarioError(
        f"the {name} column plans on {catalog.engine(e).name}, which has no {kv.id} KV cache; the columns' engines "
        f"differ ({', '.join(catalog.engine(x).name for x in runs)}): give a type each of them runs, or name one engine "
        "for every column", field="kv_cache_dtype", allowed="auto | " + " | ".join(shared),
        names=("kv_cache_dtype", "engine"))


def check_size(catalog: Catalog, *, models: list[str] | None = None, gpus: list[str] | None = None,
               systems: list[str] | None = None, quantizations: list[str] | None = None, all_models: bool = False,
               engine: str | None = None, every_build: bool = False) -> None:
    """Refuse a matrix of more than ``MAX_FITS_CELLS`` cells, counted before any is computed as ``fits_matrix``
    computes them: its models (``_grid_models``) × its GPUs and systems (none: ``DEFAULT_GPUS``) × its
    quantizations, or with none each model's builds its columns' engines load (``_column_builds``: all computed before
    one per model is kept; with ``every_build`` the formats it makes from one too, counted before the matrix
    leaves out those below a format every column holds, so at most what it computes). Named quantizations are
    counted from the names alone; without them the models are looked up (one that is not found counts one
    build: the matrix refuses it). The error names the longest list given (``all_models`` where none is)."""
    model_ids = _grid_models(catalog, models, all_models)[0]
    hardware = len(gpus or []) + len(systems or []) or len(_default_gpus(catalog))
    if quantizations:
        builds = len(model_ids) * len(quantizations)
        counted = f"{_count(len(model_ids), 'model')} × {_count(hardware, 'GPU or system', 'GPUs or systems')} × " \
                  f"{_count(len(quantizations), 'quantization')}"
    else:
        engines = _counted_engines(catalog, engine, gpus, systems)  # the builds counted are the ones they load
        builds = sum(_build_count(catalog, m, engines, every_build) for m in model_ids)
        counted = f"{_count(len(model_ids), 'model')} ({_count(builds, 'build')}) × " \
                  f"{_count(hardware, 'GPU or system', 'GPUs or systems')}"
    cells = builds * hardware
    if cells <= MAX_FITS_CELLS:
        return
    named = {"models": len(models or []), "gpus": len(gpus or []), "systems": len(systems or []),
             "quantizations": len(quantizations or [])}
    field = max(named, key=named.get) if any(named.values()) else "all_models"
    raise InvalidScenarioError(
        f"{counted} is {cells:,} cells, more than one request computes", field=field,
        allowed=f"at most {MAX_FITS_CELLS:,} cells: name fewer models, gpus, systems or quantizations")


def _build_count(catalog: Catalog, model: str, engines: list[str], every_build: bool) -> int:
    """The builds of ``model`` the matrix computes a cell of on each column; 1 for a name it cannot resolve."""
    try:
        return len(_column_builds(catalog, resolve_model(catalog, model, field_name="models"), engines, every_build))
    except InferplanError:
        return 1


def column_engine(catalog: Catalog, engine: str | None, kind: str, name: str) -> str:
    """The engine a column of ``kind`` (``gpu`` or ``system``) ``name`` is planned on: ``engine`` where one is
    asked for, else the one its accelerator runs when a deployment names none (``hardware.default_engine``)."""
    if engine is not None:
        return engine
    accel = catalog.accelerators.records[catalog.system(name, field_name="systems").accelerator] if kind == "system" \
        else catalog.accelerator(name, field_name="gpus")
    return default_engine(catalog, accel)


def _counted_engines(catalog: Catalog, engine: str | None, gpus: list[str] | None,
                     systems: list[str] | None) -> list[str]:
    """The engines of the columns ``check_size`` counts (``engine`` checked where asked for); a column that does
    not resolve adds none (the matrix refuses it), and with none resolved the builds of the engine a Deployment
    takes when it names none are counted."""
    if engine is not None:
        catalog.engine(engine, field_name="engine")
        return [engine]
    columns = [("system", s) for s in systems or []] + [("gpu", g) for g in gpus or []] \
        or [("gpu", g) for g in _default_gpus(catalog)]
    found = []
    for kind, name in columns:
        try:
            found.append(column_engine(catalog, None, kind, name))
        except InferplanError:
            continue
    return list(dict.fromkeys(found)) or [Deployment.model_fields["engine"].default]


def _column_builds(catalog: Catalog, spec, engines, every_format: bool = False) -> list[str]:
    """The builds any of the columns' ``engines`` loads (``_loadable_builds``), each once, in the first engine's order."""
    return list(dict.fromkeys(b for e in dict.fromkeys(engines) for b in _loadable_builds(catalog, spec, e, every_format)))


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _default_gpus(catalog: Catalog) -> list[str]:
    return [g for g in DEFAULT_GPUS if g in catalog.accelerators]


def _grid_models(catalog: Catalog, models: list[str] | None, all_models: bool) -> tuple[list[str], tuple[str, ...]]:
    """The grid's models and the catalogue models with a config it leaves out: ``models`` as named, else every
    model with a config (``all_models``), else those the catalogue keeps in the default grid (``in_default_grid``,
    which holds it to one screen), the others left out."""
    if models and all_models:
        raise InvalidScenarioError("models names the grid's models and all_models asks for every one: give one of them",
                                   field="all_models", allowed="all_models with no models, or the models alone")
    if models:
        return models, ()
    configured = [m for m in catalog.models if m.config]
    if all_models:
        return [m.id for m in configured], ()
    return [m.id for m in configured if m.in_default_grid], tuple(m.id for m in configured if not m.in_default_grid)


def _loadable_builds(catalog: Catalog, spec, engine: str, every_format: bool = False) -> list[str]:
    """The model's published builds the engine loads, in its card's order (its first alone when the
    engine loads none of them, so the cell says why); with ``every_format``, also the formats the engine
    makes from one (``memory.precision.model_formats``: its conversions, its quantization at load), the most
    bits first, those with fewer bits than a format every column holds left out (``fits_matrix``)."""
    builds = (spec.builds or (spec.native_quantization or "bf16",))
    if every_format:  # the builds, then the formats made from one, the most bits first
        made = [f for f in model_formats(catalog, spec, engine) if f not in builds and f in catalog.quantizations]
        builds = (*builds, *sorted(made, key=lambda f: -catalog.quantization(f).bits_per_weight.value))
    loads = [b for b in builds if b in catalog.quantizations
             and (not catalog.quantization(b).engines or engine in catalog.quantization(b).engines)]
    return loads or [builds[0]]


def _made_below(catalog: Catalog, spec, quantization: str, bits: float) -> bool:
    """A format the engine makes from a build (not published) with fewer bits per weight than ``bits``."""
    published = spec.builds or (spec.native_quantization or "bf16",)
    return quantization not in published and catalog.quantization(quantization).bits_per_weight.value < bits


def _best_builds(catalog: Catalog, cells: list[FitsCell]) -> list[FitsCell]:
    """One build per model and engine, the same in every column planned on that engine (one row, one
    precision, where the columns share an engine; columns on other engines, Apple's llama.cpp beside vLLM,
    get a row of their own engine's best build): the build that fits the most of its columns without being
    emulated there (an emulated format dequantizes its weights every forward, slower than the 16-bit
    weights: worth it only where nothing else fits), then fits the most columns, then runs natively on the
    most of them, then needs the fewest GPUs where it does not fit, then comes first in the card's order
    (the model's own release before conversions). The cells keep the models' and the columns' order."""
    by_group: dict[tuple[str, str], dict[str, list[FitsCell]]] = {}
    for c in cells:
        by_group.setdefault((c.model, c.engine), {}).setdefault(c.quantization, []).append(c)

    def native(c: FitsCell) -> bool:
        return catalog.quantization(c.quantization).native_on(catalog.accelerator(c.result.accelerator))

    def rank(group: list[FitsCell]) -> tuple:
        planned = [c for c in group if c.result is not None]
        fitting = [c for c in planned if c.result.fits]
        needed = sum(c.smallest_fit.gpus if c.smallest_fit else 10**6 for c in planned if not c.result.fits)
        runs = [c for c in fitting if not c.runs.startswith("emulated")]
        return (-len(runs), -len(fitting), -sum(map(native, fitting)), -sum(map(native, planned)), needed, -len(planned))

    # min keeps the first of equals: the card's order
    kept = [c for builds in by_group.values() for c in min(builds.values(), key=rank)]
    models = {m: i for i, m in enumerate(dict.fromkeys(c.model for c in cells))}
    columns = {h: i for i, h in enumerate(dict.fromkeys(c.hardware for c in cells))}
    return sorted(kept, key=lambda c: (models[c.model], columns[c.hardware]))


def _smallest(catalog: Catalog, d: Deployment, result: MemoryFit) -> ParallelPlan | None:
    """The smallest layout on ``result``'s accelerator that holds ``d``: one GPU when it does."""
    if not result.fits:
        return result.fewest_gpus_fit
    if result.parallel.gpus == 1:  # the cell itself is one GPU
        return result.parallel
    one = fit(d.model_copy(update={"system": None, "gpu": result.accelerator, "gpus": 1, "tensor_parallel_size": 1,
                                   "pipeline_parallel_size": 1, "data_parallel_size": None}), catalog)
    return one.parallel if one.fits else one.fewest_gpus_fit
