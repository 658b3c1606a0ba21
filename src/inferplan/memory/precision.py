"""The precisions a deployment runs at: the weights' format and the KV cache's element type, checked
against what the engine loads and the accelerator runs natively."""

from __future__ import annotations

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema import Accelerator, KvDtype
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment


def weight_quantization(catalog: Catalog, d: Deployment, spec: ModelSpec, accel: Accelerator, engine_id: str) -> tuple[Quantization, list[str]]:
    """The weights' format: the stated one, else the model's native checkpoint, else BF16; notes when the
    accelerator runs it through a fallback. Raises (field ``quantization``) when the engine does not load it."""
    quant = catalog.quantization(planned_quantization(catalog, d, spec, engine_id))
    notes = []
    emulated = quant.emulation(accel, engine_id, d.engine_version)
    if emulated is not None:
        notes.append(f"{accel.name} runs no native {quant.id} kernels and {engine_id} emulates it: every forward "
                     f"dequantizes the weights into a {emulated.materialized_format} copy (weights held packed, the copy "
                     f"transient; more traffic than {emulated.materialized_format} weights)")
    elif not quant.native_on(accel):
        experts = quant.expert_emulation(accel, engine_id, d.engine_version) if has_routed_experts(spec) else None
        them = (f"; its routed experts are emulated: every forward dequantizes them into a "
                f"{experts.materialized_format} copy") if experts else ""
        notes.append(f"{accel.name} runs no native {quant.id} kernels: its weights run through a "
                     f"{quant.fallback_compute} fallback (same memory, slower compute){them}")
    arch = None if spec.architecture_is_proxy else spec.architecture
    if quant.needs_routed_experts and arch is not None and arch.moe is None:
        raise InvalidScenarioError(f"{quant.id} ({quant.name}) gives the routed experts fewer bits than the other "
                                   f"weights; {spec.name} has no routed experts", field="quantization",
                                   allowed=", ".join(f for f in model_formats(catalog, spec, engine_id)
                                                     if not catalog.quantization(f).needs_routed_experts))
    engine = catalog.engine(engine_id)
    if not engine.loads(quant, accel=accel, release=d.engine_version):
        loadable = ", ".join(q.id for q in catalog.quantizations
                             if engine.loads(q, accel=accel, release=d.engine_version))
        chosen = f"{quant.id} weights" if d.quantization else f"{spec.name}'s native {quant.id} checkpoint"
        raise InvalidScenarioError(
            f"{engine_id} does not load {chosen}{_where(engine, quant, accel, d.engine_version)}; choose a format it "
            "loads there", field="quantization", allowed=loadable)
    return quant, notes


def how_it_runs(quant: Quantization, accel: Accelerator, engine_id: str, release: str | None = None,
                routed_experts: bool = False) -> str:
    """How ``engine_id`` (at ``release``; None: its current one) runs ``quant``'s maths on ``accel``: "native",
    "fallback to <dtype> compute" (a fused weight-only kernel), "emulated in <dtype>" (the weights dequantized
    into a full copy every forward: ``Quantization.emulated_fallbacks``) or, for a model with ``routed_experts``
    under a rule for the experts alone, "experts emulated in <dtype>"."""
    if quant.native_on(accel):
        return "native"
    emulated = quant.emulation(accel, engine_id, release)
    if emulated is not None:
        return f"emulated in {emulated.materialized_format}"
    experts = quant.expert_emulation(accel, engine_id, release) if routed_experts else None
    if experts is not None:
        return f"experts emulated in {experts.materialized_format}"
    return f"fallback to {quant.fallback_compute} compute"


def has_routed_experts(spec: ModelSpec) -> bool:
    """Whether ``spec`` has routed experts (a rule emulating the experts alone applies to it)."""
    return spec.architecture is not None and spec.architecture.moe is not None


def _where(engine: EngineDefaults, quant: Quantization, accel: Accelerator, release: str | None) -> str:
    if engine.loads(quant, accel.software):  # loaded on this software stack, but with no fallback on this accelerator
        rule = quant.fallback(engine.id)
        at = f" before {rule.since}" if rule and rule.since else ""
        others = [r.engine for r in quant.fallback_engines or () if quant.falls_back(r.engine, release)]
        have = f": {', '.join(others)} {'has' if len(others) == 1 else 'have'} one" if others else ""
        return (f" on {accel.name}: it runs no native {quant.id} kernels, and {engine.id}{at} has no fallback for "
                f"{quant.id} there (quantizations.yaml fallback_engines{have})")
    if engine.loads(quant):  # loaded elsewhere, not on this accelerator's software
        return f" on {accel.name} (its {accel.software.value} back end loads other formats)"
    return f" (loaded by {', '.join(quant.engines)})"


def planned_quantization(catalog: Catalog, d: Deployment, spec: ModelSpec, engine_id: str) -> str:
    """The weight format a deployment runs: the stated one, else the model's native checkpoint (BF16
    when unknown). An engine that loads GGUF files only (``engine_flags.yaml`` ``model_source``) runs
    the native format where it has a GGUF type, else the model's published GGUF build (gpt-oss's
    MXFP4_MOE file for its MXFP4 checkpoint), else the native format. fit, perf and deploy all
    take the format from here."""
    if d.quantization:
        return d.quantization
    native = spec.native_quantization or "bf16"
    flags = flags_for(catalog, engine_id)
    if flags is None or flags.model_source != "gguf_file" or native in flags.gguf_tags:
        return native
    return next((q for q in spec.builds if q in flags.gguf_tags), native)


def model_formats(catalog: Catalog, spec: ModelSpec, engine_id: str, *, at_load: bool = True) -> dict[str, str]:
    """The weight formats ``spec`` exists in for ``engine_id``, each with where it comes from: the model's
    published builds (its card's; else its checkpoint's format, BF16 when unknown), then the formats the
    engine's own tools make from one of them (``engines.yaml`` ``converts_to`` from ``converts_from``), then,
    where ``at_load``, those its launcher quantizes one of them to when loading (``engine_flags.yaml``
    ``quantization`` ``values`` from ``quantize_from``: vLLM's and SGLang's ``--quantization fp8``). A format
    tied to another model (a build it alone is published in, a serving option of its own) is not among them."""
    builds = spec.builds or (spec.native_quantization or "bf16",)
    found = {b: "a published build" for b in builds}
    engine = catalog.engine(engine_id)
    base = next((b for b in builds if b in engine.converts_from), None)
    for q in engine.converts_to if base is not None else ():
        found.setdefault(q, f"converted from the {base} build")
    flags = flags_for(catalog, engine_id)
    rule = flags.settings.get("quantization") if flags is not None and at_load else None
    base = next((b for b in builds if rule is not None and b in rule.quantize_from), None)
    for q in rule.values if base is not None else ():
        found.setdefault(q, f"quantized from the {base} build at load")
    return found


def planned_weight_format(catalog: Catalog, d: Deployment, spec: ModelSpec, engine_id: str | None = None) -> Quantization:
    """The weight format ``d`` runs on ``engine_id`` (default: its own engine), as its catalogue record."""
    return catalog.quantization(planned_quantization(catalog, d, spec, engine_id or d.engine))


def check_kv_dtype(catalog: Catalog, engine_name: str, kv_cache_dtype: str) -> KvDtype:
    """A stated KV-cache element type, if the engine can run it (``engines.yaml`` ``kv_cache_dtypes``)."""
    kv = catalog.kv_cache_dtype(kv_cache_dtype)
    engine = catalog.engine(engine_name)
    if engine.kv_cache_dtypes and kv.id not in engine.kv_cache_dtypes:
        instead = engine.kv_cache_dtypes_instead.get(kv.id)
        others = [e.name for e in catalog.engines if kv.id in e.kv_cache_dtypes]
        hint = (f"; its nearest is {instead}" if instead else f"; {', '.join(others)} can" if others else
                "; no engine in the catalogue runs it (research code): size it with kv_bytes_per_token")
        raise InvalidScenarioError(f"{engine.name} has no {kv.id} KV cache{hint}", field="kv_cache_dtype",
                                   allowed="auto | " + " | ".join(engine.kv_cache_dtypes))
    return kv


def kv_cache_dtype_of(catalog: Catalog, d: Deployment, spec: ModelSpec) -> KvDtype:
    """The KV cache's element type: the stated one (if the engine runs it), else the engine's own
    default where it has one (llama.cpp's f16, whatever the model), else the checkpoint's (a ModelOpt FP8
    checkpoint, DeepSeek-V4's FP8 compressed cache where the engine stores FP8 on ``d``'s GPU, or the one
    an engine runs that cache in only: ``engines.yaml`` ``compressed_attention_kv_cache_dtypes``) or the
    model's dtype. A default the engine does not store on ``d``'s GPU is refused naming what was defaulted and why."""
    arch = spec.architecture
    v4 = arch is not None and arch.compressed is not None and not spec.architecture_is_proxy
    if d.kv_cache_dtype != "auto":
        kv = check_kv_dtype(catalog, d.engine, d.kv_cache_dtype)
        engine = catalog.engine(d.engine)
        only = engine.compressed_attention_kv_cache_dtypes if v4 else ()
        if only and kv.id not in only:
            raise InvalidScenarioError(f"{_runs_only(engine, spec.name)} ({engine.compressed_attention_kv_cache_dtypes_note})",
                                       field="kv_cache_dtype", allowed="auto | " + " | ".join(only))
        return kv
    engine = catalog.engine(d.engine)
    only = engine.compressed_attention_kv_cache_dtypes if v4 else ()
    accel = catalog.accelerators.records[catalog.system(d.system, "system").accelerator] if d.system else \
        catalog.accelerator(d.gpu) if d.gpu else None
    stored = engine.kv_dtypes_on(accel.software if accel else None)
    # an engine that runs the V4 cache in one type only takes it (refused below where it stores none); another
    # takes the checkpoint's FP8 where it stores it
    v4_default = only[0] if only else "fp8" if v4 and (not stored or "fp8" in stored) else None
    kv, why = _default_kv_dtype(catalog, d, spec, v4_default)
    if stored and kv.id not in stored:
        raise InvalidScenarioError(f"{engine.name} has no {kv.id} KV cache on {accel.name if accel else 'this GPU'}, "
                                   f"the KV cache {spec.name} gets when none is stated ({why}): state one it "
                                   "stores", field="kv_cache_dtype", allowed=" | ".join(stored))
    return kv


def _runs_only(engine: EngineDefaults, model: str) -> str:
    """That ``engine`` runs ``model``'s compressed-attention cache in its listed types only, in words."""
    kinds = " or ".join(k.upper() for k in engine.compressed_attention_kv_cache_dtypes)
    return f"{engine.name} runs {model}'s compressed-attention cache in {kinds} only"


def _default_kv_dtype(catalog: Catalog, d: Deployment, spec: ModelSpec, v4_default: str | None) -> tuple[KvDtype, str]:
    """The KV-cache element type ``d`` gets with none stated, and why (``v4_default``: a DeepSeek-V4 model's,
    the one its engine runs that cache in only, or FP8 where the engine stores it on ``d``'s GPU; elsewhere
    the model's own default)."""
    arch = spec.architecture
    engine = catalog.engine(d.engine)
    if engine.kv_cache_dtype_default is not None:  # llama.cpp: -ctk/-ctv f16 unless told, whatever the weights (it has no FP8 cache)
        return catalog.kv_cache_dtype(engine.kv_cache_dtype_default), "the engine's own default"
    if v4_default is not None:  # DeepSeek-V4: its 584-byte FP8 entries are what the figures assume
        only = engine.compressed_attention_kv_cache_dtypes
        why = _runs_only(engine, "DeepSeek-V4") if only else "the checkpoint's compressed-attention cache is FP8"
        return catalog.kv_cache_dtype(v4_default), why
    if arch and arch.quant and arch.quant.kv_cache_dtype and not spec.architecture_is_proxy:
        return catalog.kv_cache_dtype(arch.quant.kv_cache_dtype), "the checkpoint's quantization config names it"
    dtype = arch.torch_dtype if arch else "bfloat16"
    return catalog.kv_cache_dtype("fp16" if dtype == "float16" else "bf16"), "the model's own dtype"


def check_metal_instance(engine: EngineDefaults, accel: Accelerator, kv: KvDtype, tensor_parallel_size: int,
                         pipeline_parallel_size: int) -> None:
    """Refuse what the engine's Metal back end does not run on an Apple GPU (``engines.yaml``
    ``metal_max_instance_gpus``, ``metal_kv_cache_dtypes``): an instance over more GPUs (an error naming
    the parallel size) or a KV cache it does not store (naming ``kv_cache_dtype``)."""
    most = engine.max_instance_gpus(accel.software)
    for name, size in (("tensor_parallel_size", tensor_parallel_size), ("pipeline_parallel_size", pipeline_parallel_size)):
        if most is not None and size > most:
            raise InvalidScenarioError(f"{engine.name} runs {most} GPU an instance on {accel.name}: "
                                       f"{engine.metal_max_instance_gpus_note}", field=name, allowed=str(most))
    stored = engine.kv_dtypes_on(accel.software)
    if stored and kv.id not in stored:
        why = f": {engine.metal_kv_cache_dtypes_note}" if engine.metal_kv_cache_dtypes_note else ""
        raise InvalidScenarioError(f"{engine.name} has no {kv.id} KV cache on {accel.name}{why}", field="kv_cache_dtype",
                                   allowed="auto | " + " | ".join(stored))
