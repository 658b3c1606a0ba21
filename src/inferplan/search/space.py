"""The search space: every replica cell (one engine instance) worth evaluating for a request.

A cell is a model on a platform — a whole catalogue system, or N of an accelerator — in one
weight format, KV-cache type, engine and parallel layout, with or without speculative decoding.
Everything cheaper to vary (replicas, running-sequence cap, load share, prefill/decode pool split)
is a grid over each cell (``evaluate.py``). Layouts reuse the economics layer's rules: the
smallest cell that fits (``smallest_fitting_cell``, ``spanning_cell``), tensor-parallel widths in powers
of two inside the fast-link domain, and expert-parallel widths for a mixture-of-experts model on an
engine that spreads experts: the widths plan tries (``memory.layout.cell_widths``), powers of two,
the fast-link domain and the whole system; and, on an engine whose MoE layers' tensor-parallel group
spans the data-parallel ranks of one launch (vLLM), the same widths as TP × DP ranks that share the
routed experts without expert parallelism (``experts_over_dp.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from inferplan.catalog.engine_support import engine_refusal
from inferplan.catalog.flag_scope import stated_release
from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.ollama import NamedBuild, named_build
from inferplan.catalog.models import ModelSpec
from inferplan.memory.checks import has_experts
from inferplan.memory.precision import has_routed_experts, how_it_runs, model_formats, planned_weight_format
from inferplan.memory.resolve import resolve_model
from inferplan.memory.tp_split import tp_splits
from inferplan.catalog.schema import Accelerator, System
from inferplan.economics.capacity import smallest_fitting_cell, spanning_cell
from inferplan.economics.pools import domain_gpus
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.layout import cell_widths, instance_gpus
from inferplan.catalog.eagle3_drafts import Eagle3Draft, drafts_for
from inferplan.catalog.mtp_rules import drafts_at_pipeline, mtp_rule
from inferplan.search.experts_over_dp import experts_over_dp, experts_over_dp_layouts
from inferplan.search.names import resolved_request
from inferplan.search.request import FORM_FACTOR_TIERS, SearchRequest
from inferplan.search.serving_modes import serving_modes

ACCELERATOR_GPU_COUNTS = (1, 2, 4, 8)  # N of a bare accelerator: one PCIe/SXM server at most
DEFAULT_KV_DTYPES = ("auto", "fp8")  # the model's own and the compact cache every GPU engine offers
WIDEST_FACTOR = 8  # cells up to 8 × the GPUs of the smallest that holds the model …
MIN_WIDEST_GPUS = 8  # … and at least up to one 8-GPU server


@dataclass(frozen=True)
class Platform:
    """A system (bought or rented whole) or N of an accelerator (rented per GPU)."""

    id: str  # the system id, or "<n>x-<accelerator>"
    accelerator: Accelerator = field(repr=False)
    system: System | None = field(repr=False)
    gpus: int  # GPUs per system, or the N of the accelerator
    domain_gpus: int  # GPUs joined by the fast link

    @property
    def vendor(self) -> str:
        return self.accelerator.vendor


@dataclass(frozen=True)
class Cell:
    model: str
    platform: Platform = field(repr=False)
    quantization: str
    quantization_label: str  # "native", "fallback to <dtype> compute", "emulated in <dtype>", "experts emulated in <dtype>"
    kv_cache_dtype: str
    engine: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int = 1
    expert_parallel: bool = False
    speculative_tokens: int = 0
    systems_per_instance: int = 1  # >1 when one instance spans several systems
    context_tokens: int | None = None  # the model's own context, where a spread's long requests stop
    draft_model: str | None = None  # an EAGLE-3 draft checkpoint that drafts (None: the model's MTP layers, if any)

    @property
    def speculative_method(self) -> str | None:
        """How drafts are made: eagle3 with ``draft_model``, else mtp where the cell drafts, else None."""
        return ("eagle3" if self.draft_model else "mtp") if self.speculative_tokens else None

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size

    @property
    def experts_over_data_parallel(self) -> bool:
        """Data-parallel ranks in one launch that share the routed experts without expert parallelism."""
        return experts_over_dp(self.data_parallel_size, self.expert_parallel)

    @property
    def family(self) -> tuple[str, str, str, str]:
        return (self.model, self.platform.id, self.engine, self.quantization)

    def deployment(self, max_model_len: int) -> Deployment:
        """The engine instance as the memory and speed models take it."""
        p = self.platform
        where = ({"system": p.system.id} if p.system and self.systems_per_instance > 1 else {"gpu": p.accelerator.id})
        return Deployment(
            model=self.model, **where, gpus=self.gpus, quantization=self.quantization, engine=self.engine,
            kv_cache_dtype=self.kv_cache_dtype, tensor_parallel_size=self.tensor_parallel_size,
            pipeline_parallel_size=self.pipeline_parallel_size,
            data_parallel_size=self.data_parallel_size if self.expert_parallel or self.data_parallel_size > 1 else None,
            enable_expert_parallel=self.expert_parallel, max_model_len=max_model_len,
            mtp_draft=self.speculative_method == "mtp", eagle3_draft=self.draft_model)


@dataclass
class Space:
    cells: list[Cell] = field(default_factory=list)
    # (model, platform, engine, quantization) -> why no cell of it is searched
    excluded: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    unfitted: dict[tuple[str, str, str, str], Deployment] = field(default_factory=dict)  # one instance on all the GPUs
    # (model, accelerator, engines, "any format") -> why an accelerator the filters keep is no platform at all
    unpriced: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    # (model, platform, engine, quantization) -> why the engine does not run the model or its format on the GPU
    refused: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    platforms: dict[str, Platform] = field(default_factory=dict)  # every platform searched, by its id


def platforms(catalog: Catalog, req: SearchRequest) -> list[Platform]:
    """The platforms the request's filters leave: named systems/accelerators (unknown ids are
    errors naming the field), else every catalogue system of the wanted status, vendor and form
    factor; and, unless systems are named or only buying is asked, N of each accelerator with a
    rental listing (or of the accelerators named), rented per GPU; and N of each accelerator the request
    gives a purchase price for (``gpu_price_usd``), bought bare."""
    out: list[Platform] = []
    priced = tuple(req.gpu_price_usd or ())  # accelerators with the user's purchase price: bought bare too
    if req.accelerators or priced or (req.pricing != "buy" and not req.systems):
        rented = {r.accelerator for r in catalog.rental_prices} if req.pricing != "buy" else set()
        names = req.accelerators or sorted(rented | set(priced))
        for name in names:
            accel = catalog.accelerator(name, field_name="accelerators")
            domain = accel.scale_up.max_domain_gpus if accel.scale_up else 1
            for n in ACCELERATOR_GPU_COUNTS:
                if n == 1 or n <= domain or accel.form_factor in ("pcie", "workstation", "consumer"):
                    out.append(Platform(f"{n}x-{accel.id}", accel, None, n, domain_gpus(accel, None, n)))
    if not req.accelerators:
        systems = [catalog.system(s, field_name="systems") for s in req.systems] if req.systems else list(catalog.systems)
        for s in systems:
            accel = catalog.accelerators.records[s.accelerator]
            out.append(Platform(s.id, accel, s, s.accelerator_count, domain_gpus(accel, s, s.accelerator_count)))
    _known_vendors(catalog, req.vendors)
    named = bool(req.systems or req.accelerators)
    # a bare accelerator the user prices is one the user named: kept whatever its status, as a named one is
    kept = [p for p in out if _kept(p, req, named or (p.system is None and p.accelerator.id in priced))]
    if not kept:
        filters = {"statuses": req.statuses, "vendors": req.vendors, "form_factors": req.form_factors,
                   "max_gpus": req.max_gpus}
        stated = {k: v for k, v in filters.items() if v is not None and (k != "statuses" or not named)}
        field_name = next((k for k in ("max_gpus", "form_factors", "vendors") if stated.get(k) is not None), "statuses")
        raise InvalidScenarioError(
            f"no platform is left to search: {len(out)} named or catalogued, none passes "
            + "; ".join(f"{k} {_listed(v)}" for k, v in stated.items()), field=field_name,
            allowed="wider filters, or other systems/accelerators")
    return kept


def unpriced(catalog: Catalog, req: SearchRequest, searched: list[Platform]) -> list[tuple[Accelerator, str]]:
    """Accelerators the status and vendor filters keep that are no platform searched, each with why:
    the catalogue has no price route for them (no rental listing, no system built on them to buy).
    None when systems, accelerators or form factors are named: the request chose its platforms."""
    if req.systems or req.accelerators or req.form_factors:
        return []
    used = {p.accelerator.id for p in searched}
    rented = {r.accelerator for r in catalog.rental_prices}
    wanted = {v.lower() for v in req.vendors or ()}
    out = []
    for a in catalog.accelerators.records.values():
        if a.id in used or a.status.value not in req.statuses or (wanted and a.vendor.lower() not in wanted):
            continue
        systems = [s.id for s in catalog.systems if s.accelerator == a.id]
        missing = [] if a.id in rented or req.pricing == "buy" else ["no rental listing"]
        if req.pricing != "rent":
            missing.append(f"only systems the filters leave out ({', '.join(systems)})" if systems
                           else "no system built on it to buy")
        out.append((a, f"not searched: the catalogue has {' and '.join(missing)} for the {a.name}"))
    return out


def _listed(value: object) -> str:
    return ", ".join(value) if isinstance(value, tuple) else str(value)


def catalogue_vendors(catalog: Catalog) -> list[str]:
    """The vendors a search filters by: those of the catalogue's accelerators, lower case."""
    return sorted({a.vendor.lower() for a in catalog.accelerators.records.values()})


def _known_vendors(catalog: Catalog, vendors: tuple[str, ...] | None) -> None:
    """Refuse a vendor no catalogue accelerator has, listing those that do."""
    known = catalogue_vendors(catalog)
    for v in vendors or ():
        if v.lower() not in known:
            raise InvalidScenarioError(f"no catalogue accelerator is made by {v!r}", field="vendors",
                                       allowed=", ".join(known))


def _kept(p: Platform, req: SearchRequest, named: bool) -> bool:
    status = (p.system.status if p.system else p.accelerator.status).value
    if not named and status not in req.statuses:
        return False
    if req.vendors and p.vendor.lower() not in {v.lower() for v in req.vendors}:
        return False
    if req.form_factors and p.system is None and not named:
        return False  # a form factor is a kind of system to own or rent whole; bare GPUs not named or priced are none
    if req.form_factors and p.system is not None:
        tiers = {t for f in req.form_factors for t in FORM_FACTOR_TIERS[f]}
        if p.system.tier not in tiers:
            return False
    return req.max_gpus is None or p.gpus <= req.max_gpus


def build_space(catalog: Catalog, req: SearchRequest, *, input_len: int, output_len: int,
                context_for: Callable[[int | None], int] | None = None) -> Space:
    """Every cell to model; a family's memory is checked at the context its cells are planned at
    (``context_for`` of the model's own context: the load's, ``ResolvedLoad.context_for``; else the
    mean request)."""
    space = Space()
    engines = [catalog.engine(e, field_name="engines") for e in req.engines] if req.engines else list(catalog.engines)
    for name in req.quantizations or ():
        catalog.quantization(name, field_name="quantizations")
    for name in req.kv_cache_dtypes or ():
        catalog.kv_cache_dtype(name, field_name="kv_cache_dtypes")
    for model in req.models:
        spec = resolve_model(catalog, model, field_name="models")
        searched = platforms(catalog, req)
        space.platforms.update((p.id, p) for p in searched)
        named = named_build(catalog, model)  # an Ollama tag: its engine and build unless the request names others
        model_engines = [catalog.engine(named.engine)] if named and not req.engines else engines
        for accel, message in unpriced(catalog, req, searched):
            runs = [e.id for e in model_engines if _searched_on(e, accel, req)]
            if runs:
                space.unpriced[(spec.id, accel.id, ", ".join(runs), "any format")] = message
        for p in searched:
            for engine in (e for e in model_engines if _searched_on(e, p.accelerator, req)):
                for quant, label in _formats(catalog, spec, p.accelerator, engine, req, named):
                    _add_family(catalog, space, spec, p, engine, quant, label, req,
                                context_for or (lambda _: input_len + output_len))
    if not space.cells and not space.excluded and not space.refused:
        raise InvalidScenarioError(
            f"no engine of {', '.join(e.id for e in engines)} runs on the platforms searched, or loads a weight format "
            "asked for", field="engines" if req.engines else "quantizations" if req.quantizations else "systems",
            allowed="engines whose runs_on lists the accelerators' software stack (engines.yaml)")
    return space


def _searched_on(engine, accel: Accelerator, req: SearchRequest) -> bool:
    """Whether the search runs ``engine`` on ``accel``: its stack is one the engine runs on, and one
    no measurement checks only when the engine is named."""
    if engine.runs_on and accel.software not in engine.runs_on:
        return False
    return engine.runs_measured_on(accel.software) or bool(req.engines)


def _formats(catalog: Catalog, spec: ModelSpec, accel: Accelerator, engine, req: SearchRequest,
             named: NamedBuild | None = None):
    """Weight formats of the model's published builds (or the ones asked for) that the engine loads,
    labelled native or fallback on this accelerator; unasked, also the formats the engine's own tools
    make from a build the model has (``converts_to`` from ``converts_from``), labelled converted. A model
    named by an Ollama tag, unasked, takes the tag's build where the engine loads it."""
    formats = model_formats(catalog, spec, engine.id, at_load=False)  # builds, then conversions
    if named is not None and not req.quantizations and engine.loads(catalog.quantization(named.quantization)):
        formats = {named.quantization: formats.get(named.quantization, "")}
    for qid in req.quantizations or formats:
        q = catalog.quantization(qid, field_name="quantizations")
        if not engine.loads(q, accel=accel):  # natively, or through a fallback the engine has on it
            continue
        label = how_it_runs(q, accel, engine.id, routed_experts=has_routed_experts(spec))
        how = "" if req.quantizations else formats.get(qid, "")
        yield q.id, f"{label}; {how}" if how.startswith("converted") else label


def _kv_dtypes(engine, req: SearchRequest, software) -> list[str]:
    wanted = req.kv_cache_dtypes or DEFAULT_KV_DTYPES
    stored = engine.kv_dtypes_on(software)  # an Apple GPU's Metal back end has its own list
    return [k for k in wanted if k == "auto" or not stored or k in stored]


def _add_family(catalog, space: Space, spec: ModelSpec, p: Platform, engine, quant: str, label: str,
                req: SearchRequest, context_for: Callable[[int | None], int]) -> None:
    key = (spec.id, p.id, engine.id, quant)
    arch = spec.architecture
    refused = engine_refusal(catalog, engine.id, None, arch and arch.hf_architecture, spec.name,
                             catalog.quantization(quant), p.accelerator, has_routed_experts(spec),
                             formats=model_formats(catalog, spec, engine.id, at_load=False))
    if refused is not None:  # engine_support.yaml gpu_refusals: whatever the layout
        space.refused[key] = str(refused)
        return
    spec_tokens: list[tuple[int, Eagle3Draft | None]] = [(0, None)]
    if req.speculative and arch is not None and arch.mtp_layers and serving_modes().drafts_with_mtp(engine.id):
        spec_tokens.append((int(serving_modes().mtp_draft_tokens.value), None))
    if req.speculative and _takes_eagle3(catalog, engine.id):
        spec_tokens += [(int(serving_modes().eagle3_draft_tokens.value), r) for r in drafts_for(catalog, spec.id)
                        if engine.id in r.engines]  # where its publisher shows it running
    context = spec.context_tokens or (arch.max_position_embeddings if arch else None)
    max_model_len = context_for(context)
    for kv in _kv_dtypes(engine, req, p.accelerator.software):
        base = Deployment(model=spec.id, gpu=p.accelerator.id, quantization=quant, engine=engine.id, kv_cache_dtype=kv,
                          max_model_len=max_model_len)
        try:
            layouts = _layouts(catalog, base, p, engine, req)
        except InferplanError as exc:  # a replica over more systems than a network joins, or past the cells' reach
            space.excluded.setdefault(key, str(exc))
            space.unfitted.setdefault(key, base.model_copy(update={"gpus": p.gpus}))
            continue
        if not layouts:
            space.excluded.setdefault(key, f"{spec.name} does not fit in {p.gpus} {p.accelerator.name} at "
                                           f"{max_model_len:,} tokens in {quant}")
            space.unfitted.setdefault(key, base.model_copy(update={"gpus": p.gpus}))
            continue
        most = engine.max_instance_gpus(p.accelerator.software)  # one Apple GPU an instance under MLX
        for tp, pp, dp, ep, systems in (c for c in layouts if most is None or c[0] * c[1] * (1 if c[3] else c[2]) <= most):
            for k, draft in (t for t in spec_tokens if not t[0] or drafts_at_pipeline(catalog, engine.id, pp)):
                space.cells.append(Cell(spec.id, p, quant, label, kv, engine.id, tp, pp, dp, ep, k, systems, context,
                                        draft.repo if draft else None))


def _takes_eagle3(catalog, engine: str) -> bool:
    """Whether the engine's launch flags start an EAGLE-3 draft (engine_flags.yaml speculative methods) and
    the memory model knows where it holds one (its draft rule, engine_mtp_rules.yaml)."""
    flags = flags_for(catalog, engine)
    return bool(flags and flags.speculative and "eagle3" in flags.speculative.methods and mtp_rule(catalog, engine))


def _layouts(catalog, base: Deployment, p: Platform, engine, req: SearchRequest) -> list[tuple[int, int, int, bool, int]]:
    """(TP, PP, DP, expert parallel, systems per instance) of the cells to try on ``p``."""
    if p.system is not None:
        start, systems = spanning_cell(catalog, base, p.system)
        budget = p.gpus if systems == 1 else instance_gpus(start)
    else:
        start = smallest_fitting_cell(catalog, base, p.gpus)
        if start is None:
            return []
        systems, budget = 1, p.gpus
    if req.max_gpus is not None:
        budget = min(budget, req.max_gpus)
    # a tensor-parallel cell many times wider than the smallest that holds the model buys per-user
    # speed no target asks of a replica at far more cost than another replica: its widths stop at
    # WIDEST_FACTOR ×, and inside the fast-link domain
    widest = max(instance_gpus(start) * WIDEST_FACTOR, MIN_WIDEST_GPUS) if systems == 1 else budget
    out = []
    tp0, pp = start.tensor_parallel_size, start.pipeline_parallel_size
    for tp in cell_widths(tp0, min(budget, widest) // pp, doubled_up_to=max(tp0, p.domain_gpus)):
        if p.system is not None or tp * pp == p.gpus:  # N of an accelerator: the instance is the N
            out.append((tp, pp, 1, False, systems))
    if p.system is None and not out and tp0 * pp < p.gpus:
        out.append((min(p.gpus, p.domain_gpus), max(1, p.gpus // p.domain_gpus), 1, False, 1))
    if engine.expert_parallel is True and _has_experts(base, catalog) and systems == 1:
        # the widths plan tries (economics.capacity.expert_parallel_cells): a wider expert-parallel
        # cell spreads the experts thinner and leaves more memory for the KV cache, and the fast-link
        # domain and the whole system are widths the doubling misses (a 72-GPU rack)
        for width in cell_widths(2, budget, fills=(p.domain_gpus, p.gpus)):
            if p.system is not None or width == p.gpus:
                out.append((1, 1, width, True, 1))
    if systems == 1:  # vLLM's DP ranks that share the experts without expert parallelism (experts_over_dp.py)
        out += experts_over_dp_layouts(engine, _has_experts(base, catalog), narrowest_tp=tp0, pipeline=pp,
                                       budget=budget, gpus=p.gpus, domain_gpus=p.domain_gpus,
                                       whole_platform=p.system is None)
    spec = resolve_model(catalog, base.model)  # sizes the engine divides the model's widths by (memory/tp_split.py)
    quant = planned_weight_format(catalog, base, spec, engine.id)
    # the routed experts split over the MoE layers' group: TP, or TP × DP where the ranks share them
    splits = [c for c in out if tp_splits(spec, engine, c[0], expert_parallel=c[3], quant=quant,
                                          expert_tp=None if c[3] else c[0] * c[2])]
    return _launchable(catalog, splits, engine.id, p, systems, stated_release(base))


def _launchable(catalog, layouts: list[tuple[int, int, int, bool, int]], engine: str, p: Platform,
                systems: int, release: str | None = None) -> list[tuple[int, int, int, bool, int]]:
    """The layouts the engine's launcher starts at ``release`` (None: the newest) (``EngineFlags.launches_split``:
    a size above 1 needs its flag at that release, as ``fit`` and ``perf`` refuse it, so SGLang before 0.4.6.post2 has no
    pipeline stages, before 0.4.1 no expert parallelism and before 0.3.6 no attention data parallelism; llama.cpp's one ``--split-mode`` is row or layer, so TP × PP on the same GPUs is no layout it
    runs); one it does not start gives way to the same GPUs split one way — all pipeline stages, or all tensor parallel
    inside the fast-link domain — where the launcher starts that. An engine that spreads an instance over
    hosts by layers only (llama.cpp's RPC) keeps its tensor-parallel ranks on one host (a rack's compute tray), and
    one with no multi-host launch inferplan writes (no ``multi_host`` entry: TensorRT-LLM) its whole instance, as
    ``deploy``'s one-host command holds no more (``deploy.nodes.hosts_launch``). Bare GPUs rented as a set an NVLink
    domain spans (``RentalPrice.nvlink_spans_rental``) are hosts of a rented instance's GPUs each (a GB200 tray)."""
    flags = flags_for(catalog, engine)
    if flags is None:
        return layouts
    tray = p.system.os_host_gpus if p.system is not None else None
    host = int(tray.value) if tray is not None else p.gpus  # the GPUs one OS host sees (a rack's compute tray)
    if p.system is None:  # bare GPUs rented as a set one NVLink domain spans: each rented instance is one host
        host = min([q.gpus_per_instance for q in catalog.rental_prices
                    if q.accelerator == p.accelerator.id and q.nvlink_spans_rental], default=host)
    layers_only = bool(flags.multi_host) and all(m.layers_only for m in flags.multi_host)
    one_host = not flags.multi_host

    out: list[tuple[int, int, int, bool, int]] = []
    for tp, pp, dp, ep, n in layouts:
        def starts(t: int, q: int) -> bool:  # llama.cpp's RPC spreads pipeline stages over hosts, never TP ranks
            return (flags.launches_split(t, q, release, dp, ep) and not (layers_only and t > host)
                    and not (one_host and t * q > host))
        width = tp * pp
        tries = [(tp, pp)] if starts(tp, pp) else [(1, width), *([(width, 1)] if width <= p.domain_gpus
                                                                  and systems == 1 else [])]
        out += [(t, q, dp, ep, n) for t, q in tries if starts(t, q)]
    return list(dict.fromkeys(out))


def _has_experts(base: Deployment, catalog) -> bool:
    return has_experts(resolve_model(catalog, base.model))


def check_names(catalog: Catalog, req: SearchRequest) -> SearchRequest:
    """``req`` with every id it names checked (the error names the request field and index) and
    resolved, each once (``names.resolved_request``)."""
    return resolved_request(catalog, req)
