"""The MoE backend an engine's options file names where its default is not the path the plan counts.

TensorRT-LLM runs gpt-oss's MXFP4 experts on Hopper as W4A16 through OpenAI's Triton MoE kernels, the path
fit and perf plan (quantizations.yaml, mxfp4), while its ``MoeConfig`` default was CUTLASS until the AUTO
backend; the launch writes the backend per GPU architecture (``OptionsFile.moe_backends`` in
``engine_flags.yaml``). A GPU architecture the rule does not name gets no entry: the engine's own default runs.
"""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import resolve_hardware
from inferplan.memory.precision import planned_quantization
from inferplan.memory.step_budget import model_spec


def moe_backend(d: Deployment, catalog: Catalog, flags: EngineFlags) -> tuple[str, str, str] | None:
    """The options-file key, the backend ``d``'s experts run on in the weight format fit plans and the note
    that says why (None: the engine's default runs them)."""
    rules = flags.options_file.moe_backends if flags.options_file else ()
    if not rules or (d.gpu is None and d.system is None):
        return None
    spec = model_spec(d, catalog)
    if spec is None:  # a model the catalogue cannot resolve: its format is the engine's to read
        return None
    quantization, arch = planned_quantization(catalog, d, spec, flags.engine), spec.architecture
    model_arch = arch.hf_architecture if arch else None
    gpu = resolve_hardware(catalog, d).accel.architecture
    rule = next((r for r in rules if r.quantization == quantization and gpu in r.backends
                 and (not r.model_architectures or model_arch in r.model_architectures)), None)
    if rule is None:
        return None
    backend = rule.backends[gpu]
    return rule.key, backend, (f"{rule.key}: {backend}, the MoE backend the plan counts for {quantization} experts "
                               f"on {gpu} where the engine's default differs ({rule.sources[0]})")
