"""The cross-references of a loaded catalogue, checked when it is built (``loader.load_files``).

A record's own fields are checked by its pydantic model; what one record says of others — the source
a rule or a checkpoint cites, the accelerator a system holds, the quantization a checkpoint is in, the
model a price or a rack curve is for, the model, GPU, engine and format a measured point ran — is
checked here, once every file is read, and a name that resolves to nothing raises ``CatalogError``
naming the record.
"""

from __future__ import annotations

from inferplan.catalog.ollama import OLLAMA
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.schema_base import Software
from inferplan.errors import CatalogError

# engines.yaml rules that are stated only with a source (``<rule>_source``): any value but the default
ENGINE_SOURCED_RULES = ("runs_on", "kv_cache_dtypes", "context_beyond_model", "embeddings_on_host", "pp_kv_room",
                        "pp_batch_limits", "captures_decode_graphs", "draft_model_memory_counted", "expert_parallel", "expert_parallel_redundant", "expert_parallel_needs_ranks",
                        "moe_tp_spans_data_parallel",
                        "pads_gemm_rows", "weight_only_gemm_row_blocks", "multi_gpu_split",
                        "tensor_parallel_splits", "offload_settings", "defaults_by_gpu_memory", "memory_fraction_reserve",
                        "reads_page_cache_as_used", "converts_to", "kv_cache_dtype_default", "metal_formats",
                        "metal_max_instance_gpus", "metal_kv_cache_dtypes", "compressed_attention_kv_cache_dtypes",
                        "attention_dp_chunk", "priced_at_16_bit", "backends", "default_on", "max_slots")


def check_references(catalog) -> None:
    """Every cross-reference of a loaded catalogue resolves: the sources, points, engines, weight formats,
    KV-cache dtypes, accelerators, systems and models its records name (``catalog`` untyped: the loader
    imports this module)."""
    # what a constant may be fitted on: measured points, or accelerators with a measured figure
    measured = {p.id for p in [*catalog.memory_points, *catalog.speed_points, *catalog.serving_profiles, *catalog.accelerators]}
    for constant in catalog.calibration:
        for source in constant.sources:
            if source not in catalog.sources:
                raise CatalogError(f"calibration:{constant.id}: unknown source {source!r}", field=constant.id)
        for point in constant.fitted_on:
            if measured and point not in measured:
                raise CatalogError(f"calibration:{constant.id}: fitted on unknown point {point!r}", field=constant.id)
    for quant in catalog.quantizations:
        for kept in quant.keeps_checkpoint_experts:
            if kept.source not in catalog.sources or kept.quantization not in catalog.quantizations:
                raise CatalogError(f"quantizations:{quant.id}: keeps_checkpoint_experts names an unknown source "
                                   f"{kept.source!r} or quantization {kept.quantization!r}", field=quant.id)
    for accel in catalog.accelerators:
        for source in (s for s in (accel.integrated_gpu_source, accel.page_cache_drop_command_source) if s):
            if source not in catalog.sources:
                raise CatalogError(f"accelerators:{accel.id}: unknown source {source!r}", field=accel.id)
    for system in catalog.systems:
        if system.accelerator not in catalog.accelerators:
            raise CatalogError(
                f"systems:{system.id}: unknown accelerator {system.accelerator!r}", field=system.id
            )
        host = system.price.host if system.price else None
        if host and (host not in catalog.cost_defaults or catalog.cost_defaults.records[host].usd is None):
            raise CatalogError(f"systems:{system.id}: price.host {host!r} is no cost default with a USD amount",
                               field=system.id)
    for model in catalog.models:
        for cp in model.checkpoints:
            if cp.quantization not in catalog.quantizations:
                raise CatalogError(
                    f"models:{model.id}: checkpoint {cp.name!r} has unknown quantization "
                    f"{cp.quantization!r}",
                    field=f"{model.id}.checkpoints",
                )
            for engine in cp.engines:
                if engine not in {e.id for e in catalog.engines}:
                    raise CatalogError(f"models:{model.id}: checkpoint {cp.name!r} names unknown engine {engine!r}",
                                       field=f"{model.id}.checkpoints")
            if cp.source and cp.source not in catalog.sources:
                raise CatalogError(f"models:{model.id}: checkpoint {cp.name!r}: unknown source {cp.source!r}",
                                   field=f"{model.id}.checkpoints")
            if cp.gguf_file and cp.gguf_file.source not in catalog.sources:
                raise CatalogError(f"models:{model.id}: checkpoint {cp.name!r} gguf_file: unknown source "
                                   f"{cp.gguf_file.source!r}", field=f"{model.id}.checkpoints")
            if cp.keeps_unquantized and cp.keeps_unquantized.source not in catalog.sources:
                raise CatalogError(f"models:{model.id}: checkpoint {cp.name!r} keeps_unquantized: unknown source "
                                   f"{cp.keeps_unquantized.source!r}", field=f"{model.id}.checkpoints")
        if model.config and not (catalog.data_dir / model.config).is_file():
            raise CatalogError(f"models:{model.id}: config file {model.config} missing", field=model.id)
        if model.config and model.config_source not in catalog.sources:
            raise CatalogError(f"models:{model.id}: config_source must name a known source", field=model.id)
        if model.kv_proxy and model.kv_proxy not in catalog.models:
            raise CatalogError(f"models:{model.id}: unknown kv_proxy {model.kv_proxy!r}", field=model.id)
        _check_ollama(catalog, model)
    check_ollama_runners(catalog)
    check_default_engines(catalog)

    for engine in catalog.engines:
        for rule in ENGINE_SOURCED_RULES:
            source = getattr(engine, f"{rule}_source")
            stated = getattr(engine, rule) != EngineDefaults.model_fields[rule].default
            if source and source not in catalog.sources:
                raise CatalogError(f"engines:{engine.id}: unknown source {source!r}", field=engine.id)
            if stated and not source:
                raise CatalogError(f"engines:{engine.id}: {rule} needs a {rule}_source", field=engine.id)
        for source in (s for family in engine.calibration_families for s in family.sources):
            if source not in catalog.sources:
                raise CatalogError(f"engines:{engine.id}: unknown source {source!r}", field=engine.id)
        for quant in (*engine.converts_to, *engine.converts_from, *(engine.metal_formats or ())):
            if quant not in catalog.quantizations:
                raise CatalogError(f"engines:{engine.id}: unknown weight format {quant!r}", field=engine.id)
        if engine.converts_to and not engine.converts_from:
            raise CatalogError(f"engines:{engine.id}: converts_to needs converts_from", field=engine.id)
        default_kv = (engine.kv_cache_dtype_default,) if engine.kv_cache_dtype_default else ()
        for dtype in (*engine.kv_cache_dtypes, *engine.kv_cache_dtypes_instead, *engine.kv_cache_dtypes_instead.values(),
                      *default_kv, *(engine.metal_kv_cache_dtypes or ()), *engine.compressed_attention_kv_cache_dtypes):
            if dtype not in catalog.kv_cache_dtypes:
                raise CatalogError(f"engines:{engine.id}: unknown KV-cache dtype {dtype!r}", field=engine.id)
    for quant in catalog.quantizations:
        for rule in quant.fallback_engines or ():
            if quant.engines and rule.engine not in quant.engines or rule.source not in catalog.sources:
                raise CatalogError(f"quantizations:{quant.id}: fallback of {rule.engine!r} names an engine that does not "
                                   f"load it or an unknown source {rule.source!r}", field=quant.id)
        for emu in quant.emulated_fallbacks:
            if (quant.engines and emu.engine not in quant.engines or emu.source not in catalog.sources
                    or emu.materialized_format not in catalog.quantizations):
                raise CatalogError(f"quantizations:{quant.id}: emulated fallback of {emu.engine!r} names an engine that "
                                   f"does not load it, an unknown source {emu.source!r} or an unknown format "
                                   f"{emu.materialized_format!r}", field=quant.id)
    for price in catalog.rental_prices:
        if price.accelerator not in catalog.accelerators:
            raise CatalogError(f"rental_prices:{price.id}: unknown accelerator {price.accelerator!r}", field=price.id)
        if price.nvlink_spans_rental_source and price.nvlink_spans_rental_source not in catalog.sources:
            raise CatalogError(f"rental_prices:{price.id}: unknown nvlink_spans_rental_source "
                               f"{price.nvlink_spans_rental_source!r}", field=price.id)
    for price in catalog.api_prices:
        if price.valid_until_source and price.valid_until_source not in catalog.sources:
            raise CatalogError(f"api_prices:{price.id}: unknown valid_until_source {price.valid_until_source!r}", field=price.id)
    for record in [*catalog.api_prices, *catalog.rack_profiles]:
        if record.model not in catalog.models:
            raise CatalogError(f"{type(record).__name__}:{record.id}: unknown model {record.model!r}", field=record.id)
    for rack in catalog.rack_profiles:
        if rack.system not in catalog.systems:
            raise CatalogError(f"rack_profiles:{rack.id}: unknown system {rack.system!r}", field=rack.id)
    versions = {(p.engine, p.engine_version) for p in catalog.speed_points}
    for build in catalog.engine_builds:
        if build.source not in catalog.sources:
            raise CatalogError(f"engine_builds:{build.id}: unknown source {build.source!r}", field=build.id)
        if catalog.speed_points and (build.engine, build.engine_version) not in versions:
            raise CatalogError(f"engine_builds:{build.id}: no speed point names this engine and version", field=build.id)
    for point in (p for p in catalog.speed_points if p.batch_limits_by):
        tool = catalog.bench_tunings.records.get(point.batch_limits_by)
        if tool is None or point.max_num_seqs or point.engine != tool.engine or point.kv_cache_dtype == "auto" \
                or point.quantization not in tool.tuned_formats:
            tuned = ", ".join(tool.tuned_formats) if tool else "none: the tool has no bench_tunings record"
            runs = (catalog.engines.records[tool.engine].short_name if tool and tool.engine in catalog.engines
                    else "the engine its bench_tunings record names")
            raise CatalogError(f"SpeedPoint:{point.id}: batch_limits_by {point.batch_limits_by} is for a run of "
                               f"{runs} that states no max_num_seqs (the tool chose it), in a format the tool "
                               f"tunes ({tuned}) and with its KV cache dtype stated", field=point.id)
    for point in catalog.memory_points:
        if point.measured.fits_source not in (None, *catalog.sources):
            raise CatalogError(f"MemoryPoint:{point.id}: fits_source: unknown source {point.measured.fits_source!r}",
                               field=f"{point.id}.measured.fits_source", allowed="the id of a source the catalogue lists")
    for point in [*catalog.memory_points, *catalog.speed_points, *catalog.serving_profiles]:
        for attr, registry in (("model", catalog.models), ("accelerator", catalog.accelerators),
                               ("engine", catalog.engines), ("quantization", catalog.quantizations)):
            if getattr(point, attr) not in registry:
                raise CatalogError(
                    f"{type(point).__name__}:{point.id}: unknown {attr} {getattr(point, attr)!r}", field=point.id
                )


def _check_ollama(catalog, model) -> None:
    """A card's Ollama tags each pull a build the card lists and Ollama's engine (ollama.yaml) loads, with known
    sources; a name spelt as a tag (``name:tag``) is listed among them, not as a plain alias (it would plan no
    build)."""
    if stray := [a for a in model.aliases if ":" in a]:
        raise CatalogError(f"models:{model.id}: {', '.join(stray)} is spelt as an Ollama tag: list it under "
                           "ollama_tags with the build it pulls", field=f"{model.id}.aliases")
    runner = catalog.ollama_runners.records.get(OLLAMA)
    if model.ollama_tags and runner is None:
        raise CatalogError(f"models:{model.id}: lists Ollama tags but the catalogue has no ollama runner "
                           "(ollama.yaml)", field=f"{model.id}.ollama_tags")
    builds = list(dict.fromkeys(cp.quantization for cp in model.checkpoints))
    for tag in model.ollama_tags:
        if tag.quantization not in builds:
            raise CatalogError(f"models:{model.id}: Ollama tag {tag.tag!r} pulls {tag.quantization!r}, which is no "
                               "checkpoint of the card", field=f"{model.id}.ollama_tags", allowed=", ".join(builds))
        if tag.source not in catalog.sources or tag.vision_projector_source not in (None, *catalog.sources):
            raise CatalogError(f"models:{model.id}: Ollama tag {tag.tag!r}: unknown source {tag.source!r} or "
                               f"{tag.vision_projector_source!r}",
                               field=f"{model.id}.ollama_tags")
        if not catalog.engines.records[runner.engine].loads(catalog.quantizations.records[tag.quantization]):
            raise CatalogError(f"models:{model.id}: Ollama tag {tag.tag!r}: {runner.engine} does not load "
                               f"{tag.quantization!r}", field=f"{model.id}.ollama_tags")


def check_ollama_runners(catalog) -> None:
    """Each Ollama runner names a known engine and sources, its context tiers largest first."""
    for runner in catalog.ollama_runners:
        if runner.engine not in catalog.engines or runner.engine_source not in catalog.sources:
            raise CatalogError(f"ollama_runners:{runner.id}: unknown engine {runner.engine!r} or source "
                               f"{runner.engine_source!r}", field=runner.id)
        if runner.launch is not None and (unknown := [s for s in runner.launch.sources() if s is not None
                                                      and s not in catalog.sources]):
            raise CatalogError(f"ollama_runners:{runner.id}: launch names unknown sources {', '.join(unknown)}",
                               field=f"{runner.id}.launch")
        kv_types = set(runner.launch.kv_cache_types) if runner.launch is not None else set()
        if stray := kv_types - set(catalog.kv_cache_dtypes.records):
            raise CatalogError(f"ollama_runners:{runner.id}: launch kv_cache_types names unknown KV-cache dtypes "
                               f"{', '.join(sorted(stray))}", field=f"{runner.id}.launch",
                               allowed=", ".join(catalog.kv_cache_dtypes.records))
        placed = runner.placement
        if placed is not None and {placed.source, placed.steps_source} - set(catalog.sources):
            raise CatalogError(f"ollama_runners:{runner.id}: placement: unknown source {placed.source!r} or "
                               f"{placed.steps_source!r}", field=f"{runner.id}.placement")
        if runner.single_gpu is not None and runner.single_gpu.source not in catalog.sources:
            raise CatalogError(f"ollama_runners:{runner.id}: single_gpu: unknown source {runner.single_gpu.source!r}",
                               field=f"{runner.id}.single_gpu")
        floors = [t.total_vram_bytes.value for t in runner.default_context]
        if floors != sorted(floors, reverse=True):
            raise CatalogError(f"ollama_runners:{runner.id}: default_context tiers go from the most VRAM down",
                               field=runner.id)


def check_default_engines(catalog) -> None:
    """No software stack has two engines planned on it by default (engines.yaml ``default_on``), and each
    such engine runs there; a stack with none is refused when a plan needs it (``memory.hardware.default_engine``)."""
    for software in Software:
        named = [e for e in catalog.engines if software in e.default_on]
        if len(named) > 1:
            raise CatalogError(f"engines: {len(named)} engines are the default on {software.value} "
                               f"({', '.join(e.id for e in named)})", field="default_on",
                               allowed="one engine per software stack")
        if named and named[0].runs_on and software not in named[0].runs_on:
            raise CatalogError(f"engines:{named[0].id}: the default on {software.value}, where it does not run "
                               "(runs_on)", field=named[0].id, allowed=", ".join(s.value for s in named[0].runs_on))
