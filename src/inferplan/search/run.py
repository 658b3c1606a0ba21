"""``search(request)``: the cheapest deployments that meet a service target, ranked.

Steps: resolve the load; build the space of cells (``space.py``); model each cell once
(``evaluate.model_cell``); evaluate its candidates as arrays (``evaluate``); keep each cell's best
candidate that meets every target and cap; rank those by the objective, each re-checked as it comes
up (``ranking.py``); explain every family with none (``reasons.py``); name the cheaper deployments
that miss a service target by little (``near_miss.py``); and trace the front of cost against tokens/s
per user.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.ollama import tag_note
from inferplan.economics import money
from inferplan.economics.plan_inputs import api_comparison_notes
from inferplan.economics.rental import RentQuote, rented_note
from inferplan.economics.workloads import WorkloadProfile
from inferplan.errors import InferplanError
from inferplan.performance.context import ServingContext
from inferplan.performance.profiles import own_runs
from inferplan.search import evaluate
from inferplan.search.answer import summarize
from inferplan.search.arrivals import check_burst_spells
from inferplan.search.budget import CHECK_STAGE, MODEL_STAGE, Budget, Progress
from inferplan.search.defaults import search_defaults
from inferplan.search.equivalent import equivalence_note
from inferplan.search.instance_limit import InstanceLimit
from inferplan.search.near_miss import NearMisses
from inferplan.search.prefix_cache import prefix_cache_text
from inferplan.search.load import ResolvedLoad, resolve_load
from inferplan.search.pricing import platform_label, priced_systems, pricing_notes, unit_costs
from inferplan.search.reasons import (FamilyStats, closest_first, explain, memory_shortfall, slack, target_mask,
                                      targets_text)
from inferplan.search.ranking import Pick, top_picks
from inferplan.search.sim_check import CHECK_REQUESTS, MAX_CHECKS, SimulatedCheck, pick_deployment
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.trace import trace_label
from inferplan.search.result import (ApiAlternative, Deployed, Infeasible, LoadSummary, ParetoPoint, PoolLayout,
                                     SearchResult)
from inferplan.search.names import model_cards
from inferplan.search.space import Cell, Space, build_space, check_names

VERIFY_TRIES = 8  # a cell's best candidates re-checked in turn before it is given up


def model_cells(catalog: Catalog, space: Space, rl: ResolvedLoad, *, disaggregate: bool,
                progress: Progress | None = None, gpu_prices: dict[str, float] | None = None,
                ) -> tuple[list[evaluate.CellModel], dict[tuple, list[str]]]:
    """Every cell of the space with its service curves and unit costs (``gpu_prices``: the user's price of
    one GPU, by accelerator id, for bare platforms), and per family the reasons the cells that could not be
    modelled give."""
    models, errors, costs, curves = [], defaultdict(list), {}, {}
    for i, cell in enumerate(space.cells):
        if progress:
            progress(i, len(space.cells), MODEL_STAGE)
        key = (cell.platform.id, cell.model)
        if key not in costs:
            price = (gpu_prices or {}).get(cell.platform.accelerator.id) if cell.platform.system is None else None
            costs[key] = unit_costs(catalog, cell.platform, cell.model, price)
        try:
            models.append(evaluate.model_cell(catalog, cell, rl, costs[key], disaggregate=disaggregate, curves=curves))
        except InferplanError as exc:
            errors[cell.family].append(str(exc))
    if progress:
        progress(len(space.cells), len(space.cells), MODEL_STAGE)
    return models, errors


def search(req: SearchRequest, catalog: Catalog | None = None, *, progress: Progress | None = None,
           budget: Budget | None = None) -> SearchResult:
    start = time.perf_counter()
    budget = budget or Budget()
    progress = budget.watching(progress)  # checked between cells: a deadline, or a client gone
    catalog = catalog or load_catalog()
    asked = req
    if req.objective == "capex" and req.pricing == "both":  # every rental's capex is 0: it would rank first
        req = req.model_copy(update={"pricing": "buy"})
    req = check_names(catalog, req)  # the names resolved, each id once
    cards = model_cards(catalog, req)  # each name's model card id: API prices are the card's
    rl = resolve_load(catalog, req)
    check_burst_spells(rl.load, CHECK_REQUESTS)  # the picks' simulations draw these arrivals
    targets = effective_targets(req.targets, rl)
    stats: dict[tuple, FamilyStats] = defaultdict(FamilyStats)
    picks, fronts, candidates, limit = [], [], 0, InstanceLimit()
    near = NearMisses(targets, margin := search_defaults().near_miss_margin.value)
    space = build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len, context_for=rl.context_for)
    models, errors = model_cells(catalog, space, rl, disaggregate=req.disaggregated, progress=progress,
                                 gpu_prices=req.gpu_price_usd)
    for family, messages in errors.items():
        stats[family].errors.extend(messages)
    for k, (cm, grids) in enumerate(zip(models, evaluate.evaluate_cells(models, rl, pricing=req.pricing))):
        budget.check(k, len(models), "judging the cells")
        for grid in grids:
            grid = limit.keep(cm.cell.family, grid)
            candidates += len(grid)
            pick, front = _judge(cm, grid, rl, targets, req, stats[cm.cell.family], near)
            if pick is not None:
                picks.append(pick)
            fronts.extend(front)
    top = top_picks(catalog, picks, rl, targets, req.top, progress,
                    check=lambda: budget.check(stage=CHECK_STAGE))  # within each pick's simulation too
    results = tuple(_deployed(catalog, rank, p, rl, targets, req.models) for rank, p in enumerate(top, start=1))
    infeasible = [explain(f, s, targets, max_gpus=req.max_gpus, max_capex_usd=req.max_capex_usd,
                          max_power_w=req.max_power_w, pricing=req.pricing, bare=(bare := _bare(space, f[1])),
                          bare_in_systems=bare is not None and bool(priced_systems(catalog, bare)))
                  for f, s in stats.items() if not s.feasible]
    infeasible = limit.explained(infeasible)
    infeasible += [Infeasible(model=f[0], platform=f[1], engine=f[2], quantization=f[3], reason="memory", message=m,
                              shortfall=memory_shortfall(catalog, space.unfitted.get(f)))
                   for f, m in space.excluded.items() if f not in stats]
    infeasible += [Infeasible(model=f[0], platform=f[1], engine=f[2], quantization=f[3], reason="price", message=m)
                   for f, m in space.unpriced.items()]
    infeasible += [Infeasible(model=f[0], platform=f[1], engine=f[2], quantization=f[3], reason="engine", message=m)
                   for f, m in space.refused.items()]
    if not results and not req.quantizations:
        infeasible = _with_smaller_formats(catalog, infeasible, space)
    infeasible = sorted(infeasible, key=closest_first)
    return SearchResult(
        objective=req.objective, targets=targets, load=_summary(rl, req), results=results,
        infeasible=tuple(infeasible),
        infeasible_summary=summarize(catalog, req, results, tuple(infeasible), space.platforms, margin,
                                     priced=any(cm.costs.priced_on(req.pricing) for cm in models)),
        near_misses=near.results(catalog, rl, top, req.top), near_miss_margin=margin,
        pareto=_pareto(fronts), api=_api(catalog, cards, rl), candidates=candidates, cells=len(space.cells),
        elapsed_s=time.perf_counter() - start,
        notes=(*_notes(asked, targets, rl), *(f"{n}, where the search names no engine or quantization" for m in req.models
                 if (n := tag_note(catalog, m))),
               *(n for m, card in cards.items() for n in api_comparison_notes(catalog, card, m))))


def _bare(space: Space, platform: str) -> str | None:
    """The accelerator of a platform of N bare GPUs (None: a system)."""
    p = space.platforms.get(platform)
    return p.accelerator.id if p is not None and p.system is None else None


HINTED_FAMILIES = 12  # families that do not fit, nothing found, checked for a smaller format that would


def _with_smaller_formats(catalog: Catalog, infeasible: list[Infeasible], space: Space) -> list[Infeasible]:
    """When nothing meets the targets, the first families that do not fit in any of the model's own
    builds say the smaller format ``fit`` would suggest (``memory.suggest.smaller_weights``)."""
    from inferplan.memory.suggest import smaller_weights

    out, checked = [], 0
    for x in infeasible:
        d = space.unfitted.get((x.model, x.platform, x.engine, x.quantization))
        if d is not None and checked < HINTED_FAMILIES:
            checked += 1
            hint = smaller_weights(d, catalog)
            if hint is not None:
                x = x.model_copy(update={"fits_in_quantization": hint.changes["quantization"],
                                         "fits_at_max_model_len": hint.changes.get("max_model_len")})
        out.append(x)
    return out


def effective_targets(t: Targets, rl: ResolvedLoad) -> Targets:
    """The stated targets; with users of a workload preset and no speed target stated, the preset's
    per-user speed (as the Users + ROI simulator holds each user to it); with no TTFT target and no
    utilisation ceiling stated, the default ceiling (``utilisation_assumed``)."""
    if rl.workload is not None and t.tpot_p95_s is None and t.min_output_tokens_per_s_per_user is None:
        t = t.model_copy(update={"min_output_tokens_per_s_per_user": rl.workload.target_output_tokens_per_s})
    if utilisation_assumed(t):
        t = t.model_copy(update={"max_utilisation": search_defaults().max_utilisation.value})
    return t


def utilisation_assumed(stated: Targets) -> bool:
    """Whether the default utilisation ceiling applies: no TTFT target and no ceiling stated (a queue
    run near full answers its first tokens minutes late, and nothing else would refuse it)."""
    return stated.max_utilisation is None and all(
        getattr(stated, k) is None for k in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s"))


def objective_values(req: SearchRequest, monthly, capex, paid, power) -> np.ndarray:
    value = {"usd-per-mtok": monthly, "monthly": monthly, "capex": capex, "gpus": paid,
             "power": power}[req.objective]
    return np.where(np.isnan(value), np.inf, value)  # no figure (a platform's power): ranked last


def _judge(cm, grid, rl, targets, req, fam: FamilyStats, near: NearMisses):
    """The cell's best candidate that meets every target and cap, and its share of the front; its
    candidates that miss a service target by little are offered to ``near``."""
    monthly, renting, capex = evaluate.route(grid, req.max_capex_usd)
    paid, power = grid.paid(renting), grid.power(renting)
    met = grid.stable & target_mask(grid, targets)
    capped = grid.stable & np.isfinite(monthly)  # priced, and within every cap the request set
    if req.max_gpus is not None:
        capped &= paid <= req.max_gpus
    if req.max_power_w is not None:
        capped &= power <= req.max_power_w
    if req.max_capex_usd is not None and req.pricing == "buy":
        capped &= capex <= req.max_capex_usd
    feasible = met & capped
    fam.add(grid, met, np.fmin(grid.buy_usd_per_month, grid.rent_usd_per_month), feasible, paid, power)
    if req.pricing != "buy" and not grid.rent_quotes and cm.costs.listings:
        p = cm.cell.platform
        fam.note_unrentable(cm.cell.gpus, cm.costs.listings, p.accelerator.id, p.system, p.domain_gpus)
    value = objective_values(req, monthly, capex, paid, power)
    slow = slow_request_s(grid, rl)
    near.add(cm, grid, capped, value, monthly, renting, capex, paid, slow)
    if not feasible.any():
        return None, []
    idx = np.flatnonzero(feasible)
    ranked = idx[np.lexsort((-grid.tokens_per_s_per_user[idx], slow[idx], paid[idx], monthly[idx], value[idx]))]
    mtok = monthly[idx] / (rl.monthly_tokens / 1e6)
    front = _front(mtok, grid.tokens_per_s_per_user[idx])
    points = [(float(mtok[j]), float(grid.tokens_per_s_per_user[idx[j]]), cm, int(grid.gpus[idx[j]]), bool(grid.prefill[idx[j]] > 0),
               int(paid[idx[j]]), None if renting[idx[j]] else int(grid.units[idx[j]]),
               _rents_whole_racks(cm.cell.platform, grid.rent_quote(idx[j]) if renting[idx[j]] else None)) for j in front]
    keys = [(float(value[i]), float(monthly[i]), float(paid[i]), float(slow[i]), -float(grid.tokens_per_s_per_user[i]))
            for i in ranked[:VERIFY_TRIES]]
    return Pick(keys, cm, grid, [int(i) for i in ranked[:VERIFY_TRIES]], monthly, renting, capex), points


def slow_request_s(grid, rl: ResolvedLoad) -> np.ndarray:
    """How long a request takes that starts at the TTFT p99 and steps at the TPOT p95: among
    deployments that cost the same, the ranking prefers the one where it is shortest (a running cap
    cut to gain a little TPOT can cost whole seconds of TTFT at the tail), then the faster per user."""
    return grid.ttft_p99_s + rl.output_len * grid.tpot_p95_s


def _front(cost: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both cost (lower) and speed (higher)."""
    order = np.lexsort((-speed, cost))
    best = np.maximum.accumulate(speed[order])
    keep = np.concatenate([[True], speed[order][1:] > best[:-1]])
    return order[keep]


FRONT_MIN_SPEED_GAIN = 0.01  # a dearer point on the front buys at least 1 % more tokens/s per user


def _pareto(points: list) -> tuple[ParetoPoint, ...]:
    """The front over every cell's points: cheapest first, each price's fastest point, and a dearer
    point only where it is at least ``FRONT_MIN_SPEED_GAIN`` faster per user than the last one kept
    (paying twice as much for 0.3 % more speed is no trade-off worth a place on it)."""
    if not points:
        return ()
    cost = np.array([p[0] for p in points])
    speed = np.array([p[1] for p in points])
    kept: list[int] = []
    for j in _front(cost, speed):
        if not kept or speed[j] >= speed[kept[-1]] * (1 + FRONT_MIN_SPEED_GAIN):
            kept.append(int(j))
    return tuple(_point(points[j]) for j in kept)


def _point(point: tuple) -> ParetoPoint:
    usd_per_mtok, speed, cm, gpus, disaggregated, paid, units, racks_rented = point
    p = cm.cell.platform
    return ParetoPoint(usd_per_mtok=usd_per_mtok, output_tokens_per_s_per_user=speed,
                       platform=platform_label(p, paid, units is None),
                       engine=cm.cell.engine, quantization=cm.cell.quantization, gpus=gpus, gpus_paid=paid,
                       systems=units if p.system else None,
                       whole_rack=bool(p.system and p.system.tier == "rack" and (units is not None or racks_rented)),
                       disaggregated=disaggregated)


def _rents_whole_racks(p, q: RentQuote | None) -> bool:
    """Renting ``q`` rents the platform's whole racks: sets one NVLink domain spans, as wide as the system."""
    return bool(q is not None and p.system is not None and q.nvlink_spans and q.set_gpus == p.gpus)


def _deployed(catalog: Catalog, rank: int, pick: Pick, rl: ResolvedLoad, targets: Targets,
              names: tuple[str, ...] = ()) -> Deployed:
    """A pick as its result; ``names``: the models as the search was asked for them (an Ollama tag's build is
    launched as the tag, with Ollama's commands)."""
    from inferplan.search.deploying import launch_text, named_by_tag, scenario_dict, simulate_query

    cm, g, i = pick.cm, pick.grid, pick.index
    monthly, renting, capex = float(pick.monthly[i]), bool(pick.renting[i]), float(pick.capex[i])
    cell: Cell = cm.cell
    p = cell.platform
    disagg = bool(g.prefill[i] > 0)
    pre = g.prefill_model
    replicas = int(g.decode[i]) if disagg else int(g.replicas[i])  # the decode pool's, beside a prefill pool
    values = {a: float(getattr(g, a)[i]) for a in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s",
                                                   "tokens_per_s_per_user", "p95_tokens_per_s_per_user")}
    # the cap is the instance's (its data-parallel ranks summed, as its serving curve runs them); a
    # deployment states each rank's
    d = pick_deployment(cell, int(g.cap[i]), rl)
    context, per_rank = d.max_model_len, d.max_num_seqs
    paid, watts = int(g.paid(pick.renting)[i]), g.power(pick.renting)[i]
    rented = int(g.rent_units[i]) if renting else None
    notes = [n for n in cm.costs.notes if not (renting and n.startswith("capex: "))] + evaluate.draft_notes(catalog, cell)
    q = g.rent_quote(i) if renting else None
    if q is not None:
        notes.append(rented_note(q, rented))
    longer = rl.share_longer_than(context) if context < rl.max_model_len else 0.0  # the model's context cut it
    if cell.quantization_label != "native":
        notes.append(f"{cell.quantization} on {p.accelerator.name}: {cell.quantization_label}")
    launch = launch_text(catalog, named_by_tag(catalog, d, names), cell, replicas=int(g.replicas[i]), decode_instances=int(g.decode[i]),
                         prefill=(evaluate.cell_deployment(pre.cell, rl), pre.cell,
                                  int(g.prefill[i])) if disagg else None, host_gpus=q.instance_gpus if q else None)
    return Deployed(
        rank=rank, model=cell.model, system=p.system.id if p.system else None, accelerator=p.accelerator.id,
        platform=platform_label(p, paid, renting), gpus=int(g.gpus[i]), gpus_paid=paid,
        gpus_per_instance=cell.gpus,
        whole_rack=bool(p.system and p.system.tier == "rack" and (not renting or _rents_whole_racks(p, q))),
        systems=int(g.units[i]) if p.system and not renting else None, quantization=cell.quantization,
        rented_instances=rented, rented_instance_gpus=q.instance_gpus if q else None, rental=q.rental if q else None,
        rental_basis=q.basis if q else None, price_basis=None if renting else cm.costs.price_basis,
        quantization_label=cell.quantization_label, kv_cache_dtype=cell.kv_cache_dtype, engine=cell.engine,
        tensor_parallel_size=cell.tensor_parallel_size, pipeline_parallel_size=cell.pipeline_parallel_size,
        data_parallel_size=cell.data_parallel_size, expert_parallel=cell.expert_parallel,
        speculative_tokens=cell.speculative_tokens, speculative_method=cell.speculative_method,
        draft_model=cell.draft_model, replicas=replicas, max_num_seqs=int(g.cap[i]),
        max_num_seqs_per_rank=per_rank,
        max_model_len=context, longer_request_share=longer,
        context_at_mean_request=not rl.spread_sized and rl.load.trace is None, disaggregated=disagg, prefill_instances=int(g.prefill[i]) if disagg else None,
        decode_instances=int(g.decode[i]) if disagg else None,
        pools=(_pool("prefill", pre.cell, int(g.prefill[i])), _pool("decode", cell, int(g.decode[i]))) if disagg else (),
        kv_transfer_s=float(g.kv_transfer_s[i]) if disagg else None,
        kv_transfer_link=evaluate.link_name(cm, int(g.gpus[i])) if disagg else None,
        usd_per_mtok=monthly / (rl.monthly_tokens / 1e6), monthly_usd=monthly, capex_usd=capex,
        power_w=float(watts) if np.isfinite(watts) else None, rent_or_buy="rent" if renting else "buy",
        ttft_p50_s=values["ttft_p50_s"], ttft_p95_s=values["ttft_p95_s"], ttft_p99_s=values["ttft_p99_s"],
        tpot_p95_s=values["tpot_p95_s"], e2e_p95_s=values["e2e_p95_s"],
        output_tokens_per_s_per_user=values["tokens_per_s_per_user"], utilisation=float(g.utilisation[i]),
        users=rl.users, requests_per_s=rl.request_rate_per_s,
        binding=slack(values, targets, float(g.utilisation[i])),
        deploy=launch.text, scenario=scenario_dict(cell, rl, targets, replicas=replicas,
                                               rented=renting, speed_per_user=values["tokens_per_s_per_user"],
                                               max_num_seqs=per_rank,
                                               prefill=(pre.cell, int(g.prefill[i])) if disagg else None,
                                               instance_gpus=q.host_gpus if q else None,
                                               quote_usd=cm.costs.quote_usd),
        simulation=pick.check,
        simulate=simulate_query(d, cell, rl, instances=replicas,
                                prefill=(pre.cell, int(g.prefill[i])) if disagg else None),
        equivalent_quantizations=tuple(pick.alike),
        notes=tuple(dict.fromkeys([*notes, *_own_runs(catalog, cell, rl), *launch.notes,
                                   pick.unsimulated or _check_note(pick.check, rl.load.arrival == "closed", values),
                                   *([equivalence_note(tuple(pick.alike))] if pick.alike else [])])))


def _own_runs(catalog: Catalog, cell: Cell, rl: ResolvedLoad) -> tuple[str, ...]:
    """The user's stored runs of the cell's instance, as ranked: the one its speed comes from, or why each is not
    used (``profiles.own_runs``); nothing without stored runs (the shipped profiles state no launch)."""
    if all(p.launch is None for p in catalog.serving_profiles):
        return ()
    d = evaluate.cell_deployment(cell, rl)
    return own_runs(ServingContext(catalog, d, evaluate.workload(cell, rl)), d)


def _check_note(check: SimulatedCheck | None, closed: bool, approximated: dict[str, float]) -> str:
    """How the pick was checked; a simulated pick's percentiles are the simulation's (``simulation``),
    so its note gives the queueing approximation's beside them (the top-level ``ttft_p50_s`` …)."""
    if check is not None:
        a = approximated
        return (f"checked by a simulation of {check.requests:,} requests (seed {check.seed}); the queueing "
                f"approximation, which ranked it, gives TTFT {a['ttft_p50_s'] * 1e3:,.0f} / {a['ttft_p95_s'] * 1e3:,.0f}"
                f" / {a['ttft_p99_s'] * 1e3:,.0f} ms (p50/95/99), TPOT p95 {a['tpot_p95_s'] * 1e3:,.1f} ms")
    if closed:
        return "a closed loop: checked by the queueing approximation only"
    return f"not simulated: the search's {MAX_CHECKS} simulations were spent on higher-ranked candidates"


def _pool(role: str, cell: Cell, instances: int) -> PoolLayout:
    return PoolLayout(role=role, instances=instances, gpus_per_instance=cell.gpus,
                      tensor_parallel_size=cell.tensor_parallel_size, pipeline_parallel_size=cell.pipeline_parallel_size,
                      data_parallel_size=cell.data_parallel_size, expert_parallel=cell.expert_parallel,
                      speculative_tokens=cell.speculative_tokens, speculative_method=cell.speculative_method,
                      draft_model=cell.draft_model)


def _summary(rl: ResolvedLoad, req: SearchRequest) -> LoadSummary:
    return LoadSummary(request_rate_per_s=rl.request_rate_per_s, input_len=rl.input_len, output_len=rl.output_len,
                       monthly_tokens=rl.monthly_tokens, users=rl.users, workload=rl.workload.preset if rl.workload else None,
                       trace=trace_label(req.trace),
                       arrival=rl.load.arrival, peak_to_average=rl.load.peak_to_average,
                       burst_period_s=rl.load.burst_period_s if rl.load.arrival == "bursty" else None,
                       input_tokens_scv=rl.load.input_tokens_scv, output_tokens_scv=rl.load.output_tokens_scv,
                       lengths=rl.load.lengths, longest_request_tokens=rl.max_model_len,
                       prefix_cache_hit_rate=rl.cache_hit_rate)


def _api(catalog: Catalog, cards: dict[str, str], rl: ResolvedLoad) -> tuple[ApiAlternative, ...]:
    """The same models at an API (``cards``: each name searched and its model card id), priced on the load's
    month of tokens (``money.api_cost_per_user_usd`` with the whole load as one user)."""
    whole = rl.workload or WorkloadProfile(
        preset="request-rate", name="stated request rate", monthly_tokens=rl.monthly_tokens,
        output_share=rl.output_len / (rl.input_len + rl.output_len), cache_hit_rate=0.0, peak_to_average=1.0,
        target_output_tokens_per_s=1.0, input_tokens_per_request=rl.input_len, output_tokens_per_request=rl.output_len)
    users = rl.users or 1
    out = []
    for price in catalog.api_prices:
        if price.model in cards.values() and not price.superseded:  # a list price no longer in force compares with nothing
            monthly = money.api_cost_per_user_usd(whole, price) * users
            out.append(ApiAlternative(id=price.id, provider=price.provider, monthly_usd=monthly,
                                      usd_per_mtok=monthly / (rl.monthly_tokens / 1e6)))
    return tuple(sorted(out, key=lambda a: a.monthly_usd))


def _notes(req: SearchRequest, targets: Targets, rl: ResolvedLoad) -> tuple[str, ...]:
    assumed = search_defaults().max_utilisation.reason if utilisation_assumed(req.targets) else None
    notes = [*targets_text(targets, assumed), *pricing_notes(req.objective, req.pricing, req.max_capex_usd)]
    if not rl.spread_sized and rl.load.trace is None:
        notes.append(f"every request is planned at the mean lengths ({rl.input_len:,} + {rl.output_len:,} tokens), so each "
                     f"pick's context is {rl.max_model_len:,} tokens and its engine refuses a longer request; a spread "
                     "of prompt and output lengths plans a longer context")
    cache = prefix_cache_text(rl.cache_hit_rate, preset=rl.workload.preset if rl.workload else None,
                              stated=req.prefix_cache_hit_rate is not None)
    if cache:
        notes.append(cache)
    if targets.min_output_tokens_per_s_per_user != req.targets.min_output_tokens_per_s_per_user:
        notes.append(f"speed target from the workload preset: at least {targets.min_output_tokens_per_s_per_user:g} "
                     "output tokens/s per user")
    return tuple(notes)
