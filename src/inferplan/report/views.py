"""What the web page and API show for a plan: the result, its uncertainty, the cards and the
chart specs — assembled once here so no shell recomputes anything."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.provenance import iter_sourced
from inferplan.economics.capacity import CellCapacity, drafts
from inferplan.economics.plan import PlanResult, plan, sized
from inferplan.economics.plan_inputs import DEFAULTS, fx_basis
from inferplan.economics.scenario import Scenario
from inferplan.economics.sizing import with_scenario_drafts
from inferplan.economics.uncertainty import Uncertainty, simulate
from inferplan.economics.workloads import WorkloadProfile
from inferplan.inputs import Input
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import MemoryFit, fit
from inferplan.performance.frontier import Frontier, frontier
from inferplan.report.cards import Card, headline_notes, plan_cards
from inferplan.report.sources import SourceNote, source_notes
from inferplan.report.charts import frontier_chart, memory_breakdown, plan_charts
from inferplan.search.deploying import plan_launch
from inferplan.search.experts_over_dp import EXPERTS_OVER_DP
from inferplan.units import BILLION, GB, GiB, plural


class PlanRequest(Input):
    scenario: Scenario
    draws: int = Field(2000, ge=0, le=100_000)
    seed: int = Field(0, ge=0, le=2**32 - 1)
    currency: Literal["usd", "eur"] = "usd"


class PlanView(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    result: PlanResult
    uncertainty: Uncertainty | None
    cards: list[Card]
    charts: dict[str, dict]
    memory: MemoryFit
    frontier: Frontier
    memory_summary: str
    quote_note: str | None = None
    headline_notes: list[str] = []  # what the headline figures must be read with (report/cards.headline_notes)
    deploy: str = ""  # the sized cell's launch command (search/deploying.plan_launch), as plan --json gives it
    deploy_notes: list[str] = []


class MemoryView(BaseModel):
    """The memory and speed part of a plan (its replica cell's memory, frontier and summary), which needs no
    price: the page's Memory & speed box."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    memory: MemoryFit
    frontier: Frontier
    memory_summary: str
    charts: dict[str, dict]  # "memory", "frontier"


class MemoryRequest(Input):
    scenario: Scenario


def plan_view(request: PlanRequest, catalog: Catalog | None = None, quote_note: str | None = None) -> PlanView:
    s = request.scenario
    result = plan(s, catalog)
    u = simulate(result, s, draws=request.draws, seed=request.seed, catalog=catalog) if request.draws else None
    part = _memory_part(s, result.capacity.cell, result.accelerator, result.workload, result.systems_per_loadout,
                        result.systems_per_cell, catalog)
    charts = {**plan_charts(result, u, request.currency), **part.charts}
    notes = _card_sources(result, s, catalog or load_catalog())
    cards = [c.model_copy(update={"sources": notes[c.key]}) if notes.get(c.key) else c
             for c in plan_cards(result, request.currency)]
    launch = plan_launch(catalog, s, result)
    return PlanView(result=result, uncertainty=u, cards=cards, charts=charts,
                    memory=part.memory, frontier=part.frontier, memory_summary=part.memory_summary, quote_note=quote_note,
                    headline_notes=headline_notes(result), deploy=launch.text, deploy_notes=list(launch.notes))


def memory_view(s: Scenario, catalog: Catalog | None = None) -> MemoryView:
    """The memory and speed part of ``s``'s plan, sized as ``plan`` sizes it but without its prices: what is left
    for the KV cache on a platform no price is given for yet."""
    known = sized(s, catalog)
    return _memory_part(s, known.sizing.capacity.cell, known.hardware.accelerator.id, known.workload,
                        known.sizing.systems_per_loadout, known.systems_per_cell, catalog)


def _memory_part(s: Scenario, cell: CellCapacity, accelerator: str, workload: WorkloadProfile, systems_per_loadout: int,
                 systems_per_cell: int, catalog: Catalog | None) -> MemoryView:
    spans = systems_per_loadout > 1  # the cell runs over several systems' network
    hardware = {"system": s.platform.system} if spans else {"gpu": accelerator}
    d = Deployment(model=s.model, **hardware, quantization=s.quantization, **s.stated_engine,
                   kv_cache_dtype=s.kv_cache_dtype, kv_bytes_per_token=s.kv_bytes_per_token, tensor_parallel_size=cell.tensor_parallel_size,
                   pipeline_parallel_size=cell.pipeline_parallel_size, data_parallel_size=cell.data_parallel_size,
                   enable_expert_parallel=cell.expert_parallel, gpus=cell.gpus, max_num_seqs=cell.stated_max_num_seqs,
                   max_model_len=workload.input_tokens_per_request + workload.output_tokens_per_request)
    d = with_scenario_drafts(catalog, s, d)  # the frontier prices the drafts the cells were sized with
    memory = fit(d, catalog)
    w = Workload(**drafts(workload), input_len=workload.input_tokens_per_request,
                 output_len=workload.output_tokens_per_request,
                 prefix_cache_hit_rate=workload.cache_hit_rate)
    curve = frontier(d, w, catalog, points=16)
    layout = f"TP{cell.tensor_parallel_size}" + (f" × PP{cell.pipeline_parallel_size}" if cell.pipeline_parallel_size > 1 else "")
    if cell.expert_parallel:
        layout = f"attention DP{cell.data_parallel_size} × {layout}, experts over all {cell.gpus}"
    elif cell.data_parallel_size > 1:  # ranks that share the experts without expert parallelism
        layout = f"{layout} × DP{cell.data_parallel_size}, {EXPERTS_OVER_DP}"
    if spans:
        layout += f", over {systems_per_cell} {s.platform.system} systems"
    summary = (f"Replica cell: {cell.gpus}× {memory.accelerator} ({layout}), {memory.quantization} weights "
               f"{memory.weights_bytes_per_gpu / GiB:,.1f} GiB per GPU, KV cache {memory.kv_cache_bytes_per_gpu / GiB:,.1f} GiB per GPU "
               f"({memory.kv_cache_tokens:,} tokens); {memory.total_max_concurrency:,.1f} requests of {memory.max_model_len:,} tokens fit. "
               f"At the {workload.target_output_tokens_per_s:g} tok/s target a cell runs {plural(cell.concurrency_at_target, 'request')} "
               f"({cell.output_tokens_per_s_per_user:,.1f} tok/s each, {cell.source}).")
    return MemoryView(memory=memory, frontier=curve, memory_summary=summary,
                      charts={"memory": memory_breakdown(memory), "frontier": frontier_chart(curve)})


def _sourced(catalog: Catalog, fields: dict[str, tuple]) -> dict[str, list[SourceNote]]:
    return {field: notes for field, quantities in fields.items() if (notes := source_notes(catalog, *quantities))}


def _card_sources(r: PlanResult, s: Scenario, catalog: Catalog) -> dict[str, list[SourceNote]]:
    """The catalogue records behind the plan's price cards: the system's price band (unless a
    vendor quote replaced it), the API prices and the rental listings the rent is the median of."""
    def notes(section: str, *record_ids: str | None) -> list[SourceNote]:
        records = [getattr(catalog, section).records.get(i) for i in record_ids if i]
        return source_notes(catalog, *(q for record in records if record for _, q in iter_sourced(record)))

    system = catalog.systems.records.get(r.system)
    band = system.price if system and not s.platform.quote_usd_per_system else None
    same, alt = notes("api_prices", r.api_price), notes("api_prices", r.api_alternative)
    host = (catalog.cost_defaults.records[band.host].usd,) if band and band.host else ()
    rent = notes("rental_prices", *(r.rental_ids or (r.rental,)))  # every listing of the median
    return {"capex": source_notes(catalog, band.usd_low, band.usd_high, *host) if band else [],
            "same_model_api": same, "private_quote": same, "api_alternative": alt, "api_cost": alt,
            "rent": rent, "operating_cost": rent if r.rented else []}  # rented, the rent is the operating cost


class ModelCardView(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    name: str
    status: str
    licence: str
    gate: str
    params: str
    context: str
    checkpoints: list[str]
    first_node: str
    engines: str
    architecture: str  # "published config" | "proxy: <model>" | "not published"
    sources: dict[str, list[SourceNote]] = {}  # field shown -> where its numbers come from


class PlatformView(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    name: str
    tier: str
    status: str
    gpus: str
    memory: str
    power: str
    cooling: str
    price_usd: str
    price_eur: str
    native_nvfp4: str
    software: str
    sources: dict[str, list[SourceNote]] = {}  # field shown -> where its numbers come from


def _count(q, unit: float, suffix: str, digits: int = 0) -> str:
    return "—" if q is None else f"{q.value / unit:,.{digits}f}{suffix}"


def model_cards(catalog: Catalog, include_reference: bool = False) -> list[ModelCardView]:
    """The seed's model lines (and optionally the reference models) as display cards."""
    cards = []
    for m in catalog.models:
        if m.status == "reference" and not include_reference:
            continue
        params = _count(m.total_params, BILLION, "B", 1)
        if m.active_params:
            params += f" total / {_count(m.active_params, BILLION, 'B', 1)} active"
        checkpoints = [f"{c.name} ({c.quantization}, {_count(c.size_bytes, GB, ' GB', 1)})" for c in m.checkpoints]
        arch = "published config" if m.config else (f"proxy: {m.kv_proxy}" if m.kv_proxy else "not published")
        cards.append(ModelCardView(
            id=m.id, name=m.name, status=m.status, licence=m.licence.name if m.licence else "—",
            gate=(m.licence.gate or "—") if m.licence else "—", params=params,
            context=_count(m.context_tokens, 1, " tokens"), checkpoints=checkpoints, first_node=m.first_node or "—",
            engines=", ".join(m.serving_engines) or "—", architecture=arch,
            sources=_sourced(catalog, {"params": (m.total_params, m.active_params), "context": (m.context_tokens,),
                                       "checkpoints": tuple(c.size_bytes for c in m.checkpoints)}),
        ))
    return cards


def platform_ladder(catalog: Catalog) -> list[PlatformView]:
    rows = []
    for s in catalog.systems:
        accel = catalog.accelerators.records[s.accelerator]
        band = s.price

        def money(low, high, sign):
            if low is None:
                return "quote required" if s.tier in ("node", "rack") else "—"
            top = high.value if high else low.value
            text = f"{sign}{low.value / 1e3:,.0f}k–{top / 1e3:,.0f}k" if top != low.value else f"{sign}{low.value / 1e3:,.0f}k"
            return f"{text} card + host PC ({band.host})" if band.host else text

        rows.append(PlatformView(
            id=s.id, name=s.name, tier=s.tier, status=s.status.value, gpus=f"{s.accelerator_count}× {accel.name}",
            memory=_count(s.memory_bytes, 1e12, " TB", 2), power=_count(s.power_w, 1e3, " kW", 1), cooling=s.cooling or "—",
            price_usd=money(band.usd_low, band.usd_high, "$") if band else "—",
            price_eur=money(band.eur_low, band.eur_high, "€") if band else "—",
            native_nvfp4=_native_nvfp4(accel), software=accel.software.value,
            sources=_sourced(catalog, {"memory": (s.memory_bytes,), "power": (s.power_w,),
                                       "price_usd": (band.usd_low, band.usd_high) if band else (),
                                       "price_eur": (band.eur_low, band.eur_high) if band else ()}),
        ))
    return rows


def _native_nvfp4(accel) -> str:
    """Whether the GPU runs NVFP4 natively: a roadmap part's formats are assumptions like all its figures."""
    if "nvfp4" not in accel.native_formats:
        return "no"
    return "assumed (roadmap part)" if accel.status.value == "roadmap" else "yes"


class FxView(BaseModel):
    """The FX rate every EUR figure uses, as the page labels the EUR choice and notes its source."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    usd_per_eur: float
    label: str  # "€1 = $1.1426"
    text: str  # the rate with its source and checked date
    sources: list[SourceNote] = []


def fx_view(catalog: Catalog) -> FxView:
    q = catalog.cost_defaults.records[DEFAULTS["fx"]].usd_per_eur
    label = f"€1 = ${q.value:g}"
    return FxView(usd_per_eur=q.value, label=label, text=f"{label} ({fx_basis(catalog)})", sources=source_notes(catalog, q))
