"""The serving estimate's notes in words: its fixed costs, what crossing pipeline stages costs, how
llama.cpp batches a prompt, what unpacking K-quant super-blocks costs and what padding GEMMs to
tensor-core tiles costs (``serving.py`` states them beside the figures)."""

from __future__ import annotations

from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.memory_rules import memory_rule
from inferplan.errors import InferplanError
from inferplan.performance.context import ServingContext
from inferplan.performance.phases import StepTime, overhead_s, overlapped


# Where fixed costs dominate, the measured points spread most: one set of constants per engine
# serves builds from 2023 to 2026 (docs/speed.md, "What misses and why").
FIXED_COST_CAVEAT = (
    "fixed costs dominate this step; they differ most between engine builds and GPU generations: measured "
    "2026 builds run some models 1.5-2.7x faster at low concurrency than these constants (TensorRT-LLM on "
    "GB200, vLLM gpt-oss on 8x H100), older builds slower (docs/speed.md)"
)


def graphs_note(record: EngineDefaults, enforce_eager: bool, batch: float | None = None,
                graph_batch: int | None = None) -> str | None:
    """What a speed figure on the engine ``record`` assumes of CUDA graphs (None: an engine that captures none,
    ``engines.yaml`` ``captures_decode_graphs``): captured, the engine's default. An eager launch is planned
    without them in memory only: no speed effect of it is modelled, so the figure still assumes them, and says
    so. A decode step of ``batch`` sequences above ``graph_batch``, the largest the engine captures, runs
    without them too, and the note says that."""
    if not record.captures_decode_graphs:
        return None
    engine = record.id
    slower = "eager decode runs slower, by 0.3-0.8 ms per layer in the measured runs, which this estimate does not include"
    if enforce_eager:
        return (f"{engine} without CUDA graphs (--enforce-eager): counted in memory (no graphs captured or reserved), "
                f"but the speed figures assume CUDA graphs: {slower}")
    if batch is not None and graph_batch is not None and batch > graph_batch:
        return (f"{engine} captures decode steps as CUDA graphs up to a batch of {graph_batch:,} in this launch; "
                f"a step of {batch:,.0f} running sequences runs without them, and the speed figures "
                f"still assume them: {slower}")
    return f"{engine} with CUDA/HIP graphs on (its default); {slower}"


def fixed_costs(ctx: ServingContext, running: int) -> str:
    """The decode step's fixed costs for this deployment, in words: they dominate small models on
    fast GPUs, so the per-step figure alone would hide most of them."""
    r, work = ctx.rates, ctx.work
    per_step = ctx.requests_per_micro_batch(running)  # a stage steps one micro-batch at a time
    parts = [f"{r.layer_overhead_s * 1e6:.0f} µs × {work.num_layers / work.pp:g} layers"]
    if work.moe_layers and r.moe_layer_overhead_s:
        parts.append(f"{r.moe_layer_overhead_s * 1e6:.0f} µs × {work.moe_layers} MoE layers")
    if work.hc_seams:
        parts.append(f"{r.hc_seam_s * 1e6:.0f} µs × {work.hc_seams:g} hyper-connection seams (mHC pre and post of every "
                     "sublayer, on every tensor-parallel rank; the fused TileLang kernels' published time on SGLang and "
                     "vLLM, not fitted)")
    if r.step_overhead_s:
        parts.append(f"{r.step_overhead_s * 1e3:.2f} ms per step")
    if r.seq_overhead_s:
        parts.append(f"{r.seq_overhead_s * 1e6:.0f} µs × {per_step:.4g} running sequences"
                     + (f" of a micro-batch ({running} in {ctx.pp})" if ctx.pp > 1 and running > 1 else ""))
    total = overhead_s(work, r, per_step)
    return f"fixed costs {total * 1e3:.2f} ms per decode step per stage ({' + '.join(parts)})"


def hop_note(ctx: ServingContext, running: int) -> str:
    """What crossing the pipeline's stage boundaries costs (and its share of a decode round), or
    that the engine has no figure for it."""
    r, d = ctx.rates, ctx.d
    if not r.pipeline_hop_fitted:
        return (f"pipeline stage boundaries: no host cost per request for {d.engine} (no measured pipeline-parallel "
                "serving run to fit one; TensorRT-LLM's measured runs pay one, which would cut throughput at this "
                "batch by the share its note gives, docs/speed.md), so this may be optimistic")
    hops, round_s = ctx.boundary_host_s(ctx.requests_per_micro_batch(running)), ctx.iteration(running, 0.0)[1]
    return (f"pipeline stage boundaries: {r.pipeline_hop_s_per_request * 1e6:.0f} µs per request of a micro-batch at each "
            f"of the {ctx.pp - 1} boundaries ({d.engine}'s host work between stages): {hops * 1e3:.1f} ms of a "
            f"{round_s * 1e3:.1f} ms decode round at {running} running ({hops / round_s:.0%}); fitted on one "
            "v1.0-era table (Llama 3.3 70B on PCIe RTX PRO 6000, PP 2 and 4; checked on its PP 8 rows), docs/speed.md")


def prompt_note(ctx: ServingContext) -> str | None:
    """How the prompt is batched where the engine splits its chunks (llama.cpp's n_ubatch), and a
    stated micro-batch the chunk caps."""
    settings, asked = ctx.mp.settings, ctx.d.ubatch_size
    capped = (f"--ubatch-size {asked} is capped at the {settings.max_num_batched_tokens}-token n_batch, as llama.cpp caps it "
              "(raise --max-num-batched-tokens too)") if asked and asked > settings.prefill_micro_batch_tokens else None
    if settings.prefill_micro_batch_tokens >= settings.max_num_batched_tokens:
        return capped
    split = (f"prompts run in micro-batches of {settings.prefill_micro_batch_tokens} tokens (of "
             f"{settings.max_num_batched_tokens}-token chunks; --ubatch-size), each reading the weights it touches again "
             "and paying the step's fixed costs" + (f", pipelined over the {ctx.pp} stages" if ctx.pp > 1 else ""))
    return split


def unpack_note(ctx: ServingContext, step: StepTime, running: int) -> str:
    """How much of a decode step unpacking K-quant super-blocks costs (the ALU work that makes
    GPUs with few FLOP/s per byte, such as Apple M1, slower than their bandwidth with these formats)."""
    unpack = ctx.work.unpack_flops_per_gpu(ctx.work.weights_read_per_gpu(running), ctx.rates.unpack_flops_per_weight)
    return (f"{ctx.mp.gpu_format.id} unpacks super-block scales: {ctx.rates.unpack_flops_per_weight:.1f} FLOP-equivalents "
            f"per weight (fitted), {unpack / ctx.rates.achievable_flop_per_s * 1e3:.2f} ms of compute per decode "
            f"step {_beside_memory(step)}")


def padding_note(ctx: ServingContext, step: StepTime) -> str | None:
    """What padding the step's weight GEMMs to tensor-core tiles costs, when it has fewer rows than a
    tile (the compute that makes low-FLOP GPUs such as the H20 slower at batch 1 than their
    bandwidth); None when its rows fill the tiles or the engine's kernels do not pad."""
    if not step.padding_s:
        return None
    tile = f"at least {ctx.rates.gemm_min_rows:g} rows (an expert's rows are the tokens routed to it; calibrated)"
    if ctx.rates.weight_gemm_row_blocks:
        blocks = " or ".join(f"{b:g}" for b in ctx.rates.weight_gemm_row_blocks)
        tile = (f"{blocks} rows for the {ctx.mp.gpu_format.id} weights (the weight-only kernel's blocks, read from its source) and at "
                f"least {ctx.rates.gemm_min_rows:g} for the 16-bit lm_head (calibrated)")
    return (f"{ctx.d.engine}'s weight GEMMs run tensor-core tiles of {tile}: {step.padding_s * 1e3:.2f} ms of padded "
            f"compute per step{' of a stage' if ctx.pp > 1 else ''} {_beside_memory(step)}")


def _beside_memory(step: StepTime) -> str:
    """How a part of a step's compute sits beside its memory traffic (the power mean of the two)."""
    return (f"beside {step.memory_s * 1e3:.2f} ms of memory traffic; with the step's other compute they take "
            f"{overlapped(step.memory_s, step.compute_s, step.overlap_exponent) * 1e3:.2f} ms together (power mean)")


def queue_note(ctx: ServingContext, concurrency: int, per_instance: int, running: int) -> str | None:
    """The headline's word on a running cap below the load (None: every request runs): how many requests queue,
    the cap and what sets it (a stated max_num_seqs, the release's own setting and its sources, the engine's
    default and its source, or a hybrid model's state slots), and the engine flag that raises it."""
    if per_instance <= running:
        return None
    at_once = min(running * ctx.dp, concurrency)
    each = f", {running:,} on each of {ctx.dp} ranks" if ctx.dp > 1 else ""
    flag, setting = ctx.mp.result.running_cap_flag, ctx.mp.result.running_cap_setting
    return (f"{concurrency - at_once:,} of the {concurrency:,} requests queue, their wait in TTFT: at most {at_once:,} "
            f"run at once{each}, as {_cap_origin(ctx, flag)}; the engine's {flag} raises the cap ({setting})")


def _cap_origin(ctx: ServingContext, flag: str) -> str:
    """What sets the running cap ``queue_note`` names."""
    d, s, fit = ctx.d, ctx.mp.settings, ctx.mp.result
    if fit.running_cap_setting == "max_mamba_cache_size":  # the state pool holds fewer than the engine's own cap
        return f"the model's state pool holds them ({flag})"
    if d.max_num_seqs:
        return f"max_num_seqs {d.max_num_seqs:,} is stated"
    if s.running_cause:
        return s.running_cause
    engine = ctx.catalog.engine(fit.engine)
    if s.running_from_pool:
        return f"{engine.name} sizes {flag} from its KV pool when none is given"
    sources = _default_sources(ctx, s.max_num_seqs)
    return f"{engine.name} defaults {flag} to {s.max_num_seqs:,}" + (f" ({', '.join(sources)})" if sources else "")


def _default_sources(ctx: ServingContext, value: int) -> tuple[str, ...]:
    """The sources of the default running cap ``value``: the planned release's own default (``running_defaults``),
    else engines.yaml's max_num_seqs of that value (none: a cap of the batch budget's tokens)."""
    release, engine = ctx.d.engine_version, ctx.catalog.engine(ctx.mp.result.engine)
    try:
        own = memory_rule(ctx.catalog, engine.id, release).running_default(release)
    except InferplanError:  # an engine with no release rules
        own = None
    if own is not None and value in (own.running_requests, own.with_draft):
        return own.sources
    return tuple(c.source for c in (engine.max_num_seqs, engine.small_gpu_max_num_seqs) if c is not None and c.value == value)[:1]
