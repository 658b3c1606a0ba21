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
from inferplan.performance.workload import Workload
from inferplan.search._standin_queueing import ServiceCurve, approximate_many, mgc_wait_quantile, service_curve
from inferplan.search.load import ResolvedLoad
from inferplan.search.pricing import UnitCosts
from inferplan.search.serving_modes import serving_modes
from inferplan.search.space import Cell

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
REPLICA_STEPS = np.arange(8)  # replicas above the fewest that carry the load …
REPLICA_FACTORS = np.array([1.5, 2.0, 3.0, 4.0])  # … and multiples of it, for latency-bound targets
POOL_STEPS = np.arange(6)
POOL_FACTORS = np.array([2.0, 3.0])
ACCEPTANCE_RATE = 0.7  # per draft token: the scenario default (scenario.Speculative)


@dataclass(frozen=True)
class CellModel:
    """The per-cell work, done once: the serving curve (and, for engines that disaggregate, the
    decode-only curve of a decode pool), one request's KV-cache bytes, and the unit costs."""

    cell: Cell
    curve: ServiceCurve
    decode_curve: ServiceCurve | None
    kv_bytes_per_request: float
    costs: UnitCosts


def workload(cell: Cell, rl: ResolvedLoad, *, decode_only: bool = False) -> Workload:
    """The request shape the speed model takes; ``decode_only``: every input token already in the
    cache (a decode pool's instance receives the prompt's KV cache and runs no prefill)."""
    drafts = {"speculative_tokens": cell.speculative_tokens, "acceptance_rate": ACCEPTANCE_RATE} if cell.speculative_tokens else {}
    return Workload(input_len=rl.input_len, output_len=rl.output_len,
                    prefix_cache_hit_rate=1.0 if decode_only else rl.cache_hit_rate, **drafts)


def model_cell(catalog: Catalog, cell: Cell, rl: ResolvedLoad, costs: UnitCosts, *, disaggregate: bool) -> CellModel:
    d = cell.deployment(rl.max_model_len)
    curve = service_curve(d, workload(cell, rl), catalog)
    decode = None
    if disaggregate and serving_modes().disaggregates(cell.engine):
        decode = service_curve(d, workload(cell, rl, decode_only=True), catalog)
    kv = plan_memory(d, catalog).result.kv_cache_bytes_per_token * rl.input_len
    return CellModel(cell, curve, decode, kv, costs)


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


def _caps(curve: ServiceCurve) -> np.ndarray:
    return np.unique(np.clip(np.round(curve.concurrency), 1, curve.slots)).astype(float)


def _most_per_instance(curve: ServiceCurve, caps: np.ndarray, *, prefill: bool = True) -> np.ndarray:
    """Requests/s one instance completes with ``caps`` running (Little's law at the cap)."""
    time = curve.output_len * np.interp(caps, curve.concurrency, curve.tpot_s)
    if prefill:
        time = time + np.interp(caps, curve.concurrency, curve.ttft_s)
    return caps / time


def _counts(least: np.ndarray, steps: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """(len(least), k) instance counts: the fewest that carry the load, a few more, and multiples."""
    return np.concatenate([least[:, None] + steps[None, :], np.ceil(least[:, None] * factors[None, :])], axis=1)


def aggregated_grid(cm: CellModel, rl: ResolvedLoad, *, pricing: str) -> Grid:
    curve = cm.curve
    caps = _caps(curve)
    least = np.maximum(np.ceil(rl.request_rate_per_s / _most_per_instance(curve, caps) * (1 + 1e-9)), 1)
    reps = _counts(least, REPLICA_STEPS, REPLICA_FACTORS)
    pairs = np.unique(np.stack([np.repeat(caps, reps.shape[1]), reps.ravel()], axis=1), axis=0)
    cap, replicas = pairs[:, 0], pairs[:, 1]
    tail = approximate_many(curve, rl.load, replicas=replicas, slot_cap=cap)
    zero = np.zeros_like(cap)
    return _priced(cm, pricing, replicas=replicas, cap=cap, prefill=zero, decode=replicas, tail=tail, kv_s=zero)


def disaggregated_grid(cm: CellModel, rl: ResolvedLoad, *, pricing: str) -> Grid | None:
    """Separate prefill and decode pools: prompts queue for a prefill instance (M/D/c), the KV cache
    crosses the link joining the pools, and the decode instances run the decode-only curve."""
    dc = cm.decode_curve
    if dc is None:
        return None
    lam, out = rl.request_rate_per_s, rl.output_len
    prefill_s = float(cm.curve.ttft_s[0])
    caps = _caps(dc)
    p_least = np.array([max(np.ceil(lam * prefill_s * (1 + 1e-9)), 1.0)])
    p_counts = np.unique(_counts(p_least, POOL_STEPS, POOL_FACTORS))
    q_least = np.maximum(np.ceil(lam / _most_per_instance(dc, caps, prefill=False) * (1 + 1e-9)), 1)
    q_counts = _counts(q_least, POOL_STEPS, POOL_FACTORS)  # per cap
    cq = np.unique(np.stack([np.repeat(caps, q_counts.shape[1]), q_counts.ravel()], axis=1), axis=0)
    p = np.repeat(p_counts, len(cq))
    cap = np.tile(cq[:, 0], len(p_counts))
    q = np.tile(cq[:, 1], len(p_counts))
    g = cm.cell.gpus
    kv_s = cm.kv_bytes_per_request / _link_bytes_per_s(cm, (p + q) * g)
    # decode pool: each instance's running batch n from Little's law, n = rate × output × TPOT(n)
    lam_d = lam / q
    n = np.ones_like(cap)
    for _ in range(12):
        n = np.clip(lam_d * out * np.interp(n, dc.concurrency, dc.tpot_s), 1.0, cap)
    tpot = np.interp(n, dc.concurrency, dc.tpot_s)
    util = np.maximum(lam * prefill_s / p, lam_d * out * tpot / cap)
    tail = {"utilisation": util, "stable": (util < 1) & np.isfinite(kv_s), "output_tokens_per_s_per_user": 1 / tpot,
            "tpot_p95_s": tpot}
    for name, qtl in QUANTILES.items():
        wait = mgc_wait_quantile(lam, prefill_s, 0.0, p, qtl) + mgc_wait_quantile(lam_d, out * tpot, 0.0, cap, qtl)
        tail[f"ttft_{name}_s"] = wait + prefill_s + kv_s
    tail["e2e_p95_s"] = tail["ttft_p95_s"] + out * tpot
    return _priced(cm, pricing, replicas=p + q, cap=cap, prefill=p, decode=q, tail=tail, kv_s=kv_s)


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
