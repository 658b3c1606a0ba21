"""Engine instances packed into systems, one pool or a prefill pool beside a decode pool: the count
``plan`` and ``search`` both price a deployment's systems by, and the systems and fast link a
scenario's prefill pool (``Scenario.prefill_pool``) adds to its decode pool's loadouts.

One layout packs as many instances into a system (or a bare accelerator's N GPUs) as its GPUs hold,
an instance wider than a system taking whole systems of its own. Two layouts whose widths both
divide a system's GPUs share systems GPU by GPU (powers of two pack without a gap); otherwise each
pool takes its own systems. Pools whose GPUs together sit inside the fast-link domain, and inside one
OS host of a rack whose domain spans hosts (``handover_domain``), hand the KV cache over on that link,
so a rented deployment keeps them in one rented instance (``economics.rental.RentQuote.pools_month``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator, System
from inferplan.economics.capacity import spanning_cell
from inferplan.economics.scenario import Cell as ScenarioCell
from inferplan.economics.scenario import Scenario
from inferplan.economics.workloads import WorkloadProfile
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.extensible import pool_sized
from inferplan.memory.fit import plan_memory
from inferplan.memory.hardware import system_domain_gpus
from inferplan.memory.state_pool import without_drafts
from inferplan.performance.context import ServingContext
from inferplan.performance.serving import estimate_at


class Shape(Protocol):
    """An engine instance: its GPUs, and the systems it spans (1: it fits in one)."""

    @property
    def gpus(self) -> int: ...

    @property
    def systems_per_instance(self) -> int: ...


@dataclass(frozen=True)
class InstanceShape:
    gpus: int
    systems_per_instance: int = 1


def instance_units(shape: Shape, instances, unit_gpus: int):
    """Systems (or N-GPU units, ``unit_gpus`` each) that hold ``instances`` instances of ``shape``
    (an array or a number)."""
    if shape.systems_per_instance > 1:
        return instances * shape.systems_per_instance
    return np.ceil(instances / max(unit_gpus // shape.gpus, 1))


def pool_units(prefill: Shape, decode: Shape, prefill_instances, decode_instances, unit_gpus: int):
    """Systems (or N-GPU units) that hold ``prefill_instances`` of ``prefill`` beside
    ``decode_instances`` of ``decode``: one layout packs as ``instance_units``; two whose widths
    both divide a system's GPUs share systems GPU by GPU; else each pool takes its own."""
    p, d = prefill_instances, decode_instances
    if prefill.gpus == decode.gpus and prefill.systems_per_instance == decode.systems_per_instance:
        return instance_units(decode, p + d, unit_gpus)
    if prefill.systems_per_instance > 1 or decode.systems_per_instance > 1:
        return p * prefill.systems_per_instance + d * decode.systems_per_instance
    if unit_gpus % prefill.gpus == 0 and unit_gpus % decode.gpus == 0:
        return np.ceil((p * prefill.gpus + d * decode.gpus) / unit_gpus)
    return instance_units(prefill, p, unit_gpus) + instance_units(decode, d, unit_gpus)


def domain_gpus(accel: Accelerator, system: System | None, gpus: int) -> int:
    """GPUs joined by the fast link: the system's domain, or of ``gpus`` bare accelerators as many
    as the accelerator's link joins."""
    if system is not None:
        return system_domain_gpus(system, accel)
    return min(accel.scale_up.max_domain_gpus if accel.scale_up else 1, gpus)


def handover_domain(system: System | None, domain_gpus: int) -> int:
    """GPUs the pools hand the KV cache over the fast link within: the fast-link domain, at most one OS host of a
    rack whose domain spans hosts (``System.os_host_gpus``: a GB200 NVL72's 4-GPU compute tray, the host a
    provider rents), as the engines' KV connectors move the cache between hosts over RDMA (``search.handover``)."""
    tray = system.os_host_gpus if system is not None else None
    return min(domain_gpus, int(tray.value)) if tray is not None else domain_gpus


def inside(accel: Accelerator, domain: int, gpus, systems_per_instance: int):
    """Whether pools of ``gpus`` GPUs in all sit inside one fast-link domain (each instance inside
    one system), so the KV cache crosses the fast link (an array or a number)."""
    up = accel.scale_up
    return (np.asarray(gpus) <= domain) & (systems_per_instance == 1) & bool(up and up.link != "none")


def prefill_instances_for(peak_request_rate_per_s: float, prompt_s: float) -> int:
    """Prefill instances that keep up with prompts arriving at ``peak_request_rate_per_s``, each run alone on
    its instance in ``prompt_s``: the busiest rate times a lone prompt's time, whole, at least one (the count
    ``search`` sizes a prefill pool from, and ``plan`` bounds a stated prefill pool's users by)."""
    return max(math.ceil(peak_request_rate_per_s * prompt_s * (1 + 1e-9)), 1)


def prefill_users(instances: int, prompt_s: float, user_request_rate_per_s: float) -> int:
    """The most users, each sending ``user_request_rate_per_s`` prompts at the peak, whose prompts
    ``instances`` prefill instances keep up with (``prefill_instances_for``)."""
    users = math.floor(instances / (prompt_s * (1 + 1e-9)) / user_request_rate_per_s) + 1
    while users > 0 and prefill_instances_for(users * user_request_rate_per_s, prompt_s) > instances:
        users -= 1
    return users


@dataclass(frozen=True)
class PrefillSizing:
    """A scenario's prefill pool beside its decode pool's loadouts."""

    instances: int
    shape: InstanceShape  # one prefill instance
    systems: int  # systems (or N-GPU units) the prefill pool adds to the decode pool's loadouts
    one_host: bool  # the pools hand over on the fast link, so a rented deployment keeps them in one instance
    prompt_s: float  # a lone prompt on one prefill instance
    user_request_rate_per_s: float  # one user's prompts per second at the peak

    @property
    def gpus(self) -> int:
        return self.instances * self.shape.gpus

    @property
    def users(self) -> int:
        """The users whose prompts the prefill pool keeps up with."""
        return prefill_users(self.instances, self.prompt_s, self.user_request_rate_per_s)

    @property
    def capacity_users(self) -> float:
        """The users whose prompts keep the prefill pool's instances busy at the peak (not floored)."""
        return self.instances / (self.prompt_s * self.user_request_rate_per_s)

    def instances_for(self, users: int) -> int:
        """Prefill instances ``users`` users' prompts take."""
        return prefill_instances_for(users * self.user_request_rate_per_s, self.prompt_s)

    @property
    def note(self) -> str:
        return (f"a prefill pool of {self.instances:,} instance(s) of {self.shape.gpus} GPU(s) runs beside the replica "
                f"cells, which are the decode pool: {self.systems:,} more system(s) to own, its GPUs rented with theirs; "
                f"a lone prompt takes {self.prompt_s:.3f} s on a prefill instance, so the pool keeps up with "
                f"{self.users:,} users' prompts at the peak; the users carried are the fewer of that and the decode pool's")


def prefill_sizing(catalog: Catalog, s: Scenario, base: Deployment, w: WorkloadProfile, system: System | None,
                   accel: Accelerator, *, unit_gpus: int, decode: InstanceShape, decode_instances: int, decode_systems: int) -> PrefillSizing | None:
    """The scenario's prefill pool (None: it states none) beside ``decode_instances`` decode cells of
    ``decode``'s shape that take ``decode_systems`` systems (or N-GPU units of ``unit_gpus``), in
    ``base``'s model, format and engine; an error names the ``prefill_pool`` key at fault."""
    pool = s.prefill_pool
    if pool is None:
        return None
    pre, spans = _prefill_instance(catalog, base, pool.cell, system, unit_gpus)
    shape = InstanceShape(pool.cell.gpus, spans)
    total = int(pool_units(shape, decode, pool.instances, decode_instances, unit_gpus))
    gpus = pool.instances * shape.gpus + decode_instances * decode.gpus
    domain = handover_domain(system, domain_gpus(accel, system, unit_gpus))
    one_host = bool(inside(accel, domain, gpus, decode.systems_per_instance))
    return PrefillSizing(pool.instances, shape, total - decode_systems, one_host, lone_prompt_s(catalog, pre, w),
                         w.peak_output_tokens_per_s / w.output_tokens_per_request)


def lone_prompt_s(catalog: Catalog, pre: Deployment, w: WorkloadProfile) -> float:
    """A prompt's time to its first token run alone on prefill instance ``pre`` (one per data-parallel rank),
    as ``search`` reads a prefill instance's serving curve at its lightest load: without drafts, whatever the
    decode cells draft (a prefill instance drafts nothing: ``_prefill_instance``, ``evaluate.prefill_partners``)."""
    ctx = ServingContext(catalog, pool_sized(catalog, pre, "prefill"),
                         Workload(input_len=w.input_tokens_per_request, output_len=w.output_tokens_per_request,
                                  prefix_cache_hit_rate=w.cache_hit_rate))
    return estimate_at(ctx, ctx.dp).ttft_s


def _prefill_instance(catalog: Catalog, base: Deployment, cell: ScenarioCell, system: System | None,
                      unit_gpus: int) -> tuple[Deployment, int]:
    """One prefill instance — the decode cell's model, format and engine in the prefill pool's layout, without
    its draft tokens, drafting method or draft weights (drafts act in decode, as the search's prefill layouts and
    the simulator's prefill pool run) — checked to hold the model and to fit the platform, and the systems it spans."""
    field = "prefill_pool.cell"
    if system is None and cell.gpus > unit_gpus:
        raise InvalidScenarioError(f"a prefill instance of {cell.gpus} GPUs is wider than the platform's {unit_gpus}",
                                   field=field, allowed=f"at most {unit_gpus} GPUs (tensor × pipeline × data parallel size)")
    pre = without_drafts(base).model_copy(update={
        "tensor_parallel_size": cell.tensor_parallel_size, "pipeline_parallel_size": cell.pipeline_parallel_size,
        "data_parallel_size": cell.data_parallel_size if cell.enable_expert_parallel else None,
        "enable_expert_parallel": cell.enable_expert_parallel, "gpus": cell.gpus, "max_num_seqs": None})
    try:
        fits = plan_memory(pre, catalog).result.fits
        spans = spanning_cell(catalog, pre, system, cell_fixed=True)[1] if system is not None else 1
    except InferplanError as exc:
        raise InvalidScenarioError(str(exc), field=field, allowed=exc.allowed) from None
    if not fits:
        raise InvalidScenarioError(f"{base.model} does not fit in a prefill instance of {cell.gpus} GPU(s) of {base.gpu}",
                                   field=field, allowed="a larger tensor × pipeline parallel size")
    return pre, spans
