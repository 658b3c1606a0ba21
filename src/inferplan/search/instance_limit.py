"""The most instances a search plans in one pool: the simulation that checks every pick
(``simulate.MAX_REPLICAS``) runs at most that many replicas, prefill or decode instances.

A load that needs more of one cell (a billion users on one 8-GPU server each) is no mistake in the
request: its candidates past the limit are left out of the cell's grid, and a family left with none
says what it needs against the limit ("needs 38,064 replicas; at most 4,096") instead of the search
failing on a key the request never had.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from inferplan.search.result import Infeasible
from inferplan.search.simulate import MAX_REPLICAS

MAX_INSTANCES = MAX_REPLICAS


@dataclass
class InstanceLimit:
    """Per family, the fewest instances its candidates past the limit need (and of which pool), and
    how many of its candidates are within it."""

    needs: dict[tuple, tuple[int, str]] = field(default_factory=dict)
    kept: dict[tuple, int] = field(default_factory=dict)

    def keep(self, family: tuple, grid):
        """``grid`` without the candidates that need more than ``MAX_INSTANCES`` in any one pool."""
        aggregated = grid.prefill == 0
        pools = ("replicas", "prefill instances", "decode instances")
        counts = np.stack([np.where(aggregated, grid.replicas, 0), np.where(aggregated, 0, grid.prefill),
                           np.where(aggregated, 0, grid.decode)])
        largest = counts.max(axis=0)  # each candidate's largest pool
        over = largest > MAX_INSTANCES
        if over.any():
            j = np.flatnonzero(over)[np.argmin(largest[over])]  # the candidate past the limit by the least
            least = (int(largest[j]), pools[int(np.argmax(counts[:, j]))])
            old = self.needs.get(family)
            self.needs[family] = least if old is None or least[0] < old[0] else old
        self.kept[family] = self.kept.get(family, 0) + int((~over).sum())
        if not over.any():
            return grid
        arrays = {f.name: getattr(grid, f.name)[~over] for f in dataclasses.fields(grid)
                  if isinstance(getattr(grid, f.name), np.ndarray)}
        return dataclasses.replace(grid, **arrays)

    def explained(self, infeasible: list[Infeasible]) -> list[Infeasible]:
        """Each family that had only candidates past the limit, said so with what it needs."""
        out = []
        for x in infeasible:
            family = (x.model, x.platform, x.engine, x.quantization)
            if family in self.needs and not self.kept.get(family):
                count, pool = self.needs[family]
                x = x.model_copy(update={"reason": "throughput", "message": (
                    f"needs {count:,} {pool} to carry the load; at most {MAX_INSTANCES:,} (the most the simulation "
                    "that checks each pick runs)")})
            out.append(x)
        return out
