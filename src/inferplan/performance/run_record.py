"""A user's measured run as the performance layer takes it: its load levels, the deployment it measured (its
layout, engine, weight format, what it kept in host RAM, its host, engine settings and speculative decoding) and
the workload of each load level. The shells read runs from the store and pass them in as these records."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from inferplan.catalog.points_schema import LaunchFields
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload


class MeasuredPoint(BaseModel):
    """One load level of a benchmark run, in SI units (None: the client did not report it)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", allow_inf_nan=False)

    concurrency: int = Field(ge=1, le=10_000_000)
    input_tokens: int = Field(ge=0, le=100_000_000)
    output_tokens: int = Field(ge=0, le=100_000_000)
    ttft_s: float | None = Field(None, gt=0, le=1e6)
    tpot_s: float | None = Field(None, gt=0, le=1e6)
    output_tokens_per_s_total: float | None = Field(None, gt=0, le=1e12)
    requests_per_s: float | None = Field(None, gt=0, le=1e9)
    prefill_tokens_per_s: float | None = Field(None, gt=0, le=1e12)  # prompt processing alone (llama-bench pp)
    ttft_p50_s: float | None = Field(None, gt=0, le=1e6)
    ttft_p99_s: float | None = Field(None, gt=0, le=1e6)
    tpot_p50_s: float | None = Field(None, gt=0, le=1e6)
    tpot_p99_s: float | None = Field(None, gt=0, le=1e6)
    # the load the client offered: its request rate (None: no rate limit, as with the clients'
    # default "inf") and the run's length in requests; ``requests_per_s`` is what completed
    request_rate_per_s: float | None = Field(None, gt=0, le=1e6)
    requests: int | None = Field(None, ge=1, le=100_000_000)
    # how prompt and output lengths spread, when the file says: uniform, with this squared coefficient
    # of variation (SGLang's random dataset); None: every request the mean length
    lengths_uniform_scv: float | None = Field(None, ge=0, le=1 / 3)
    # requests that failed (an error, or cut off unfinished) where the client counts them (None: it does not say):
    # the figures above are over the requests that completed only
    failed_requests: int | None = Field(None, ge=0, le=100_000_000)


class UserRun(LaunchFields):
    """A stored run as the performance layer sees it: the deployment it measured and its points; how it was launched
    (``LaunchFields``: its TP size, CUDA graphs, offload — RUN_OFFLOAD — and engine settings — RUN_SETTINGS —, None
    where not stated) and the host it ran on."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: int
    model: str
    accelerator: str
    gpus: int
    pipeline_parallel_size: int = 1
    data_parallel_size: int | None = None  # None: the GPUs over TP × PP
    enable_expert_parallel: bool = False
    engine: str
    engine_version: str
    quantization: str
    measured_on: dt.date
    points: tuple[MeasuredPoint, ...]
    # the host it ran on (Deployment's fields of these names, RUN_HOST; None: not stated)
    host_sockets: int | None = None
    host_memory_gb: float | None = None
    host_memory_bandwidth_gb_per_s: float | None = None
    # the speculative decoding it ran with, as deploy launches it (0 draft tokens: none); the acceptance rate
    # per draft token it is predicted at (None: the workload's default)
    speculative_tokens: int = 0
    speculative_method: str | None = None  # memory.mtp.SPECULATIVE_METHODS; None: as perf plans a draft
    draft_model: str | None = None
    acceptance_rate: float | None = None


# the Deployment fields a run states of what it kept in host RAM, its KTransformers release and its host
# (``measurements import`` and ``acceptance`` take them by the same flags)
RUN_OFFLOAD = ("n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kv_offloading_size", "kv_offloading_backend", "hicache_ratio",
               "hicache_size", "kt_num_gpu_experts", "kt_method", "kt_release", "host_sockets", "host_memory_gb",
               "host_memory_bandwidth_gb_per_s")
# of those, the host the run ran on: planned with, not matched (perf plans on a run of the same launch)
RUN_HOST = ("host_sockets", "host_memory_gb", "host_memory_bandwidth_gb_per_s")
# of those, what a run or profile is matched on (``launched_offload``)
LAUNCH_OFFLOAD = tuple(f for f in RUN_OFFLOAD if f not in RUN_HOST)
# the engine settings a launch command states beyond its layout, context and offload that change the prediction
# (``measurements import`` and ``acceptance`` take them by deploy's and perf's flags)
RUN_SETTINGS = ("kv_cache_dtype", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "ubatch_size",
                "moe_runner_backend")
# the speculative decoding a run states (``measurements import`` takes them as deploy and perf name them)
RUN_DRAFTS = ("speculative_tokens", "speculative_method", "draft_model", "acceptance_rate")


def run_deployment(run: UserRun, **settings) -> Deployment:
    """The deployment ``run`` measured (its GPUs, layout, engine, weight format, offload, host and engine settings;
    its draft tokens per step, drafted with the model's MTP layers where its speculative method is mtp, with its
    EAGLE-3 draft where it is eagle3), with ``settings`` beside."""
    method = run.speculative_method if run.speculative_tokens else None
    mtp = {"mtp_draft": True} if method == "mtp" else {"eagle3_draft": run.draft_model} if method == "eagle3" and run.draft_model else {}
    mtp |= ({"speculative_tokens": run.speculative_tokens, "speculative_method": method} if run.speculative_tokens else {}) | (
        {"enforce_eager": True} if run.enforce_eager else {})
    return Deployment(model=run.model, gpu=run.accelerator, gpus=run.gpus, tensor_parallel_size=run.tensor_parallel_size,
                      pipeline_parallel_size=run.pipeline_parallel_size, data_parallel_size=run.data_parallel_size,
                      enable_expert_parallel=run.enable_expert_parallel, engine=run.engine, quantization=run.quantization,
                      **{f: getattr(run, f) for f in (*RUN_OFFLOAD, *RUN_SETTINGS) if getattr(run, f) is not None}, **mtp,
                      **settings)


def run_workload(run: UserRun, p: MeasuredPoint) -> Workload:
    """The workload of one load level of ``run``: its lengths and concurrency, with the run's draft tokens at
    its acceptance rate."""
    rate = {"acceptance_rate": run.acceptance_rate} if run.acceptance_rate is not None else {}
    drafts = {"speculative_tokens": run.speculative_tokens, **rate} if run.speculative_tokens else {}
    return Workload(input_len=max(p.input_tokens, 1), output_len=max(p.output_tokens, 1), concurrency=p.concurrency, **drafts)
