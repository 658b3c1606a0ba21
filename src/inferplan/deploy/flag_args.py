"""How a deployment's settings become an engine's launch arguments, by its flag record.

Each function reads the rules of ``catalog/data/engine_flags.yaml`` (``FlagRule``, ``OptionRule``) for one
group of settings — parallel sizes, weight format, KV-cache dtype, offload — and returns the arguments it
adds, writing a setting the engine takes only from its options file into the ``options`` mapping instead.
A setting the launcher cannot take raises ``UnsupportedSettingError`` naming the setting and the engine.
``command.launch_command`` puts the groups together in the order the command line is written.
"""

from __future__ import annotations

from inferplan.catalog.flag_scope import option_rule
from inferplan.catalog.flags_schema import EngineFlags, FlagRule
from inferplan.catalog.loader import Catalog
from inferplan.deploy.checkpoint import ServedModel
from inferplan.deploy.stated import stated_or_default
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.precision import check_kv_dtype


def flag_rule(flags: EngineFlags, setting: str) -> FlagRule:
    """The rule of a setting the launcher takes as a flag; one it has no flag for raises naming the setting."""
    rule = flags.settings.get(setting)
    if rule is None:
        _no_launch(flags, setting)
    return rule




def set_option(options: dict, key: str, value: object) -> None:
    """Write ``value`` at a dotted ``key`` of the nested options."""
    *parents, last = key.split(".")
    for part in parents:
        options = options.setdefault(part, {})
    options[last] = value


def _no_launch(flags: EngineFlags, setting: str) -> None:
    raise UnsupportedSettingError(f"{flags.engine} {flags.version} has no launch flag for {setting}", field=setting,
                                  allowed=f"leave {setting} out, or an engine that takes it")


def emit(rule: FlagRule, value: object) -> list[str]:
    """The flag(s) of a rule given ``value`` (a switch: the bare flag when true, its negative form when false)."""
    if rule.switch:
        return list(rule.flags) if value else list(rule.off_flags) if value is False else []
    text = rule.value if rule.value is not None else rule.values.get(str(value), _number(value))
    return [part for flag in rule.flags for part in (flag, text)]


def _number(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def parallel_args(d: Deployment, flags: EngineFlags, options: dict) -> list[str]:
    """The flags of ``d``'s tensor, pipeline, data and expert parallelism (data-parallel ranks the engine runs as
    another size's ranks folded into it, in ``options`` where its options file takes them)."""
    argv: list[str] = []
    sizes = {s: getattr(d, s) or 1 for s in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")}
    folded = option_rule(flags, "data_parallel_size")
    if folded is not None and folded.folds_into and sizes["data_parallel_size"] > 1:  # TensorRT-LLM attention DP
        if sizes[folded.folds_into] > 1:
            raise UnsupportedSettingError(
                f"{flags.engine} runs data-parallel ranks as {folded.folds_into} ranks ({folded.key}), so it cannot also "
                f"split each rank {sizes[folded.folds_into]} ways", field="data_parallel_size",
                allowed=f"{folded.folds_into} 1 with data_parallel_size, or no data parallelism")
        set_option(options, folded.key, folded.value)
        sizes[folded.folds_into] *= sizes.pop("data_parallel_size")
    attention_dp = _attention_dp(d, flags, sizes)  # SGLang: --tp-size N --dp-size N --enable-dp-attention
    for setting, value in sizes.items():
        if value > 1:
            argv += emit(flag_rule(flags, setting), value)
    argv += attention_dp
    if d.enable_expert_parallel:
        rule = flag_rule(flags, "enable_expert_parallel")
        argv += emit(rule, sizes.get(rule.value_from, getattr(d, rule.value_from, None)) if rule.value_from else True)
    _one_value_per_flag(argv, flags)
    return argv


def _attention_dp(d: Deployment, flags: EngineFlags, sizes: dict[str, int]) -> list[str]:
    """Where the engine's data-parallel flag folds into another size (``FlagRule.folds_into``): that size
    multiplied by the data-parallel size in ``sizes``, and the switches the layout needs, to write after."""
    rule = flags.settings.get("data_parallel_size")
    if rule is None or rule.folds_into is None or sizes.get("data_parallel_size", 1) < 2 or \
            (rule.folds_with is not None and not getattr(d, rule.folds_with)):
        return []
    sizes[rule.folds_into] *= sizes["data_parallel_size"]
    return list(rule.switches)


def _one_value_per_flag(argv: list[str], flags: EngineFlags) -> None:
    """Two settings that map to one flag with different values cannot both be planned."""
    seen: dict[str, str] = {}
    for flag, value in zip(argv, argv[1:]):
        if flag.startswith("-") and not value.startswith("-"):
            if seen.setdefault(flag, value) != value:
                raise UnsupportedSettingError(
                    f"{flags.engine} takes one {flag}: it cannot be both {seen[flag]} and {value}",
                    field="pipeline_parallel_size", allowed="tensor or pipeline parallelism, not both")


# weights and KV cache in host RAM (memory/offload.py), in the order the flags are written
OFFLOAD_SETTINGS = ("n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kv_offloading_size", "kv_offloading_backend",
                    "hicache_ratio", "hicache_size")


def offload_args(d: Deployment, flags: EngineFlags) -> list[str]:
    """The engine's own flags for the offload settings ``d`` states; a rule's switches once, before its flag."""
    argv: list[str] = []
    for setting in OFFLOAD_SETTINGS:
        value, rule = getattr(d, setting), flags.settings.get(setting)
        if rule is not None and value is not None and rule.requires and getattr(d, rule.requires) is None:
            raise UnsupportedSettingError(f"{flags.engine} takes {setting} only with {rule.requires}", field=setting,
                                          allowed=f"state {rule.requires} too, or leave {setting} out")
        value = stated_or_default(d, flags, setting)
        if value is None:
            continue
        rule = flag_rule(flags, setting)
        if rule.whole_number and isinstance(value, float):
            value = _whole(flags, setting, value)
        argv += [switch for switch in rule.switches if switch not in argv] + emit(rule, value)
    return argv


def _whole(flags: EngineFlags, setting: str, value: float) -> int:
    """``value`` as the integer an engine that parses it with ``type=int`` takes."""
    if not value.is_integer():
        raise UnsupportedSettingError(f"{flags.engine} takes {setting} as a whole number, not {value:g}", field=setting,
                                      allowed="a whole number")
    return int(value)


def quantization_args(served: ServedModel, flags: EngineFlags) -> list[str]:
    """A flag only where the engine quantizes at load; a pre-quantized checkpoint carries its format."""
    if served.quantization is None or served.quantization_in_checkpoint:
        return []
    rule = flags.settings.get("quantization")
    if rule is None or served.quantization not in rule.values:
        if rule is not None and served.quantization in rule.no_flag:
            return []
        raise UnsupportedSettingError(
            f"{flags.engine} cannot quantize {served.checkpoint} to {served.quantization} at load, and the catalogue "
            f"names no {served.quantization} checkpoint of it", field="quantization",
            allowed=", ".join(sorted(rule.values)) if rule and rule.values else "a pre-quantized checkpoint")
    return emit(rule, served.quantization)


def kv_args(d: Deployment, catalog: Catalog, flags: EngineFlags, options: dict) -> list[str]:
    """The KV-cache dtype's flag, or its entry in ``options`` where the engine reads it from its options file."""
    if d.kv_cache_dtype == "auto":
        return []
    kv = check_kv_dtype(catalog, d.engine, d.kv_cache_dtype)
    option = option_rule(flags, "kv_cache_dtype")
    if option is not None and kv.id not in option.no_flag:
        if kv.id not in option.values:
            raise UnsupportedSettingError(f"{flags.engine} {flags.version} has no option value for a {kv.id} KV cache",
                                          field="kv_cache_dtype", allowed="auto, " + ", ".join(sorted(option.values)))
        set_option(options, option.key, option.values[kv.id])
        return []
    rule = flag_rule(flags, "kv_cache_dtype")
    if kv.id in rule.no_flag:
        return []
    if kv.id not in rule.values:
        raise UnsupportedSettingError(f"{flags.engine} {flags.version} has no launch value for a {kv.id} KV cache",
                                      field="kv_cache_dtype", allowed="auto, " + ", ".join(sorted(rule.values)))
    return emit(rule, kv.id)






def merge_options(options: dict, extra: dict) -> None:
    """``extra``'s entries into ``options``, nested mappings merged."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(options.get(key), dict):
            merge_options(options[key], value)
        else:
            options[key] = value
