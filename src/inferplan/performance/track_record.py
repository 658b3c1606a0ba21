"""The calibrated model's track record, quoted by every estimate it makes: how far it has missed
the measured points of the estimate's engine family, for the figures the estimate gives
(``catalog/data/speed_accuracy.yaml``, generated from ``inferplan validate --speed``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from inferplan.catalog.loader import Catalog
    from inferplan.performance.serving import ServingEstimate

KIND_LABELS = {
    "decode": "single-stream decode",
    "decode-concurrent": "per-user decode with other requests in flight",
    "throughput": "aggregate throughput",
    "prefill": "prefill (TTFT, prompt tokens/s)",
}


def with_track_record(catalog: Catalog, family: str, est: ServingEstimate) -> ServingEstimate:
    """``est`` with how far the model has missed measured points of its engine family, for the
    figures an estimate at its concurrency gives — or a note that it has no such points."""
    kinds = ("decode", "prefill") if est.concurrency == 1 else ("decode-concurrent", "throughput", "prefill")
    records, notes = [], []
    for kind in kinds:
        r = catalog.speed_accuracy.records.get(f"{family} {kind}")
        if r is None:
            notes.append(f"track record: no scored {KIND_LABELS[kind]} point of the {family} family in the catalogue, "
                         "so this figure is not validated")
            continue
        records.append(r)
        held = (f", held out {r.holdout_median_abs_error:.0%} ({r.holdout_points})"
                if r.holdout_median_abs_error is not None else "")
        notes.append(f"track record, {family} {KIND_LABELS[kind]}: median |error| {r.median_abs_error:.0%} over "
                     f"{r.points} measured point{'s' if r.points > 1 else ''}{held}; {r.beyond_30_percent} beyond 30 %, "
                     f"worst {r.worst_error:+.0%} (inferplan validate --speed)")
    return est.model_copy(update={"validated": tuple(records), "assumptions": (*est.assumptions, *notes)})
