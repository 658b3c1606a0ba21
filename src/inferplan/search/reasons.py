"""Why a family — one model on one platform with one engine and weight format — has no deployment
that works: memory, a latency target (which, and by how much), throughput, or a cap the request set
(budget, power, GPUs, a price route). Accumulated over the family's candidates as arrays."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inferplan.economics.rental import Listing
from inferplan.errors import InferplanError
from inferplan.memory.fit import fit
from inferplan.search.arrivals import rate_text
from inferplan.search.request import Targets
from inferplan.search.result import Infeasible

# target field -> (grid attribute, True when lower is better, label)
CHECKS = {
    "ttft_p50_s": ("ttft_p50_s", True, "TTFT p50"),
    "ttft_p95_s": ("ttft_p95_s", True, "TTFT p95"),
    "ttft_p99_s": ("ttft_p99_s", True, "TTFT p99"),
    "tpot_p95_s": ("tpot_p95_s", True, "TPOT p95"),
    "min_output_tokens_per_s_per_user": ("p95_tokens_per_s_per_user", False, "tokens/s per user (p95)"),
    "e2e_p95_s": ("e2e_p95_s", True, "end-to-end p95"),
    "max_utilisation": ("utilisation", True, "utilisation"),
}
UNITLESS = ("max_utilisation",)


def unit_of(name: str) -> str:
    """A target's unit as the answer prints it: tok/s for the speed floor, s for a time, none for the utilisation."""
    return "tok/s" if not CHECKS[name][1] else "" if name in UNITLESS else "s"


def target_mask(grid, targets: Targets, margin: float = 0.0) -> np.ndarray:
    """The candidates that meet every stated target, each loosened by ``margin`` (a ceiling × (1 + margin),
    a floor × (1 − margin); 0: the targets as stated)."""
    ok = np.ones(len(grid), bool)
    for name, (attr, lower, _) in CHECKS.items():
        limit = getattr(targets, name)
        if limit is not None:
            value = getattr(grid, attr)
            ok &= value <= limit * (1 + margin) if lower else value >= limit * (1 - margin)
    return ok


def slack(values: dict[str, float], targets: Targets, utilisation: float) -> str:
    """The stated target closest to its limit (value / limit, inverted for a floor), or the
    utilisation when every target has more room than the instances have spare capacity."""
    ratios = {"utilisation": utilisation}
    values = {**values, "utilisation": utilisation}
    for name, (attr, lower, label) in CHECKS.items():
        limit = getattr(targets, name)
        if limit is not None:
            ratios[label] = values[attr] / limit if lower else limit / values[attr]
    return max(ratios, key=ratios.get)


@dataclass
class FamilyStats:
    errors: list[str] = field(default_factory=list)
    stable: bool = False
    met: bool = False  # some candidate meets every target (before the request's caps)
    feasible: bool = False
    best: dict[str, float] = field(default_factory=dict)  # best value of each check over stable candidates
    least_gpus: float = np.inf  # among the candidates meeting the targets
    least_capex: float = np.inf
    least_power: float = np.inf
    priced: bool = False
    # the narrowest engine instance no listing hosts, the largest listing's GPUs and what it rents
    # (``largest_listing``), and whether a bought system runs that instance inside its NVLink domain
    unrentable: tuple[int, int, str, bool] | None = None

    def note_unrentable(self, width: int, listings: tuple[tuple[str, float, int], ...], accelerator: str,
                        system=None, domain_gpus: int = 0) -> None:
        """A cell whose engine instance (``width`` GPUs in one host) no rental listing (``listings``, as
        ``UnitCosts.listings``) holds; ``system``: the platform's, bought whole, its NVLink domain ``domain_gpus``."""
        if self.unrentable is None or width < self.unrentable[0]:
            self.unrentable = (width, max(Listing(*x).host_gpus for x in listings),
                               largest_listing(listings, accelerator, system),
                               system is not None and width <= domain_gpus)

    def add(self, grid, stable_met: np.ndarray, priced: np.ndarray, feasible: np.ndarray, paid: np.ndarray,
            power: np.ndarray) -> None:
        """``priced``: the monthly cost of the cheaper route before any cap (nan: no price); ``paid`` and
        ``power``: the GPUs paid for and the watts drawn on each candidate's route."""
        stable = grid.stable
        self.stable |= bool(stable.any())
        if stable.any():
            for name, (attr, lower, _) in CHECKS.items():
                v = getattr(grid, attr)[stable]
                b = float(v.min() if lower else v.max())
                old = self.best.get(name)
                self.best[name] = b if old is None else (min(old, b) if lower else max(old, b))
        if stable_met.any():
            self.met = True
            self.least_gpus = min(self.least_gpus, float(paid[stable_met].min()))
            cap = grid.capex_usd[stable_met]
            self.least_capex = min(self.least_capex, float(np.nanmin(cap)) if np.isfinite(cap).any() else np.inf)
            pw = power[stable_met]
            self.least_power = min(self.least_power, float(np.nanmin(pw)) if np.isfinite(pw).any() else np.inf)
            self.priced |= bool(np.isfinite(priced[stable_met]).any())
        self.feasible |= bool(feasible.any())


def largest_listing(listings: tuple[tuple[str, float, int], ...], accelerator: str, system=None) -> str:
    """What the largest rental listing of ``accelerator`` rents, the listings named: on a ``system`` whose
    operating-system host (a rack's compute tray) is narrower than its NVLink domain, what the catalogue
    models of it: an instance priced within one listed host, none wider on a rented rack."""
    listings = tuple(Listing(*x) for x in listings)
    largest = max(x.host_gpus for x in listings)
    named = ", ".join(dict.fromkeys(x.id for x in listings if x.host_gpus == largest))
    host = int(system.os_host_gpus.value) if system is not None and system.os_host_gpus is not None else None
    if host is not None and largest == host < system.scale_up_domain_gpus:
        part, whole = ("tray", "rack") if system.tier == "rack" else ("host", "system")
        return (f"inferplan prices rented instances within one listed host ({largest}-GPU {part}s for this "
                f"listing, {named}); wider instances on a rented {whole} are not priced")
    if any(x.nvlink_spans for x in listings if x.host_gpus == largest):  # a set of instances in one NVLink domain
        return f"the widest {accelerator} listing ({named}) hosts engine instances of up to {largest} GPUs in one NVLink domain"
    return f"the largest {accelerator} listing ({named}) rents {largest}-GPU instances"


def telling_digits(value: float, limit: float) -> int:
    """The fewest significant digits (at least 3) that write ``value`` apart from ``limit``."""
    return next((n for n in range(3, 10) if f"{value:.{n}g}" != f"{limit:.{n}g}"), 10)


def miss_text(label: str, best: float, limit: float, unit: str, side: str, lead: str = "at best") -> str:
    """A missed target with as many digits as it takes to tell the best reached from the limit: "TTFT
    p99 at best 3.004 s against 3 s (0.13% over)", never "3 s against 3 s (0% over)"."""
    digits = telling_digits(best, limit)
    gap = abs(best / limit - 1)
    share = f"{gap:.0%}" if gap >= 0.01 else f"{gap:.2%}" if gap >= 1e-4 else "less than 0.01%"
    u = f" {unit}" if unit else ""
    return f"{label} {lead} {best:.{digits}g}{u} against {limit:g}{u} ({share} {side})"


def memory_shortfall(catalog, d) -> float | None:
    """How far a family that fits in no layout is from fitting, in the shape of the other reasons' ``shortfall``: the
    memory one instance on all the platform's GPUs (``Space.unfitted``) needs per GPU over what the engine can use of
    each (1.5: half as much again), its weights, one sequence's KV cache at the load's context and its buffers; where
    start-up is short too (``memory/startup.py``), what it needs per GPU over the headroom outside the engine's
    fraction, each on its own base, the larger of the two; None where no plan sizes it (refused before sizing)."""
    if d is None:
        return None
    try:
        r = fit(d, catalog)
    except InferplanError:
        return None
    ratios = [1 + short / base for short, base in ((r.shortfall_bytes, r.usable_bytes_per_gpu),
                                                  (r.startup_shortfall_bytes_per_gpu, r.startup_headroom_bytes_per_gpu))
              if short > 0 and base > 0]
    return None if r.fits or not ratios else max(ratios)


def closest_first(x: Infeasible) -> tuple:
    """Sort key: by reason, then the family nearest the request's cap or target first (the cheapest when
    the budget binds), then by name; a family with no measured distance after those with one."""
    return (x.reason, np.inf if x.shortfall is None else x.shortfall, x.platform, x.engine, x.quantization)


def explain(family: tuple[str, str, str, str], s: FamilyStats, targets: Targets, *, max_gpus, max_capex_usd,
            max_power_w, pricing: str, bare: str | None = None, bare_in_systems: bool = False) -> Infeasible:
    """``bare``: the accelerator of a platform of N bare GPUs (None: a system); ``bare_in_systems``: the
    catalogue prices that accelerator inside systems."""
    model, platform, engine, quant = family

    def out(reason: str, message: str, shortfall: float | None = None, unrented: int | None = None) -> Infeasible:
        return Infeasible(model=model, platform=platform, engine=engine, quantization=quant, reason=reason,
                          message=message, shortfall=shortfall, unrented_gpus=unrented)

    if not s.stable and not s.best:
        if s.errors:
            return out("memory", s.errors[0])
        return out("throughput", "no number of instances searched keeps up with the load")
    if not s.met:
        misses, gaps = [], []
        for name, (_, lower, label) in CHECKS.items():
            limit, best = getattr(targets, name), s.best.get(name)
            if limit is None or best is None:
                continue
            if (best > limit) if lower else (best < limit):
                misses.append(miss_text(label, best, limit, unit_of(name), "over" if lower else "under"))
                gaps.append(best / limit if lower else limit / best)
        if misses:  # each target's best on its own, over every replica count: not one deployment's figures
            return out("latency", "; ".join(misses) + " (each the best over every replica count searched)", max(gaps))
        return out("latency", "each target is met by some candidate, but no candidate meets them all at once")
    if max_gpus is not None and s.least_gpus > max_gpus:
        return out("gpus", f"meeting the targets takes at least {s.least_gpus:.0f} GPUs; the cap is {max_gpus}",
                   s.least_gpus / max_gpus)
    if not s.priced:
        if s.unrentable is not None and pricing != "buy":
            width, largest, rented, whole = s.unrentable
            if whole:
                return out("price", f"no rental listing hosts an engine instance of {width} GPUs: {rented}; buy the "
                           f"{platform}, or search another engine or a weight format whose instance fits in "
                           f"{largest} GPUs", unrented=width)
            return out("price", f"no rental listing hosts an engine instance of {width} GPUs: {rented}, and an "
                       f"instance's GPUs must share a host", unrented=width)
        route = {"buy": "purchase price", "rent": "rental listing"}.get(pricing, "purchase price or rental listing")
        if bare is not None:  # one message for every N of the GPU: their families group as one reason
            inside = ", which it prices inside systems" if pricing != "rent" and bare_in_systems else ""
            return out("price", f"the catalogue has no {route} for bare {bare} GPUs{inside}")
        return out("price", f"the catalogue has no {route} for {platform}")
    if max_capex_usd is not None and pricing != "rent" and s.least_capex > max_capex_usd:
        return out("budget", f"meeting the targets costs at least ${rate_text(s.least_capex)} to buy; the cap is "
                   f"${rate_text(max_capex_usd)}",
                   s.least_capex / max_capex_usd)
    if max_power_w is not None and s.least_power > max_power_w:
        return out("power", f"meeting the targets draws at least {rate_text(s.least_power / 1000)} kW; the cap is "
                   f"{rate_text(max_power_w / 1000)} kW",
                   s.least_power / max_power_w)
    return out("budget", "no candidate meeting the targets fits every cap at once (GPUs, capex, power)")


# a target past these is far outside what an interactive service asks of one request: most likely
# milliseconds written where seconds are meant (2000 for 2 s); said beside the echoed targets
PLAUSIBLE_TARGET_MAX = {"ttft_p50_s": 60.0, "ttft_p95_s": 60.0, "ttft_p99_s": 60.0, "tpot_p95_s": 1.0, "e2e_p95_s": 3600.0}


def targets_text(targets: Targets, assumed_utilisation: str | None = None) -> tuple[str, ...]:
    """The targets a search applied, with units, and a warning for each past ``PLAUSIBLE_TARGET_MAX``;
    ``assumed_utilisation``: why the utilisation ceiling is the default's, said beside it."""
    said, warnings = [], []
    for name, (_, lower, label) in CHECKS.items():
        limit = getattr(targets, name)
        if limit is None:
            continue
        if name == "min_output_tokens_per_s_per_user":
            said.append(f"tokens/s per user (p95) ≥ {limit:g} tok/s")
            continue
        if name == "max_utilisation":
            said.append(f"utilisation ≤ {limit:g}" + (f" (assumed: {assumed_utilisation}; set max_utilisation to "
                                                       "change it)" if assumed_utilisation else ""))
            continue
        said.append(f"{label} ≤ {limit:g} s")
        if limit > PLAUSIBLE_TARGET_MAX[name]:
            warnings.append(f"{label} ≤ {limit:g} s is over {PLAUSIBLE_TARGET_MAX[name]:g} s: targets are in seconds "
                            f"({limit:g} ms would be {limit / 1000:g} s)")
    return (("targets applied: " + "; ".join(said),) if said else ("no latency target stated: any deployment that keeps up with the load qualifies",)) + tuple(warnings)

