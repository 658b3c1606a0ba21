"""Catalogue records of measurements: engine start-ups (memory), published speed points and
serving sweeps, the speed model's track record and the dates of the engine builds behind them.

``loader.py`` validates them with these models (``measurements/*.yaml``, ``speed_accuracy.yaml``,
``engine_builds.yaml``); a command that plans without measurements never imports this module.
Real annotations, as in ``schema.py``.
"""

from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from inferplan.catalog.provenance import Bytes, BytesPerS, Count, Sourced
from inferplan.catalog.schema import SLUG, Frozen


class MemorySettings(Frozen):
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)  # None: the engine has no fraction (llama.cpp)
    max_model_len: int = Field(ge=1)
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    max_num_seqs: int | None = Field(None, ge=1)
    enforce_eager: bool | None = None  # no CUDA graphs captured
    n_ubatch: int | None = Field(None, ge=1)  # llama.cpp physical batch
    flash_attention: bool | None = None  # llama.cpp -fa as the log printed it
    moe_kernel: str | None = None  # the MoE kernel the install ran, where its log shows it (engine_moe_kernels.yaml)
    # the top-k/top-p sampler the log names (vLLM V1 topk_topp_sampler.py: 'Using FlashInfer for top-p & top-k
    # sampling.' or the PyTorch-native fallback), where it printed one
    topk_topp_sampler: Literal["flashinfer", "pytorch"] | None = None
    mtp_draft: bool = False  # ran speculative decoding with the model's MTP layers (engine_mtp_rules.yaml)


class MemoryMeasured(Frozen):
    """What the engine's startup log printed, per GPU."""

    weights_bytes_per_gpu: Bytes | None = None  # absent when the log line was not published
    activation_bytes_per_gpu: Bytes | None = None
    non_torch_bytes_per_gpu: Bytes | None = None
    kv_cache_bytes_per_gpu: Bytes | None = None  # absent when the engine failed to start
    kv_cache_tokens: Count | None = None
    kv_cache_blocks: Count | None = None  # as printed ("# GPU blocks"), in the engine's block size
    total_bytes_per_gpu: Bytes | None = None  # the device total the engine printed
    cuda_graph_bytes_per_gpu: Bytes | None = None
    compute_buffer_bytes_per_gpu: Bytes | None = None  # llama.cpp "compute buffer size"
    # the most the engine's allocator held over the run (mlx-lm "Peak memory": weights, cache and buffers)
    peak_bytes_per_gpu: Bytes | None = None
    # vLLM V1 "Maximum concurrency for <max_model_len> tokens per request: <x>x": the pool over the blocks
    # the engine charges one max_model_len request
    max_concurrency: Count | None = None
    # vLLM V1 start-up check "(<x> GiB KV cache is needed, ...)": what one max_model_len request needs
    kv_cache_needed_bytes_per_gpu: Bytes | None = None
    fits: bool = True
    # the source stating whether the start-up succeeded: required of a verdict-only record (no number above
    # cites one), whose verdict is its whole measurement
    fits_source: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _verdict_sourced(self) -> "MemoryMeasured":
        numbers = (getattr(self, name) for name in type(self).model_fields)
        if self.fits_source is None and not any(isinstance(n, Sourced) for n in numbers):
            raise ValueError("a verdict-only record (fits and no measured number) needs fits_source: the id of "
                             "the source that states the start-up succeeded or failed")
        return self


class MemoryPoint(Frozen):
    """One measured engine start-up: the settings, and the memory split it reported."""

    id: str = Field(pattern=SLUG)
    model: str  # model id
    accelerator: str  # accelerator id
    engine: str
    engine_version: str
    # the engine build as a version number ("0.6.4"); None when the log does not say which
    engine_release: str | None = None
    backend: str | None = None  # llama.cpp back end: cuda, metal, vulkan, rocm
    quantization: str
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    # attention data-parallel ranks with the experts spread over all of them (SGLang --dp with
    # --enable-dp-attention, vLLM --data-parallel-size with --enable-expert-parallel): each rank holds
    # its own attention weights and KV cache
    data_parallel_size: int = Field(1, ge=1)
    enable_expert_parallel: bool = False
    # the tensor-parallel rank whose per-GPU lines the record copies, where the thread shows it is not
    # the rank that sized the pool (None: rank 0, or every rank printed the same); vLLM V0 samples on
    # rank 0 only, so another rank's activation peak holds no sampler term
    log_rank: int | None = Field(None, ge=1)
    settings: MemorySettings
    measured: MemoryMeasured
    caveats: tuple[str, ...] = ()
    # calibration: may be fitted on (validation/calibrate.py); development / holdout: scored only,
    # holdout declared before predicting (the rule is stated in the data file's header)
    split: Literal["calibration", "development", "holdout"] = "calibration"


class SpeedMetric(str, Enum):
    DECODE_TOKENS_PER_S_PER_USER = "decode_tokens_per_s_per_user"  # single stream (concurrency 1) unless stated
    PREFILL_TOKENS_PER_S = "prefill_tokens_per_s"  # prompt processing, one request
    OUTPUT_TOKENS_PER_S_TOTAL = "output_tokens_per_s_total"  # whole deployment, all requests
    DECODE_TOKENS_PER_S_TOTAL = "decode_tokens_per_s_total"  # all sequences, generation phase only (prefill excluded)
    TOTAL_TOKENS_PER_S = "total_tokens_per_s"  # input + output, whole deployment
    TTFT_S = "ttft_s"
    TPOT_S = "tpot_s"


class SpeedPoint(Frozen):
    """One published speed measurement of a deployment, with the workload that produced it."""

    id: str = Field(pattern=SLUG)
    model: str  # model id
    accelerator: str  # accelerator id
    gpus: int = Field(1, ge=1)
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    engine: str  # engine id
    backend: str | None = None  # llama.cpp back end: cuda, metal, vulkan, rocm; else null
    engine_version: str
    quantization: str
    kv_cache_dtype: str = "auto"
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    concurrency: int | None = Field(None, ge=1)  # None: saturating load (max throughput)
    speculative_tokens: int = Field(0, ge=0)
    acceptance_rate: float | None = Field(None, ge=0, le=1)  # per draft token, when the source states it (else 0.7)
    expert_parallel: bool = False  # experts spread over all GPUs (DP attention + EP); data parallel = gpus / (TP x PP)
    moe_runner_backend: str | None = None  # SGLang --moe-runner-backend as the run names it (None: the engine's default)
    max_num_seqs: int | None = Field(None, ge=1)  # the engine's running-batch cap, when the run states it
    # the benchmark tool chose max_num_seqs and max_num_batched_tokens by its own rule (the run states
    # neither): validation/bench_limits.py reproduces it (for the formats it tunes, bench_tunings tuned_formats)
    batch_limits_by: Literal["trtllm-bench"] | None = None
    prefix_cache_hit_rate: float = Field(0.0, ge=0, le=1)  # 1: decode-only timing after the prompts were cached
    # False: the run turned CUDA graphs off (--enforce-eager), which the planner does not model; the
    # point is still predicted and printed, but neither scored nor used for calibration
    cuda_graphs: bool = True
    metric: SpeedMetric
    # decode_tokens_per_s_per_user timed over decoding alone (1 / TPOT: a server's or llama-bench's tg rate)
    # or over the whole request, its prompt's TTFT included (a client bench's completion tokens / wall-clock)
    timed_over: Literal["decode", "request"] = "decode"
    measured: Sourced
    split: Literal["fit", "holdout"] = "fit"  # fit: may calibrate constants; holdout: only scores them
    caveats: tuple[str, ...] = ()
    # weights in host RAM (measurements/speed_offload.yaml), the engine flags as the run states them
    n_gpu_layers: int | None = Field(None, ge=0)
    n_cpu_moe: int | None = Field(None, ge=0)
    cpu_offload_gb: float | None = Field(None, ge=0)
    kt_num_gpu_experts: int | None = Field(None, ge=0)  # KTransformers: routed experts per layer on the GPU
    kt_release: str | None = None  # KTransformers: the release run (kt_cpu_paths.yaml), when not kt-kernel
    kt_method: str | None = None  # KTransformers: the CPU expert kernels, as --kt-method names them
    host_sockets: int | None = Field(None, ge=1)  # CPU sockets (NUMA nodes) of the host
    host_memory_gb: float | None = Field(None, gt=0)  # host RAM, GiB
    host_memory_bandwidth_bytes_per_s: BytesPerS | None = None  # the host's DRAM peak, as stated or derived from its DIMMs

    @property
    def offloaded(self) -> bool:
        return any(v is not None for v in (self.n_gpu_layers, self.n_cpu_moe, self.cpu_offload_gb, self.kt_num_gpu_experts))


class ProfilePoint(Frozen):
    concurrency: int = Field(ge=1)
    output_tokens_per_s_per_user: Sourced
    output_tokens_per_s_per_gpu: Sourced
    ttft_s: Sourced | None = None


class LaunchFields(BaseModel):
    """How an engine was launched, as a deployment states it (Deployment's fields of these names): its tensor parallel
    size, CUDA graphs (enforce_eager: none captured), what it kept in host RAM — weights, a host KV-cache tier, the
    KTransformers release — and the engine settings that change the prediction (None: not stated, so no offload and
    the engine's default setting). A measured profile's launch and a stored run (``performance/run_record.UserRun``)
    state these."""

    tensor_parallel_size: int
    enforce_eager: bool = False
    n_gpu_layers: int | None = None
    n_cpu_moe: int | None = None
    cpu_offload_gb: float | None = None
    kv_offloading_size: float | None = None
    kv_offloading_backend: str | None = None
    hicache_ratio: float | None = None
    hicache_size: float | None = None
    kt_num_gpu_experts: int | None = None
    kt_method: str | None = None
    kt_release: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    ubatch_size: int | None = None
    moe_runner_backend: str | None = None


class ProfileLaunch(Frozen, LaunchFields):
    """How the engine of a measured serving profile was launched (``LaunchFields``): a profile that states one applies
    only to a deployment launched the same way. ``engine_version``: the release it ran, as its source names it, whose
    defaults are the settings it left unstated (None: the deployment's release)."""

    tensor_parallel_size: int = Field(ge=1)
    # with the profile's GPU count and TP size these fix its data-parallel ranks: a run laid out otherwise on the
    # same GPUs (pipeline stages, experts spread or not) is another launch
    pipeline_parallel_size: int = Field(1, ge=1)
    enable_expert_parallel: bool = False
    engine_version: str | None = Field(None, max_length=100)


class ServingProfile(Frozen):
    """A measured throughput-interactivity sweep for one (model, system, engine, precision, ISL/OSL) cell."""

    id: str = Field(pattern=SLUG)
    model: str
    accelerator: str
    gpus: int = Field(ge=1)
    engine: str
    quantization: str
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    speculative: str | None = None  # e.g. "MTP"; a stored run's (one with a launch): its drafts, never planned on
    split: Literal["fit", "holdout"] = "holdout"  # fit: may calibrate the model's constants
    points: tuple[ProfilePoint, ...] = Field(min_length=1)
    caveats: tuple[str, ...] = ()
    # how it was launched: it applies only to a deployment launched the same way (``performance/profiles.py``);
    # None (the shipped profiles): as its source measured it, taken for any layout and settings of the cell
    launch: ProfileLaunch | None = None


BUILD_DATE = r"^\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$"


def build_year(date: str) -> float:
    """A YYYY-MM[-DD] date as a decimal year (the middle of the month when no day is given)."""
    year, month, *day = (int(part) for part in date.split("-"))
    return year + (month - 1 + (day[0] - 0.5 if day else 15.5) / 31) / 12


class SpeedAccuracy(Frozen):
    """How the calibrated speed model did on one engine family's measured points of one kind —
    generated from ``inferplan validate --speed`` (``python -m inferplan.validation.accuracy
    --write``), so every estimate can say how far its family's predictions have missed."""

    family: str  # calibration family (performance.rates.calibration_family)
    # offload-*: deployments with weights in host RAM, scored apart from the GPU-only figures
    kind: Literal["decode", "decode-concurrent", "prefill", "throughput", "offload-decode", "offload-prefill"]
    model: str | None = None  # a catalogue model's own record within the family; None: every model
    points: int = Field(ge=1)  # scored points
    median_abs_error: float = Field(ge=0)
    holdout_points: int = Field(ge=0)
    holdout_median_abs_error: float | None = Field(default=None, ge=0)
    beyond_30_percent: int = Field(ge=0)
    worst_error: float  # signed (predicted − measured) / measured of the point missed by most
    worst_speed_bias: float  # that point's miss as a lean: how much faster than measured (negative: slower)
    median_speed_bias: float  # how much faster than measured predictions run (negative: slower), median

    @property
    def id(self) -> str:
        return f"{self.family} {self.kind}" + (f" {self.model}" if self.model else "")


class EngineBuild(Frozen):
    """When the engine build behind measured points was made: its release date, the run's stated
    date, or (an upper bound) the source's publication date. Keyed by the points' exact
    ``engine`` and ``engine_version``."""

    engine: str
    engine_version: str
    date: str = Field(pattern=BUILD_DATE)
    basis: Literal["release", "run", "published"]
    source: str
    note: str | None = None

    @property
    def id(self) -> str:
        return f"{self.engine} {self.engine_version}"

    @property
    def year(self) -> float:
        return build_year(self.date)
