"""Where a machine stands, as data (``data/economics/sites.yaml``): a data centre, or a desk at home
or in an office. A site names the cost defaults a plan takes for its electricity price, PUE and
colocation when the scenario states none, and the system tiers and GPU form factors that stand
there; every tier and form factor in the catalogue belongs to exactly one site.
"""

from pydantic import Field

from inferplan.catalog.schema import SLUG, Frozen
from inferplan.errors import CatalogError


class Site(Frozen):
    id: str = Field(pattern=SLUG)
    description: str
    system_tiers: tuple[str, ...]  # System.tier values that stand here
    gpu_form_factors: tuple[str, ...]  # Accelerator.form_factor values a bare-GPU platform of which stands here
    electricity: str  # cost_defaults id with a USD price per kWh
    pue: str  # cost_defaults id with a ratio
    colocation: str  # cost_defaults id with a USD price per kW-month
    notes: tuple[str, ...] = ()


# which amount each named cost default must carry
_AMOUNTS = {"electricity": "usd", "pue": "ratio", "colocation": "usd"}


def check_sites(catalog) -> None:  # a Catalog (loader.py imports this module)
    """Each site names cost defaults that carry the right amount; each system tier and GPU form factor
    in the catalogue stands at exactly one site."""
    if not catalog.sites:
        return  # a partial catalogue (tests loading a few files) holds no sites
    for site in catalog.sites:
        for name, amount in _AMOUNTS.items():
            key = getattr(site, name)
            record = catalog.cost_defaults.records.get(key)
            if record is None or getattr(record, amount) is None:
                raise CatalogError(f"sites:{site.id}: {name} {key!r} is no cost default with a {amount} amount",
                                   field=site.id)
    for label, values, attr in (("system tier", {s.tier for s in catalog.systems}, "system_tiers"),
                                ("GPU form factor", {a.form_factor for a in catalog.accelerators}, "gpu_form_factors")):
        for value in sorted(values):
            at = [s.id for s in catalog.sites if value in getattr(s, attr)]
            if len(at) != 1:
                raise CatalogError(f"sites: the {label} {value!r} stands at {len(at)} sites ({', '.join(at) or 'none'}); "
                                   "it must stand at exactly one", field=attr)


def site_of(catalog, tier: str | None, form_factor: str) -> Site:
    """The site of a catalogue system of ``tier``, or (tier None) of a bare-GPU platform of ``form_factor``."""
    attr, value = ("system_tiers", tier) if tier is not None else ("gpu_form_factors", form_factor)
    return next(s for s in catalog.sites if value in getattr(s, attr))
