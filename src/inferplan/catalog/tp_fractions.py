"""The fixed memory fraction SGLang releases before 0.4.7 (PR #7054) pick by tensor-parallel size, by release.

Each ``ReleaseTpFractions`` entry holds from its ``first_release`` to the next entry's (a post release after its
base: ``release_order``): a table by TP size (``mem_fraction_static`` 0.89 at TP 1 in 0.2.0, 0.88 from 0.2.7) and,
from the releases that take it from the GPU's memory above a size, what they take there instead
(``LargeGpuFraction``: 0.4.5.post3's total less 13 GiB); from 0.4.6.post2 the table is keyed on TP x PP size
(``by_tp_times_pp``). ``MemoryRule.default_fraction`` picks the entry;
``memory/settings.py`` applies the fraction.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from inferplan.catalog.memory_rule_parts import TpFraction
from inferplan.catalog.provenance import release_order
from inferplan.catalog.schema import Frozen
from inferplan.units import GiB


class LargeGpuFraction(Frozen):
    """The fraction a release takes on a GPU of more than ``above_gib`` of memory: the smaller of ``value`` (raised by
    ``spare_gib`` x (1 - value) / total where stated) and the share that leaves ``reserve_gib`` (total - reserve) /
    total, of those stated."""

    above_gib: float = Field(gt=0)  # the engine's test is total > above (SGLang: MiB from nvidia-smi, here in GiB)
    value: float | None = Field(None, gt=0, le=1)
    spare_gib: float | None = Field(None, gt=0)
    reserve_gib: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _stated(self) -> "LargeGpuFraction":
        if self.value is None and self.reserve_gib is None:
            raise ValueError("a large-GPU fraction states a value, a reserve_gib or both")
        if self.spare_gib is not None and self.value is None:
            raise ValueError("spare_gib raises a stated value")
        return self

    def fraction(self, total_bytes: float) -> float:
        shares = []
        if self.value is not None:
            shares.append(self.value + (self.spare_gib or 0.0) * GiB * (1 - self.value) / total_bytes)
        if self.reserve_gib is not None:
            shares.append((total_bytes - self.reserve_gib * GiB) / total_bytes)
        return min(shares)


class ReleaseTpFractions(Frozen):
    """The fraction by TP size a release defaults to from ``first_release`` on, and above a GPU size its own."""

    first_release: str  # inclusive, inside the rule's range
    by_tp: tuple[TpFraction, ...] = Field(min_length=1)  # from min_tp 1 up, each to the next entry's TP size
    above_gpu_memory: tuple[LargeGpuFraction, ...] = ()  # by above_gib, ascending; the largest one exceeded applies
    by_tp_times_pp: bool = False  # by_tp is keyed on TP x PP size, the GPUs of the whole instance
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> "ReleaseTpFractions":
        tps = [t.min_tp for t in self.by_tp]
        if tps != sorted(set(tps)) or tps[0] != 1:
            raise ValueError(f"by_tp of {self.first_release} runs from min_tp 1 up, each TP size once")
        sizes = [a.above_gib for a in self.above_gpu_memory]
        if sizes != sorted(set(sizes)):
            raise ValueError(f"above_gpu_memory of {self.first_release} runs by above_gib, ascending, each once")
        return self

    def fraction(self, tp: int, total_bytes: float, pp: int = 1) -> float:
        """The fraction at TP size ``tp`` and PP size ``pp`` on a GPU of ``total_bytes``."""
        above = [a for a in self.above_gpu_memory if total_bytes > a.above_gib * GiB]
        size = tp * pp if self.by_tp_times_pp else tp
        return above[-1].fraction(total_bytes) if above else [t.value for t in self.by_tp if t.min_tp <= size][-1]


def tp_fractions_at(entries: tuple[ReleaseTpFractions, ...], release: str) -> ReleaseTpFractions | None:
    """The entry ``release`` falls in: the latest first_release reached (None before the first)."""
    reached = [e for e in entries if release_order(e.first_release) <= release_order(release)]
    return max(reached, key=lambda e: release_order(e.first_release)) if reached else None
