"""Renting GPUs by the listing's instance, the one rule ``plan`` and ``search`` both price with.

A provider rents ``gpus_per_instance`` GPUs in one host, so an engine instance (its tensor-, pipeline-
and data-parallel GPUs, which share a host) must fit inside one rented instance, and a deployment pays
for whole instances. A listing rented only in sets (``min_instances``: a GB200 NVL72 rack's 18 trays) is
paid in whole sets, and where one NVLink domain spans the set (``nvlink_spans_rental``) an engine instance
may span the set's GPUs, as on an owned rack. Per instance size that holds the engine instance the price is the median
on-demand price per GPU-hour over that size's listings (marketplace floors and hyperscaler list prices
both sit far from what a buyer pays): the middle listing's, or for an even count the mean of the middle
two, with the lower middle one as the listing compared with. A deployment rents the size that costs
least for its engine instances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from inferplan.catalog.loader import Catalog
from inferplan.catalog.economics_schema import RentalPrice
from inferplan.economics import money
from inferplan.errors import InvalidScenarioError

class Listing(NamedTuple):
    """A listing as renting prices it."""

    id: str  # the rental id
    usd_per_gpu_hour: float  # on demand
    gpus: int  # per instance
    min_instances: int = 1  # rented in whole sets of this many instances
    nvlink_spans: bool = False  # one NVLink domain spans each set
    down_per_set: int = 0  # instances of a set the provider may hold down at once for maintenance

    @property
    def host_gpus(self) -> int:
        """The widest engine instance it hosts: its NVLink domain's GPUs where one spans a set, else an instance's."""
        return self.gpus * self.min_instances if self.nvlink_spans else self.gpus


def listing_of(r: RentalPrice, usd_per_gpu_hour: float) -> Listing:
    down = r.unavailable_instances_per_set
    return Listing(r.id, usd_per_gpu_hour, r.gpus_per_instance, r.set_instances, r.nvlink_spans_rental,
                   int(down.value) if down is not None else 0)


@dataclass(frozen=True)
class RentQuote:
    """Engine instances of ``width`` GPUs on rented instances of ``instance_gpus`` GPUs each."""

    rental: str  # the listing compared with (of a median over an even count: the lower middle one)
    usd_per_gpu_hour: float
    instance_gpus: int
    width: int
    note: str
    listings: tuple[str, ...] = ()  # the listings the price is the median of, cheapest first
    min_instances: int = 1  # instances are rented in whole sets of this many
    nvlink_spans: bool = False  # one NVLink domain spans each set: an engine instance may span its GPUs
    down_per_set: int = 0  # instances of a set the provider may hold down at once for maintenance

    @property
    def set_gpus(self) -> int:
        return self.instance_gpus * self.min_instances

    @property
    def host_gpus(self) -> int:
        """The GPUs an engine instance may span: a set's where one NVLink domain spans it, else an instance's."""
        return self.set_gpus if self.nvlink_spans else self.instance_gpus

    @property
    def basis(self) -> str:
        """What the price is, in a few words: the median of which listings, or the one listing's."""
        if len(self.listings) > 1:
            return f"median of {len(self.listings)} on-demand listings of {self.instance_gpus}-GPU instances"
        return f"on-demand price of {self.rental} ({self.instance_gpus}-GPU instances)"

    @property
    def usd_per_instance_month(self) -> float:
        return self.usd_per_gpu_hour * self.instance_gpus * money.HOURS_PER_MONTH

    def instances(self, engine_instances, width: int | None = None):
        """Rented instances that hold ``engine_instances`` of ``width`` GPUs (default the quote's; no
        engine instance spans two rented ones, or two sets where an NVLink domain spans each), in whole sets."""
        return -(-engine_instances // self.cells_held(self.min_instances, width or self.width)) * self.min_instances

    def cells_held(self, instances: int, width: int) -> int:
        """Engine instances of ``width`` GPUs that ``instances`` rented instances hold (none spans two instances,
        or two sets where an NVLink domain spans each)."""
        per_set = self.set_gpus // width if self.nvlink_spans else self.instance_gpus // width * self.min_instances
        return instances // self.min_instances * per_set

    def whole_sets(self, instances):
        """``instances`` rounded up to whole sets."""
        return -(-instances // self.min_instances) * self.min_instances

    def pool_instances(self, prefill, prefill_width: int, decode, decode_width: int):
        """Rented instances that hold a prefill pool beside a decode pool (each at most ``width`` wide). Where
        an NVLink domain spans each set, whole cells are packed into sets, the wider cells first and the
        narrower in the GPUs they leave (``_packed_sets``); else GPU by GPU where both widths divide the
        instance's GPUs, else each pool on instances of its own."""
        if self.nvlink_spans:
            wide, narrow = sorted(((prefill, prefill_width), (decode, decode_width)), key=lambda x: -x[1])
            return _packed_sets(self.set_gpus, *wide, *narrow) * self.min_instances
        g = self.instance_gpus
        if g % prefill_width == 0 and g % decode_width == 0:
            return self.whole_sets(-(-(prefill * prefill_width + decode * decode_width) // g))
        return self.instances(prefill, prefill_width) + self.instances(decode, decode_width)

    def cells_beside(self, instances: int, prefill: int, prefill_width: int, width: int) -> int:
        """The most cells of ``width`` GPUs that ``instances`` rented instances hold beside ``prefill`` cells of
        ``prefill_width``, packed as ``pool_instances`` packs them."""
        low, high = 0, instances * self.instance_gpus // width
        while low < high:  # the largest count whose pools fit: pool_instances grows with it
            mid = (low + high + 1) // 2
            low, high = (mid, high) if self.pool_instances(prefill, prefill_width, mid, width) <= instances else (low, mid - 1)
        return low

    def pools_month(self, prefill, prefill_width: int, decode, decode_width: int, one_host):
        """(rented instances, USD a month) of both pools (``pool_instances``); where their KV hand-over
        runs on the fast link (``one_host``) they share one rented instance (one set where an NVLink domain
        spans it), so more is no option (inf)."""
        rented = self.pool_instances(prefill, prefill_width, decode, decode_width)
        one = self.min_instances if self.nvlink_spans else 1
        return rented, np.where(one_host & (rented > one), np.inf, rented * self.usd_per_instance_month)


def _packed_sets(set_gpus: int, wide, wide_width: int, narrow, narrow_width: int):
    """Sets of ``set_gpus`` GPUs that hold ``wide`` cells of ``wide_width`` GPUs and ``narrow`` cells of
    ``narrow_width`` (no wider), no cell across two sets: the wide cells fill sets first, the narrow ones fill
    the GPUs each set has left, and more sets hold the narrow cells left over."""
    per_set = set_gpus // wide_width
    sets = -(-wide // per_set)
    last = wide - (sets - 1) * per_set  # wide cells in the last set holding them (none without a set)
    room = np.where(sets > 0, (sets - 1) * ((set_gpus - per_set * wide_width) // narrow_width)
                    + (set_gpus - last * wide_width) // narrow_width, 0)
    return sets + -(-np.maximum(narrow - room, 0) // (set_gpus // narrow_width))


def hourly_usd(r: RentalPrice, fx: float) -> float | None:
    """A listing's on-demand price in USD per GPU-hour (None: it lists none)."""
    if r.on_demand_usd_per_gpu_hour:
        return r.on_demand_usd_per_gpu_hour.value
    if r.on_demand_eur_per_gpu_hour:
        return r.on_demand_eur_per_gpu_hour.value * fx
    return None


def on_demand_listings(catalog: Catalog, accel_id: str, fx: float) -> tuple[Listing, ...]:
    """The GPU's listings with an on-demand price, cheapest first."""
    return tuple(sorted((listing_of(r, h) for r in catalog.rental_prices if r.accelerator == accel_id
                         if (h := hourly_usd(r, fx)) is not None), key=lambda x: (x[1], x[0])))


def rent_quotes(listings: tuple[Listing, ...], width: int) -> tuple[RentQuote, ...]:
    """Renting engine instances of ``width`` GPUs: one quote per instance size (and set rented) that holds them,
    each the median over that size's listings, smallest size first. Empty: no listing hosts it."""
    listings = tuple(Listing(*x) for x in listings)
    sizes = sorted({x[2:] for x in listings if x.host_gpus >= width})
    return tuple(_median_quote(sorted((x for x in listings if x[2:] == g), key=lambda x: (x[1], x[0])), width)
                 for g in sizes)


def _median_quote(options: list[Listing], width: int) -> RentQuote:
    low, high = options[(len(options) - 1) // 2], options[len(options) // 2]
    median = (low[1] + high[1]) / 2
    which = (f"{low[0]} at ${low[1]:.2f}" if low is high else
             f"${median:.3f}, the mean of the middle two: {low[0]} at ${low[1]:.2f} and {high[0]} at ${high[1]:.2f}")
    span = f"${options[0][1]:.2f}–${options[-1][1]:.2f}" if len(options) > 1 else f"${low[1]:.2f}"
    listings = "listing" if len(options) == 1 else "listings"
    note = f"rent: median of {len(options)} on-demand {listings} of {low[2]}-GPU instances ({span} per GPU-hour): {which}"
    if low.min_instances > 1:
        note += (f", rented in whole sets of {low.min_instances} instances"
                 f"{f' ({low.host_gpus} GPUs in one NVLink domain)' if low.nvlink_spans else ''}")
    return RentQuote(low[0], median, low[2], width, note, tuple(x[0] for x in options), low.min_instances,
                     low.nvlink_spans, low.down_per_set)


@dataclass(frozen=True)
class RentedEngines:
    """Engine instances on whole rented instances, at the instance size that costs least."""

    quote: RentQuote
    instances: int  # rented instances taken
    usd_per_month: float

    @property
    def gpus_paid(self) -> int:
        return self.instances * self.quote.instance_gpus

    @property
    def note(self) -> str:
        return rented_note(self.quote, self.instances)


def rented_note(q: RentQuote, instances: int) -> str:
    """The quote's note, and the whole instances taken and GPUs paid for."""
    paid = instances * q.instance_gpus
    up = (q.min_instances - q.down_per_set) * q.instance_gpus  # a set's GPUs while the provider holds some down
    down = (f"; the provider asks workloads to tolerate {q.down_per_set} of a set's instances down for maintenance, "
            f"and an engine instance of {q.width} GPUs spans more than the {up} GPUs left up, so it stops meanwhile"
            if q.down_per_set and q.width > up else "")
    return (f"{q.note}; rented as {instances:,} {q.instance_gpus}-GPU instance{'s' if instances != 1 else ''} "
            f"({paid:,} GPU{'s' if paid != 1 else ''} paid for){down}")


def rent_engine_instances(listings: tuple[Listing, ...], width: int, engine_instances: int) -> RentedEngines | None:
    """``engine_instances`` of ``width`` GPUs rented on the instance size that costs least a month
    (the smaller size on a tie). None: no listing hosts an engine instance that wide."""
    options = [(q.instances(engine_instances) * q.usd_per_instance_month, i, q)
               for i, q in enumerate(rent_quotes(listings, width))]
    if not options:
        return None
    monthly, _, q = min(options, key=lambda o: (o[0], o[1]))
    return RentedEngines(q, q.instances(engine_instances), monthly)


def rent_pools(listings: tuple[Listing, ...], prefill: int, prefill_width: int, decode: int, decode_width: int, *,
               one_host: bool) -> RentedEngines | None:
    """A prefill pool beside a decode pool rented on the instance size that costs least a month (the
    smaller size on a tie), as ``search`` rents them (``RentQuote.pools_month``). None: no listing
    hosts the wider instance, or none holds both pools in one host where ``one_host`` needs it."""
    options = []
    for i, q in enumerate(rent_quotes(listings, max(prefill_width, decode_width))):
        rented, monthly = q.pools_month(prefill, prefill_width, decode, decode_width, one_host)
        if np.isfinite(monthly):
            options.append((float(monthly), i, q, int(rented)))
    if not options:
        return None
    monthly, _, q, rented = min(options, key=lambda o: (o[0], o[1]))
    return RentedEngines(q, rented, monthly)


def named_listing(catalog: Catalog, accel_id: str, wanted: str, fx: float) -> tuple[Listing]:
    """The listing a scenario names (``money.rental``), checked to rent the platform's GPU on demand."""
    r = catalog.rental_prices.get(wanted, field_name="money.rental", error=InvalidScenarioError)
    if r.accelerator != accel_id:  # renting other GPUs says nothing about when buying these pays off
        same = sorted(x.id for x in catalog.rental_prices if x.accelerator == accel_id)
        raise InvalidScenarioError(f"{r.id} rents {r.accelerator}, not the platform's {accel_id}",
                                   field="money.rental", allowed=", ".join(same) or f"no listing for {accel_id}")
    hourly = hourly_usd(r, fx)
    if hourly is None:
        raise InvalidScenarioError(f"{r.id} lists no on-demand price to compare with", field="money.rental")
    return (listing_of(r, hourly),)
