"""The scenario a plan is asked about: one immutable object that says what to plan — model,
platform, replica cell (and a prefill pool beside the cells), workload, speculative decoding, target
users and money inputs.

``plan`` (``plan.py``) and ``simulate`` (``uncertainty.py``) take it; ``inferplan.scenario`` reads
it from a YAML file and checks the catalogue ids it names.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (AliasChoices, Field, SerializerFunctionWrapHandler, ValidationError, ValidationInfo,
                      ValidatorFunctionWrapHandler, field_validator, model_serializer, model_validator)

from pydantic_core import PydanticCustomError

from inferplan.economics.workloads import WorkloadOverrides
from inferplan.inputs import Input, SafeName, stored
from inferplan.inputs.deployment import MIN_KV_BYTES_PER_TOKEN
from inferplan.inputs.workload import DEFAULT_ACCEPTANCE_RATE
from inferplan.memory.mtp import SPECULATIVE_METHODS
from inferplan.performance.drafts import NO_DEFAULT_ACCEPTANCE_METHODS, no_default_acceptance
from inferplan.units import plain_number


class Platform(Input):
    system: str | None = Field(None, description="system id: hgx-b200, gb300-nvl72, dgx-spark …")
    gpu: str | None = Field(None, description="accelerator id when there is no catalogue system")
    gpus: int | None = Field(None, ge=1, le=100_000, description="GPUs per loadout when `gpu` is used")
    price_point: Literal["low", "mid", "high"] = "mid"
    # per system: a loadout may be several systems when one replica needs them. `quote_usd_per_loadout`
    # / `power_w_per_loadout` are read as aliases, so saved scenarios that use those keys still plan.
    quote_usd_per_system: float | None = Field(
        None, gt=0, le=1e10, validation_alias=AliasChoices("quote_usd_per_system", "quote_usd_per_loadout"),
        description="a vendor quote for one system (or for the `gpus` of a bare-GPU platform); overrides the price band")
    power_w_per_system: float | None = Field(
        None, gt=0, le=1e8, validation_alias=AliasChoices("power_w_per_system", "power_w_per_loadout"),
        description="power of one system (or of the `gpus` of a bare-GPU platform); overrides the catalogue's")

    @classmethod
    def _at_least_one_allowed(cls, field: str) -> str:
        top = next(m.le for m in cls.model_fields[field].metadata if getattr(m, "le", None) is not None)
        return f"a number at least 1 and at most {plain_number(top)}"

    @field_validator("quote_usd_per_system", "power_w_per_system", mode="before")
    @classmethod
    def _at_least_one(cls, value: Any, info: ValidationInfo) -> Any:
        # under $1 a system or 1 W is no real figure, and 1e-300 W made tokens per MW infinite; the field's own
        # bound (above 0) stays for scenarios stored before, so the allowed values are said here, before that
        # bound refuses 0 and below as "more than 0"
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 1 and not stored(info):
            unit = "USD per system" if info.field_name.startswith("quote") else "W per system"
            raise PydanticCustomError("greater_than_equal", "must be at least 1 ({unit})",
                                      {"unit": unit, "allowed": cls._at_least_one_allowed(info.field_name)})
        return value

    @field_validator("quote_usd_per_system", "power_w_per_system", mode="wrap")
    @classmethod
    def _text_refused_as_at_least_one(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        """A figure given as text or a yes/no is refused (``Input``) naming what the field takes: for a scenario
        not stored before, at least 1 as above, not the field's stored-rows bound of more than 0."""
        try:
            return handler(value)
        except ValidationError as exc:
            said = [e.get("ctx", {}).get("allowed") for e in exc.errors()]
            if stored(info) or len(said) != 1 or said[0] is None:
                raise
            error, allowed = exc.errors()[0], cls._at_least_one_allowed(info.field_name)
            # the message as said, its text rendered already: only ``allowed`` is carried for the shells to name
            raise PydanticCustomError(error["type"], error["msg"].replace(said[0], allowed), {"allowed": allowed}) from None

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
    data_parallel_size: int = Field(1, ge=1, le=1024, description=(
        "attention data-parallel ranks inside the cell: with expert parallelism, or sharing a mixture-of-experts "
        "model's experts over TP x DP where the engine's MoE layers do (vLLM)"))
    enable_expert_parallel: bool = Field(False, description="a mixture-of-experts model's experts spread over all the cell's GPUs")
    max_num_seqs: int | None = Field(None, ge=1, le=1_000_000, description=(
        "sequences one instance runs at once, per data-parallel rank, as its launch states them (a search's pick "
        "states its cap); left out: the engine's own"))

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size


class PrefillCell(Cell):
    """One prefill instance's layout: launched at the engine's own running cap (deploy/pools_plan.py)."""

    @field_validator("max_num_seqs", mode="before")
    @classmethod
    def _engines_own_cap(cls, value: Any) -> Any:
        if value is not None:  # any stated cap, 0 included: not the field's bounds, which are the decode cell's
            raise PydanticCustomError("prefill_running_cap", "a prefill instance runs the engine's own running cap: "
                                      "leave out max_num_seqs", {"allowed": "left out: the engine's own cap"})
        return value


class PrefillPool(Input):
    """Separate prefill and decode pools (a search's disaggregated pick): the prefill instances that run
    beside the replica cells, which are then the decode pool. They run on the scenario's platform in
    its model, format and engine; they are priced with the decode pool, and the users carried are the
    decode pool's."""

    instances: int = Field(ge=1, le=1_000_000, description="prefill engine instances")
    cell: PrefillCell = Field(description="one prefill instance's layout")

    @field_validator("cell")
    @classmethod
    def _prefill_ranks_expert_parallel(cls, cell: PrefillCell) -> PrefillCell:
        if cell.data_parallel_size > 1 and not cell.enable_expert_parallel:  # as deploy/pools_plan.py launches it
            raise PydanticCustomError("prefill_ranks_not_expert_parallel", "a prefill instance's data_parallel_size "
                                      "above 1 needs enable_expert_parallel: true",
                                      {"allowed": "data_parallel_size 1, or enable_expert_parallel: true beside a larger one"})
        return cell


class Speculative(Input):
    """Speculative decoding in every replica: draft tokens per step, made by ``method``, and the chance
    each is accepted (docs/speed.md §1). Planned as ``deploy`` launches it (``memory.mtp.with_speculative``)."""

    tokens: int = Field(ge=1, le=32, description="draft tokens proposed per step")
    method: Literal[SPECULATIVE_METHODS] | None = Field(None, description=(
        "how the drafts are made: ngram, draft_model (a separate smaller model), eagle3 (an EAGLE-3 head) or mtp (the "
        "model's multi-token-prediction layers); left out: eagle3 with a draft_model, else mtp where the model and "
        "engine draft with MTP layers, else ngram where the engine's launch has it (refused where not)"))
    acceptance_rate: float | None = Field(None, ge=0, le=1, validate_default=True, description=(
        "probability each draft token is accepted; left out: the catalogued draft_model's published rate, else "
        f"{DEFAULT_ACCEPTANCE_RATE} (assumed; the plan's assumptions say which); required with ngram (no default)"))
    draft_model: str | None = Field(None, min_length=3, max_length=300, description=(
        "the draft checkpoint: with eagle3 an EAGLE-3 head (its memory counted where the catalogue lists it; left out: "
        "the model's one catalogued draft), with draft_model the smaller model (a catalogue id, repo or config.json "
        "path; its weights and KV counted on vLLM)"))

    @field_validator("acceptance_rate")
    @classmethod
    def _stated_where_no_default(cls, value: float | None, info: ValidationInfo) -> float | None:
        """A method whose acceptance is the workload's alone (``NO_DEFAULT_ACCEPTANCE_METHODS``) takes a stated rate."""
        method = info.data.get("method")
        if value is None and method in NO_DEFAULT_ACCEPTANCE_METHODS:
            raise ValueError(no_default_acceptance(method))
        return value

    @property
    def planned_method(self) -> str | None:
        """The method as planned: the stated one, else eagle3 with a draft checkpoint (None: as ``perf`` plans it)."""
        return self.method or ("eagle3" if self.draft_model else None)


class MoneyInputs(Input):
    # half a year at least: a few days of amortization made a million tokens cost billions
    amortization_years: float | None = Field(None, ge=0.5, le=20)
    capital_recovery_years: float | None = Field(None, ge=0.5, le=20)
    utilization: float | None = Field(None, gt=0, le=1, description="average power draw as a share of the maximum")
    # left out: the default of the site the platform stands at, a desk or a data centre (data/economics/sites.yaml)
    electricity_usd_per_kwh: float | None = Field(None, ge=0, le=10, description="left out: the platform's site's default")
    pue: float | None = Field(None, ge=1, le=4, description="left out: the platform's site's default (1 at a desk)")
    colocation_usd_per_kw_month: float | None = Field(None, ge=0, le=10_000,
                                                      description="left out: the platform's site's default (none at a desk)")
    software: Literal["none", "nvaie-1-year", "nvaie-5-year", "nvaie-perpetual"] = "none"
    support_share_of_capex_per_year: float | None = Field(None, ge=0, le=1)
    staff_usd_per_month: float = Field(0.0, ge=0, le=1e9)
    quote_multiplier: float = Field(1.0, gt=0, le=100, description="private quote = same-model API price × this")
    api_alternative: str | None = Field(None, description="api price id to compare with (default: the same model's)")
    rental: str | None = Field(None, description="rental price id (default: the median of the on-demand listings for the GPU)")
    rent_usd_per_gpu_hour: float | None = Field(None, gt=0, le=1000, description=(
        "your own rental rate per GPU-hour (reserved or negotiated) for the GPUs of the cells the target needs, in place of a catalogue listing"))
    api_input_usd_per_mtok: float | None = Field(None, ge=0, le=10_000, description=(
        "your own API's price per million uncached input tokens, the API compared with (with api_output_usd_per_mtok)"))
    api_cached_input_usd_per_mtok: float | None = Field(None, ge=0, le=10_000, description=(
        "your own API's price per million cached input tokens (default: the uncached price)"))
    api_output_usd_per_mtok: float | None = Field(None, ge=0, le=10_000, description=(
        "your own API's price per million output tokens, the API compared with (with api_input_usd_per_mtok)"))
    migration_cost_usd: float | None = Field(None, ge=0, le=1e9, description="one-off cost to port to another stack")
    migration_target_usd_per_mtok: float | None = Field(None, ge=0, le=1e4)


    @model_validator(mode="after")
    def _one_of_each_price(self) -> "MoneyInputs":
        if self.rent_usd_per_gpu_hour is not None and self.rental is not None:
            raise ValueError("rent_usd_per_gpu_hour: give your own rate or a listing (rental), not both")
        own_api = [n for n in ("api_input_usd_per_mtok", "api_cached_input_usd_per_mtok", "api_output_usd_per_mtok")
                   if getattr(self, n) is not None]
        if own_api and self.api_alternative is not None:
            raise ValueError(f"{own_api[0]}: give your own API prices or a catalogue one (api_alternative), not both")
        if own_api and (self.api_input_usd_per_mtok is None or self.api_output_usd_per_mtok is None):
            missing = "api_input_usd_per_mtok" if self.api_input_usd_per_mtok is None else "api_output_usd_per_mtok"
            raise ValueError(f"{missing}: your own API needs both its input and its output price")
        return self


class Scenario(Input):
    name: SafeName = "scenario"
    model: str = Field(min_length=1)
    quantization: str | None = None
    engine: str = Field("vllm", description="left out: the platform's own (llama.cpp on Apple silicon, else vLLM)")
    engine_version: str | None = Field(None, max_length=40, description="the engine release whose memory rule applies "
                                       "(e.g. 0.6.4); left out: the engine's current release")
    kv_cache_dtype: str = "auto"
    kv_bytes_per_token: float | None = Field(
        None, ge=MIN_KV_BYTES_PER_TOKEN, le=1e9,
        description="stated KV bytes per token (at least 1 KiB), for a model whose architecture is not published")
    platform: Platform
    cell: Cell | None = Field(None, description="the replica cell as stated; left out: the layout carrying the most users (docs/economics.md)")
    workload: WorkloadOverrides = WorkloadOverrides()
    speculative: Speculative | None = Field(None, description="speculative decoding (n-gram, draft-model, EAGLE-3 or MTP drafts); left out: none")
    target_users: int = Field(100, ge=1, le=1_000_000_000)
    replicas: int | None = Field(None, ge=1, le=1_000_000, description=(
        "replica cells (engine instances) run, as a search's pick states them; left out: as many as carry target_users"))
    rented: bool = Field(False, description=(
        "the deployment is rented (a search's rented pick): its monthly operating cost is the rent route's bill (the "
        "provider's price includes power and hosting), and owning is priced beside it only where the catalogue has a "
        "purchase price for the platform"))
    prefill_pool: PrefillPool | None = Field(None, description=(
        "separate prefill and decode pools (a search's disaggregated pick): the prefill instances beside the `replicas` "
        "cells, which are the decode pool; left out: one pool serves both phases"))
    money: MoneyInputs = MoneyInputs()

    @field_validator("prefill_pool")
    @classmethod
    def _beside_stated_decode_pool(cls, pool: PrefillPool | None, info: ValidationInfo) -> PrefillPool | None:
        missing = next((k for k in ("cell", "replicas") if info.data.get(k) is None), None)
        if pool is not None and missing:
            raise ValueError(f"a prefill pool runs beside a stated decode pool: give the scenario's `{missing}` "
                             "too (the decode instances' layout and count)")
        return pool

    @model_serializer(mode="wrap")
    def _engine_as_stated(self, handler: SerializerFunctionWrapHandler):  # unannotated: the schema stays the fields
        """An engine left out stays out of the dump (a saved scenario, a shared link), so reading it
        back plans on the platform's own engine again, not on the field's placeholder vLLM."""
        data = handler(self)
        if "engine" not in self.model_fields_set:
            data.pop("engine", None)
        return data

    @property
    def stated_engine(self) -> dict[str, str]:
        """The engine as a deployment's keyword: the one the scenario names, else none, so the
        deployment takes its platform's own (``memory.hardware.with_default_engine``)."""
        return {"engine": self.engine} if "engine" in self.model_fields_set else {}
