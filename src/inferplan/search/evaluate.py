"""Evaluating a cell's candidates as numpy arrays.

The expensive work — the memory fit and the serving curve of one engine instance
(``queueing.service_curve`` over the performance model) — runs once per cell. Every candidate on
that cell (replicas × running-sequence cap, or prefill × decode instances × cap when prefill and
decode run in separate pools) is then a row of arrays: its tail latency from the vectorised
queueing approximation and its price from the platform's unit costs. No Python loop per candidate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inferplan.catalog.loader import Catalog
from inferplan.memory.fit import plan_memory
from inferplan.inputs.workload import Workload
from inferplan.search.load import ResolvedLoad
from inferplan.search.queueing import CurveTable, approximate_many, mgc_wait_quantile
from inferplan.search.service import ServiceCurve, service_curve
from inferplan.search.pricing import UnitCosts
from inferplan.search.serving_modes import serving_modes
from inferplan.search.space import Cell

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
REPLICA_STEPS = np.arange(8)  # replicas above the fewest that carry the load …
REPLICA_FACTORS = np.array([1.5, 2.0, 3.0, 4.0])  # … and multiples of it, for latency-bound targets
POOL_STEPS = np.arange(6)
POOL_FACTORS = np.array([2.0, 3.0])
ACCEPTANCE_RATE = 0.7  # per draft token: the scenario default (scenario.Speculative)
CURVE_POINTS = 8  # running batches a cell's serving curve is read at (log-spaced, 1..slots)
VERIFY_NODES = 64  # length nodes of the single-deployment check a pick passes (``queueing.approximate``'s)


def length_nodes(rl: ResolvedLoad) -> int:
    """Length nodes of the grid's approximation: one is exact when every request has the mean
    lengths (no spread to integrate over), a few otherwise (a trace)."""
    return 1 if rl.load.input_tokens_scv == 0 and rl.load.output_tokens_scv == 0 else 8


@dataclass(frozen=True)
class CellModel:
    """The per-cell work, done once: the serving curve, one request's KV-cache bytes, the unit
    costs, and whether the engine runs separate prefill and decode pools."""

    cell: Cell
    curve: ServiceCurve
    table: CurveTable
    disaggregates: bool
    kv_bytes_per_request: float
    costs: UnitCosts

    def decode_tpot_s(self, batch: np.ndarray) -> np.ndarray:
        """A decode pool's TPOT at ``batch``: the decode-only step (no prompt rides it) per token advanced."""
        c = self.curve
        return np.interp(batch, c.concurrency, c.decode_step_s) / c.tokens_per_step


def workload(cell: Cell, rl: ResolvedLoad) -> Workload:
    """The request shape the speed model takes (the load's mean lengths, the cell's drafts)."""
    drafts = {"speculative_tokens": cell.speculative_tokens, "acceptance_rate": ACCEPTANCE_RATE} if cell.speculative_tokens else {}
    return Workload(input_len=rl.input_len, output_len=rl.output_len, prefix_cache_hit_rate=rl.cache_hit_rate, **drafts)


def model_cell(catalog: Catalog, cell: Cell, rl: ResolvedLoad, costs: UnitCosts, *, disaggregate: bool,
               curves: dict | None = None) -> CellModel:
    """Model one cell; ``curves`` caches serving curves by deployment (systems built on the same
    accelerator share them)."""
    d = cell.deployment(rl.max_model_len)
    key = (d.model_dump_json(), cell.speculative_tokens)
    if curves is not None and key in curves:
        curve = curves[key]
    else:
        curve = service_curve(d, workload(cell, rl), catalog, points=CURVE_POINTS)
        if curves is not None:
            curves[key] = curve
    kv = plan_memory(d, catalog).result.kv_cache_bytes_per_token * rl.input_len
    return CellModel(cell, curve, CurveTable.of([curve]), disaggregate and serving_modes().disaggregates(cell.engine),
                     kv, costs)


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
    gpus: np.ndarray
    units: np.ndarray
    buy_usd_per_month: np.ndarray  # nan: not priced to buy (no price, or renting asked for)
    rent_usd_per_month: np.ndarray  # nan: not priced to rent (no listing, or buying asked for)
    capex_usd: np.ndarray  # nan: no purchase price
    power_w: np.ndarray  # nan: no power figure

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
    if not prefill:
        return caps / (c.output_tokens * cm.decode_tpot_s(caps))
    return caps / (c.output_tokens * np.interp(caps, c.concurrency, c.tpot_s) + np.interp(caps, c.concurrency, c.ttft_s))


def _counts(least: np.ndarray, steps: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """(len(least), k) instance counts: the fewest that carry the load, a few more, and multiples."""
    return np.concatenate([least[:, None] + steps[None, :], np.ceil(least[:, None] * factors[None, :])], axis=1)


def _aggregated_points(cm: CellModel, rl: ResolvedLoad) -> tuple[np.ndarray, np.ndarray]:
    """(replicas, cap) of a cell's aggregated candidates."""
    caps = _caps(cm.curve)
    least = np.maximum(np.ceil(rl.request_rate_per_s / _most_per_instance(cm, caps) * (1 + 1e-9)), 1)
    reps = _counts(least, REPLICA_STEPS, REPLICA_FACTORS)
    pairs = np.unique(np.stack([np.repeat(caps, reps.shape[1]), reps.ravel()], axis=1), axis=0)
    return pairs[:, 1], pairs[:, 0]


def _disaggregated_points(cm: CellModel, rl: ResolvedLoad) -> dict[str, np.ndarray]:
    """A cell's candidates with separate prefill and decode pools, up to the queueing waits: each
    decode instance's running batch from Little's law (n = rate × output × TPOT(n)), its TPOT on
    decode-only steps, the KV cache's crossing of the link joining the pools."""
    lam, out = rl.request_rate_per_s, rl.output_len
    prefill_s = float(cm.curve.ttft_s[0])
    caps = _caps(cm.curve)
    p_least = np.array([max(np.ceil(lam * prefill_s * (1 + 1e-9)), 1.0)])
    p_counts = np.unique(_counts(p_least, POOL_STEPS, POOL_FACTORS))
    q_least = np.maximum(np.ceil(lam / _most_per_instance(cm, caps, prefill=False) * (1 + 1e-9)), 1)
    q_counts = _counts(q_least, POOL_STEPS, POOL_FACTORS)  # per cap
    cq = np.unique(np.stack([np.repeat(caps, q_counts.shape[1]), q_counts.ravel()], axis=1), axis=0)
    p = np.repeat(p_counts, len(cq))
    cap = np.tile(cq[:, 0], len(p_counts))
    q = np.tile(cq[:, 1], len(p_counts))
    kv_s = cm.kv_bytes_per_request / _link_bytes_per_s(cm, (p + q) * cm.cell.gpus)
    lam_d = lam / q
    n = np.ones_like(cap)
    for _ in range(12):
        n = np.clip(lam_d * out * cm.decode_tpot_s(n), 1.0, cap)
    tpot = cm.decode_tpot_s(n)
    util = np.maximum(lam * prefill_s / p, lam_d * out * tpot / cap)
    return {"prefill": p, "decode": q, "cap": cap, "kv_s": kv_s, "lam_d": lam_d, "tpot": tpot, "util": util,
            "prefill_s": np.full_like(cap, prefill_s)}


def evaluate_cells(models: list[CellModel], rl: ResolvedLoad, *, pricing: str) -> list[list[Grid]]:
    """Every cell's candidate grids: the queueing approximation runs once over every aggregated
    candidate of every cell (``approximate_many`` over the stacked serving curves), the pool waits
    once over every disaggregated one."""
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
    pooled = [(k, _disaggregated_points(cm, rl)) for k, cm in enumerate(models) if cm.disaggregates]
    if pooled:
        for (k, points), tail in zip(pooled, _pool_tails([d for _, d in pooled], rl)):
            d = points
            out[k].append(_priced(models[k], pricing, replicas=d["prefill"] + d["decode"], cap=d["cap"],
                                  prefill=d["prefill"], decode=d["decode"], tail=tail, kv_s=d["kv_s"]))
    return out


def _pool_tails(parts: list[dict[str, np.ndarray]], rl: ResolvedLoad) -> list[dict[str, np.ndarray]]:
    """TTFT, TPOT and E2E of disaggregated candidates: a prompt waits for a prefill instance (M/G/c,
    ``queueing.mgc_wait_quantile``), runs alone, its KV cache crosses the link, and it waits for a
    decode slot; one call per quantile over every cell's candidates."""
    a = {key: np.concatenate([d[key] for d in parts]) for key in parts[0]}
    lam, out = rl.request_rate_per_s, rl.output_len
    tail = {"utilisation": a["util"], "stable": (a["util"] < 1) & np.isfinite(a["kv_s"]),
            "output_tokens_per_s_per_user": 1 / a["tpot"], "tpot_p95_s": a["tpot"]}
    for name, q in QUANTILES.items():
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            wait = (mgc_wait_quantile(lam, a["prefill_s"], rl.load.input_tokens_scv, a["prefill"], q)
                    + mgc_wait_quantile(a["lam_d"], out * a["tpot"], rl.load.output_tokens_scv, a["cap"], q))
        tail[f"ttft_{name}_s"] = wait + a["prefill_s"] + a["kv_s"]
    tail["e2e_p95_s"] = tail["ttft_p95_s"] + out * a["tpot"]
    cut = np.concatenate([[0], np.cumsum([len(d["cap"]) for d in parts])])
    return [{key: v[cut[i]:cut[i + 1]] for key, v in tail.items()} for i in range(len(parts))]


def _link_bytes_per_s(cm: CellModel, gpus: np.ndarray) -> np.ndarray:
    """The link one request's KV cache crosses from a prefill to a decode instance, per instance:
    the fast link (one direction: half its two-way figure) when both pools sit in one scale-up
    domain, else the scale-out network; every GPU of the instance sends its share."""
    p, g = cm.cell.platform, cm.cell.gpus
    up = p.accelerator.scale_up
    out = p.system.scale_out if p.system is not None and p.system.scale_out else p.accelerator.scale_out
    up_bw = up.bandwidth_bytes_per_s.value / 2 * g if up and up.link != "none" else 0.0
    out_bw = out.bandwidth_bytes_per_s.value * g if out else 0.0
    inside = (gpus <= p.domain_gpus) & (cm.cell.systems_per_instance == 1) & (up_bw > 0)
    bw = np.where(inside, up_bw, out_bw)
    return np.where(bw > 0, bw, np.nan)


def link_name(cm: CellModel, gpus: int) -> str:
    p = cm.cell.platform
    inside = gpus <= p.domain_gpus and cm.cell.systems_per_instance == 1 and p.accelerator.scale_up is not None
    if inside:
        return p.accelerator.scale_up.link
    out = p.system.scale_out if p.system is not None and p.system.scale_out else p.accelerator.scale_out
    return out.link if out else "none known"


def units(cell: Cell, instances: np.ndarray) -> np.ndarray:
    """Systems (or N-GPU accelerator units) that hold ``instances`` engine instances."""
    p = cell.platform
    if p.system is None:
        return instances
    if cell.systems_per_instance > 1:
        return instances * cell.systems_per_instance
    return np.ceil(instances / max(p.gpus // cell.gpus, 1))


def _priced(cm: CellModel, pricing: str, *, replicas, cap, prefill, decode, tail: dict, kv_s) -> Grid:
    c = cm.costs
    u = units(cm.cell, replicas)
    nan = np.full_like(u, np.nan)
    buy = u * c.owner_usd_per_month if c.owner_usd_per_month is not None and pricing != "rent" else nan
    rent = u * c.rent_usd_per_month if c.rent_usd_per_month is not None and pricing != "buy" else nan
    return Grid(
        replicas=replicas, cap=cap, prefill=prefill, decode=decode,
        ttft_p50_s=tail["ttft_p50_s"], ttft_p95_s=tail["ttft_p95_s"], ttft_p99_s=tail["ttft_p99_s"],
        tpot_p95_s=tail["tpot_p95_s"], e2e_p95_s=tail["e2e_p95_s"], utilisation=tail["utilisation"],
        stable=np.asarray(tail["stable"], bool), tokens_per_s_per_user=tail["output_tokens_per_s_per_user"],
        kv_transfer_s=kv_s, gpus=replicas * cm.cell.gpus, units=u, buy_usd_per_month=buy, rent_usd_per_month=rent,
        capex_usd=u * c.capex_usd if c.capex_usd is not None else nan,
        power_w=u * c.power_w if c.power_w is not None else nan)


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
