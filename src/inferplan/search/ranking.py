"""Which cells' picks a search returns: the cheapest first, each re-checked before it is kept.

A ``Pick`` holds a cell's candidates that meet every target and cap, best first. ``top_picks`` takes
the cheapest head in turn, checks it again by the approximation at a single deployment's precision and
then by the simulation (``sim_check``), and lets a pick that fails give way to its cell's next
candidate; a pick that runs and pays the same as one kept, or is the same deployment in another build
of the model (``equivalent.py``), is folded into it.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from inferplan.catalog.loader import Catalog
from inferplan.memory.resolve import resolve_model
from inferplan.search import evaluate
from inferplan.search.budget import CHECK_STAGE, Progress
from inferplan.search.equivalent import FIGURES, same_figures, support_key
from inferplan.search.load import ResolvedLoad
from inferplan.search.request import Targets
from inferplan.search.sim_check import MAX_CHECKS, Checks, Pools, SimulatedCheck, launched_curve, too_large
from inferplan.search.simulate import Check


@dataclass
class Pick:
    """A cell's candidates that meet everything, best first; the head stands for the cell."""

    keys: list[tuple]
    cm: evaluate.CellModel
    grid: evaluate.Grid
    order: list[int]
    monthly: np.ndarray
    renting: np.ndarray
    capex: np.ndarray
    at: int = 0
    check: SimulatedCheck | None = None  # the simulation's check of the head (None: not simulated)
    unsimulated: str | None = None  # why the head is not simulated, when it is too large to be
    alike: list[str] = field(default_factory=list)  # other builds that run the head the same (``equivalent.py``)

    def __lt__(self, other: "Pick") -> bool:
        # at equal keys a bare GPU first: a system's GPUs rented alone are those GPUs rented (``_same_as``)
        return (self.keys[self.at], self.cm.cell.platform.system is not None) < \
            (other.keys[other.at], other.cm.cell.platform.system is not None)

    @property
    def index(self) -> int:
        return self.order[self.at]


def top_picks(catalog: Catalog, picks: list[Pick], rl: ResolvedLoad, targets: Targets, top: int,
              progress: Progress | None = None, check: Check | None = None) -> list[Pick]:
    """The ``top`` cheapest cells' picks, each re-checked as it comes up — by the approximation at
    a single deployment's precision (``_verified``), then by the simulation (``sim_check``, while
    the search's ``MAX_CHECKS`` last, each calling ``check`` as it runs); a pick that fails gives way to its
    cell's next candidate."""
    heap, out, checks = list(picks), [], 0
    checked = Checks(rl.load, targets, check)
    heapq.heapify(heap)
    while heap and len(out) < top:
        pick = heapq.heappop(heap)
        if _same_as(pick, out):  # a one-GPU system rented per GPU is that GPU rented: one family, one pick
            continue
        twin = next((o for o in out if _equivalent(pick, o)), None)  # another build, the same deployment
        if twin is not None and _support(catalog, pick) >= _support(catalog, twin):
            twin.alike.append(pick.cm.cell.quantization)
            continue
        ok = _verified(pick.cm, pick.grid, pick.index, rl, targets)
        pick.unsimulated = too_large(_engines(pick))
        if ok and checks < MAX_CHECKS and rl.load.arrival != "closed" and pick.unsimulated is None:
            checks += 1
            if progress:
                progress(len(out), top, CHECK_STAGE)
            pick.check = _simulated(catalog, pick, rl, checked)
            ok = pick.check.meets
        if ok and twin is not None:  # the better-supported build takes its twin's row
            pick.alike = [*twin.alike, twin.cm.cell.quantization]
            out[out.index(twin)] = pick
        elif ok:
            out.append(pick)
        elif pick.at + 1 < len(pick.order):
            pick.at += 1
            pick.check = None
            heapq.heappush(heap, pick)
    return out


def _what_is_run(pick: Pick) -> tuple:
    """What a pick's family runs and pays, whatever its platform is called (its cap and replicas aside)."""
    c, g, i = pick.cm.cell, pick.grid, pick.index
    return (c.model, c.platform.accelerator.id, int(g.gpus[i]), c.engine, c.quantization, c.kv_cache_dtype,
            c.tensor_parallel_size, c.pipeline_parallel_size, c.data_parallel_size, c.expert_parallel,
            c.speculative_tokens, c.draft_model, bool(pick.renting[i]), round(float(pick.monthly[i]), 2))


def _same_as(pick: Pick, out: list[Pick]) -> bool:
    return any(_what_is_run(pick) == _what_is_run(o) for o in out)


def _equivalent(a: Pick, b: Pick) -> bool:
    """The same deployment in another build of the model: all it runs and pays alike but the weight
    format, as many instances, and the same figures (``equivalent.same_figures``)."""
    def shape(p: Pick) -> tuple:
        run, pre = _what_is_run(p), p.grid.prefill_model
        layout = (pre.cell.tensor_parallel_size, pre.cell.pipeline_parallel_size, pre.cell.data_parallel_size,
                  pre.cell.expert_parallel) if pre is not None else None  # separate pools: the prefill layout too
        return (*run[:4], *run[5:], p.cm.cell.quantization_label, layout,
                *(int(getattr(p.grid, k)[p.index]) for k in ("replicas", "prefill", "decode")))

    figures = lambda p: {k: float(getattr(p.grid, k)[p.index]) for k in FIGURES}  # noqa: E731
    return (a.cm.cell.quantization != b.cm.cell.quantization and shape(a) == shape(b)
            and same_figures(figures(a), figures(b)))


def _support(catalog: Catalog, pick: Pick) -> tuple:
    return support_key(resolve_model(catalog, pick.cm.cell.model, field_name="models"), pick.cm.cell.quantization)


def _engines(pick: Pick) -> int:
    """The engines a pick's simulation steps: replicas × data-parallel ranks, or both pools' instances."""
    g, i = pick.grid, pick.index
    if g.prefill[i] == 0:
        return int(g.replicas[i]) * pick.cm.curve.data_parallel
    return int(g.prefill[i]) + int(g.decode[i])


def _simulated(catalog: Catalog, pick: Pick, rl: ResolvedLoad, checks: Checks) -> SimulatedCheck:
    """The simulation's check of a pick as launched (``sim_check.launched_curve``)."""
    g, i, cell = pick.grid, pick.index, pick.cm.cell
    pooled = g.prefill[i] > 0
    curve, cap = launched_curve(catalog, cell, int(g.cap[i]), rl, evaluate.workload(cell, rl),
                                pick.cm.pool_curve("decode") if pooled else pick.cm.curve, role="decode" if pooled else None)
    if not pooled:
        return checks(curve, cap=cap, replicas=int(g.replicas[i]))
    pools = Pools(prefill=g.prefill_model.pool_curve("prefill"), prefill_instances=int(g.prefill[i]), transfer_s=float(g.kv_transfer_s[i]))
    return checks(curve, cap=cap, replicas=int(g.decode[i]), pools=pools)


def _verified(cm, grid, i: int, rl: ResolvedLoad, targets: Targets) -> bool:
    """A pick meets every target again at the single-deployment precision of
    ``queueing.approximate`` (the grid integrates fewer length nodes when lengths spread; with
    every request at the mean lengths one node is exact and there is nothing to refine)."""
    if grid.prefill[i] > 0 or evaluate.length_nodes(rl) == 1:  # separate pools: closed formulas, no nodes
        return True
    t = evaluate.approximate_many(cm.table, rl.load, curve_index=np.zeros(1, np.int64), replicas=grid.replicas[i:i + 1],
                                  slots=grid.cap[i:i + 1], nodes=evaluate.VERIFY_NODES).row(0)
    return t.stable and all(getattr(t, k) <= v * (1 + 1e-9) for k, v in targets if v is not None and k.endswith("_s")) and (
        targets.max_utilisation is None or t.utilisation <= targets.max_utilisation * (1 + 1e-9)) and (
        targets.min_output_tokens_per_s_per_user is None
        or 1 / t.tpot_p95_s >= targets.min_output_tokens_per_s_per_user * (1 - 1e-9))
