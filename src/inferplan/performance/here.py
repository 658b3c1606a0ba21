"""What runs on this machine, and how fast: the what-fits table for the accelerator ``detect`` read
(``memory/local.py``) with one request's speed for every model that fits — TTFT and output tokens/s
at ``SPEED_INPUT_TOKENS``/``SPEED_OUTPUT_TOKENS`` tokens, concurrency 1."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.detect import LocalMachine
from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.slots import sequences_held
from inferplan.memory.hardware import default_engine
from inferplan.memory.local import LocalFits, fits_here
from inferplan.memory.matrix import FitsCell, fits_matrix
from inferplan.performance.local_runs import UserRun
from inferplan.performance.serving import estimate

SPEED_INPUT_TOKENS = 1024  # the lengths `perf` defaults to
SPEED_OUTPUT_TOKENS = 256


class LocalSpeed(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    model: str
    quantization: str
    ttft_s: float
    output_tokens_per_s_per_user: float
    source: str


class WhatRunsHere(LocalFits):
    speeds: tuple[LocalSpeed, ...] = ()  # the models that fit, one request at a time


def what_runs_here(machine: LocalMachine, catalog: Catalog, *, engine: str | None = None,
                   models: list[str] | None = None, max_model_len: int | None = None,
                   user_runs: tuple[UserRun, ...] = (), all_models: bool = False) -> WhatRunsHere:
    fits = fits_here(machine, catalog, engine=engine, models=models, max_model_len=max_model_len, all_models=all_models)
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


class ModelOnGpus(BaseModel):
    """One model on the GPUs asked about: whether it fits them, and one request's speed if it does."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    model: str
    quantization: str
    fits: bool
    gpus_needed: int | None  # the fewest of these GPUs that hold it (None: no layout does)
    max_model_len: int | None  # the context it is sized for
    concurrency: float | None  # sequences of max_model_len held at once, as the what-fits matrix counts them
    ttft_s: float | None
    output_tokens_per_s_per_user: float | None
    source: str | None  # measured or calibrated-model
    note: str | None = None  # why a model that fits has no speed, or what layout was chosen


class WhatRuns(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    accelerator: str
    gpus: int
    engine: str
    input_len: int
    output_len: int
    models: tuple[ModelOnGpus, ...]  # those that fit first, fastest first
    left_out: tuple[str, ...] = ()  # catalogue models the default grid leaves out (the what-fits matrix's)


def what_runs_on(gpu: str, gpus: int, catalog: Catalog, *, engine: str | None = None,
                 quantizations: list[str] | None = None, all_models: bool = False) -> WhatRuns:
    """Which catalogue models run on ``gpus`` of the accelerator ``gpu`` and how fast one request
    goes (``SPEED_INPUT_TOKENS``/``SPEED_OUTPUT_TOKENS`` tokens): the what-fits matrix for one card,
    and for each model that fits the GPUs, ``estimate`` with them as one instance (``--gpus`` alone), and
    the sequences of the model's planned context held at once there (as the what-fits matrix counts them).
    The models are the what-fits matrix's default grid, or with ``all_models`` every catalogue model with a config."""
    accel = catalog.accelerator(gpu, "gpu")
    engine = catalog.engine(engine or default_engine(accel)).id
    for name in quantizations or ():  # a format the engine cannot load is the question's error, not an empty answer
        _check_loads(catalog, engine, name, accel)
    matrix = fits_matrix(gpus=[accel.id], quantizations=quantizations, engine=engine, all_models=all_models,
                         catalog=catalog)
    rows = [_on_gpus(cell, accel.id, gpus, engine, catalog) for cell in matrix.cells if cell.result is not None]
    rows.sort(key=lambda r: (not r.fits, -(r.output_tokens_per_s_per_user or 0.0), r.model))
    return WhatRuns(accelerator=accel.id, gpus=gpus, engine=engine, input_len=SPEED_INPUT_TOKENS,
                    output_len=SPEED_OUTPUT_TOKENS, models=tuple(rows), left_out=matrix.left_out)


def _check_loads(catalog: Catalog, engine_id: str, name: str, accel: Accelerator) -> None:
    quant, engine = catalog.quantization(name), catalog.engine(engine_id)
    if not engine.loads(quant, accel=accel):
        loadable = ", ".join(q.id for q in catalog.quantizations if engine.loads(q, accel=accel))
        raise InvalidScenarioError(f"{engine_id} does not load {quant.id} weights on {accel.name}",
                                   field="quantization", allowed=loadable)


def _on_gpus(cell: FitsCell, gpu: str, gpus: int, engine: str, catalog: Catalog) -> ModelOnGpus:
    needed = cell.result.parallel.gpus if cell.result.fits else (cell.smallest_fit.gpus if cell.smallest_fit else None)
    base = dict(model=cell.model, quantization=cell.quantization, gpus_needed=needed,
                max_model_len=cell.result.max_model_len, ttft_s=None, output_tokens_per_s_per_user=None, source=None)
    if needed is None or needed > gpus:
        return ModelOnGpus(**base, fits=False, concurrency=None)
    d = Deployment(model=cell.model, gpu=gpu, gpus=gpus, engine=engine, quantization=cell.quantization,
                   max_model_len=cell.result.max_model_len)
    try:
        e = estimate(d, Workload(input_len=SPEED_INPUT_TOKENS, output_len=SPEED_OUTPUT_TOKENS), catalog)
    except InferplanError as exc:
        return ModelOnGpus(**base, fits=True, concurrency=sequences_held(d, catalog), note=f"no speed estimate: {exc}")
    held = sequences_held(d, catalog)  # at the row's context (llama.cpp: the most slots that fit)
    return ModelOnGpus(**{**base, "ttft_s": e.ttft_s, "output_tokens_per_s_per_user": e.output_tokens_per_s_per_user,
                          "source": e.source}, fits=True, concurrency=held, note=e.layout_note)
