"""Published serving runs that report latency percentiles at a stated load (``latency_points``)."""

from typing import Literal

from pydantic import Field

from inferplan.catalog.provenance import Sourced
from inferplan.catalog.schema import SLUG, Frozen

LATENCY_METRICS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "itl_p50_s", "itl_p99_s", "ttft_mean_s",
                   "tpot_mean_s", "request_throughput_per_s", "output_tokens_per_s_total", "e2e_p50_s", "e2e_p99_s")


class LatencyPoint(Frozen):
    """One benchmark run: a deployment, the offered load (a Poisson rate, or a client concurrency
    cap with no rate limit), and the percentiles it measured."""

    id: str = Field(pattern=SLUG)
    model: str  # model id
    checkpoint: str
    accelerator: str  # accelerator id
    gpus: int = Field(ge=1)
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    expert_parallel: bool = False
    engine: str
    engine_version: str
    # the release an undated build is planned at: the last the engine published before the run's source was
    # dated (``engine_version`` names the build; a caveat says how the release was read), None: the number
    # ``engine_version`` names, else the engine's default release
    engine_release: str | None = None
    quantization: str
    kv_cache_dtype: str = "auto"
    dataset: str  # sharegpt | random: how the benchmark drew prompt and output lengths
    input_tokens: float = Field(gt=0)  # mean per request
    output_tokens: float = Field(gt=0)
    request_rate_per_s: float | None = Field(None, gt=0)  # None: no rate limit (sent as fast as allowed)
    max_concurrency: int | None = Field(None, ge=1)  # the client's cap on requests in flight
    num_prompts: int = Field(ge=1)
    max_num_seqs: int | None = Field(None, ge=1)
    max_num_batched_tokens: int | None = Field(None, ge=1)  # the server's stated prompt-token budget per step
    # the first prompts of this run that an earlier run on the same server already sent: the
    # benchmark client draws its prompts from a fixed seed, so they repeat, and the engine's prefix
    # cache serves them (``derived`` from the run order in the source and the client's sampling)
    prompts_cached_at_start: Sourced | None = None
    measured: dict[Literal[LATENCY_METRICS], Sourced]  # type: ignore[valid-type]
    split: Literal["fit", "holdout"]
    caveats: tuple[str, ...] = ()
