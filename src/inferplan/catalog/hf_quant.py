"""A config.json's ``quantization_config`` read as a catalogue quantization id (and the KV-cache
quantization the checkpoint asks for)."""

from __future__ import annotations

from inferplan.catalog.architecture import QuantConfig
from inferplan.catalog.hf_keep import kept_groups, listed_modules
from inferplan.catalog.hf_mixed import MIXED, mixed_formats, modelopt_algo, modelopt_quantization
from inferplan.errors import ConfigImportError


def quant_config(cfg: dict, n_layers: int = 0) -> QuantConfig | None:
    """What a config.json's ``quantization_config`` says, as a catalogue quantization id, and which
    parts of a model of ``n_layers`` layers it leaves unquantized."""
    qc = _object(cfg.get("quantization_config"), "quantization_config")
    if not qc:
        return None
    method = str(qc.get("quant_method", "")).lower()
    ignore = listed_modules(qc)
    formats: tuple[tuple[str, str, float], ...] = ()
    if method == "fp8" and (cfg.get("expert_dtype") == "fp4" or cfg.get("model_type") == "deepseek_v4"):
        qid = "mixed-fp4-fp8"  # DeepSeek-V4 ships FP4 routed experts and FP8 elsewhere (Pro's config omits expert_dtype)
    elif method == "fbgemm_fp8":
        qid = "fbgemm-fp8"
    elif method == "fp8":
        qid = "fp8-block" if qc.get("weight_block_size") else "fp8"
    elif method == "mxfp4":
        qid = "mxfp4"
    elif method == "awq":
        qid = "int4-awq"
    elif method == "gptq":
        qid = "int4-gptq" if int(qc.get("bits", 4)) == 4 else "int8-w8a8"
    elif method in ("modelopt", "modelopt_fp4") and modelopt_algo(qc) == MIXED:
        qid, formats = mixed_formats(qc, n_layers)
    elif method in ("modelopt", "modelopt_fp4"):
        qid = modelopt_quantization(qc, method)
    elif method == "compressed-tensors":
        qid = _compressed_tensors(qc)
    elif method == "quark":
        qid = _quark(qc)
        ignore = tuple(dict.fromkeys((*ignore, *(str(p) for p in qc.get("exclude") or ()))))
    else:
        raise ConfigImportError(
            f"quantization_config.quant_method {method!r} is not supported",
            field="quantization_config.quant_method",
            allowed="fp8, fbgemm_fp8, mxfp4, awq, gptq, modelopt, compressed-tensors, quark",
        )
    return QuantConfig(method=method, quantization=qid, unquantized_modules=ignore,
                       kept_unquantized=kept_groups(ignore, n_layers), kv_cache_dtype=_kv_quant(qc),
                       layer_formats=formats)


# AMD Quark's (weight dtype, input dtype) as written in global_quant_config; None: no activation
# quantization (weight-only)
_QUARK = {("fp4", "fp4"): "mxfp4-w4a4", ("fp4", "fp8_e4m3"): "mxfp4", ("fp4", None): "mxfp4",
          ("fp8_e4m3", "fp8_e4m3"): "fp8", ("fp8_e4m3", None): "fp8", ("int8", "int8"): "int8-w8a8"}


def _object(value: object, field: str) -> dict:
    """``value`` if it is a JSON object, ``{}`` if it is absent or empty; else an error naming ``field``."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise ConfigImportError(f"config.json {field} is {value!r}, not an object", field=field, allowed="an object")
    return value


def _quark(qc: dict) -> str:
    """An AMD Quark export: the global weight and input dtypes, else (a config quantizing some layers
    only, such as MoE experts) the first layer pattern's."""
    spec, where = qc.get("global_quant_config") or {}, "quantization_config.global_quant_config"
    if not (spec.get("weight") or {}).get("dtype"):
        layers = qc.get("layer_quant_config") or {}
        name = next((k for k, v in layers.items() if isinstance(v, dict) and (v.get("weight") or {}).get("dtype")), None)
        spec, where = (layers[name], f"quantization_config.layer_quant_config.{name}") if name else (spec, where)
    weight = (spec.get("weight") or {}).get("dtype")
    inputs = (spec.get("input_tensors") or {}).get("dtype")
    qid = _QUARK.get((weight, inputs))
    if qid is None:
        raise ConfigImportError(
            f"Quark weight dtype {weight!r} with input dtype {inputs!r} is not supported", field=f"{where}.weight.dtype",
            allowed=", ".join(f"{w}/{i or 'none'}" for w, i in _QUARK))
    return qid


def _kv_quant(qc: dict) -> str | None:
    """ModelOpt's kv_cache_quant_algo, compressed-tensors' kv_cache_scheme or Quark's
    kv_cache_quant_config, if any."""
    algo = qc.get("kv_cache_quant_algo") or (qc.get("quantization") or {}).get("kv_cache_quant_algo")
    if algo:
        return str(algo).lower()
    scheme = qc.get("kv_cache_scheme")
    if isinstance(scheme, dict) and int(scheme.get("num_bits", 16)) == 8:
        return "fp8" if scheme.get("type", "float") == "float" else "int8"
    for spec in (qc.get("kv_cache_quant_config") or {}).values():
        if isinstance(spec, dict) and str((spec.get("output_tensors") or {}).get("dtype", "")).startswith("fp8"):
            return "fp8"
    return None


def _compressed_tensors(qc: dict) -> str:
    fmt = str(qc.get("format", "")).lower()
    if "nvfp4" in fmt:
        return "nvfp4"
    if "mxfp4" in fmt:
        return "mxfp4"
    groups = _object(qc.get("config_groups"), "quantization_config.config_groups")
    for name, spec in groups.items():
        where = f"quantization_config.config_groups.{name}"
        group = _object(spec, where)
        weights = _object(group.get("weights"), f"{where}.weights")
        bits, typ = int(weights.get("num_bits", 16)), str(weights.get("type", "int"))
        acts = group.get("input_activations")
        if bits == 8 and typ == "float":
            return "fp8-block" if weights.get("strategy") == "block" or weights.get("block_structure") else "fp8"
        if bits == 8:
            return "int8-w8a8"
        if bits == 4 and typ == "float":
            return "nvfp4"
        if bits == 4:
            return "int4-w4a16" if not acts else "int4-w4a16"
    raise ConfigImportError(
        "compressed-tensors quantization_config has no recognisable weight format",
        field="quantization_config.config_groups",
        allowed="8-bit float (fp8), 8-bit int (w8a8), 4-bit int (w4a16), nvfp4",
    )
