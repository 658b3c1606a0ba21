"""What runs on this machine, and how fast: the what-fits table for the accelerator ``detect`` read
(``memory/local.py``) with one request's speed for every model that fits — TTFT and output tokens/s
at ``SPEED_INPUT_TOKENS``/``SPEED_OUTPUT_TOKENS`` tokens, concurrency 1."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.detect import LocalMachine
from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.local import LocalFits, fits_here
from inferplan.performance.local_runs import UserRun
from inferplan.performance.serving import estimate

SPEED_INPUT_TOKENS = 1024  # the lengths `perf` defaults to
SPEED_OUTPUT_TOKENS = 256


class LocalSpeed(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    quantization: str
    ttft_s: float
    output_tokens_per_s_per_user: float
    source: str


class WhatRunsHere(LocalFits):
    speeds: tuple[LocalSpeed, ...] = ()  # the models that fit, one request at a time


def what_runs_here(machine: LocalMachine, catalog: Catalog, *, engine: str | None = None,
                   models: list[str] | None = None, max_model_len: int | None = None,
                   user_runs: tuple[UserRun, ...] = ()) -> WhatRunsHere:
    fits = fits_here(machine, catalog, engine=engine, models=models, max_model_len=max_model_len)
    speeds = []
    for cell in fits.matrix.cells if fits.matrix else ():
        if cell.result is None or not cell.result.fits:
            continue
        d = Deployment(model=cell.model, gpu=cell.hardware, engine=fits.engine, quantization=cell.quantization,
                       max_model_len=cell.result.max_model_len)
        try:
            e = estimate(d, Workload(input_len=SPEED_INPUT_TOKENS, output_len=SPEED_OUTPUT_TOKENS), catalog,
                         user_runs=user_runs)
        except InferplanError:  # a model that fits but whose speed the model cannot place here: no row
            continue
        speeds.append(LocalSpeed(model=cell.model, quantization=cell.quantization, ttft_s=e.ttft_s,
                                 output_tokens_per_s_per_user=e.output_tokens_per_s_per_user, source=e.source))
    return WhatRunsHere(**fits.model_dump(), speeds=tuple(speeds))
