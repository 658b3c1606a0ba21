"""What a speed question answers: a ``ServingEstimate`` (TTFT, TPOT, throughput and how they were
reached) and the measured points of the same deployment quoted beside it (``MeasuredQuote``,
filled by ``measured.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.points_schema import SpeedAccuracy


class MeasuredQuote(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    point: str  # speed point id (`inferplan validate --speed` scores it)
    metric: str
    measured: float  # SI: seconds for TTFT/TPOT, tokens/s otherwise
    estimate: float  # this estimate's figure for the same metric, at the asked workload
    input_tokens: int
    output_tokens: int
    engine_version: str
    source: str


class ServingEstimate(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

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
    # per draft token, as the drafts are priced (performance/drafts.py: stated, published or assumed); None: no drafts
    acceptance_rate: float | None = None
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
    # how the layout was chosen when the deployment states GPUs but no parallel sizes (memory/layout.py)
    layout_note: str | None = None
    # the build an Ollama tag naming the model selected (catalog/ollama.py): the memory plan's line
    build_note: str | None = None
    # the weight placement the engine chose where none is stated (memory/fit_result.py MemoryFit): -ngl, --n-cpu-moe
    # (None: every layer on the GPUs), the setting that chose them (None: nothing chosen) and where it put the weights
    n_gpu_layers: int | None = None
    n_cpu_moe: int | None = None
    placement_chosen_by: str | None = None
    placement_note: str | None = None
    # requests beyond the engine's running cap, what sets the cap and the flag that raises it (``notes.queue_note``)
    queue_note: str | None = None
    # why tokens/s per user is above the total, when it is (``rate_note``)
    rate_note: str | None = None
    # the load the calibrated model prices above one request (``load_note``)
    load_note: str | None = None
    # the user's own stored run this estimate comes from (source "measured-local"; performance/local_runs.py)
    measured_record: int | None = None
    measured_label: str | None = None  # "measured (yours, <date>)"


def rate_note(e: ServingEstimate, replicas: int = 1) -> str | None:
    """Why tokens/s per user can exceed the total: per user is a running request's decode rate
    (1 / TPOT, every accepted draft token included), while the total spreads the output over each
    request's whole cycle, prompt (TTFT) included, and few requests in flight overlap little of it
    (fewer requests than data-parallel replicas leave some of them idle)."""
    if e.output_tokens_per_s_per_user <= e.output_tokens_per_s_total:
        return None
    idle = f"; {replicas - e.concurrency:,} of {replicas:,} replicas have no request" if e.concurrency < replicas else ""
    spec = f", {e.tokens_per_step:.2f} accepted tokens per step with speculative decoding" if e.tokens_per_step > 1 else ""
    return (f"tokens/s per user is above the total: per user is the decode rate while a request runs (1 / TPOT{spec}); "
            f"the total is output over wall-clock time, which also spends {e.ttft_s * 1e3:,.0f} ms of TTFT on each "
            f"request's prompt, with only {e.concurrency:,} request(s) in flight{idle}")


def load_note(e: ServingEstimate) -> str | None:
    """The load a calibrated estimate of more than one request in flight assumes: a steady state, each request
    arriving apart and joining a running batch; its concurrency arriving at once is a burst, which a closed loop of
    that many clients simulates (None: one request, or a measured figure, whose load is the measurement's)."""
    if e.concurrency <= 1 or e.source != "calibrated-model":
        return None
    return (f"steady state: requests arrive spread out, each newcomer joining a running batch; a burst of "
            f"{e.concurrency:,} at once is a closed loop of {e.concurrency:,} clients (simulate)")
