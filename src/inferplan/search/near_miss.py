"""Near misses: deployments cheaper than the top pick (by the objective) that fit every cap and miss
only service targets, each by at most the near-miss margin (``search/data/defaults.yaml``), said with
the relaxed target that admits them. The estimates carry a stated error (docs/speed.md), so a
deployment 0.2 % short of a speed target at a thirtieth of the price is worth naming.

Per family (as the infeasible list groups them) the cheapest such candidate is kept; the cheapest
families' are re-checked as a pick is (``ranking.top_picks``) against the relaxed targets, so a
search with those targets admits them. Which picks a search returns is not changed."""

from __future__ import annotations

import math

import numpy as np

from inferplan.catalog.loader import Catalog
from inferplan.search.experts_over_dp import layout_label
from inferplan.search.load import ResolvedLoad
from inferplan.search.pricing import platform_label
from inferplan.search.ranking import Pick, top_picks
from inferplan.search.reasons import CHECKS, target_mask, telling_digits
from inferplan.search.request import Targets
from inferplan.search.result import NearMiss, TargetMiss


def relaxed_limit(value: float, limit: float, lower: bool) -> float:
    """The nearest round limit on the reached side of ``value``, with as many significant digits as it
    takes to tell ``value`` from ``limit`` (as ``reasons.miss_text`` prints them): 69.88 against a
    70 floor gives 69.8; 3.0041 s against a 3 s ceiling gives 3.005 s."""
    digits = telling_digits(value, limit)
    step = 10.0 ** (math.floor(math.log10(abs(value))) - digits + 1)
    out = float(f"{(math.ceil if lower else math.floor)(value / step) * step:.12g}")
    if lower and out < value:  # the float rounding landed on the wrong side
        out = float(f"{out + step:.12g}")
    elif not lower and out > value:
        out = float(f"{out - step:.12g}")
    return out


class NearMisses:
    """Per family, the cheapest candidate that fits every cap and misses only service targets, each by at
    most ``margin``; fed cell by cell as the search judges them."""

    def __init__(self, targets: Targets, margin: float):
        self.targets, self.margin = targets, margin
        self.best: dict[tuple, Pick] = {}

    def add(self, cm, grid, capped: np.ndarray, value: np.ndarray, monthly, renting, capex, paid, slow) -> None:
        """``capped``: the candidates stable, priced and within every cap; ``value``: their objective figure."""
        near = capped & target_mask(grid, self.targets, self.margin) & ~target_mask(grid, self.targets)
        if not near.any():
            return
        idx = np.flatnonzero(near)
        i = int(idx[np.lexsort((slow[idx], paid[idx], monthly[idx], value[idx]))[0]])
        key = (float(value[i]), float(monthly[i]), float(paid[i]), float(slow[i]))
        old = self.best.get(cm.cell.family)
        if old is None or key < old.keys[0]:
            self.best[cm.cell.family] = Pick([key], cm, grid, [i], monthly, renting, capex)

    def results(self, catalog: Catalog, rl: ResolvedLoad, top: list[Pick], count: int) -> tuple[NearMiss, ...]:
        """The ``count`` cheapest families' near misses cheaper than the top pick, each kept only when the
        checks a pick passes admit it at its relaxed targets."""
        ceiling = top[0].keys[top[0].at][0] if top else math.inf
        out = []
        for pick in sorted((p for p in self.best.values() if p.keys[0][0] < ceiling), key=lambda p: p.keys[0]):
            if len(out) == count:
                break
            misses = self._misses(pick)
            relaxed = self.targets.model_copy(update={m.target: m.relaxed for m in misses})
            if top_picks(catalog, [pick], rl, relaxed, 1):
                out.append(self._near_miss(pick, misses, relaxed, rl, ceiling))
        return tuple(out)

    def _misses(self, pick: Pick) -> tuple[TargetMiss, ...]:
        out = []
        for name, (attr, lower, label) in CHECKS.items():
            limit = getattr(self.targets, name)
            value = float(getattr(pick.grid, attr)[pick.index])
            if limit is not None and ((value > limit) if lower else (value < limit)):
                out.append(TargetMiss(target=name, label=label, value=value, limit=limit,
                                      relaxed=relaxed_limit(value, limit, lower), miss=abs(value / limit - 1)))
        return tuple(out)

    def _near_miss(self, pick: Pick, misses, relaxed: Targets, rl: ResolvedLoad, ceiling: float) -> NearMiss:
        cell, g, i = pick.cm.cell, pick.grid, pick.index
        renting, monthly = bool(pick.renting[i]), float(pick.monthly[i])
        paid, value = int(g.paid(pick.renting)[i]), pick.keys[0][0]
        capex = float(pick.capex[i])
        return NearMiss(
            model=cell.model, platform=platform_label(cell.platform, paid, renting), accelerator=cell.platform.accelerator.id,
            engine=cell.engine, quantization=cell.quantization,
            layout=layout_label(cell.tensor_parallel_size, cell.pipeline_parallel_size, cell.data_parallel_size,
                                cell.expert_parallel, cell.gpus),
            gpus=int(g.gpus[i]), gpus_paid=paid, replicas=int(g.decode[i] if g.prefill[i] > 0 else g.replicas[i]),
            rent_or_buy="rent" if renting else "buy", monthly_usd=monthly, usd_per_mtok=monthly / (rl.monthly_tokens / 1e6),
            capex_usd=capex if np.isfinite(capex) else None, misses=misses, relaxed_targets=relaxed,
            times_cheaper=ceiling / value if math.isfinite(ceiling) and value > 0 else None)
