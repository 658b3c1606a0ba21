"""A ModelOpt ``quantization_config`` read as catalogue quantization ids: one ``quant_algo`` for the
whole model, or ``MIXED_PRECISION`` with a ``quantized_layers`` mapping that names each quantized
module and its own ``quant_algo`` (NVIDIA's Qwen3.6 NVFP4 builds: FP8 attention, NVFP4 MLP, experts
and lm_head).

vLLM's ModelOptMixedPrecisionConfig (vllm/model_executor/layers/quantization/modelopt.py, first
shipped in 0.17.0; source q-vllm-modelopt-mixed-precision in quantizations.yaml) builds each listed
module with its algorithm's method and leaves every module the mapping does not list unquantized; the
per-layer formats here follow that reading: a counted group's share of layers in each listed format,
the rest of it at 16 bits. The algorithms are those vLLM's ModelOpt config accepts alone (0.16.0's
QUANT_ALGOS); a mixed config builds MXFP8 modules from 0.26.0 and FP8_PB_WO modules from 0.34.0 (each
format's ``mixed_modules_since``); an earlier release leaves them unquantized, which a plan at that
release notes (memory/fit_weights.py mixed_release_notes).
"""

from __future__ import annotations

from inferplan.catalog.hf_keep import group_of, layer_of, names_no_counted_part
from inferplan.errors import ConfigImportError

# ModelOpt quant_algo -> catalogue quantization id (weight bytes only: W4A16_NVFP4 stores NVFP4
# weights as NVFP4 does and leaves the activations at 16 bits; FP8_PB_WO is FP8 with one scale per
# 128x128 weight block, run with per-token-group FP8 activations; MXFP8 one E8M0 scale per 32 weights)
MODELOPT_ALGOS = {"FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8", "FP8_PB_WO": "fp8-block", "MXFP8": "mxfp8",
                  "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4"}
MIXED = "MIXED_PRECISION"
# a mixed build's own id is its narrowest format, then the one asking most of the hardware: its
# kernels set the hardware the build needs (MXFP8 needs Blackwell's block scaling)
_NARROWEST_FIRST = ("nvfp4", "mxfp8", "fp8-block", "fp8")
_WHOLE_MODEL = ("lm_head", "embeddings")


def modelopt_algo(qc: dict) -> str:
    """The config's ``quant_algo`` (upper case), at the top level or nested in ``quantization``."""
    return str(qc.get("quant_algo") or (qc.get("quantization") or {}).get("quant_algo") or "").upper()


def modelopt_quantization(qc: dict, method: str) -> str:
    """The catalogue id of a single-algorithm ModelOpt config (``modelopt_fp4`` without a
    ``quant_algo`` says NVFP4 by its name); refuses an algorithm not known."""
    algo = modelopt_algo(qc) or ("NVFP4" if method == "modelopt_fp4" else "")
    if algo not in MODELOPT_ALGOS:
        raise ConfigImportError(f"ModelOpt quant_algo {algo or None!r} is not supported",
                                field="quantization_config.quant_algo", allowed=", ".join([*MODELOPT_ALGOS, MIXED]))
    return MODELOPT_ALGOS[algo]


def mixed_formats(qc: dict, n_layers: int) -> tuple[str, tuple[tuple[str, str, float], ...]]:
    """A MIXED_PRECISION config's own id and its (group, quantization id, share of the group's
    layers) for every counted group ``quantized_layers`` lists; refuses a mapping that is missing,
    empty, or names an algorithm not known."""
    layers = qc.get("quantized_layers") or (qc.get("quantization") or {}).get("quantized_layers")
    field = "quantization_config.quantized_layers"
    if not isinstance(layers, dict) or not layers:
        raise ConfigImportError(
            f"quant_algo {MIXED} needs a quantized_layers mapping of module name to its quant_algo",
            field=field, allowed=f"a non-empty mapping, each entry's quant_algo one of {', '.join(MODELOPT_ALGOS)}")
    listed: dict[tuple[str, int | None], set[str]] = {}
    for name, spec in layers.items():
        algo = str(spec.get("quant_algo", "")).upper() if isinstance(spec, dict) else ""
        if algo not in MODELOPT_ALGOS:
            raise ConfigImportError(f"quantized_layers[{name!r}] quant_algo {algo or None!r} is not supported",
                                    field=f"{field}.{name}.quant_algo", allowed=", ".join(MODELOPT_ALGOS))
        group = group_of(name)
        if group is None or names_no_counted_part(name):
            continue
        layer = None if group in _WHOLE_MODEL else layer_of(name)
        listed.setdefault((group, layer), set()).add(MODELOPT_ALGOS[algo])
    shares: dict[tuple[str, str], float] = {}
    for (group, layer), qids in listed.items():
        # a layer whose modules of one group are listed in two formats counts half in each
        weight = 1.0 / len(qids) / (n_layers if layer is not None and n_layers else 1)
        for qid in qids:
            shares[group, qid] = min(1.0, shares.get((group, qid), 0.0) + weight)
    used = {qid for _, qid in shares} or {MODELOPT_ALGOS[str(s.get("quant_algo")).upper()] for s in layers.values()}
    native = next(q for q in _NARROWEST_FIRST if q in used)
    return native, tuple((g, q, s) for (g, q), s in sorted(shares.items()))
