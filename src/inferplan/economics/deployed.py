"""What a plan's deployment runs: the loadouts ``sizing.py`` sized, or, rented where the rented cells are
another machine than the owned loadout, the rented cells (``rent_route.py``) and the users they carry."""

from __future__ import annotations

import dataclasses

from inferplan.economics.rent_route import RentRoute
from inferplan.economics.scenario import Scenario
from inferplan.economics.sizing import Sizing


def deployed(s: Scenario, size: Sizing, rent: RentRoute, system_gpus: int) -> tuple[Sizing, float]:
    """The sizing of what runs and the users it carries at capacity: the loadouts', or, rented where the rented cells
    are another machine than the owned loadout (instances, or a set of them in one NVLink domain, narrower than the
    owned system of ``system_gpus`` GPUs, cells of another width, or, at your rate per GPU-hour, fewer GPUs than the
    owned loadouts and prefill pool hold), the rented cells' users, with a note that says which figures are theirs and
    which stay the owned loadout's (its GPUs, users per loadout and replica cell); their users at capacity are those
    of the cells the paid instances hold. Cells of the owned width on instances as wide as the system are the same
    machine, however many the target needs, so they carry the loadouts' users: the same GPUs carry the same users
    owned or rented."""
    owned_cells = s.replicas or size.loadouts * size.capacity.cells
    cell_gpus = size.capacity.cell_host_gpus or size.capacity.cell.gpus  # an Ollama server's: its host's, as rented
    pool_gpus = size.prefill.gpus if size.prefill else 0
    if rent.instance_gpus is None:  # your rate: the GPUs of the rented cells and prefill pool, no whole instances
        narrower = (rent.engine_instances or 0) * (rent.cell_gpus or 0) + pool_gpus < size.loadouts * size.loadout_gpus + pool_gpus
    else:
        narrower = (rent.domain_gpus or rent.instance_gpus) < system_gpus  # a rented rack's NVLink domain: the rack
    if not s.rented or rent.users is None or (rent.cell_gpus == cell_gpus and not narrower):
        return size, size.capacity_users
    versus = f", not the loadouts' {size.supported_users:,}" if rent.users != size.supported_users else ""
    held = rent.held_cells or rent.engine_instances
    where = ("at your rate per GPU-hour" if rent.instance_gpus is None else  # nothing rented by the instance
             f"on {rent.instances or rent.engine_instances:,} rented instance(s)")
    users = (f"supported and served users and costs are theirs, {rent.users:,} users{versus}, its at-capacity users "
             f"those of the {held:,} cells the paid instances hold" if held > rent.engine_instances else
             f"supported, served and at-capacity users and costs are theirs, {rent.users:,} users{versus}")
    note = (f"rented: the deployment is the rented cells, {rent.engine_instances:,} of {rent.cell_gpus} GPU(s) {where}, "
            f"another machine than the owned loadout ({owned_cells:,} cell(s) of {cell_gpus} GPU(s) in "
            f"{size.loadout_gpus}-GPU loadouts), so its {users}, and the launch command is a rented cell's; the "
            f"loadouts, their GPUs, users per loadout, replica cell (its memory and speed) and output tokens per MW "
            f"stay the owned loadout's, what owning would run")
    capacity = rent.capacity_users if rent.capacity_users is not None else float(rent.users)
    return dataclasses.replace(size, supported_users=rent.users, served_users=min(s.target_users, rent.users),
                               notes=(*size.notes, note), prefill_binds=rent.prefill_binds), capacity
