"""Evaluating a cell's candidates as numpy arrays.

The expensive work — the memory fit and the serving curve of one engine instance
(``queueing.service_curve`` over the performance model) — runs once per cell. Every candidate on
that cell (replicas × running-sequence cap, or — when prefill and decode run in separate pools —
prefill instances of any layout of the same family × decode instances of this cell × cap) is then a
row of arrays: its tail latency from the vectorised
queueing approximation and its price from the platform's unit costs. No Python loop per candidate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.deploy.nodes import over_hosts_refusal
from inferplan.economics.pools import instance_units
from inferplan.economics.pools import pool_units as economic_pool_units, prefill_instances_for
from inferplan.memory.extensible import pool_sized
from inferplan.memory.fit import plan_memory
from inferplan.performance.drafts import Acceptance, resolve_acceptance
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search import handover
from inferplan.search.bursts import spell_waits
from inferplan.search.load import ResolvedLoad
from inferplan.search.mgc import mgc_wait
from inferplan.search.queueing import approximate_many
from inferplan.search.tail_types import CurveTable
from inferplan.search.wait_quantiles import mixture_wait_quantile
from inferplan.search.service import ServiceCurve, service_curve
from inferplan.search.pricing import RentQuote, UnitCosts
from inferplan.search.serving_modes import serving_modes
from inferplan.search.space import Cell

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
REPLICA_STEPS = np.arange(8)  # replicas above the fewest that carry the load …
REPLICA_FACTORS = np.array([1.5, 2.0, 3.0, 4.0])  # … and multiples of it, for latency-bound targets
POOL_STEPS = np.arange(6)
POOL_FACTORS = np.array([2.0, 3.0])
CURVE_POINTS = 8  # running batches a cell's serving curve is read at (log-spaced, 1..slots)
VERIFY_NODES = 64  # length nodes of the single-deployment check a pick passes (``queueing.approximate``'s)


def length_nodes(rl: ResolvedLoad) -> int:
    """Length nodes of the grid's approximation: one is exact when every request has the mean
    lengths (no spread to integrate over), a few otherwise (a trace)."""
    return 1 if rl.load.input_tokens_scv == 0 and rl.load.output_tokens_scv == 0 else 8


@dataclass(frozen=True)
class CellModel:
    """The per-cell work, done once: the serving curve, one request's KV-cache bytes, the unit
    costs, and whether the engine runs separate prefill and decode pools (with the curves of a pool's
    instances where the engine sizes them otherwise: ``pool_sized``)."""

    cell: Cell
    curve: ServiceCurve
    table: CurveTable
    disaggregates: bool
    kv_bytes_per_request: float
    costs: UnitCosts
    pool_curves: tuple[tuple[str, ServiceCurve], ...] = ()  # (role, curve) of a pool's instance, where not ``curve``

    def pool_curve(self, role: str) -> ServiceCurve:
        """The serving curve of the cell's instance in a pool of ``role`` (prefill or decode)."""
        return dict(self.pool_curves).get(role, self.curve)

    def decode_tpot_s(self, batch: np.ndarray) -> np.ndarray:
        """A decode pool's TPOT at ``batch``: the decode-only step (no prompt rides it) per token advanced."""
        c = self.pool_curve("decode")
        return np.interp(batch, c.concurrency, c.decode_step_s) / c.tokens_per_step


def workload(cell: Cell, rl: ResolvedLoad) -> Workload:
    """The request shape the speed model takes (the load's mean lengths, the cell's drafts)."""
    drafts = {"speculative_tokens": cell.speculative_tokens} if cell.speculative_tokens else {}  # the rate as perf resolves it
    return Workload(input_len=rl.input_len, output_len=rl.output_len, prefix_cache_hit_rate=rl.cache_hit_rate, **drafts)


def draft_acceptance(catalog: Catalog, cell: Cell) -> Acceptance:
    """The acceptance rate per draft token the cell's drafts are priced at, as every estimate resolves it
    (``performance.drafts.resolve_acceptance``: a catalogued EAGLE-3 draft's published one, else the default)."""
    return resolve_acceptance(catalog, cell.deployment(None), None)


def draft_notes(catalog: Catalog, cell: Cell) -> list[str]:
    """What a pick that drafts is priced at: the acceptance rate and where it comes from (a published
    figure, or assumed because the draft publishes none)."""
    return [f"drafts priced at {draft_acceptance(catalog, cell).text}"] if cell.speculative_tokens else []


def cell_deployment(cell: Cell, rl: ResolvedLoad) -> Deployment:
    """The cell's engine instance at the context the load plans it at (``ResolvedLoad.context_for``)."""
    return cell.deployment(rl.context_for(cell.context_tokens))


def model_cell(catalog: Catalog, cell: Cell, rl: ResolvedLoad, costs: UnitCosts, *, disaggregate: bool,
               curves: dict | None = None) -> CellModel:
    """Model one cell; ``curves`` caches serving curves by deployment (systems built on the same
    accelerator share them)."""
    d = cell_deployment(cell, rl)
    curve = _curve(catalog, cell, rl, d, curves)
    kv = plan_memory(d, catalog).result.kv_cache_bytes_per_token * rl.input_len
    # separate pools run replicas or expert-parallel instances: a prefill instance's data-parallel ranks are
    # expert parallel (deploy/pools_plan.py), and ranks sharing the experts without it are no decode pool planned;
    # an instance wider than one host is in a pool where deploy writes its command per host (deploy.nodes), and one
    # of pipeline stages where the engine's KV connector hands them over (DisaggregationRule.pipeline)
    pools = (disaggregate and serving_modes().disaggregates(cell.engine) and not cell.experts_over_data_parallel
             and over_hosts_refusal(d, catalog) is None and _hands_over(catalog, d))
    sized = {role: pool_sized(catalog, d, role) for role in ("prefill", "decode")} if pools else {}
    pool_curves = tuple((role, _curve(catalog, cell, rl, p, curves)) for role, p in sized.items() if p != d)
    return CellModel(cell, curve, CurveTable.of([curve]), pools, kv, costs, pool_curves)


def _hands_over(catalog: Catalog, d: Deployment) -> bool:
    """Whether the engine's KV connector hands over the cache of ``d``'s pipeline stages (``DisaggregationRule.pipeline``)."""
    flags = flags_for(catalog, d.engine)
    rule = flags.disaggregation if flags is not None else None
    return rule is not None and rule.pipeline_refusal(d.pipeline_parallel_size) is None


def _curve(catalog: Catalog, cell: Cell, rl: ResolvedLoad, d: Deployment, curves: dict | None) -> ServiceCurve:
    """The serving curve of ``d``, the instance of ``cell``, from ``curves`` where it is there."""
    key = (d.model_dump_json(), cell.speculative_tokens)
    if curves is not None and key in curves:
        return curves[key]
    curve = service_curve(d, workload(cell, rl), catalog, points=CURVE_POINTS)
    if curves is not None:
        curves[key] = curve
    return curve


@dataclass
class Grid:
    """One row per candidate of a cell."""

    replicas: np.ndarray  # instances in all (prefill + decode when disaggregated)
    cap: np.ndarray  # running-sequence cap per (decode) instance
    prefill: np.ndarray  # prefill instances (0: aggregated)
    decode: np.ndarray
    ttft_p50_s: np.ndarray
    ttft_p95_s: np.ndarray
    ttft_p99_s: np.ndarray
    tpot_p95_s: np.ndarray
    e2e_p95_s: np.ndarray
    utilisation: np.ndarray
    stable: np.ndarray
    tokens_per_s_per_user: np.ndarray
    kv_transfer_s: np.ndarray
    gpus: np.ndarray  # GPUs the instances run on
    units: np.ndarray
    buy_usd_per_month: np.ndarray  # nan: not priced to buy (no price, or renting asked for)
    rent_usd_per_month: np.ndarray  # nan: not priced to rent (no listing hosts an instance, or buying asked for)
    capex_usd: np.ndarray  # nan: no purchase price
    power_w: np.ndarray  # the systems (or N-GPU units) bought; nan: no power figure
    prefill_model: "CellModel | None" = None  # separate pools: the prefill instances' own layout (the cell's: decode)
    unit_gpus: int = 1  # GPUs in one platform unit (a system, or the N of an accelerator)
    rent_units: np.ndarray | None = None  # rented instances (None: not priced to rent)
    rent_choice: np.ndarray | None = None  # which of ``rent_quotes`` each candidate rents
    rent_quotes: tuple[RentQuote, ...] = ()  # per instance size that hosts the engine instances: its median price
    rent_power_w_per_gpu: float = float("nan")  # one rented GPU (UnitCosts.rent_power_w_per_gpu; nan: no TDP)

    @property
    def gpus_paid(self) -> np.ndarray:
        """GPUs bought: every GPU of the whole systems taken (``units`` × the platform unit's GPUs)."""
        return self.units * self.unit_gpus

    def paid(self, renting: np.ndarray) -> np.ndarray:
        """GPUs paid for on each candidate's route: bought (``gpus_paid``), or every GPU of the whole
        instances rented; at least ``gpus``."""
        if self.rent_units is None:
            return self.gpus_paid
        sizes = np.array([q.instance_gpus for q in self.rent_quotes])[self.rent_choice]
        return np.where(renting, self.rent_units * sizes, self.gpus_paid)

    def power(self, renting: np.ndarray) -> np.ndarray:
        """Watts each candidate draws on its route: the systems bought (``power_w``), or every GPU of the
        instances rented (``paid``) at a rented GPU's rating; nan: no power figure."""
        if self.rent_units is None:
            return self.power_w
        return np.where(renting, self.paid(renting) * self.rent_power_w_per_gpu, self.power_w)

    def rent_quote(self, i: int) -> RentQuote | None:
        """The instance size and median price candidate ``i`` is rented at (None: not priced to rent)."""
        return self.rent_quotes[int(self.rent_choice[i])] if self.rent_quotes else None

    def __len__(self) -> int:
        return len(self.replicas)

    @property
    def p95_tokens_per_s_per_user(self) -> np.ndarray:
        """Output tokens/s per user at the 95th-percentile TPOT (what a speed floor is checked on)."""
        return 1 / self.tpot_p95_s


def _caps(curve: ServiceCurve) -> np.ndarray:
    return np.unique(np.clip(np.round(curve.concurrency), 1, curve.slots)).astype(float)


def _most_per_instance(cm: CellModel, caps: np.ndarray, *, prefill: bool = True) -> np.ndarray:
    """Requests/s one instance completes with ``caps`` running (Little's law at the cap)."""
    c = cm.curve
    if not prefill:  # a decode pool's instance
        return caps / (cm.pool_curve("decode").output_tokens * cm.decode_tpot_s(caps))
    return caps / (c.output_tokens * np.interp(caps, c.concurrency, c.tpot_s) + np.interp(caps, c.concurrency, c.ttft_s))


def _counts(least: np.ndarray, steps: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """(len(least), k) instance counts: the fewest that carry the load, a few more, and multiples."""
    return np.concatenate([least[:, None] + steps[None, :], np.ceil(least[:, None] * factors[None, :])], axis=1)


def _aggregated_points(cm: CellModel, rl: ResolvedLoad) -> tuple[np.ndarray, np.ndarray]:
    """(replicas, cap) of a cell's aggregated candidates."""
    caps = _caps(cm.curve)
    least = np.maximum(np.ceil(_peak_rate(rl) / _most_per_instance(cm, caps) * (1 + 1e-9)), 1)
    reps = _counts(least, REPLICA_STEPS, REPLICA_FACTORS)
    pairs = np.unique(np.stack([np.repeat(caps, reps.shape[1]), reps.ravel()], axis=1), axis=0)
    return pairs[:, 1], pairs[:, 0]


def _peak_rate(rl: ResolvedLoad) -> float:
    """The busiest arrival state's rate (the mean rate unless arrivals are bursty)."""
    return max(rate for _, rate in rl.load.states())


def _state_waits(rates: list[float], service_s, scv: float, servers, rl: ResolvedLoad, weights: np.ndarray) -> dict:
    """Each quantile of the wait for one of ``servers`` (M/G/c per arrival state at ``rates``, taken
    over bursty spells as the aggregated candidates are: ``bursts.spell_waits``; the states' waits
    mixed by their shares of requests) and the utilisation the pool is judged on: the busiest
    state's, or, where its spells overload the pool and the quiet ones drain it, the time average."""
    ca2 = rl.load.arrival_scv()
    waits = [mgc_wait(rate, s_s, scv, servers, ca2) for rate, s_s in zip(rates, service_s)]
    p = np.stack([w[0] for w in waits], axis=1)
    mean = np.stack([w[1] for w in waits], axis=1)
    util = np.stack([rate * s_s / servers for rate, s_s in zip(rates, service_s)], axis=1)
    served = (util < 1) & np.isfinite(mean)
    p, mean, ok = spell_waits(rl.load, p, mean, util, served)
    time = np.array([share / rate for share, rate in rl.load.states()])  # each state's share of the time
    averaged = util @ (time / time.sum())
    side = {"util": np.where(ok.all(axis=1), np.where(served.all(axis=1), util.max(axis=1), averaged), np.inf)}
    for name, level in QUANTILES.items():
        side[name] = mixture_wait_quantile(weights, p, mean, level)
    return side


def _decode_side(cm: CellModel, rl: ResolvedLoad) -> dict[str, np.ndarray]:
    """A decode pool of cell ``cm`` over (running cap, instances): each instance's running batch from
    Little's law (n = rate × output × TPOT(n)) on decode-only steps in each arrival state, and the
    wait for a slot at each quantile (M/G/c per state, ``_state_waits``). Its TPOT is the busiest
    state's (the one a 95th percentile lands in), its tokens/s per user the request-weighted mean."""
    out = rl.output_len
    states = rl.load.states()
    weights = np.array([share for share, _ in states])
    caps = _caps(cm.pool_curve("decode"))
    q_least = np.maximum(np.ceil(_peak_rate(rl) / _most_per_instance(cm, caps, prefill=False) * (1 + 1e-9)), 1)
    q_counts = _counts(q_least, POOL_STEPS, POOL_FACTORS)  # per cap
    cap, q = np.unique(np.stack([np.repeat(caps, q_counts.shape[1]), q_counts.ravel()], axis=1), axis=0).T
    tpots = []
    for _, rate in states:
        n = np.ones_like(cap)
        for _ in range(12):
            n = np.clip(rate / q * out * cm.decode_tpot_s(n), 1.0, cap)
        tpots.append(cm.decode_tpot_s(n))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        side = _state_waits([rate / q for _, rate in states], [out * t for t in tpots], rl.load.output_tokens_scv,
                            cap, rl, weights)
    side.update(cap=cap, decode=q, tpot=np.max(tpots, axis=0), tpot_mean=np.stack(tpots, axis=1) @ weights)
    return side


def _prefill_side(pre: CellModel, rl: ResolvedLoad) -> dict[str, np.ndarray]:
    """A prefill pool of cell ``pre`` over its instance counts: a lone prompt at ``pre``'s speed, and
    the wait for an instance at each quantile (M/G/c per arrival state, ``_state_waits``)."""
    states = rl.load.states()
    prefill_s = float(pre.pool_curve("prefill").ttft_s[0])
    p = np.unique(_counts(np.array([float(prefill_instances_for(_peak_rate(rl), prefill_s))]), POOL_STEPS, POOL_FACTORS))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        side = _state_waits([rate for _, rate in states], [prefill_s] * len(states), rl.load.input_tokens_scv, p, rl,
                            np.array([share for share, _ in states]))
    side.update(prefill=p, prefill_s=np.full_like(p, prefill_s))
    return side


def _pool_grid(dec: CellModel, pre: CellModel, d: dict, f: dict, rl: ResolvedLoad) -> tuple[dict, dict]:
    """Every prefill count of ``f`` beside every (cap, decode count) of ``d``: a prompt waits for a
    prefill instance, runs alone, its KV cache crosses the link joining the pools, and it waits for a
    decode slot. (candidate columns, tail latency columns)."""
    both = lambda x, y: (x[:, None] + y[None, :]).ravel()  # noqa: E731  prefill × decode, flattened
    k, m = len(f["prefill"]), len(d["cap"])
    p, q, cap = np.repeat(f["prefill"], m), np.tile(d["decode"], k), np.tile(d["cap"], k)
    tpot, tpot_mean = np.tile(d["tpot"], k), np.tile(d["tpot_mean"], k)
    gpus = p * pre.cell.gpus + q * dec.cell.gpus
    kv_s = dec.kv_bytes_per_request / _link_bytes_per_s(dec, gpus, min(pre.cell.gpus, dec.cell.gpus))
    util = np.maximum(np.repeat(f["util"], m), np.tile(d["util"], k))
    tail = {"utilisation": util, "stable": (util < 1) & np.isfinite(kv_s), "output_tokens_per_s_per_user": 1 / tpot_mean,
            "tpot_p95_s": tpot}
    for name in QUANTILES:
        tail[f"ttft_{name}_s"] = both(f[name] + f["prefill_s"], d[name]) + kv_s
    tail["e2e_p95_s"] = tail["ttft_p95_s"] + rl.output_len * tpot
    return {"prefill": p, "decode": q, "cap": cap, "kv_s": kv_s}, tail


def prefill_partners(models: list[CellModel]) -> list[list[CellModel]]:
    """For each cell, the cells its prefill pool may run (none unless the engine runs separate
    pools): the same model, platform, engine, weight format and KV-cache type — the KV cache is
    handed over as it is — in any layout, without drafts (a prefill instance drafts nothing)."""
    groups: dict[tuple, list[CellModel]] = {}
    for m in models:
        c = m.cell
        if m.disaggregates and not c.speculative_tokens:
            groups.setdefault((c.model, c.platform.id, c.engine, c.quantization, c.kv_cache_dtype), []).append(m)
    return [groups.get((m.cell.model, m.cell.platform.id, m.cell.engine, m.cell.quantization, m.cell.kv_cache_dtype), [])
            if m.disaggregates else [] for m in models]


def evaluate_cells(models: list[CellModel], rl: ResolvedLoad, *, pricing: str) -> list[list[Grid]]:
    """Every cell's candidate grids: the queueing approximation runs once over every aggregated
    candidate of every cell (``approximate_many`` over the stacked serving curves), the pool waits
    once over every disaggregated one (each decode cell beside every prefill layout ``prefill_partners``
    gives it)."""
    if not models:
        return []
    agg = [_aggregated_points(cm, rl) for cm in models]
    sizes = np.array([len(r) for r, _ in agg])
    replicas = np.concatenate([r for r, _ in agg])
    cap = np.concatenate([c for _, c in agg])
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # overloaded candidates: inf, by design
        t = approximate_many(CurveTable.of([cm.curve for cm in models]), rl.load,
                             curve_index=np.repeat(np.arange(len(models)), sizes), replicas=replicas, slots=cap,
                             nodes=length_nodes(rl))
    cut = np.concatenate([[0], np.cumsum(sizes)])
    names = ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s", "utilisation", "stable",
             "output_tokens_per_s_per_user")
    out = []
    for k, cm in enumerate(models):
        part = slice(cut[k], cut[k + 1])
        tail = {name: getattr(t, name)[part] for name in names}
        zero = np.zeros(sizes[k])
        out.append([_priced(cm, pricing, replicas=replicas[part], cap=cap[part], prefill=zero, decode=replicas[part],
                            tail=tail, kv_s=zero)])
    partners = prefill_partners(models)
    # a pool's waits follow from its serving curve alone: cells sharing a curve (systems built on one
    # accelerator) share them
    decode_sides: dict[int, dict] = {}
    prefill_sides: dict[int, dict] = {}
    for k, ps in enumerate(partners):
        dec = id(models[k].pool_curve("decode"))
        if ps and dec not in decode_sides:
            decode_sides[dec] = _decode_side(models[k], rl)
        for pre in ps:
            key = id(pre.pool_curve("prefill"))
            if key not in prefill_sides:
                prefill_sides[key] = _prefill_side(pre, rl)
            cols, tail = _pool_grid(models[k], pre, decode_sides[dec], prefill_sides[key], rl)
            out[k].append(_priced(models[k], pricing, replicas=cols["prefill"] + cols["decode"], cap=cols["cap"],
                                  prefill=cols["prefill"], decode=cols["decode"], tail=tail, kv_s=cols["kv_s"],
                                  prefill_model=pre))
    return out


def _link_bytes_per_s(cm: CellModel, gpus: np.ndarray, sending_gpus: int | None = None) -> np.ndarray:
    """The link one request's KV cache crosses from a prefill to a decode instance (``handover.py``);
    every GPU of the narrower instance (``sending_gpus``, default the cell's) carries its share."""
    p = cm.cell.platform
    return handover.link_bytes_per_s(p.accelerator, p.system, p.domain_gpus, gpus, sending_gpus or cm.cell.gpus,
                                     cm.cell.systems_per_instance)


def link_name(cm: CellModel, gpus: int) -> str:
    p = cm.cell.platform
    return handover.link_name(p.accelerator, p.system, p.domain_gpus, gpus, cm.cell.systems_per_instance)


def units(cell: Cell, instances: np.ndarray) -> np.ndarray:
    """Systems (or N-GPU accelerator units) that hold ``instances`` engine instances."""
    p = cell.platform
    return instances if p.system is None else instance_units(cell, instances, p.gpus)


def pool_units(dec: Cell, pre: Cell, prefill: np.ndarray, decode: np.ndarray) -> np.ndarray:
    """Systems (or N-GPU units) that hold ``prefill`` instances of ``pre`` beside ``decode`` of ``dec``
    (``economics.pools.pool_units``; N of an accelerator: one unit each, both layouts being the N)."""
    p = dec.platform
    return prefill + decode if p.system is None else economic_pool_units(pre, dec, prefill, decode, p.gpus)


def _priced(cm: CellModel, pricing: str, *, replicas, cap, prefill, decode, tail: dict, kv_s,
            prefill_model: CellModel | None = None) -> Grid:
    c = cm.costs
    if prefill_model is None:
        u, gpus = units(cm.cell, replicas), replicas * cm.cell.gpus
    else:
        u = pool_units(cm.cell, prefill_model.cell, prefill, decode)
        gpus = prefill * prefill_model.cell.gpus + decode * cm.cell.gpus
    nan = np.full_like(u, np.nan)
    buy = u * c.owner_usd_per_month if c.owner_usd_per_month is not None and pricing != "rent" else nan
    rent, rented, choice, quotes = _rented(cm, prefill_model, replicas, prefill, decode, gpus, pricing)
    return Grid(
        replicas=replicas, cap=cap, prefill=prefill, decode=decode,
        ttft_p50_s=tail["ttft_p50_s"], ttft_p95_s=tail["ttft_p95_s"], ttft_p99_s=tail["ttft_p99_s"],
        tpot_p95_s=tail["tpot_p95_s"], e2e_p95_s=tail["e2e_p95_s"], utilisation=tail["utilisation"],
        stable=np.asarray(tail["stable"], bool), tokens_per_s_per_user=tail["output_tokens_per_s_per_user"],
        kv_transfer_s=kv_s, gpus=gpus, units=u, buy_usd_per_month=buy, rent_usd_per_month=rent,
        capex_usd=u * c.capex_usd if c.capex_usd is not None else nan,
        power_w=u * c.power_w if c.power_w is not None else nan, prefill_model=prefill_model, unit_gpus=c.gpus,
        rent_units=rented, rent_choice=choice, rent_quotes=quotes,
        rent_power_w_per_gpu=c.rent_power_w_per_gpu if c.rent_power_w_per_gpu is not None else np.nan)


def _rented(cm: CellModel, prefill_model: "CellModel | None", replicas, prefill, decode, gpus, pricing: str):
    """Renting each candidate on whole listing instances, every engine instance inside one: per
    instance size that hosts the widest engine instance (``UnitCosts.rents``) the instances taken and
    their monthly cost, and per candidate the size that costs least. Separate pools whose hand-over is
    priced on the fast link must share one rented instance. (monthly, instances, size index, quotes);
    nan / None where nothing rents it."""
    width = max(cm.cell.gpus, prefill_model.cell.gpus if prefill_model is not None else 0)
    quotes = cm.costs.rents(width) if pricing != "buy" else ()
    if not quotes:
        return np.full(len(replicas), np.nan), None, None, ()
    if prefill_model is None:
        rented = np.stack([q.instances(replicas) for q in quotes])
        cost = rented * np.array([q.usd_per_instance_month for q in quotes])[:, None]
    else:  # a hand-over priced on the fast link needs one host
        p = cm.cell.platform
        fast = handover.fast(p.accelerator, p.system, p.domain_gpus, gpus, cm.cell.systems_per_instance)
        rented, cost = (np.stack(x) for x in zip(*(q.pools_month(prefill, prefill_model.cell.gpus, decode, cm.cell.gpus, fast)
                                                  for q in quotes)))
    choice = np.argmin(cost, axis=0)
    cols = np.arange(len(replicas))
    monthly = cost[choice, cols]
    return np.where(np.isfinite(monthly), monthly, np.nan), rented[choice, cols], choice, quotes


def route(grid: Grid, max_capex_usd: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate: the monthly cost of the cheaper allowed route (nan: neither is priced), whether
    that route is renting, and the capex it commits (0 when renting). Buying is allowed only within
    ``max_capex_usd``."""
    buy = grid.buy_usd_per_month
    if max_capex_usd is not None:
        buy = np.where(grid.capex_usd <= max_capex_usd, buy, np.nan)
    rent = grid.rent_usd_per_month
    renting = np.isnan(buy) | (rent < buy)
    monthly = np.where(renting, rent, buy)
    return monthly, renting, np.where(renting, 0.0, grid.capex_usd)
