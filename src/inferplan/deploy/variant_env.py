"""The environment that starts the engine variant a plan assumes: a release whose bare number runs another
variant by default needs it selected (vLLM 0.8.0-0.10.2 run V1 unless ``VLLM_USE_V1=0``; a plan at
"0.8.5 V0" is planned with the V0 memory rule, so its launch must run V0). The variable is the engine's
launch data (engine_flags.yaml ``variant_env``); which variant a release runs by default is the rule its
bare number selects (engine_memory_rules.yaml). Likewise what a software stack needs to run the engine
the way it is planned there (``software_launch``), and the model runner a plan states (``runner_env``: vLLM's
VLLM_USE_V2_MODEL_RUNNER)."""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import memory_rule, parse_engine_version
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import resolve_hardware


def variant_env(d: Deployment, flags: EngineFlags, catalog: Catalog) -> dict[str, str]:
    """The environment ``d``'s launch needs to run the variant its ``engine_version`` names ({}: none named,
    or the release runs it by default)."""
    if not flags.variant_env or not d.engine_version:
        return {}
    number, variant = parse_engine_version(d.engine_version)
    if variant is None or memory_rule(catalog, flags.engine, number).variant == variant:
        return {}
    return next((dict(v.env) for v in flags.variant_env if v.variant == variant), {})


def software_launch(d: Deployment, flags: EngineFlags, catalog: Catalog) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment and arguments the engine's launch adds on ``d``'s software stack (engine_flags.yaml
    ``software_launch``: SGLang on an Apple GPU runs MLX with ``SGLANG_USE_MLX=1``, without CUDA graphs)."""
    software = resolve_hardware(catalog, d).accel.software
    extra = next((o for o in flags.software_launch if o.software == software), None)
    return (dict(extra.env), extra.args) if extra else ({}, ())


def runner_env(d: Deployment, flags: EngineFlags) -> dict[str, str]:
    """The environment that runs the model runner ``d`` states ({}: none stated); an engine with no runner
    choice in its launch data is refused (field ``model_runner``)."""
    if d.model_runner is None:
        return {}
    named = next((r for r in flags.runner_env if r.runner == d.model_runner), None)
    if named is None:
        raise InvalidScenarioError(f"{flags.engine} has no model runner choice to launch", field="model_runner",
                                   allowed="leave it out (vLLM: V1 or V2)")
    return dict(named.env)
