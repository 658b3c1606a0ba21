"""A plan's rent route: the replica cells the target users need (at least one), rented around the
clock.

The owned loadout is sized to a system (it packs the cells that carry the most users per system);
renting is sized to the target. Each replica-cell layout the owned loadout tries is tried again on
the largest rented instance of the platform's GPU; per layout the cells the target needs are rented
on whole instances at the price ``search`` rents with (``economics.rental``), or at the scenario's
own rate per GPU-hour, and the layout that costs least a month is the rent route (at the same price,
the one whose paid instances carry more users at capacity, then whose cells carry more, as the owned loadout is
packed with the layout carrying the most, so the same GPUs carry the same users owned or rented). A cell no wider
than the owned loadout is rented where one meets the speed target, so rent and purchase compare the
same deployment; else the wider cells a listing holds are rented and the note names both widths.
An Ollama server holds its whole host, owned or rented: it is tried on every instance size the
listings rent, one server per instance. Stated replicas are cells of a layout that meets the speed
target where one does.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics import money
from inferplan.economics.capacity import CellCapacity, LoadoutCapacity, candidate_loadouts, units_for_target
from inferplan.economics.pools import PrefillSizing
from inferplan.economics.rental import (Listing, RentedEngines, named_listing, on_demand_listings, rent_engine_instances,
                                        rent_pools)
from inferplan.economics.scenario import Scenario
from inferplan.economics.workloads import WorkloadProfile
from inferplan.errors import InvalidScenarioError, LinkReachError
from inferplan.inputs.deployment import Deployment


@dataclass(frozen=True)
class CellSpace:
    """What the owned loadout's replica cells were chosen from (the arguments of ``candidate_loadouts``)."""

    base: Deployment
    workload: WorkloadProfile
    system: str  # the loadout's label
    loadout_gpus: int
    fixed: bool  # the scenario states the cell
    start: Deployment | None  # the narrowest cell to try
    nodes: tuple[str, int] | None  # (system id, GPUs per system) when a loadout is several systems
    decode_pool: bool = False  # the cells are the decode pool beside a prefill pool


@dataclass(frozen=True)
class RentRoute:
    """The target's replica cells rented around the clock (nothing stated: not rented)."""

    rental: str | None = None  # the rental price id compared with
    listings: tuple[str, ...] = ()  # the listings the price is the median of (none: none, or your rate)
    basis: str | None = None  # what the price is
    instances: int | None = None  # whole rented instances (None: your rate per GPU-hour, or not rented)
    instance_gpus: int | None = None
    domain_gpus: int | None = None  # GPUs one rented host or NVLink domain spans (a rented rack's 72, a tray's 4)
    usd_per_month: float | None = None
    break_even_months: float | None = None  # buying pays off against renting after this many months
    break_even_note: str | None = None  # why there is no break-even though both routes are priced
    note: str | None = None
    engine_instances: int | None = None  # replica cells rented
    cell_gpus: int | None = None  # GPUs of one rented replica cell
    users: int | None = None  # users the rented cells carry
    # the users the rented capacity carries at its tightest limit (not floored): the cells the paid instances hold
    # (stated cells: those), or the prefill pool's bound where it keeps up with fewer users' prompts
    capacity_users: float | None = None
    held_cells: int | None = None  # the cells whose users those are (stated cells, your rate: the rented cells)
    cell: CellCapacity | None = None  # the rented replica cell (its layout, memory and speed)
    prefill_binds: bool = False  # the prefill pool rented beside the cells keeps up with fewer users than they carry


@dataclass(frozen=True)
class _Cells:
    """One layout's replica cells for the target."""

    gpus: int  # of one cell
    cells: int
    users: int
    prefill: PrefillSizing | None = None  # separate pools: the prefill pool rented beside the cells
    host: bool = False  # an Ollama server: it holds its whole instance, one server per instance
    cell: CellCapacity | None = None  # the layout's replica cell
    prefill_binds: bool = False  # the prefill pool keeps up with fewer users' prompts than the cells carry
    per_cell_users: float = 0.0  # the users one cell carries at its tightest limit (not floored)
    stated: bool = False  # the scenario states the cells: the paid instances run those, however many they hold

    def capacity_users(self, cells: int) -> float:
        """The users ``cells`` of these cells carry at their tightest limit, or the prefill pool's where it
        keeps up with fewer users' prompts."""
        decode = self.per_cell_users * cells
        return min(decode, self.prefill.capacity_users) if self.prefill else decode

    def held(self, rented: RentedEngines) -> int:
        """The cells ``rented``'s paid instances hold beside the prefill pool (stated cells: those)."""
        if self.stated:
            return self.cells
        g, instances, pre = rented.quote.instance_gpus, rented.instances, self.prefill
        if pre is not None and rented.quote.nvlink_spans:  # whole cells packed into sets one NVLink domain spans
            return max(self.cells, rented.quote.cells_beside(instances, pre.instances, pre.shape.gpus, self.gpus))
        if pre is not None and g % pre.shape.gpus == 0 and g % self.gpus == 0:  # the pools share instances GPU by GPU
            return max(self.cells, (rented.gpus_paid - pre.gpus) // self.gpus)
        if pre is not None:  # each pool on instances of its own
            instances -= rented.quote.instances(pre.instances, pre.shape.gpus)
        return max(self.cells, rented.quote.cells_held(instances, self.gpus))  # no cell spans two instances (or sets)

    @property
    def text(self) -> str:
        beside = (f", beside a prefill pool of {self.prefill.instances:,} instance(s) of {self.prefill.shape.gpus} GPU(s)"
                  if self.prefill else "")
        return (f"{self.cells:,} replica cell{'s' if self.cells != 1 else ''} of {self.gpus} GPU{'s' if self.gpus != 1 else ''} "
                f"carrying {self.users:,} users{beside}")

    @property
    def all_gpus(self) -> int:
        return self.cells * self.gpus + (self.prefill.gpus if self.prefill else 0)

    def rented(self, listings: tuple[Listing, ...]) -> RentedEngines | None:
        """These cells (and the prefill pool) on whole rented instances of the size that costs least."""
        if self.host:
            listings = tuple(x for x in listings if x[2] == self.gpus)
        if self.prefill is None:
            return rent_engine_instances(listings, self.gpus, self.cells)
        pre = self.prefill
        return rent_pools(listings, pre.instances, pre.shape.gpus, self.cells, self.gpus, one_host=pre.one_host)

    def at_rate(self, usd_per_gpu_hour: float) -> RentRoute:
        """These cells at your rate per GPU-hour."""
        return RentRoute(basis="your rate per GPU-hour",
                         usd_per_month=usd_per_gpu_hour * self.all_gpus * money.HOURS_PER_MONTH,
                         note=f"rent: your rate of ${usd_per_gpu_hour:,.2f} per GPU-hour for {self.text}",
                         engine_instances=self.cells, cell_gpus=self.gpus, users=self.users, cell=self.cell,
                         prefill_binds=self.prefill_binds, capacity_users=self.capacity_users(self.cells),
                         held_cells=self.cells)

    def on(self, rented: RentedEngines, wider: str = "") -> RentRoute:
        """These cells on ``rented``'s whole instances (``wider``: why they are wider than the owned loadout)."""
        q, held = rented.quote, self.held(rented)
        held = held if self.capacity_users(held) > self.capacity_users(self.cells) else self.cells  # a prefill bound
        return RentRoute(q.rental, q.listings, q.basis, rented.instances, q.instance_gpus, q.host_gpus, rented.usd_per_month,
                         note=f"{rented.note}: {self.text}{wider}", engine_instances=self.cells, cell_gpus=self.gpus,
                         users=self.users, cell=self.cell, prefill_binds=self.prefill_binds,
                         capacity_users=self.capacity_users(held), held_cells=held)


def _cells_for_target(t: LoadoutCapacity, target: int, stated: int | None = None,
                      prefill: PrefillSizing | None = None) -> _Cells | None:
    """The cells of a packed layout that carry ``target`` users (at least one), or the ``stated`` cells
    (a search's pick) and the users they carry; None: a cell misses the speed target and none is stated.
    Whole users per cell, as a loadout counts them; a user heavier than a cell takes several."""
    per_cell = t.users_at_limit / t.cells
    meets = t.cell.meets_target and per_cell > 0
    gpus = t.cell_host_gpus or t.cell.gpus  # an Ollama server holds its host's GPUs, as an owned loadout's does
    host = t.cell_host_gpus is not None
    if stated is not None:
        users = math.floor(per_cell * stated) if meets else 0
        binds = prefill is not None and prefill.users < users  # the fewer pool binds
        return _Cells(gpus, stated, prefill.users if binds else users, prefill, host, t.cell, binds,
                      per_cell if meets else 0.0, stated=True)
    if not meets:
        return None
    return _Cells(gpus, *units_for_target(per_cell, target), host=host, cell=t.cell, per_cell_users=per_cell)


def _tier(c: _Cells, loadout_gpus: int) -> tuple[bool, bool]:
    """How a layout's cells rank before their price: carrying users (stated replicas of a layout that misses
    the speed target carry none) first, then no wider than the owned loadout."""
    return c.users == 0, c.gpus > loadout_gpus


def _layouts(catalog: Catalog, space: CellSpace, host_gpus: int | None) -> tuple[LoadoutCapacity, ...]:
    """The owned loadout's layouts (``host_gpus`` None), else those that fit one rented host of that many GPUs
    (an Ollama server's cell: the host's GPUs, as owned)."""
    gpus, nodes = (space.loadout_gpus, space.nodes) if host_gpus is None else (host_gpus, None)
    try:
        trials, _ = candidate_loadouts(catalog, space.base, space.workload, system_gpus=gpus, system=space.system,
                                       cell_fixed=space.fixed, nodes=nodes, start=space.start, decode_pool=space.decode_pool)
    except LinkReachError:  # a tensor- or expert-parallel cell wider than the host's GPUs' links carry
        return ()
    except InvalidScenarioError as exc:
        if exc.field not in ("cell", "platform.gpus"):  # a cell wider than the host, or no cell fits in it
            raise
        return ()
    return trials


def rent_route(catalog: Catalog, s: Scenario, accel: str, space: CellSpace, fx_usd_per_eur: float,
               capex_usd: float | None, operating_without_staff_usd: float, *, owned_users: int,
               prefill: PrefillSizing | None = None) -> RentRoute:
    """Your rate for the GPUs the target needs, else the target's cells on whole rented instances of the
    size that costs least, priced as ``search`` prices them (``economics.rental``), with a ``prefill``
    pool beside the cells (a stated one: the cells are then the decode pool). The break-even
    compares the rent with owning's operating cost without staff, which either route pays, only where the
    owned fleet serves as many of the target's users (``owned_users``) as the rented cells do: with more or
    fewer (stated replicas fix both counts) the two prices buy different loads, so there is none."""
    route = _rented(catalog, s, accel, space, fx_usd_per_eur, prefill)
    month = route.usd_per_month
    if month is None or capex_usd is None:
        return route
    rented_users = s.target_users if route.users is None else min(s.target_users, route.users)
    if owned_users != rented_users:
        return dataclasses.replace(route, break_even_note=(
            f"the owned fleet serves {owned_users:,} of the {s.target_users:,} target users and the rented cells serve "
            f"{rented_users:,}: owning and renting carry different loads, so no break-even compares them"))
    even = capex_usd / (month - operating_without_staff_usd) if month > operating_without_staff_usd else None
    return dataclasses.replace(route, break_even_months=even)


def _rented(catalog: Catalog, s: Scenario, accel: str, space: CellSpace, fx_usd_per_eur: float,
            prefill: PrefillSizing | None) -> RentRoute:
    """The rent route before its break-even: the target's cells at your rate, else on rented instances."""
    target = s.target_users
    if s.money.rent_usd_per_gpu_hour is not None:  # the user's own rate
        options = [c for t in _layouts(catalog, space, None) if (c := _cells_for_target(t, target, s.replicas, prefill))]
        if not options:
            return RentRoute(note="rent: no replica cell meets the workload's speed target")
        return min(options, key=lambda c: (_tier(c, space.loadout_gpus), c.all_gpus, -c.users)).at_rate(
            s.money.rent_usd_per_gpu_hour)
    listings = (named_listing(catalog, accel, s.money.rental, fx_usd_per_eur) if s.money.rental
                else on_demand_listings(catalog, accel, fx_usd_per_eur))
    if not listings:
        return RentRoute()
    host = max(x.host_gpus for x in listings)  # the widest engine instance a listing hosts
    layouts = _layouts(catalog, space, host)
    if any(t.cell_host_gpus is not None for t in layouts):  # an Ollama server: every instance size, one per instance
        layouts = tuple(t for size in sorted({x[2] for x in listings} - {host}) for t in _layouts(catalog, space, size)
                        ) + layouts
    options = [(rented, c) for t in layouts if (c := _cells_for_target(t, target, s.replicas, prefill))
               if (rented := c.rented(listings)) is not None]
    if not options:
        return _no_rent(catalog, s, accel, host, fx_usd_per_eur)
    rented, c = min(options, key=lambda o: (_tier(o[1], space.loadout_gpus), o[0].usd_per_month, o[0].gpus_paid,
                                            -o[1].capacity_users(o[1].held(o[0])), -o[1].users))
    wider = (f" (wider than the owned loadout of {space.loadout_gpus} GPU{'s' if space.loadout_gpus != 1 else ''}: "
             f"no replica cell of {space.loadout_gpus} GPU{'s' if space.loadout_gpus != 1 else ''} or fewer meets the "
             f"workload's speed target, so the {c.gpus}-GPU cells a listing holds are rented)"
             if c.gpus > space.loadout_gpus else "")
    return c.on(rented, wider)


def _no_rent(catalog: Catalog, s: Scenario, accel: str, host: int, fx_usd_per_eur: float) -> RentRoute:
    """No rented instance holds a replica cell that meets the target: a named listing is refused, else said."""
    if s.money.rental:
        raise InvalidScenarioError(
            f"{s.money.rental} hosts an engine instance of at most {host} GPUs; no replica cell of {s.model} that meets "
            "the workload's speed target fits in one host", field="money.rental",
            allowed=", ".join(x.id for x in on_demand_listings(catalog, accel, fx_usd_per_eur) if x.host_gpus > host)
            or f"no {accel} listing of more than {host} GPUs")
    return RentRoute(note=f"rent: no on-demand listing hosts a replica cell of {s.model} that meets the workload's speed "
                          f"target: the widest {accel} listing hosts an engine instance of {host} GPUs")
