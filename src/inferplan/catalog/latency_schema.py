"""Published serving runs that report latency percentiles at a stated load (``latency_points``), how the
benchmark clients that ran them draw request lengths (``benchmark_datasets``), and how a benchmark tool sizes
the batch limits of a run that states none (``bench_tunings``)."""

from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.provenance import Bytes, Count, Ratio, Sourced
from inferplan.catalog.schema import SLUG, Frozen
from inferplan.errors import CatalogError

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


class BenchmarkDataset(Frozen):
    """How the benchmark client of ``engine`` (``LatencyPoint.engine``: vLLM's benchmark_serving, SGLang's
    bench_serving) spreads the prompt and output lengths of a ``dataset`` around the means a run states: each
    length's squared coefficient of variation (variance over the squared mean; 0: every request the same) and
    the shape of their distribution."""

    id: str = Field(pattern=SLUG)
    engine: str  # engines.yaml id whose client ran the benchmark
    dataset: str  # LatencyPoint.dataset: random | sharegpt
    prompt_scv: Ratio
    output_scv: Ratio
    shape: Literal["uniform", "lognormal"]
    shape_source: str
    note: str = ""


class RoundingStep(Frozen):
    """Values below ``below`` (None: every larger one) round up to a multiple of ``multiple``."""

    below: float | None = None
    multiple: int = Field(ge=1)


class BenchTuning(Frozen):
    """How a benchmark tool (``id``: trtllm-bench) sets max_batch_size and max_num_tokens for a run that states
    neither, from the KV cache it expects (``validation/bench_limits.py``): the share of free memory it gives
    the cache, the caps on sequences and tokens, and the steps and least values it rounds them up to."""

    id: str = Field(pattern=SLUG)
    engine: str  # engines.yaml id of the engine the tool runs
    # the weight formats whose limits it tunes (its TUNED_QUANTS; for others it keeps the engine's defaults),
    # with the bytes per stored element it counts for each (its BYTES_PER_ELEM, by the checkpoint's quant_algo)
    tuned_formats: dict[str, Bytes] = Field(min_length=1)
    kv_free_fraction: Ratio
    max_sequences: Count  # the cap on the whole batch before it is split over pipeline stages
    max_tokens: Count
    least_batch: Count
    batch_steps: tuple[RoundingStep, ...] = Field(min_length=1)
    least_tokens: Count
    token_steps: tuple[RoundingStep, ...] = Field(min_length=1)
    steps_source: str
    note: str = ""

    @model_validator(mode="after")
    def _steps_rise_to_an_open_one(self) -> "BenchTuning":
        for steps in (self.batch_steps, self.token_steps):
            bounds = [s.below for s in steps[:-1]]
            if steps[-1].below is not None or None in bounds or bounds != sorted(bounds):
                raise ValueError("rounding steps rise by 'below', the last one open (no 'below')")
        return self


def check_benchmark_clients(catalog) -> None:
    """Each (client, dataset) has one record, its sources are known, and every latency point's has one; each
    tool's rounding steps name a known source (``catalog`` untyped: the loader imports this module)."""
    for tuning in catalog.bench_tunings:
        if tuning.steps_source not in catalog.sources or tuning.engine not in catalog.engines:
            raise CatalogError(f"bench_tunings:{tuning.id}: unknown steps_source {tuning.steps_source!r} or engine "
                               f"{tuning.engine!r}", field=tuning.id)
        if stray := set(tuning.tuned_formats) - set(catalog.quantizations.records):
            raise CatalogError(f"bench_tunings:{tuning.id}: tuned_formats names unknown weight formats "
                               f"{', '.join(sorted(stray))}", field=tuning.id)
    seen: dict[tuple[str, str], str] = {}
    for record in catalog.benchmark_datasets:
        key = (record.engine, record.dataset)
        if key in seen:
            raise CatalogError(f"benchmark_datasets:{record.id}: {record.engine} {record.dataset} is also {seen[key]}",
                               field=record.id)
        seen[key] = record.id
        if record.shape_source not in catalog.sources or record.engine not in catalog.engines:
            raise CatalogError(f"benchmark_datasets:{record.id}: unknown shape_source {record.shape_source!r} or "
                               f"engine {record.engine!r}", field=record.id)
    if not seen:  # a partial catalogue without the clients' file
        return
    for point in catalog.latency_points:
        if (point.engine, point.dataset) not in seen:
            raise CatalogError(f"latency_points:{point.id}: no benchmark_datasets record for {point.engine}'s client "
                               f"on {point.dataset}", field=point.id,
                               allowed=", ".join(f"{e} {d}" for e, d in seen))
