"""Where a stored run's acceptance rate per draft token comes from, as its import records it (``acceptance_origin``),
and what every view of the run says of it: ``show`` and ``validate --mine`` (``compare.py``, also the API's and the
web page's), and the export.

- ``stated``: the user stated it at import (``--acceptance-rate``, the API's ``provenance.acceptance_rate``);
- ``measured``: the acceptance the run's server measured, as its result file saves it (``measured_acceptance``);
- ``published``: the one its catalogued EAGLE-3 draft's published acceptance length gives;
- ``assumed``: inferplan's default (``DEFAULT_ACCEPTANCE_RATE``), where none of those gave one;
- ``unknown``: the run was stored before inferplan recorded where the rate came from (``store.py``: store version 2
  and earlier).

A run whose rate was assumed for a method that has no default (``NO_DEFAULT_ACCEPTANCE_METHODS``: ngram), or whose
origin is unknown and whose rate is the other methods' default (``DEFAULT_ACCEPTANCE_RATE``), is not
predicted at it (``needs_restating``), and ``restate_text`` says how to state the run's own rate (delete it and import
it again).
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import DEFAULT_ACCEPTANCE_RATE
from inferplan.measurements.records import AcceptanceOrigin, MeasuredRun, origin_of
from inferplan.performance.drafts import NO_DEFAULT_ACCEPTANCE_METHODS, Acceptance, resolve_acceptance

UNKNOWN = "unknown: stored before inferplan recorded where the rate came from"


def run_origin(run: MeasuredRun) -> AcceptanceOrigin | None:
    """Where ``run``'s acceptance rate comes from (None: it has no draft tokens, or no rate)."""
    if not run.speculative_tokens or run.acceptance_rate is None:
        return None
    return run.acceptance_origin or "unknown"


def needs_restating(run: MeasuredRun) -> bool:
    """``run``'s rate is, or may be, the default an import assumed for a method that has none now: it is not predicted
    at it."""
    origin = run_origin(run)
    if origin is None or run.speculative_method not in NO_DEFAULT_ACCEPTANCE_METHODS:
        return False
    measured = run.measured_acceptance
    return origin == "assumed" or (origin == "unknown" and run.acceptance_rate == DEFAULT_ACCEPTANCE_RATE
                                   and not (measured is not None and measured.rate == run.acceptance_rate))


def origin_text(run: MeasuredRun, d: Deployment, catalog: Catalog) -> str:
    """``acceptance R`` and where it comes from, as the comparison's notes and the export's source say it; a published
    or assumed rate in perf's words where perf resolves ``d``'s drafts to the same rate now."""
    origin, rate, measured = run_origin(run), run.acceptance_rate, run.measured_acceptance
    server = f"{measured.rate:.3g} the server measured: {measured.text}" if measured is not None else ""
    if origin == "measured" and measured is not None:
        return f"acceptance {rate:.3g} as the server measured it ({measured.text})"
    if origin == "stated":
        return f"acceptance {rate:.3g} as the run states it (--acceptance-rate{f', over the {server}' if server else ''})"
    if origin == "unknown":
        return f"acceptance {rate:.3g} ({UNKNOWN}{f'; the {server}' if server else ''})"
    now = _resolved(d, catalog) if run.speculative_method not in NO_DEFAULT_ACCEPTANCE_METHODS else None
    if origin == "published":
        return now.text if now and now.rate == rate and origin_of(now) == origin else \
            f"acceptance {rate:.3g}, its draft's published rate at import"
    why = now.basis.removeprefix("assumed: ") if now and now.rate == rate and now.assumed else \
        "nothing stated, measured or published one"
    return f"acceptance {rate:.3g} assumed by inferplan at import ({why})"


def _resolved(d: Deployment, catalog: Catalog) -> Acceptance | None:
    try:
        return resolve_acceptance(catalog, d, None)
    except InferplanError:
        return None


def restate_text(run: MeasuredRun) -> str:
    """Why ``run`` (``needs_restating``) is not predicted, and how its own rate is stated: the run is deleted and its
    file imported again with the rate (a stored run is not edited in place)."""
    why = ("was assumed by inferplan at import" if run_origin(run) == "assumed" else
           f"({UNKNOWN}) may be the default inferplan assumed at import")
    return (f"not predicted: its acceptance {run.acceptance_rate:.3g} {why}, and {run.speculative_method} drafting "
            "has no default rate (it drafts only where the output repeats the prompt, so the rate is the workload's). "
            f"State the rate the engine logged on this run: delete run {run.id} (inferplan measurements delete "
            f"{run.id}, or DELETE /api/measurements/{run.id}) and import {run.file} again with --acceptance-rate (the "
            "API's provenance.acceptance_rate) beside what it was imported with")
