"""A disaggregated pool's instance on the runtime its platform comes as, where the engine then turns the
extensible KV cache off with the pool's KV connector (``SizingFallback.by_default``: vLLM 0.34's NixlConnector on
CUDA, where the driver creates no IMEX channel unless an administrator does): the plan sizes the pool as the
engine then runs it, and ``channel_note`` states beside it the KV cache the other runtime keeps (an IMEX channel)
and what stating the switch on without it does (KV transfers within a host over TCP)."""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.startup_rules import SizingFallback
from inferplan.inputs.deployment import Deployment
from inferplan.memory.extensible import pool_instance
from inferplan.memory.fit import plan_memory
from inferplan.memory.hardware import resolve_hardware
from inferplan.units import GiB


def default_fallback(catalog: Catalog, d: Deployment, role: str, *, stated: bool | None = None) -> SizingFallback | None:
    """The fallback runtime the platform comes as on which ``d``, as one instance of the ``role`` pool, runs with
    the extensible KV cache off unless it is stated on (None: none, or ``d`` states the switch otherwise than
    ``stated``)."""
    if role == "both" or d.enable_extensible_kv_cache is not stated:
        return None
    pooled = pool_instance(catalog, d, role)
    sized = memory_rule(catalog, catalog.engine(d.engine, field_name="engine").id, d.engine_version).measured_sizing
    if pooled.kv_connector is None or sized is None:
        return None
    return sized.off_by_default(resolve_hardware(catalog, d).accel.software, pooled.kv_connector)


def stated_on_fallback(catalog: Catalog, d: Deployment, role: str) -> SizingFallback | None:
    """The platform's default runtime of ``default_fallback`` where ``d`` states the switch on there (the engine
    keeps the cache on and moves KV otherwise: ``SizingFallback.stated_on``); None elsewhere."""
    return default_fallback(catalog, d, role, stated=True)


def with_channel(catalog: Catalog, d: Deployment, role: str) -> Deployment | None:
    """``d`` as one instance of the ``role`` pool on the other runtime (the extensible KV cache kept on), where
    the platform's default runtime turns it off (``default_fallback``); None elsewhere."""
    if default_fallback(catalog, d, role) is None:
        return None
    return _kept_on(pool_instance(catalog, d, role))


def _kept_on(pooled: Deployment) -> Deployment:
    """A pool's instance ``pooled`` on the runtime that keeps the extensible KV cache on."""
    return pooled.model_copy(update={"enable_extensible_kv_cache": True})


def channel_note(catalog: Catalog, d: Deployment, role: str, slots: tuple[int, int] | None = None) -> str | None:
    """What ``d`` as one instance of the ``role`` pool plans on the platform's default runtime and what the other
    keeps (``slots``: the running sequences of each, where the caller simulated them); None where no default
    runtime turns the cache off."""
    fallback = default_fallback(catalog, d, role)
    if fallback is None:
        return None
    pooled = pool_instance(catalog, d, role)
    off = plan_memory(pooled, catalog).result.kv_cache_bytes_per_gpu
    on = plan_memory(_kept_on(pooled), catalog).result.kv_cache_bytes_per_gpu
    off_slots, on_slots = (f", {slots[0]:,} slots", f", {slots[1]:,} slots") if slots else ("", "")
    return (f"{role} pool: with {pooled.kv_connector} on {fallback.software.value} {fallback.by_default}, vLLM turns the "
            f"extensible KV cache off and sizes it from the start-up profile: {max(off, 0.0) / GiB:.2f} GiB of KV cache "
            f"per GPU{off_slots}, as planned; {fallback.other_runtime}, it stays on: "
            f"{max(on, 0.0) / GiB:.2f} GiB{on_slots}. With --enable-extensible-kv-cache and no channel, "
            f"{fallback.stated_on} ({', '.join(fallback.sources)})")
