"""What runs on this machine: the what-fits matrix for the accelerator ``detect`` read (one card of
its largest group, as the ``fits`` table plans one GPU), or, without a GPU, that plainly."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.detect import LOCAL_ID, LocalMachine
from inferplan.catalog.loader import Catalog
from inferplan.memory.hardware import default_engine
from inferplan.memory.matrix import FitsMatrix, fits_matrix
from inferplan.units import fmt_gib



class LocalFits(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    machine: LocalMachine
    engine: str | None
    matrix: FitsMatrix | None  # None: no GPU
    summary: str


def fits_here(machine: LocalMachine, catalog: Catalog, *, engine: str | None = None,
                   models: list[str] | None = None, max_model_len: int | None = None, all_models: bool = False) -> LocalFits:
    """``catalog``: the catalogue with this machine's accelerator as ``local`` (``detect.local_catalog``)."""
    if not machine.has_gpu or LOCAL_ID not in catalog.accelerators:
        ram = f"{fmt_gib(machine.ram_bytes, '.1f')} RAM" if machine.ram_bytes else "RAM not read"
        return LocalFits(machine=machine, engine=None, matrix=None,
                         summary=f"no GPU: CPU and RAM only ({machine.cpu or 'CPU not read'}, {ram}); "
                                 "the planner models GPU and unified-memory serving, so nothing is planned here")
    group = machine.groups[0]
    gpu = group.matched or LOCAL_ID  # a matched card plans as its catalogue id, so its measured profiles apply
    accel = catalog.accelerator(gpu)
    engine = engine or default_engine(catalog, accel)
    matrix = fits_matrix(models=models, gpus=[gpu], engine=engine, max_model_len=max_model_len, all_models=all_models,
                         catalog=catalog)
    fitting = sum(1 for c in matrix.cells if c.result is not None and c.result.fits)
    return LocalFits(machine=machine, engine=engine, matrix=matrix,
                     summary=f"{group.name} ×{group.count} ({group.label}): {fitting} of {len(matrix.cells)} models "
                             f"fit one card with {engine}")
