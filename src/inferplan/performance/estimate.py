"""What a speed question answers: a ``ServingEstimate`` (TTFT, TPOT, throughput and how they were
reached) and the measured points of the same deployment quoted beside it (``MeasuredQuote``,
filled by ``measured.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.schema import SpeedAccuracy


class MeasuredQuote(BaseModel):
    model_config = ConfigDict(frozen=True)

    point: str  # speed point id (`inferplan validate --speed` scores it)
    metric: str
    measured: float  # SI: seconds for TTFT/TPOT, tokens/s otherwise
    estimate: float  # this estimate's figure for the same metric, at the asked workload
    input_tokens: int
    output_tokens: int
    engine_version: str
    source: str


class ServingEstimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    accelerator: str
    engine: str
    quantization: str
    gpus: int
    concurrency: int  # requests in flight across the deployment
    running_per_instance: int  # sequences decoding together in one engine instance
    max_concurrency: int  # what the KV cache holds across the deployment at input+output tokens
    ttft_s: float
    tpot_s: float
    prefill_s: float  # the request's prompt (its chunks, any wait in the queue): TTFT less the fixed per-request cost
    output_tokens_per_s_per_user: float
    output_tokens_per_s_total: float
    output_tokens_per_s_per_gpu: float
    input_tokens_per_s_total: float
    tokens_per_step: float  # accepted tokens per sequence per step (1 without speculation)
    bound: str  # memory | compute | communication | overhead | measured
    source: str  # measured | calibrated-model
    compute_dtype: str
    assumptions: tuple[str, ...]
    # the calibrated model's track record for this engine family on the kinds of figure this
    # estimate gives (single-stream decode and prefill at concurrency 1; per-user decode,
    # throughput and prefill above): from `inferplan validate --speed`, empty for measured estimates
    validated: tuple[SpeedAccuracy, ...] = ()
    # published points measured on this same deployment and concurrency, nearest workload first,
    # with what this estimate gives for each (performance/measured.py)
    measured_points: tuple[MeasuredQuote, ...] = ()
    # the user's own stored run this estimate comes from (source "measured-local"; performance/local_runs.py)
    measured_record: int | None = None
    measured_label: str | None = None  # "measured (yours, <date>)"
