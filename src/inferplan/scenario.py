"""A scenario: one immutable object that says what to plan — model, platform, workload, money.

Scenario files are YAML. ``load_scenario`` validates them and reports the first problem as
``file:line: key: message (allowed …)``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import AliasChoices, BaseModel, Field, ValidationError, ValidationInfo, field_validator, model_validator

from inferplan.economics.workloads import WorkloadOverrides
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs import Input, WrittenFloat, stored
from inferplan.memory.deployment import MIN_KV_BYTES_PER_TOKEN


class Platform(Input):
    system: str | None = Field(None, description="system id: hgx-b200, gb300-nvl72, dgx-spark …")
    gpu: str | None = Field(None, description="accelerator id when there is no catalogue system")
    gpus: int | None = Field(None, ge=1, le=100_000, description="GPUs per loadout when `gpu` is used")
    price_point: Literal["low", "mid", "high"] = "mid"
    # per system: a loadout may be several systems when one replica needs them. The names
    # `quote_usd_per_loadout` / `power_w_per_loadout` (from when a loadout was one system) still read.
    quote_usd_per_system: float | None = Field(
        None, gt=0, le=1e10, validation_alias=AliasChoices("quote_usd_per_system", "quote_usd_per_loadout"),
        description="a vendor quote for one system (or for the `gpus` of a bare-GPU platform); overrides the price band")
    power_w_per_system: float | None = Field(
        None, gt=0, le=1e8, validation_alias=AliasChoices("power_w_per_system", "power_w_per_loadout"),
        description="power of one system (or of the `gpus` of a bare-GPU platform); overrides the catalogue's")

    @field_validator("quote_usd_per_system", "power_w_per_system")
    @classmethod
    def _at_least_one(cls, value: float | None, info: ValidationInfo) -> float | None:
        # under $1 a system or 1 W is no real figure, and 1e-300 W made tokens per MW infinite
        if value is not None and value < 1 and not stored(info):
            raise ValueError("must be at least 1 (USD per system, W per system)")
        return value

    @model_validator(mode="after")
    def _named(self) -> "Platform":
        if not (self.system or self.gpu):
            raise ValueError("name a system or a gpu")
        if self.system and (self.gpu or self.gpus):
            raise ValueError("name a system or a gpu with its gpus, not both: a system fixes its GPUs")
        if self.gpu and not self.system and not self.gpus:
            raise ValueError("with `gpu`, say how many `gpus` a loadout has")
        return self


class Cell(Input):
    """The replica cell: one engine instance. Default: the best layout that fits (economics docs)."""

    tensor_parallel_size: int = Field(1, ge=1, le=1024)
    pipeline_parallel_size: int = Field(1, ge=1, le=1024)
    data_parallel_size: int = Field(1, ge=1, le=1024, description="attention data-parallel ranks inside the cell (with expert parallelism)")
    enable_expert_parallel: bool = Field(False, description="a mixture-of-experts model's experts spread over all the cell's GPUs")

    @model_validator(mode="after")
    def _ranks_share_experts(self) -> "Cell":
        if self.data_parallel_size > 1 and not self.enable_expert_parallel:
            raise ValueError("data_parallel_size above 1 needs enable_expert_parallel: true (ranks that share no "
                             "experts are separate cells, which the loadout packs by itself)")
        return self

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size


class Speculative(Input):
    """Speculative decoding in every replica: draft tokens per step (MTP or EAGLE heads) and the
    chance each is accepted (docs/speed.md §1)."""

    tokens: int = Field(ge=1, le=32, description="draft tokens proposed per step")
    acceptance_rate: float = Field(0.7, ge=0, le=1, description="probability each draft token is accepted")


class MoneyInputs(Input):
    # half a year at least: a few days of amortization made a million tokens cost billions
    amortization_years: float | None = Field(None, ge=0.5, le=20)
    capital_recovery_years: float | None = Field(None, ge=0.5, le=20)
    utilization: float | None = Field(None, gt=0, le=1, description="average power draw as a share of the maximum")
    electricity_usd_per_kwh: float | None = Field(None, ge=0, le=10)
    pue: float | None = Field(None, ge=1, le=4)
    colocation_usd_per_kw_month: float | None = Field(None, ge=0, le=10_000)
    software: Literal["none", "nvaie-1-year", "nvaie-5-year", "nvaie-perpetual"] = "none"
    support_share_of_capex_per_year: float | None = Field(None, ge=0, le=1)
    staff_usd_per_month: float = Field(0.0, ge=0, le=1e9)
    quote_multiplier: float = Field(1.0, gt=0, le=100, description="private quote = same-model API price × this")
    api_alternative: str | None = Field(None, description="api price id to compare with (default: the same model's)")
    rental: str | None = Field(None, description="rental price id (default: the median on-demand listing for the GPU)")
    migration_cost_usd: float | None = Field(None, ge=0, le=1e9, description="one-off cost to port to another stack")
    migration_target_usd_per_mtok: float | None = Field(None, ge=0, le=1e4)


class Scenario(Input):
    name: str = Field("scenario", max_length=200)
    model: str = Field(min_length=1)
    quantization: str | None = None
    engine: str = "vllm"
    kv_cache_dtype: str = "auto"
    kv_bytes_per_token: float | None = Field(
        None, ge=MIN_KV_BYTES_PER_TOKEN, le=1e9,
        description="stated KV bytes per token (at least 1 KiB), for a model whose architecture is not published")
    platform: Platform
    cell: Cell | None = Field(None, description="the replica cell as stated; left out: the layout carrying the most users (docs/economics.md)")
    workload: WorkloadOverrides = WorkloadOverrides()
    speculative: Speculative | None = Field(None, description="speculative decoding (MTP/EAGLE drafts); left out: none")
    target_users: int = Field(100, ge=1, le=1_000_000_000)
    money: MoneyInputs = MoneyInputs()


def check_references(s: Scenario, catalog) -> None:
    """Every catalogue id a scenario names exists (a saved scenario is checked when saved, not
    first when it is compared); the error names the scenario key."""
    from inferplan.catalog.models import resolve_model

    lookups = [("engine", lambda: catalog.engine(s.engine, field_name="engine")),
               ("model", lambda: resolve_model(catalog, s.model))]
    if s.quantization:
        lookups.append(("quantization", lambda: catalog.quantization(s.quantization, field_name="quantization")))
    if s.kv_cache_dtype != "auto":
        lookups.append(("kv_cache_dtype", lambda: catalog.kv_cache_dtype(s.kv_cache_dtype, field_name="kv_cache_dtype")))
    if s.platform.system:
        lookups.append(("platform.system", lambda: catalog.system(s.platform.system, field_name="platform.system")))
    if s.platform.gpu:
        lookups.append(("platform.gpu", lambda: catalog.accelerator(s.platform.gpu, field_name="platform.gpu")))
    lookups.append(("workload.preset", lambda: catalog.workload_presets.get(
        s.workload.preset, field_name="workload.preset", error=InvalidScenarioError)))
    for key, lookup in lookups:
        try:
            lookup()
        except InferplanError as exc:
            raise InvalidScenarioError(str(exc), field=key, allowed=exc.allowed) from None


def _line_of(root: yaml.Node | None, loc: tuple) -> int | None:
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
            if match is None:
                key_node = next((k for k, _ in node.value if k.value == key), None)
                return key_node.start_mark.line + 1 if key_node is not None else line
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
        line = node.start_mark.line + 1
    return line


class _UniqueKeys(yaml.SafeLoader):
    """Safe loading that refuses a key given twice in one mapping (plain YAML keeps the last) and
    reads ``1e13`` as the number it looks like (YAML 1.1 wants ``1.0e13``, else it is text)."""

    # a copy, so that the resolver added below stays this loader's and not every SafeLoader's
    yaml_implicit_resolvers = {key: list(rules) for key, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


_EXPONENT = "tag:inferplan,2026:exponent"  # 1e13: a number where a number belongs, its text in a text field
_UniqueKeys.add_implicit_resolver(
    _EXPONENT, re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789"))
_UniqueKeys.add_constructor(_EXPONENT, lambda loader, node: WrittenFloat(loader.construct_scalar(node)))


def parse_scenario(text: str, where: str = "<scenario>") -> Scenario:
    try:
        data = yaml.load(text, Loader=_UniqueKeys)  # noqa: S506 - a SafeLoader subclass
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidScenarioError(f"{at}: not valid YAML: {problem}", field=where, located=True) from None
    if not isinstance(data, dict):
        raise InvalidScenarioError(f"{where}: a scenario is a mapping (model:, platform:, workload: …)", field=where,
                                   located=True)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        key = ".".join(str(p) for p in loc) or "scenario"
        line = _line_of(root, loc)
        msg = err["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's message
        if err["type"] == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = ", ".join(parent.model_fields) if parent else None
            raise InvalidScenarioError(f"{where}:{line}: {key}: unknown key", field=key, allowed=allowed,
                                       located=True) from None
        raise InvalidScenarioError(f"{where}:{line}: {key}: {msg}", field=key, located=True) from None


def _model_at(loc: tuple) -> type[BaseModel] | None:
    model: type[BaseModel] = Scenario
    for key in loc:
        field = model.model_fields.get(str(key))
        ann = getattr(field, "annotation", None) if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        else:
            return None
    return model


def load_scenario(path: str | Path) -> Scenario:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidScenarioError(f"cannot read {p}: {exc.strerror}", field="SCENARIO") from None
    except UnicodeDecodeError:
        raise InvalidScenarioError(f"{p} is not UTF-8 text", field="SCENARIO", allowed="a UTF-8 YAML file") from None
    return parse_scenario(text, where=str(p))
