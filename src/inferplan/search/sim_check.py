"""The simulation's check of a pick: before a candidate is ranked, the discrete-event simulation
(``simulate.py``) serves the load on it — the same serving curve, its running-sequence cap and its
replicas — and every stated target must hold on the simulated percentiles too.

The search's queueing approximation is fast enough for every candidate but reads a little low at a
target's edge (a TPOT p95 of 38.1 ms where 20,000 simulated requests give 39.5–40.6 ms); the
simulation is the one ``inferplan simulate`` runs, on the serving curve ``simulate`` reads for the
pick as launched (``launched_curve``: the cell's instance started with its running cap, each
data-parallel rank's share), so a pick it would fail is given up for the cell's next candidate, and
``simulate`` of the pick's query (``deploying.simulate_query``) answers the same percentiles. One seed
and a fixed request count keep a search reproducible. Separate prefill and decode pools are simulated
as such (``simulate_pools.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.extensible import pool_sized
from inferplan.search.arrivals import Load
from inferplan.search.evaluate import cell_deployment
from inferplan.search.load import ResolvedLoad
from inferplan.search.request import Targets
from inferplan.search.service import ServiceCurve, service_curve
from inferplan.search.space import Cell
from inferplan.search.simulate import SIM_WORK_LIMIT, Check, simulate
from inferplan.search.simulate_pools import simulate_pools

CHECK_REQUESTS = 20_000  # requests each check simulates (``inferplan simulate``'s default)
CHECK_SEED = 0
MAX_CHECKS = 48  # simulations per search; past them the remaining picks rest on the approximation


def too_large(engines: int) -> str | None:
    """Why a pick of ``engines`` engines (replicas × data-parallel ranks, or both pools' instances)
    is not simulated, when one check of it would pass the simulation's bound."""
    if engines * CHECK_REQUESTS <= SIM_WORK_LIMIT:
        return None
    return (f"not simulated: {engines:,} engines × {CHECK_REQUESTS:,} requests is past one simulation's "
            f"{SIM_WORK_LIMIT:,}; checked by the queueing approximation only")


class SimulatedCheck(BaseModel):
    """The simulation's percentiles for a pick, and the targets they miss (none: it passes)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    requests: int
    seed: int
    ttft_p50_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    tpot_p95_s: float
    e2e_p95_s: float
    misses: tuple[str, ...] = ()

    @property
    def meets(self) -> bool:
        return not self.misses


@dataclass(frozen=True)
class Pools:
    """Separate prefill instances ahead of the decode instances, and the KV cache's hand-over."""

    prefill: ServiceCurve
    prefill_instances: int
    transfer_s: float


def pick_deployment(cell: Cell, cap: int, rl: ResolvedLoad) -> Deployment:
    """A pick's instance as launched: the cell at its context, running at most ``cap`` sequences in all, each
    data-parallel rank's share of it rounded up (the figure ``deploy --max-num-seqs`` and ``perf`` take)."""
    per_rank = -(-int(cap) // cell.data_parallel_size)
    return cell_deployment(cell, rl).model_copy(update={"max_num_seqs": per_rank})


def launched_curve(catalog: Catalog, cell: Cell, cap: int, rl: ResolvedLoad, w: Workload,
                   searched: ServiceCurve, role: str | None = None) -> tuple[ServiceCurve, int]:
    """The serving curve ``simulate`` reads for the pick started with its cap (``pick_deployment``; ``role``: as
    an instance of that pool, ``pool_sized``), and the running sequences it holds (the ranks' shares in all); the
    search's curve of the cell capped at ``cap`` where the started instance cannot be estimated (the check then
    rests on the cell's curve, as the ranking did)."""
    d = pick_deployment(cell, cap, rl)
    try:
        return service_curve(pool_sized(catalog, d, role) if role else d, w, catalog), d.max_num_seqs * cell.data_parallel_size
    except InferplanError:
        return searched, int(cap)


def check_pick(curve: ServiceCurve, load: Load, targets: Targets, *, cap: int, replicas: int,
               pools: Pools | None = None, check: Check | None = None) -> SimulatedCheck:
    """``replicas`` instances of ``curve`` running at most ``cap`` sequences each (with ``pools``:
    the decode instances, behind the prefill pool), simulated under ``load``; each stated target
    checked on the simulated percentiles. ``check`` (the search's budget) is called as the simulation runs."""
    capped = dataclasses.replace(curve, slots=max(1, min(int(cap), curve.slots)))
    if pools is None:
        sim = simulate(capped, load, requests=CHECK_REQUESTS, seed=CHECK_SEED, replicas=int(replicas), check=check)
    else:
        sim = simulate_pools(pools.prefill, capped, load, requests=CHECK_REQUESTS, seed=CHECK_SEED,
                             prefill_instances=pools.prefill_instances, decode_instances=int(replicas),
                             transfer_s=pools.transfer_s, check=check)
    limits = {name: value for name, value in targets if value is not None and name.endswith("_s")}
    if targets.min_output_tokens_per_s_per_user is not None:
        limits["tpot_p95_s"] = min(limits.get("tpot_p95_s", float("inf")), 1 / targets.min_output_tokens_per_s_per_user)
    misses = tuple(f"{name} {getattr(sim, name):.4g} s against {limit:.4g} s" for name, limit in limits.items()
                   if not getattr(sim, name) <= limit * (1 + 1e-9))
    return SimulatedCheck(requests=CHECK_REQUESTS, seed=CHECK_SEED, ttft_p50_s=sim.ttft_p50_s, ttft_p95_s=sim.ttft_p95_s,
                          ttft_p99_s=sim.ttft_p99_s, tpot_p95_s=sim.tpot_p95_s, e2e_p95_s=sim.e2e_p95_s, misses=misses)


class Checks:
    """One search's checks (``check_pick`` under its load and targets), each distinct one simulated once:
    picks that launch the same curve, cap, replicas and pools (two systems built on one accelerator, which
    share its serving curves) run the same seeded simulation, so a repeat is answered from the first;
    ``check`` (the search's budget) is called as each runs."""

    def __init__(self, load: Load, targets: Targets, check: Check | None = None):
        self.load, self.targets, self.check = load, targets, check
        self._done: dict[tuple, SimulatedCheck] = {}

    def __call__(self, curve: ServiceCurve, *, cap: int, replicas: int, pools: Pools | None = None) -> SimulatedCheck:
        key = (curve, int(cap), int(replicas), pools)
        if key not in self._done:
            self._done[key] = check_pick(curve, self.load, self.targets, cap=cap, replicas=replicas, pools=pools,
                                         check=self.check)
        return self._done[key]
