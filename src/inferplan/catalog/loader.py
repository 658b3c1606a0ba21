"""Load and validate the catalogue: YAML files under ``data/``, read lazily, once.

Nothing is read at import time. ``load_catalog()`` parses every file with ``yaml.safe_load``,
validates each record with the pydantic models of its section (``SECTIONS``), merges the per-file
``sources`` registries and checks that every sourced number names a known source, then the
cross-references between records (``references.py``: every system names a known accelerator, every
checkpoint a known quantization …) and each rule file's own (``check_*`` of its schema module).
"""

from __future__ import annotations

import importlib
import functools
import pickle
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from inferplan.catalog.compiled import load_compiled, loads_paused
from inferplan.catalog.memory_config import mac_chip, mac_product_refusal, sized_accelerator
from inferplan.catalog.ollama import refuse_unlisted_tag
from inferplan.catalog.provenance import Source, iter_sourced
from inferplan.catalog.registry import Registry
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.errors import CatalogError, UnknownHardwareError, UnknownModelError
from inferplan.input_files import check_yaml_depth, read_text

if TYPE_CHECKING:
    from inferplan.catalog.architecture import Architecture
    from inferplan.catalog.economics_schema import ApiPrice, CostDefault, RackEfficiencyProfile, RentalPrice, WorkloadPreset
    from inferplan.catalog.flags_schema import EngineFlags, GpuResource
    from inferplan.catalog.kt_schema import KtCpuPath
    from inferplan.catalog.latency_schema import BenchmarkDataset, BenchTuning, LatencyPoint
    from inferplan.catalog.memory_rules import MemoryRule
    from inferplan.catalog.moe_kernels import MoeKernel, MoeKernelRule
    from inferplan.catalog.weight_rules import ExpertScaleRule
    from inferplan.catalog.admission_rules import AdmissionRule
    from inferplan.catalog.mtp_rules import MtpRule
    from inferplan.catalog.eagle3_drafts import Eagle3Draft
    from inferplan.catalog.ollama_schema import OllamaRunner
    from inferplan.catalog.metal_schema import MetalWorkingSet
    from inferplan.catalog.engine_support import GpuRefusal, IntegratedGpuRefusal, SupportFloor
    from inferplan.catalog.site_schema import Site
    from inferplan.catalog.quantization_schema import Quantization
    from inferplan.catalog.schema import (
        Accelerator,
        CalibrationConstant,
        KvDtype,
        ModelCard,
        System,
    )
    from inferplan.catalog.points_schema import (
        EngineBuild,
        MemoryPoint,
        ServingProfile,
        SpeedAccuracy,
        SpeedPoint,
    )

DATA_DIR = Path(__file__).parent / "data"

T = TypeVar("T", bound=BaseModel)

# top-level key -> the record model (module:class under inferplan.catalog, imported when a file is
# validated: a compiled catalogue's sections import their own classes as they are read)
SECTIONS: dict[str, str] = {
    "accelerators": "schema:Accelerator",
    "systems": "schema:System",
    "models": "schema:ModelCard",
    "quantizations": "quantization_schema:Quantization",
    "kv_cache_dtypes": "schema:KvDtype",
    "engines": "engine_schema:EngineDefaults",
    "calibration": "schema:CalibrationConstant",
    "memory_points": "points_schema:MemoryPoint",
    "speed_points": "points_schema:SpeedPoint",
    "serving_profiles": "points_schema:ServingProfile",
    "rental_prices": "economics_schema:RentalPrice",
    "api_prices": "economics_schema:ApiPrice",
    "workload_presets": "economics_schema:WorkloadPreset",
    "cost_defaults": "economics_schema:CostDefault",
    "rack_profiles": "economics_schema:RackEfficiencyProfile",
    "sites": "site_schema:Site",  # economics/sites.yaml
    "engine_builds": "points_schema:EngineBuild",
    "speed_accuracy": "points_schema:SpeedAccuracy",
    "engine_flags": "flags_schema:EngineFlags",
    "gpu_resources": "flags_schema:GpuResource",
    "latency_points": "latency_schema:LatencyPoint",  # measurements/latency_*.yaml
    "benchmark_datasets": "latency_schema:BenchmarkDataset",  # measurements/benchmark_clients.yaml
    "bench_tunings": "latency_schema:BenchTuning",
    "memory_rules": "memory_rules:MemoryRule",  # engine_memory_rules.yaml
    "kt_cpu_paths": "kt_schema:KtCpuPath",  # KTransformers releases and kernel methods
    "moe_kernels": "moe_kernels:MoeKernel",  # engine_moe_kernels.yaml
    "moe_kernel_rules": "moe_kernels:MoeKernelRule",
    "weight_rules": "weight_rules:ExpertScaleRule",  # engine_weight_rules.yaml
    "admission_rules": "admission_rules:AdmissionRule",  # engine_admission_rules.yaml
    "mtp_rules": "mtp_rules:MtpRule",  # engine_mtp_rules.yaml
    "eagle3_drafts": "eagle3_drafts:Eagle3Draft",  # eagle3_drafts.yaml
    "engine_support": "engine_support:SupportFloor",  # engine_support.yaml
    "gpu_refusals": "engine_support:GpuRefusal",
    "integrated_gpu_refusals": "engine_support:IntegratedGpuRefusal",
    "ollama_runners": "ollama_schema:OllamaRunner",  # ollama.yaml
    "metal_working_sets": "metal_schema:MetalWorkingSet",  # metal_working_set.yaml
}


def section_model(key: str) -> type[BaseModel]:
    """The pydantic model of a catalogue section's records."""
    module, name = SECTIONS[key].split(":")
    return getattr(importlib.import_module(f"inferplan.catalog.{module}"), name)


@dataclass(frozen=True)
class Catalog:
    sources: dict[str, Source]
    accelerators: Registry[Accelerator]
    systems: Registry[System]
    models: Registry[ModelCard]
    quantizations: Registry[Quantization]
    kv_cache_dtypes: Registry[KvDtype]
    engines: Registry[EngineDefaults]
    calibration: Registry[CalibrationConstant]
    memory_points: Registry[MemoryPoint]
    speed_points: Registry[SpeedPoint]
    serving_profiles: Registry[ServingProfile]
    rental_prices: Registry[RentalPrice]
    api_prices: Registry[ApiPrice]
    workload_presets: Registry[WorkloadPreset]
    cost_defaults: Registry[CostDefault]
    rack_profiles: Registry[RackEfficiencyProfile]
    sites: Registry[Site]
    engine_builds: Registry[EngineBuild]
    speed_accuracy: Registry[SpeedAccuracy]
    engine_flags: Registry[EngineFlags]
    gpu_resources: Registry[GpuResource]
    latency_points: Registry[LatencyPoint]
    benchmark_datasets: Registry[BenchmarkDataset]
    bench_tunings: Registry[BenchTuning]
    memory_rules: Registry[MemoryRule]
    kt_cpu_paths: Registry[KtCpuPath]
    moe_kernels: Registry[MoeKernel]
    moe_kernel_rules: Registry[MoeKernelRule]
    weight_rules: Registry[ExpertScaleRule]
    admission_rules: Registry[AdmissionRule]
    mtp_rules: Registry[MtpRule]
    eagle3_drafts: Registry[Eagle3Draft]
    engine_support: Registry[SupportFloor]
    gpu_refusals: Registry[GpuRefusal]
    integrated_gpu_refusals: Registry[IntegratedGpuRefusal]
    ollama_runners: Registry[OllamaRunner]
    metal_working_sets: Registry[MetalWorkingSet]
    data_dir: Path = field(default=DATA_DIR)
    # each card's config.json (its path under data_dir) imported once, when the catalogue is built: a
    # compiled catalogue carries them, so a plan reads no JSON (catalog/models.py reads one that is missing)
    architectures: dict[str, Architecture] = field(default_factory=dict)

    def accelerator(self, name: str, field_name: str = "gpu") -> Accelerator:
        if is_count(name):
            raise UnknownHardwareError(f"{name.strip()!r} is a number, not an accelerator name (a GPU count is given "
                                       "separately, as gpus)", field=field_name,
                                       allowed="an accelerator id or name, e.g. h100-sxm or 'RTX 4090' "
                                               "(inferplan catalog list accelerators)")
        if (sized := self._sized_accelerators.get(name)) is not None:
            return sized
        try:
            return self.accelerators.get(name, field_name=field_name, error=UnknownHardwareError)
        except UnknownHardwareError as exc:
            sized = sized_accelerator(self.accelerators, name, field_name)
            if sized is None and (chip := mac_chip(name)):  # "Mac Studio M3 Ultra 96GB": its chip
                return self.accelerator(chip, field_name)
            if sized is None:
                raise mac_product_refusal(self.accelerators, name, field_name) or exc
            self._sized_accelerators[name] = sized
            return sized

    @functools.cached_property
    def _sized_accelerators(self) -> dict[str, Accelerator]:
        """Names stating a memory size (``M4 Max 64GB``) that ``accelerator`` resolved, to the configured record:
        a catalogue never changes, so each is parsed once. The records are frozen; a name that fails is not kept."""
        return {}

    def system(self, name: str, field_name: str = "system") -> System:
        return self.systems.get(name, field_name=field_name, error=UnknownHardwareError)

    def model(self, name: str, field_name: str = "model") -> ModelCard:
        refuse_unlisted_tag(self, name, field_name)  # an Ollama tag the catalogue lacks: the tags it lists named
        return self.models.get(name, field_name=field_name, error=UnknownModelError)

    def quantization(self, name: str, field_name: str = "quantization") -> Quantization:
        return self.quantizations.get(name, field_name=field_name, error=CatalogError)

    def kv_cache_dtype(self, name: str, field_name: str = "kv_cache_dtype") -> KvDtype:
        return self.kv_cache_dtypes.get(name, field_name=field_name, error=CatalogError)

    def engine(self, name: str, field_name: str = "engine", model: str | None = None) -> EngineDefaults:
        """The engine ``name`` names; a front end that runs one of them (Ollama) is refused naming how it is planned,
        with ``model``'s own tags (the model planned, where known) first."""
        try:
            return self.engines.get(name, field_name=field_name, error=CatalogError)
        except CatalogError:
            from inferplan.catalog.ollama import front_end_refusal

            refusal = front_end_refusal(self, name, field_name, model)
            if refusal is None:
                raise
            raise refusal from None

    def engine_build(self, engine: str, engine_version: str) -> EngineBuild | None:
        """When the named engine build was made (None: not dated)."""
        return self.engine_builds.records.get(f"{engine} {engine_version}")

    @functools.cached_property
    def speed_points_by_cell(self) -> dict[tuple[str, str], tuple[SpeedPoint, ...]]:
        """Speed points by (model id, accelerator id), built once: an estimate looks up its own cell."""
        cells: dict[tuple[str, str], list[SpeedPoint]] = {}
        for p in self.speed_points:
            cells.setdefault((p.model, p.accelerator), []).append(p)
        return {cell: tuple(points) for cell, points in cells.items()}

    def constant(self, constant_id: str) -> float:
        """A named calibration constant's value (see ``data/calibration.yaml``)."""
        return self.calibration.records[constant_id].value

    def __reduce__(self):
        """Pickled section by section: unpickling keeps each section's bytes and reads a section on its
        first use, so a command that plans memory never reads the speed points, prices or latency runs
        (nor imports their schema modules)."""
        return _lazy_catalog, ({f.name: pickle.dumps(getattr(self, f.name), protocol=pickle.HIGHEST_PROTOCOL)
                                for f in fields(self)},)

    def __getattr__(self, name: str):
        """A section not read yet: unpickled from its bytes now, then kept (called only for a missing
        attribute, so a section already read costs nothing). The section is set before its bytes are
        dropped, so a thread asking while another reads it (the API's workers) finds one or the other."""
        pending = self.__dict__.get("_pending")
        data = None if pending is None else pending.get(name)
        if data is None:
            if name in self.__dict__:  # read by another thread since this lookup missed it
                return self.__dict__[name]
            raise AttributeError(name)
        value = loads_paused(data)
        object.__setattr__(self, name, value)
        pending.pop(name, None)
        return value


def _lazy_catalog(sections: dict[str, bytes]) -> Catalog:
    """A catalogue whose sections are read on first use (see ``Catalog.__reduce__``)."""
    catalog = object.__new__(Catalog)
    object.__setattr__(catalog, "_pending", dict(sections))
    return catalog


def _read_yaml(path: Path) -> dict:
    import yaml  # only a catalogue build reads YAML; a start from the compiled copy does not import it

    text = read_text(path, field=str(path), error=CatalogError)
    if not path.resolve().is_relative_to(DATA_DIR.resolve()):  # the shipped files are checked by a test, not per run
        check_yaml_depth(text, where=path.name, field=str(path), error=CatalogError)
    try:
        # libyaml's safe loader when PyYAML was built with it (same safe constructors, ~5x faster)
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path.name}: not valid YAML: {exc}", field=str(path)) from exc
    if not isinstance(data, dict):
        raise CatalogError(f"{path.name}: expected a mapping at the top level", field=str(path))
    return data


def _validate(model: type[T], raw: object, where: str) -> T:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise CatalogError(f"{where}.{loc}: {first['msg']}", field=f"{where}.{loc}") from exc


def load_files(paths: list[Path], data_dir: Path = DATA_DIR) -> Catalog:
    """Validate the given YAML files into one catalogue."""
    sources: dict[str, Source] = {}
    from inferplan.catalog.references import check_references
    from inferplan.catalog.flags_schema import check_engine_flags
    from inferplan.catalog.memory_rules import check_memory_rules
    from inferplan.catalog.moe_kernels import check_moe_kernels
    from inferplan.catalog.weight_rules import check_weight_rules
    from inferplan.catalog.admission_rules import check_admission_rules
    from inferplan.catalog.mtp_rules import check_mtp_rules
    from inferplan.catalog.eagle3_drafts import check_eagle3_drafts
    from inferplan.catalog.engine_support import check_engine_support
    from inferplan.catalog.site_schema import check_sites
    from inferplan.catalog.latency_schema import check_benchmark_clients

    models = {key: section_model(key) for key in SECTIONS}
    records: dict[str, dict[str, BaseModel]] = {key: {} for key in SECTIONS}
    for path in sorted(paths):
        data = _read_yaml(path)
        unknown = set(data) - {"sources", *SECTIONS}
        if unknown:
            raise CatalogError(
                f"{path.name}: unknown top-level keys {sorted(unknown)}",
                field=path.name,
                allowed=", ".join(["sources", *SECTIONS]),
            )
        for i, raw in enumerate(data.get("sources") or []):
            src = _validate(Source, raw, f"{path.name}:sources[{i}]")
            if src.id in sources and sources[src.id] != src:
                raise CatalogError(f"{path.name}: source {src.id!r} defined twice, differently")
            sources[src.id] = src
        for key, model in models.items():
            for i, raw in enumerate(data.get(key) or []):
                where = f"{path.name}:{key}[{i}]"
                record = _validate(model, raw, where)
                if record.id in records[key]:
                    raise CatalogError(f"{where}: duplicate id {record.id!r}", field=where)
                records[key][record.id] = record
    catalog = Catalog(
        sources=sources,
        data_dir=data_dir,
        architectures=_architectures(records["models"].values(), data_dir),
        **{key: Registry(key.replace("_", " "), recs) for key, recs in records.items()},
    )
    check_sourced(catalog)
    check_references(catalog)
    check_engine_flags(catalog)
    check_memory_rules(catalog)
    check_moe_kernels(catalog)
    check_weight_rules(catalog)
    check_admission_rules(catalog)
    check_mtp_rules(catalog)
    check_eagle3_drafts(catalog)
    check_engine_support(catalog)
    check_sites(catalog)
    check_benchmark_clients(catalog)
    return catalog


def _architectures(cards, data_dir: Path) -> dict[str, Architecture]:
    """Every card's config.json that imports, by its path; one that does not is left to the plan that
    uses it, which names the problem."""
    from inferplan.catalog.hf_import import architecture_from_config, read_config
    from inferplan.errors import InferplanError

    found = {}
    for config in sorted({c.config for c in cards if c.config}):
        try:
            found[config] = architecture_from_config(read_config(data_dir / config))
        except (InferplanError, OSError):
            continue
    return found


MODEL_NUMBER_DIGITS = 4  # a bare number this long or longer is a card's model number (4090), shorter a count


def is_count(name: str) -> bool:
    """A GPU count typed where an accelerator name belongs: it would match a chip by its digits (2:
    Trainium 2; 300: a 300 W edition); a four-digit model number (4090, 5090) names its card."""
    return name.strip().isdigit() and len(name.strip()) < MODEL_NUMBER_DIGITS


def check_sourced(catalog: Catalog) -> None:
    """Every sourced number of every section names a known source."""
    for key in SECTIONS:
        for record in getattr(catalog, key):
            for path, quantity in iter_sourced(record):
                if quantity.source not in catalog.sources:
                    raise CatalogError(
                        f"{key}:{record.id}.{path}: unknown source {quantity.source!r}",
                        field=f"{record.id}.{path}",
                    )


@functools.lru_cache(maxsize=4)
def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    """The shipped catalogue (cached; read on first use, never at import), from its compiled copy when
    the data and schema are unchanged (``compiled.py``)."""
    return load_compiled(data_dir, lambda: load_files(sorted(data_dir.glob("**/*.yaml")), data_dir=data_dir))
