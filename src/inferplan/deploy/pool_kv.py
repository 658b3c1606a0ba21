"""A disaggregated pool's instance and its KV connector at launch: the connector a stated
``Deployment.kv_connector`` names must be the one the launch emits (a pool's side, ``--kv-transfer-config``),
and a runtime the plan cannot see on which the engine sizes the pool's KV cache otherwise with that connector
(``MeasuredSizing.runtime_fallbacks`` limited to connectors: vLLM 0.34's NixlConnector on CUDA without an IMEX
channel) is stated beside the launch with the KV cache it then leaves, as ``fit`` plans it."""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.extensible import pool_instance
from inferplan.memory.fit import plan_memory
from inferplan.memory.layout import instance_gpus
from inferplan.memory.pool_channel import channel_note


def check_launch_connector(d: Deployment, flags: EngineFlags, role: str) -> None:
    """Refuse a stated ``kv_connector`` the launch of ``role`` (both: a whole instance) does not emit."""
    if d.kv_connector is None:
        return
    emitted = flags.disaggregation.connector(role) if role != "both" and flags.disaggregation else None
    if d.kv_connector != emitted:
        raise InvalidScenarioError(
            f"a {'whole instance' if role == 'both' else f'{role} worker'} launches with "
            f"{f'the KV connector {emitted}' if emitted else 'no KV connector'}, not {d.kv_connector}",
            field="kv_connector",
            allowed=f"leave it out{f', or {emitted}' if emitted else ', or a pool side (role prefill or decode)'}")


def pool_kv_notes(catalog: Catalog, d: Deployment, role: str) -> tuple[str, ...]:
    """What the KV cache of ``d`` as one instance of the ``role`` pool becomes on a runtime that makes the engine
    size it otherwise with the pool's KV connector (none: no such runtime, or a whole instance)."""
    if role == "both":
        return ()
    if d.gpus is not None:  # a pool's GPUs (a manifest's Deployment of its instances): one instance's memory
        d = d.model_copy(update={"gpus": instance_gpus(d)})
    channel = channel_note(catalog, d, role)
    if channel:  # the runtime the platform comes as turns the cache off: the other runtime beside it
        return (channel,)
    pooled = pool_instance(catalog, d, role)
    note = plan_memory(pooled, catalog).result.kv_cache_fallback_note if pooled.kv_connector else None
    return (f"{role} pool: {note}",) if note else ()
