"""How much of a Mac's unified memory macOS lets its GPU use by default, as data (``metal_working_set.yaml``).

Metal's ``recommendedMaxWorkingSetSize`` is the default GPU limit llama.cpp, MLX, vllm-metal and SGLang's MLX
runtime size against. Apple publishes no rule; the catalogue reads it from printed figures, one band of unified
memory per share, each band with the figures it rests on. A measured working set on the accelerator record
(``memory_reported_bytes``) wins over its band.
"""

from __future__ import annotations

from pydantic import model_validator

from inferplan.catalog.provenance import Bytes, Ratio
from inferplan.catalog.schema_base import Frozen
from inferplan.errors import CatalogError
from inferplan.units import GiB


class WorkingSetFigure(Frozen):
    """One printed ``recommendedMaxWorkingSetSize`` on a Mac of ``memory_gib``, in the unit its build printed."""

    chip: str
    memory_gib: float  # the Mac's unified memory ("16 GB" is 16 GiB)
    working_set_bytes: Bytes


class MetalWorkingSet(Frozen):
    """A band of unified memory, above ``above_gib`` up to ``up_to_gib`` (None: no upper bound), and the share
    of it macOS lets the GPU use by default."""

    id: str
    above_gib: float
    up_to_gib: float | None = None
    share: Ratio
    figures: tuple[WorkingSetFigure, ...]
    note: str

    def holds(self, memory_gib: float) -> bool:
        return memory_gib > self.above_gib and (self.up_to_gib is None or memory_gib <= self.up_to_gib)

    @model_validator(mode="after")
    def _figures_in_band(self) -> "MetalWorkingSet":
        for figure in self.figures:
            if not self.holds(figure.memory_gib):
                raise ValueError(f"{self.id}: the {figure.chip} figure ({figure.memory_gib:g} GiB) is outside the band")
        return self


def metal_working_set(bands, memory_gib: float) -> MetalWorkingSet:
    """The band of ``bands`` (the catalogue's ``metal_working_sets``) a Mac of ``memory_gib`` falls in."""
    found = [band for band in bands if band.holds(memory_gib)]
    if len(found) != 1:
        raise CatalogError(f"metal_working_sets: {len(found)} bands hold a Mac of {memory_gib:g} GiB, not one",
                           field="metal_working_sets", allowed="bands that cover every memory size once")
    return found[0]


def metal_working_set_bytes(bands, memory_gib: float) -> tuple[float, MetalWorkingSet]:
    """Metal's default working set on a Mac of ``memory_gib`` GiB of unified memory, and the band it comes from."""
    band = metal_working_set(bands, memory_gib)
    return memory_gib * GiB * band.share.value, band
