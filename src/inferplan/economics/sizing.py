"""How many loadouts carry a scenario's target users, and how many users they serve.

A loadout is the fewest systems one replica of the model needs (one system when it holds the model);
its capacity comes from the memory and speed models (``capacity.py``). The target, or the replica cells
a scenario states (a search's pick), sets how many loadouts there are; separate pools add the prefill
pool's systems beside them (``pools.py``). ``plan.py`` prices what ``size_loadouts`` returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics.capacity import CellCapacity, LoadoutCapacity, loadout_capacity, spanning_cell, units_for_target
from inferplan.economics.plan_inputs import Hardware
from inferplan.economics.pools import InstanceShape, PrefillSizing, prefill_sizing
from inferplan.economics.rent_route import CellSpace
from inferplan.economics.scenario import Cell, Scenario
from inferplan.economics.workloads import WorkloadProfile
from inferplan.inputs.deployment import Deployment
from inferplan.memory.extensible import pool_sized
from inferplan.memory.checks import check_ranks_share_experts
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.mtp import with_speculative


# a plan's binding where the prefill pool limits its users (else ``LoadoutCapacity.binding``'s limits)
PREFILL_POOL_BINDS = "prefill pool"


@dataclass(frozen=True)
class Sizing:
    """How many loadouts carry the target, and how many users they serve."""

    capacity: LoadoutCapacity
    systems_per_loadout: int
    loadout_gpus: int
    users_per_loadout: float  # at the tightest limit (throughput, concurrency or memory)
    loadouts: int
    supported_users: int
    served_users: int
    notes: tuple[str, ...]
    space: CellSpace  # what the loadout's cells were chosen from (the rent route sizes its own from it)
    prefill: PrefillSizing | None = None  # separate pools: the prefill pool beside the cells (the decode pool)
    stated_replicas: int | None = None  # the scenario's replica cells (None: auto-sized loadouts, each full)
    prefill_binds: bool = False  # the prefill pool keeps up with fewer users' prompts than the decode pool carries

    @property
    def binding(self) -> str:
        """What limits the supported users: the prefill pool where it binds, else one loadout's tightest limit."""
        return PREFILL_POOL_BINDS if self.prefill_binds else self.capacity.binding

    @property
    def systems(self) -> int:
        return self.loadouts * self.systems_per_loadout + (self.prefill.systems if self.prefill else 0)

    @property
    def loadouts_run(self) -> float:
        """The loadouts' worth of replica cells run: stated cells (a search's pick, the decode pool of
        separate pools) may leave a loadout's other cells to the prefill pool or idle."""
        return self.loadouts if self.stated_replicas is None else self.stated_replicas / self.capacity.cells

    @property
    def capacity_users(self) -> float:
        """The users the replica cells run carry at their tightest limit (not floored), or the prefill pool's
        where it keeps up with fewer users' prompts."""
        decode = self.loadouts_run * self.users_per_loadout
        return min(decode, self.prefill.capacity_users) if self.prefill else decode

    @property
    def users_per_loadout_run(self) -> int:
        """Users the replica cells of one loadout carry: of stated cells, the fullest loadout's."""
        c = self.capacity
        if self.stated_replicas is None or self.stated_replicas >= c.cells or not c.supported_users:
            return c.supported_users
        return math.floor(self.users_per_loadout * self.stated_replicas / c.cells)


def with_scenario_drafts(catalog: Catalog, s: Scenario, d: Deployment) -> Deployment:
    """``d`` running the scenario's drafts as deploy launches them (``memory.mtp.with_speculative``: the memory counts
    what they hold, the speed model prices them by their method); unchanged where it states none."""
    if s.speculative is None:
        return d
    spec = s.speculative
    return with_speculative(catalog, with_default_engine(d, catalog), spec.tokens, spec.planned_method, spec.draft_model)


def _base_deployment(catalog: Catalog, s: Scenario, accelerator: str, w: WorkloadProfile) -> Deployment:
    """One replica cell as the scenario states it (one GPU when it states none), sized for a request;
    its engine the scenario's, else its platform's own, written in for the cell packing that reads it
    (llama.cpp's slots)."""
    cell = s.cell or Cell()
    d = with_default_engine(Deployment(
        model=s.model, gpu=accelerator, quantization=s.quantization, **s.stated_engine, engine_version=s.engine_version,
        kv_cache_dtype=s.kv_cache_dtype,
        kv_bytes_per_token=s.kv_bytes_per_token,
        tensor_parallel_size=cell.tensor_parallel_size, pipeline_parallel_size=cell.pipeline_parallel_size,
        data_parallel_size=cell.data_parallel_size if cell.enable_expert_parallel or cell.data_parallel_size > 1 else None,
        enable_expert_parallel=cell.enable_expert_parallel, max_num_seqs=cell.max_num_seqs,
        max_model_len=w.input_tokens_per_request + w.output_tokens_per_request,
    ), catalog)
    d = with_scenario_drafts(catalog, s, d)
    check_ranks_share_experts(catalog, d)  # ranks without expert parallelism: vLLM's MoE group over TP x DP
    return d


def cell_deployment(catalog: Catalog, s: Scenario, accelerator: str, w: WorkloadProfile, cell: CellCapacity, *,
                    system: str | None = None) -> Deployment:
    """The replica cell a plan sized, as the Deployment its launch takes: the scenario's model, format, engine and
    drafts at the workload's request length, on the cell's GPUs in its parallel layout; ``system``: the system
    id where the cell spans several of them (its hosts)."""
    where = {"system": system, "gpu": None} if system else {}
    return _base_deployment(catalog, s, accelerator, w).model_copy(update={
        **where, "gpus": cell.gpus, "tensor_parallel_size": cell.tensor_parallel_size,
        "pipeline_parallel_size": cell.pipeline_parallel_size,
        "data_parallel_size": cell.data_parallel_size if cell.expert_parallel or cell.data_parallel_size > 1 else None,
        "enable_expert_parallel": cell.expert_parallel, "max_num_seqs": cell.stated_max_num_seqs})


def size_loadouts(catalog: Catalog, s: Scenario, hw: Hardware, w: WorkloadProfile) -> Sizing:
    """One loadout's capacity (the fewest systems one replica needs, when no single system holds the
    model), then the loadouts the target needs."""
    base = _base_deployment(catalog, s, hw.accelerator.id, w)
    if s.prefill_pool is not None:  # the cells are a decode pool, sized as its KV connector lets the engine size it
        base = pool_sized(catalog, base, "decode")
    fixed = s.cell is not None  # a stated cell is kept as stated, TP 1 included
    system = hw.system
    start, per_loadout = spanning_cell(catalog, base, system, cell_fixed=fixed) if system else (None, 1)
    loadout_gpus = hw.gpus_per_system * per_loadout
    label = hw.label if per_loadout == 1 else f"{per_loadout}× {hw.label}"
    pooled = s.prefill_pool is not None
    space = CellSpace(base, w, label, loadout_gpus, fixed, start,
                      (system.id, hw.gpus_per_system) if system and per_loadout > 1 else None, pooled)
    cap = loadout_capacity(catalog, base, w, system_gpus=loadout_gpus, system=label, cell_fixed=fixed,
                           nodes=space.nodes, start=start, decode_pool=pooled)
    users_per_loadout = cap.users_at_limit
    notes = list(cap.assumptions)
    meets = cap.cell.meets_target and users_per_loadout > 0
    if meets:
        loadouts, supported = units_for_target(users_per_loadout, s.target_users)
        if not cap.supported_users:  # a user heavier than one loadout: several carry each
            notes.append(f"one user's traffic needs {1 / users_per_loadout:,.1f} loadouts ({cap.binding} binds): "
                         f"{loadouts:,} carry {s.target_users:,}")
    else:
        loadouts, supported = 1, 0
    speed_loadouts = loadouts
    if s.replicas is not None:  # the replica cells as stated (a search's pick), packed into whole loadouts
        loadouts = math.ceil(s.replicas / cap.cells)
        supported = math.floor(users_per_loadout * s.replicas / cap.cells) if meets else 0
    prefill = prefill_sizing(catalog, s, base, w, system, hw.accelerator, unit_gpus=hw.gpus_per_system,
                             decode=InstanceShape(cap.cell.gpus, per_loadout), decode_instances=s.replicas or 0,
                             decode_systems=loadouts * per_loadout)
    if s.replicas is not None:
        needs = prefill.instances_for(s.target_users) if prefill else None
        notes.append(f"{s.replicas:,} replica cell(s) as stated, in {loadouts:,} loadout(s)"
                     + (f"; sizing for {s.target_users:,} users by speed alone would take {speed_loadouts:,}"
                        + (f" and {needs:,} prefill instance(s)" if needs is not None else "")
                        if meets and (loadouts != speed_loadouts or (prefill and needs != prefill.instances)) else ""))
    binds = prefill is not None and prefill.users < supported  # it keeps up with fewer users' prompts
    if prefill is not None:
        notes.append(prefill.note)
        if binds:
            supported = prefill.users
            notes.append(f"the prefill pool binds: {prefill.instances:,} instance(s) keep up with {supported:,} users' "
                         "prompts, fewer than the decode pool carries")
    return Sizing(cap, per_loadout, loadout_gpus, users_per_loadout, loadouts, supported,
                  min(s.target_users, supported), tuple(notes), space, prefill, s.replicas,
                  prefill_binds=binds)
