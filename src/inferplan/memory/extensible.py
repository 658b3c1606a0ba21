"""The user's switch of vLLM's extensible KV cache (``Deployment.enable_extensible_kv_cache``), checked as the
engine checks it before anything is planned or launched.

The switch exists where a release's memory rule sizes the cache from measured memory (``MeasuredSizing`` in
``engine_memory_rules.yaml``: vLLM from 0.34.0); turned off, it is one of the rule's ``off_with`` inputs, so the
plan sizes the cache as the engine then does (``memory/settings.py``, ``memory/engine_budget.py``). Turned on, it is
refused where the engine refuses it: on a software stack the rule does not size this way, beside another
``off_with`` input, which the engine cannot combine with it, and in a pool whose KV connector the rule refuses it
with on the GPU's software stack (``connector_refusals``). Left unset in such a pool, the engine turns it off
itself: ``pool_sized`` plans the pool's instance with its connector (``Deployment.kv_connector``), which sizes the
cache from the profile and names the connector as the cause. So does a connector the engine falls back with on the
runtime the platform comes as (vLLM 0.34's NixlConnector on CUDA, where the driver creates no IMEX channel:
``runtime_fallbacks`` with ``by_default``); ``memory/pool_channel.py`` states the other runtime beside it.
"""

from __future__ import annotations

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.schema import Accelerator
from inferplan.catalog.startup_rules import MeasuredSizing
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import resolve_hardware

FIELD = "enable_extensible_kv_cache"


def check_extensible_kv_cache(catalog: Catalog, d: Deployment, accel: Accelerator, connector: str | None = None) -> None:
    """Refuse a stated ``enable_extensible_kv_cache`` the planned engine release has no switch for, or one it
    refuses on: on where the release cannot size the cache from measured memory (``accel``'s software stack,
    another input that turns the measured sizing off, or the KV connector ``connector`` a pool's launch names;
    default: ``d.kv_connector``, refused where the engine launches no pool with it)."""
    check_kv_connector(catalog, d)
    if d.enable_extensible_kv_cache is not None:
        engine = catalog.engine(d.engine, field_name="engine")
        _check_switch(catalog, d, engine, memory_rule(catalog, engine.id, d.engine_version).measured_sizing, accel,
                      connector or d.kv_connector)


def _check_switch(catalog: Catalog, d: Deployment, engine: EngineDefaults, sized: MeasuredSizing | None, accel: Accelerator,
                  connector: str | None) -> None:
    """``check_extensible_kv_cache`` with the release's measured sizing ``sized`` looked up (None: it has none)."""
    wanted = d.enable_extensible_kv_cache
    if wanted is None:
        return
    if sized is None:
        releases = sorted({r.first_release for r in catalog.memory_rules if r.measured_sizing is not None})
        takers = sorted({r.engine for r in catalog.memory_rules if r.measured_sizing is not None})
        release = f" at {d.engine_version}" if d.engine_version and engine.id in takers else ""
        raise InvalidScenarioError(
            f"{engine.name}{release} has no extensible KV cache, so no enable_extensible_kv_cache switch",
            field=FIELD, allowed=f"leave it out, or {' / '.join(takers)} from {' / '.join(releases)} (engine_version)")
    if not wanted:
        return
    if not sized.used_on(accel.software):
        raise InvalidScenarioError(
            f"{engine.name} has no extensible KV cache on {accel.name} ({accel.software.value}): only on "
            f"{' and '.join(s.value for s in sized.software)}, and enable_extensible_kv_cache is refused elsewhere", field=FIELD,
            allowed="leave it out, or turn it off")
    other = sized.switched_off_by(d, besides=FIELD)
    if other is not None:
        raise InvalidScenarioError(
            f"{engine.name} cannot size the KV cache from measured memory with {other.named(d)}, and refuses "
            "enable_extensible_kv_cache beside it",
            field=FIELD, allowed=f"leave it out, turn it off, or leave {other.field} out")
    refused = sized.refused_with(accel.software, connector)
    if refused is not None:
        raise InvalidScenarioError(
            f"{engine.name} cannot size the KV cache from measured memory with {connector} on {accel.name} "
            f"({accel.software.value}), and refuses enable_extensible_kv_cache there", field=FIELD,
            allowed="leave it out (vLLM then turns it off), or turn it off")


def pool_connectors(catalog: Catalog, engine: str) -> tuple[str, ...]:
    """The KV connectors ``engine``'s disaggregated pools launch with (``engine_flags.yaml`` disaggregation)."""
    flags = flags_for(catalog, engine)
    rule = flags.disaggregation if flags else None
    return tuple(sorted({c for role in (rule.roles if rule else {}) if (c := rule.connector(role))}))


def check_kv_connector(catalog: Catalog, d: Deployment) -> None:
    """Refuse a stated ``kv_connector`` the engine launches no disaggregated pool with."""
    if d.kv_connector is None or d.kv_connector in (named := pool_connectors(catalog, d.engine)):
        return
    engine = catalog.engine(d.engine, field_name="engine")
    raise InvalidScenarioError(
        f"{engine.name}'s disaggregated pools launch with no KV connector {d.kv_connector!r}", field="kv_connector",
        allowed=f"leave it out{''.join(f', or {c}' for c in named)}")


def pool_instance(catalog: Catalog, d: Deployment, role: str) -> Deployment:
    """``d`` as one instance of a disaggregated pool of ``role`` (prefill or decode): with the KV connector the
    role launches with (none where the engine names none)."""
    flags = flags_for(catalog, catalog.engine(d.engine, field_name="engine").id)
    connector = flags.disaggregation.connector(role) if flags and flags.disaggregation else None
    return d if connector is None or d.kv_connector == connector else d.model_copy(update={"kv_connector": connector})


def pool_sized(catalog: Catalog, d: Deployment, role: str) -> Deployment:
    """``d`` as one instance of a disaggregated pool of ``role`` (prefill or decode) is sized: with the KV
    connector the role launches with (``pool_instance``) where ``d`` leaves the switch unset and the engine release
    refuses the extensible KV cache with it on the GPU's software stack (``connector_refusals``: the engine then
    turns it off itself, vLLM 0.34 with NixlConnector on ROCm), else as ``d``; a stated switch the engine refuses
    there is refused naming it."""
    pooled = pool_instance(catalog, d, role)
    if pooled.kv_connector is None:
        return d
    accel = resolve_hardware(catalog, d).accel
    engine = catalog.engine(d.engine, field_name="engine")
    check_kv_connector(catalog, d)
    sized = memory_rule(catalog, engine.id, d.engine_version).measured_sizing
    _check_switch(catalog, d, engine, sized, accel, pooled.kv_connector)
    if d.enable_extensible_kv_cache is not None or sized is None or \
            sized.off_with_connector(accel.software, pooled.kv_connector) is None:
        return d
    return pooled  # sized as the engine sizes it with the connector: from the start-up profile
