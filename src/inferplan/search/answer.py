"""Why nothing (or little) was found, said once: the failed families grouped by identical reason and, when
one cause explains the answer, that cause and the searches to run next.

Buying bare GPUs the catalogue prices only inside systems fails every family on price: the answer is one
sentence and three next steps (the systems that hold those GPUs, renting them, a price of your own),
not one line per family. Renting bare GPUs no listing rents is said the same way, with buying as the next
steps (the systems that hold them, or a price of your own). A price cause leads when some family failed on price and no platform searched has a
price on the route asked (buying, renting or either), or when most families failed on price and the rest
missed a service target by at most the near-miss margin (``data/defaults.yaml``: inside the speed model's
error, so not the cause). Families that fail on memory or the engine fail at any price: they never hide the
cause, and are said below it, grouped. The reasons measured against a stated limit (budget, latency) lead; within
a reason, the group whose nearest family is closest to the cap or target it missed (the cheapest machine over a
capex cap)."""

from __future__ import annotations

from collections import Counter

from inferplan.catalog.loader import Catalog
from inferplan.search.pricing import priced_systems
from inferplan.search.request import SearchRequest
from inferplan.search.result import Deployed, Family, Infeasible, InfeasibleSummary, NextStep, ReasonGroup
from inferplan.search.space import Platform

PRICE = "price"
AT_ANY_PRICE = ("memory", "engine")  # reasons a price would not change


def summarize(catalog: Catalog, req: SearchRequest, results: tuple[Deployed, ...], infeasible: tuple[Infeasible, ...],
              platforms: dict[str, Platform], margin: float, priced: bool) -> InfeasibleSummary:
    """The failed families grouped by reason; with no result, the cause and next steps when price is it.
    ``priced``: some platform searched has a price on the route asked."""
    groups = _groups(infeasible)
    if results or not _price_is_the_cause(infeasible, margin, priced):
        return InfeasibleSummary(groups=groups)
    bare = sorted({p.accelerator.id for x in infeasible if x.reason == PRICE
                   and (p := platforms.get(x.platform)) is not None and p.system is None})
    if not bare:
        too_narrow = req.pricing == "rent" and _listed(catalog, infeasible, platforms)
        cause = ("no deployment can be priced: no rental listing hosts an engine instance that meets the targets "
                 "(an instance's GPUs must share one rented host, or one rented set an NVLink domain spans)" if too_narrow else
                 f"no deployment can be priced: {_route_words(req.pricing)}")
        return InfeasibleSummary(cause=cause, groups=groups,
                                 next_steps=_buy_whole(catalog, req, infeasible, platforms) if too_narrow else ())
    if req.pricing == "rent":
        cause = f"renting bare {', '.join(bare)} GPUs cannot be priced: {_unrented_words(catalog, bare)}"
        narrowest = min((x.unrented_gpus for x in infeasible if x.reason == PRICE and x.unrented_gpus), default=1)
        return InfeasibleSummary(cause=cause, groups=groups, next_steps=_buying_steps(catalog, req, bare, narrowest))
    gpus = ", ".join(bare)
    held = [a for a in bare if priced_systems(catalog, a)]
    inside = ("" if not held else " (it prices them inside systems)" if held == bare
              else f" (it prices {', '.join(held)} inside systems)")
    cause = f"buying bare {gpus} GPUs cannot be priced: the catalogue has no purchase price for them alone{inside}"
    return InfeasibleSummary(cause=cause, groups=groups, next_steps=_next_steps(catalog, req, bare))


def _groups(infeasible: tuple[Infeasible, ...]) -> tuple[ReasonGroup, ...]:
    """The families grouped by identical reason and message, nearest miss first (``_nearest_first``)."""
    by: dict[tuple[str, str, str | None, int | None], list[Infeasible]] = {}
    for x in infeasible:
        by.setdefault((x.reason, x.message, x.fits_in_quantization, x.fits_at_max_model_len), []).append(x)
    groups = [ReasonGroup(reason=r, message=m, families=tuple(
        Family(model=x.model, platform=x.platform, engine=x.engine, quantization=x.quantization) for x in xs),
        shortfall=min((x.shortfall for x in xs if x.shortfall is not None), default=None),
        fits_in_quantization=q, fits_at_max_model_len=n) for (r, m, q, n), xs in by.items()]
    return _nearest_first(groups)


def _nearest_first(groups: list[ReasonGroup]) -> tuple[ReasonGroup, ...]:
    """A reason's groups together: first the reasons measured against a limit the request states (a group with a
    ``shortfall``: the budget, a latency target), then the rest, each part the reason failing most families
    first; within a reason the group nearest the request first (its least ``shortfall``: under a capex cap the
    cheapest machine, for a missed target the smallest miss, for memory the least memory needed over the GPUs'),
    those with no measured distance after, larger first (sorts are stable: then the families' own order)."""
    families = Counter()
    for g in groups:
        families[g.reason] += len(g.families)
    measured = {g.reason for g in groups if g.shortfall is not None} - set(AT_ANY_PRICE)  # memory: the GPUs' own limit
    rank = {r: i for i, r in enumerate(dict.fromkeys(g.reason for g in groups))}
    return tuple(sorted(groups, key=lambda g: (g.reason not in measured, -families[g.reason], rank[g.reason],
                                               g.shortfall is None, g.shortfall or 0.0, -len(g.families))))


def _price_is_the_cause(infeasible: tuple[Infeasible, ...], margin: float, priced: bool) -> bool:
    """Some family failed on price and no platform searched is priced on the route, or, setting aside the
    families no price helps (memory, engine), most failed on price and each other missed a target by at
    most ``margin``."""
    if not any(x.reason == PRICE for x in infeasible):
        return False
    if not priced:
        return True
    reasons = Counter(x.reason for x in infeasible if x.reason not in AT_ANY_PRICE)
    rest = [x for x in infeasible if x.reason not in AT_ANY_PRICE and x.reason != PRICE]
    hair = all(x.reason == "latency" and x.shortfall is not None and x.shortfall <= 1 + margin for x in rest)
    return not rest or (reasons[PRICE] > len(rest) and hair)


def _priced_out(infeasible: tuple[Infeasible, ...], platforms: dict[str, Platform]) -> list[Platform]:
    """The platforms of the families that failed on price, each once, in the families' order."""
    seen = {x.platform: p for x in infeasible if x.reason == PRICE and (p := platforms.get(x.platform)) is not None}
    return list(seen.values())


def _listed(catalog: Catalog, infeasible: tuple[Infeasible, ...], platforms: dict[str, Platform]) -> bool:
    """Every platform that failed on price has rental listings for its GPU: no listing was wide enough."""
    listed = {r.accelerator for r in catalog.rental_prices}
    out = _priced_out(infeasible, platforms)
    return bool(out) and all(p.accelerator.id in listed for p in out)


def _buy_whole(catalog: Catalog, req: SearchRequest, infeasible: tuple[Infeasible, ...],
               platforms: dict[str, Platform]) -> tuple[NextStep, ...]:
    """Where the listings rent fewer GPUs in one host than an engine instance takes: buy the priced systems
    searched (bought, an instance may take a system's whole NVLink domain), or search every engine and weight
    format for an instance as narrow as the largest listing."""
    out = _priced_out(infeasible, platforms)
    systems = [p.system.id for p in out
               if p.system is not None and p.system.id in priced_systems(catalog, p.accelerator.id)]
    steps = [NextStep(text=f"buy {', '.join(systems)} instead: inferplan prices a bought system's engine instance "
                           "across its NVLink domain", changes={"pricing": "buy"})] if systems else []
    gpus = {p.accelerator.id for p in out}
    widest = max((r.host_gpus for r in catalog.rental_prices if r.accelerator in gpus), default=None)
    if widest is not None and (req.engines or req.quantizations):
        steps.append(NextStep(text=f"search another engine or a weight format whose instance fits in {widest} GPUs",
                              changes={"engines": None, "quantizations": None}))
    return tuple(steps)


def _unrented_words(catalog: Catalog, bare: list[str]) -> str:
    """Why renting the ``bare`` GPUs has no price: no listing, or listings narrower than an engine instance."""
    listed = {r.accelerator for r in catalog.rental_prices}
    narrow, none = [a for a in bare if a in listed], [a for a in bare if a not in listed]
    whose = "their" if not none else f"the {', '.join(narrow)}"
    said = [f"{whose} rental listings rent fewer GPUs in one host (or one NVLink domain) than an engine instance that meets "
            "the targets takes"] if narrow else []
    if none:
        said.append(f"the catalogue has no rental listing for {'them' if not narrow else ', '.join(none)}")
    return "; ".join(said)


def _route_words(pricing: str) -> str:
    return {"buy": "the catalogue has no purchase price for the platforms searched",
            "rent": "no rental listing hosts the platforms searched"}.get(
        pricing, "the catalogue has neither a purchase price nor a rental listing for the platforms searched")


def _held_in(catalog: Catalog, req: SearchRequest, bare: list[str]) -> list[str]:
    """The priced catalogue systems of the statuses searched that hold the ``bare`` GPUs."""
    return [s for a in bare for s in priced_systems(catalog, a) if catalog.system(s).status.value in req.statuses]


def _buying_steps(catalog: Catalog, req: SearchRequest, bare: list[str], narrowest: int) -> tuple[NextStep, ...]:
    """Where renting ``bare`` GPUs has no listing wide enough: buy the priced systems that hold them with at least
    ``narrowest`` GPUs (the narrowest engine instance refused) in one scale-up domain, or buy them bare at a
    price of your own."""
    systems = [s for s in _held_in(catalog, req, bare) if catalog.system(s).scale_up_domain_gpus >= narrowest]
    steps = [NextStep(text=f"buy the catalogued systems that hold them: {', '.join(systems)}",
                      changes={"systems": systems, "accelerators": None, "pricing": "buy"})] if systems else []
    steps.append(NextStep(text="buy them at your own price per GPU, the host added as the catalogue prices it",
                          changes={"pricing": "buy", "gpu_price_usd": {**(req.gpu_price_usd or {}),
                                                                       **{a: None for a in bare}}}))
    return tuple(steps)


def _next_steps(catalog: Catalog, req: SearchRequest, bare: list[str]) -> tuple[NextStep, ...]:
    systems = _held_in(catalog, req, bare)
    rented = sorted({r.accelerator for r in catalog.rental_prices} & set(bare))
    steps = []
    if systems:
        steps.append(NextStep(text=f"search the catalogued systems that hold them: {', '.join(systems)}",
                              changes={"systems": systems, "accelerators": None, "gpu_price_usd": None}))
    if rented and req.pricing == "buy":
        steps.append(NextStep(text=f"rent them (rental listings are catalogued for {', '.join(rented)})",
                              changes={"pricing": "rent", "gpu_price_usd": None}))
    steps.append(NextStep(text="state your own purchase price per GPU, the host added as the catalogue prices it",
                          changes={"gpu_price_usd": {**(req.gpu_price_usd or {}), **{a: None for a in bare}}}))
    return tuple(steps)
