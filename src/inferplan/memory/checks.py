"""The checks a deployment passes before its memory is planned: the engine runs on the hardware and
the model, expert and pipeline parallelism have something to spread, tensor parallelism splits the
widths the engine divides over its ranks, and a context past the model's is treated as the engine treats it."""

from __future__ import annotations

from inferplan.catalog.flag_scope import check_flag_release, check_parallel_release, stated_release
from inferplan.catalog.flags_schema import check_choice, flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.engine_tiers import slot_limit
from inferplan.catalog.quantization_schema import Quantization
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.expert_split import expert_data_parallel
from inferplan.catalog.ollama import OLLAMA
from inferplan.memory.hardware import Hardware, runs_ollama_tag
from inferplan.memory.precision import planned_weight_format
from inferplan.memory.resolve import resolve_model
from inferplan.memory.tp_split import allowed_tp_sizes, tp_refusal


def has_experts(spec: ModelSpec) -> bool:
    arch = spec.architecture
    if arch is not None and not spec.architecture_is_proxy:
        return arch.moe is not None
    return bool(spec.active_params and spec.total_params and spec.active_params < spec.total_params) or bool(arch and arch.moe)


def _check_runs_on(catalog: Catalog, engine, accel) -> None:
    """An engine plans only on accelerators whose software stack it runs on (TensorRT-LLM: CUDA)."""
    if engine.runs_on and accel.software not in engine.runs_on:
        usable = [e.id for e in catalog.engines if not e.runs_on or accel.software in e.runs_on]
        raise InvalidScenarioError(
            f"{engine.name} does not run on {accel.name} ({accel.software.value}); it runs on "
            f"{', '.join(s.value for s in engine.runs_on)}", field="engine", allowed=" | ".join(usable))


def _check_eager(catalog: Catalog, d: Deployment, engine) -> None:
    """--enforce-eager only for an engine whose launcher takes it (engine_flags.yaml)."""
    flags = flags_for(catalog, engine.id)
    if d.enforce_eager and (flags is None or "enforce_eager" not in flags.settings):
        takers = [f.engine for f in catalog.engine_flags if "enforce_eager" in f.settings]
        raise InvalidScenarioError(f"{engine.name} has no enforce_eager setting", field="enforce_eager",
                                   allowed=f"leave it off, or an engine that takes it: {', '.join(takers)}")


def _check_runner(catalog: Catalog, d: Deployment, engine) -> None:
    """A MoE runner backend only for an engine whose launcher takes one, and one of the values it accepts
    (engine_flags.yaml)."""
    flags = flags_for(catalog, engine.id)
    if d.moe_runner_backend and (flags is None or "moe_runner_backend" not in flags.settings):
        takers = [f.engine for f in catalog.engine_flags if "moe_runner_backend" in f.settings]
        raise InvalidScenarioError(f"{engine.name} has no MoE runner backend setting", field="moe_runner_backend",
                                   allowed=f"leave it out, or an engine that takes it: {', '.join(takers)}")
    check_choice(catalog, engine.id, "moe_runner_backend", d.moe_runner_backend)
    for field in ("max_mamba_cache_size", "mamba_full_memory_ratio"):  # a hybrid model's state pool (memory/state_pool.py)
        if getattr(d, field) is not None and (flags is None or field not in flags.settings):
            takers = [f.engine for f in catalog.engine_flags if field in f.settings]
            raise InvalidScenarioError(f"{engine.name} has no {field} setting: it keeps a hybrid model's recurrent state "
                                       "inside its one KV pool", field=field,
                                       allowed=f"leave it out, or an engine that takes it: {', '.join(takers)}")


def _check_flag_releases(catalog: Catalog, d: Deployment, engine, tp: int, pp: int) -> None:
    """A setting stated for a release older than its flag (engine_flags.yaml ``first_release``) is refused; a
    parallel size as the plan runs it, only above 1 (the launch writes no flag for 1: ``deploy/flag_args.py``)."""
    flags = flags_for(catalog, engine.id)
    sizes = {"tensor_parallel_size": tp, "pipeline_parallel_size": pp}
    for setting, rule in flags.settings.items() if flags is not None else ():
        value = sizes.get(setting, getattr(d, setting, None))
        if value is not None and value is not False and not (setting in sizes and value == 1):
            check_flag_release(rule, setting, stated_release(d),
                               "1" if setting in sizes else "off" if value is True else "none stated")
    if flags is not None:  # data-parallel ranks run as attention data parallelism: its switch, as the search reads it
        check_parallel_release(flags, stated_release(d), d.data_parallel_size or 1, d.enable_expert_parallel)


def _check_moe_kernel(catalog: Catalog, d: Deployment, engine) -> None:
    """A named MoE kernel is one the engine has (engine_moe_kernels.yaml), whatever the model: a name
    that only applies to other experts is checked where it applies (catalog.moe_kernels)."""
    kernels = [k.id for k in catalog.moe_kernels if k.engine == engine.id]
    if d.moe_kernel is not None and d.moe_kernel not in kernels:
        raise InvalidScenarioError(f"{engine.name} has no MoE kernel {d.moe_kernel!r}", field="moe_kernel",
                                   allowed=", ".join(kernels) or "none: leave it out")


def _check_sampler(catalog: Catalog, d: Deployment, engine) -> None:
    """A named top-k/top-p sampler only for an engine whose start-up profile runs a sampler pass
    (engine_memory_rules.yaml: a rule with a sampler_constant); elsewhere it would change nothing."""
    def samples(engine_id: str) -> bool:
        return any(r.activation.sampler_constant for r in catalog.memory_rules if r.engine == engine_id)

    if d.topk_topp_sampler is not None and not samples(engine.id):
        takers = sorted({r.engine for r in catalog.memory_rules if samples(r.engine)})
        raise InvalidScenarioError(f"{engine.name} profiles no top-k/top-p sampler pass at start-up",
                                   field="topk_topp_sampler", allowed=f"leave it out, or an engine that does: {', '.join(takers)}")


def _check_slots(catalog: Catalog, d: Deployment, engine) -> None:
    """A stated slot count within the most the release opens (engines.yaml ``max_slots``: llama.cpp's
    llama_context refuses an n_seq_max past LLAMA_MAX_SEQ, so llama-server does not start). An Ollama tag's
    build runs on the llama-server build its Ollama release starts (ollama.yaml ``llamacpp_build``), which
    takes OLLAMA_NUM_PARALLEL as its slots with no bound of Ollama's own."""
    if d.max_num_seqs is None:
        return
    launch = catalog.ollama_runners.records[OLLAMA].launch if runs_ollama_tag(catalog, d) else None
    build = launch.llamacpp_build if launch and not d.engine_version else None
    limit = slot_limit(engine.max_slots, build or stated_release(d))
    if limit is None or d.max_num_seqs <= limit:
        return
    at = f"engine_version {d.engine_version}" if d.engine_version else "its newest release"
    what, who = f"max_num_seqs {d.max_num_seqs:,}", f"{engine.name} at {at}"
    if build:
        var = launch.env.get("max_num_seqs", "max_num_seqs")
        what = f"max_num_seqs {d.max_num_seqs:,} (Ollama's {var})"
        who = f"Ollama {launch.release} starts llama-server {build} ({launch.llamacpp_build_source}), which"
    raise InvalidScenarioError(f"{what}: {who} opens at most {limit:,} slots and refuses to start with more "
                               f"({engine.max_slots_source})", field="max_num_seqs", allowed=f"1 to {limit:,}")


def checked_engine(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, tp: int, pp: int) -> EngineDefaults:
    """The deployment's engine, once the model, the engine and the layout are known to go together."""
    if spec.architecture is None and d.kv_bytes_per_token is None:
        raise InvalidScenarioError(
            f"{spec.name}: its architecture is not published in the catalogue, so its KV cache "
            "cannot be sized; give its config.json as model, or state the KV bytes per token "
            "as kv_bytes_per_token",
            field="kv_bytes_per_token", names=("model", "kv_bytes_per_token"),
        )
    engine = catalog.engine(d.engine)
    _check_runs_on(catalog, engine, hw.accel)
    if d.enable_expert_parallel and not has_experts(spec):
        raise InvalidScenarioError(f"{spec.name} is a dense model: it has no experts to spread over GPUs",
                                   field="enable_expert_parallel", allowed="leave it off for a dense model")
    if d.enable_expert_parallel and engine.expert_parallel is False:
        takers = ", ".join(e.id for e in catalog.engines if e.expert_parallel)
        raise InvalidScenarioError(f"{engine.name} does not spread experts over GPUs ({engine.expert_parallel_source})",
                                   field="enable_expert_parallel", allowed=f"leave it off, or an engine that does: {takers}")
    if d.moe_kernel is not None and not has_experts(spec):  # a kernel for experts would change nothing
        raise InvalidScenarioError(f"{spec.name} is a dense model: it has no experts for an MoE kernel to run",
                                   field="moe_kernel", allowed="leave it out for a dense model")
    _check_runner(catalog, d, engine)
    _check_flag_releases(catalog, d, engine, tp, pp)
    _check_eager(catalog, d, engine)
    _check_moe_kernel(catalog, d, engine)
    _check_sampler(catalog, d, engine)
    _check_slots(catalog, d, engine)
    dp = d.data_parallel_size or 1  # the routed experts split over TP x the ranks that share them (expert_split.py)
    experts_tp = tp * expert_data_parallel(engine, data_parallel=dp, expert_parallel=d.enable_expert_parallel,
                                           launched=d.data_parallel_size is not None)
    _check_tp_split(spec, engine, tp, d.enable_expert_parallel, planned_weight_format(catalog, d, spec), experts_tp)
    layers = spec.architecture.num_layers if spec.architecture and not spec.architecture_is_proxy else 0
    if layers and pp > layers:
        raise InvalidScenarioError(f"{spec.id} has {layers} layers: a pipeline stage needs at least one",
                                   field="pipeline_parallel_size", allowed=f"1 to {layers}")
    return engine


def check_context(d: Deployment, spec: ModelSpec, engine: EngineDefaults) -> tuple[list[str], int | None]:
    """A max_model_len past the model's context, as the engine treats it (engines.yaml
    ``context_beyond_model``): an error where it refuses it, the model's context where it caps it
    (returned as the length to plan at), a note where it runs it."""
    if not (d.max_model_len and spec.context_tokens and d.max_model_len > spec.context_tokens):
        return [], None
    limit, why = spec.context_tokens, f" ({engine.context_beyond_model_note})" if engine.context_beyond_model_note else ""
    if engine.context_beyond_model == "refuse":
        raise InvalidScenarioError(
            f"max_model_len {d.max_model_len:,} is longer than {spec.id}'s context of {limit:,} tokens, "
            f"which {engine.id} refuses (a longer context needs RoPE scaling: import a config.json whose rope_scaling "
            "opens it)", field="max_model_len", allowed=f"at most {limit:,} tokens")
    if engine.context_beyond_model == "cap":
        return [f"max_model_len {d.max_model_len:,} is past {spec.id}'s context of {limit:,} tokens: {engine.id} "
                f"serves at most {limit:,}{why}"], limit
    return [f"max_model_len {d.max_model_len:,} is past {spec.id}'s trained context of {limit:,} tokens: "
            f"{engine.id} runs it, but the model was not trained that long{why}"], None


def _check_tp_split(spec: ModelSpec, engine: EngineDefaults, tp: int, expert_parallel: bool,
                    quant: Quantization, experts_tp: int) -> None:
    """The engine divides the model's widths evenly over the tensor-parallel ranks, the routed experts'
    over the ``experts_tp`` GPUs of its MoE layers' tensor-parallel group (memory/tp_split.py)."""
    refused = tp_refusal(spec, engine, tp, expert_parallel=expert_parallel, quant=quant, expert_tp=experts_tp)
    if refused is not None and refused.experts and experts_tp != tp:
        sizes = ", ".join(str(n) for n in allowed_tp_sizes(spec, engine, quant=quant, experts_only=True))
        raise InvalidScenarioError(
            f"{spec.name} has {refused.count} {refused.what}, which {engine.id} cannot split over {experts_tp} GPUs: "
            f"without expert parallelism its MoE layers' tensor-parallel group spans the {experts_tp // tp} "
            f"data-parallel ranks (TP {tp} x DP {experts_tp // tp}, {engine.moe_tp_spans_data_parallel_source})",
            field="data_parallel_size", allowed=f"TP x DP one of {sizes}, or enable_expert_parallel")
    if refused is not None:
        how = " (a size must divide them, or be a multiple of them)" if refused.replicates else ""
        raise InvalidScenarioError(
            f"{spec.name} has {refused.count} {refused.what}, which {engine.id} cannot split over {tp} "
            f"tensor-parallel ranks{how}",
            field="tensor_parallel_size",
            allowed=", ".join(str(n) for n in allowed_tp_sizes(spec, engine, expert_parallel=expert_parallel, quant=quant)),
        )


def check_runs_on(catalog: Catalog, d: Deployment, hw: Hardware) -> None:
    """The deployment's engine runs on its accelerator (what a plan checks first, for a model the
    catalogue cannot resolve too)."""
    _check_runs_on(catalog, catalog.engine(d.engine), hw.accel)


def check_ranks_share_experts(catalog: Catalog, d: Deployment) -> None:
    """A replica cell's data-parallel ranks (``d.data_parallel_size`` above 1) are one cell only where
    they share a mixture-of-experts model's experts: with expert parallelism, or on an engine whose MoE
    tensor-parallel group spans the ranks one launch states (engines.yaml ``moe_tp_spans_data_parallel``,
    vLLM's default); else they are copies, separate cells the loadout packs by itself."""
    if (d.data_parallel_size or 1) < 2 or d.enable_expert_parallel:
        return
    engine = catalog.engine(d.engine)
    spec = resolve_model(catalog, d.model)
    if has_experts(spec) and engine.moe_tp_spans_data_parallel:
        return
    takers = ", ".join(e.id for e in catalog.engines if e.moe_tp_spans_data_parallel)
    why = (f"{spec.name} is a dense model" if not has_experts(spec)
           else f"{engine.name}'s data-parallel ranks are copies that share no experts")
    raise InvalidScenarioError(f"data_parallel_size above 1 without expert parallelism: {why}, so each rank is a separate "
                               "replica cell, which the loadout packs by itself", field="data_parallel_size",
                               allowed=f"1, or enable_expert_parallel: true, or a mixture-of-experts model on {takers} "
                                       "(its MoE layers split the experts over TP x DP)")
