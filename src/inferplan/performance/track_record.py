"""The calibrated model's track record, quoted by every estimate it makes: how far it has missed
the measured points of the estimate's engine family, for the figures the estimate gives
(``catalog/data/speed_accuracy.yaml``, generated from ``inferplan validate --speed``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferplan.catalog.memo import per_catalog

if TYPE_CHECKING:  # pragma: no cover
    from inferplan.catalog.loader import Catalog
    from inferplan.catalog.points_schema import SpeedAccuracy
    from inferplan.performance.estimate import ServingEstimate

KIND_LABELS = {
    "decode": "single-stream decode",
    "decode-concurrent": "per-user decode with other requests in flight",
    "throughput": "aggregate throughput",
    "prefill": "prefill (TTFT, prompt tokens/s)",
    "offload-decode": "decode with weights in host RAM",
    "offload-prefill": "prefill with weights in host RAM",
}


def with_track_record(catalog: Catalog, family: str, est: ServingEstimate, *, offloaded: bool = False) -> ServingEstimate:
    """``est`` with how far the model has missed measured points of its engine family, for the
    figures an estimate at its concurrency gives — or a note that it has no such points — and, where
    the estimate's own model has enough points in the family, that model's record and which way
    the predictions lean. With weights in host RAM (``offloaded``) the record is the offload points', which
    are scored apart from the GPU-only ones."""
    kinds = ("offload-decode", "offload-prefill") if offloaded else \
        ("decode", "prefill") if est.concurrency == 1 else ("decode-concurrent", "throughput", "prefill")
    records, notes = _record(catalog, family, kinds, est.model)
    return est.model_copy(update={"validated": records, "assumptions": (*est.assumptions, *notes)})


@per_catalog(maxsize=256)  # a search's service curves quote the same few families' records thousands of times
def _record(catalog: Catalog, family: str, kinds: tuple[str, ...], model: str) -> tuple[tuple, tuple[str, ...]]:
    """The family's (and the model's own) records of ``kinds`` and the notes that quote them."""
    records, notes = [], []
    for kind in kinds:
        r = catalog.speed_accuracy.records.get(f"{family} {kind}")
        if r is None:
            notes.append(f"track record: no scored {KIND_LABELS[kind]} point of the {family} family in the catalogue, "
                         "so this figure is not validated")
            continue
        records.append(r)
        notes.append(f"track record, {family} {KIND_LABELS[kind]}: {_summary(r)}")
        own = catalog.speed_accuracy.records.get(f"{family} {kind} {model}")
        if own is not None:
            records.append(own)
            notes.append(f"track record on {model} itself, {family} {KIND_LABELS[kind]}: {_summary(own)}; "
                         f"{_lean(own.median_speed_bias)}")
    return tuple(records), tuple(notes)


def _summary(r: SpeedAccuracy) -> str:
    held = (f", held out {r.holdout_median_abs_error:.0%} ({r.holdout_points})"
            if r.holdout_median_abs_error is not None else "")
    return (f"median |error| {r.median_abs_error:.0%} over {r.points} measured point{'s' if r.points > 1 else ''}{held}; "
            f"{r.beyond_30_percent} beyond 30 %, worst {abs(r.worst_error):.0%} "
            f"({'too fast' if r.worst_speed_bias > 0 else 'too slow'}; inferplan validate --speed)")


def _lean(bias: float) -> str:
    """Which way a model's predictions lean, in words."""
    if abs(bias) < 0.05:
        return f"its predictions lean neither way (median {bias:+.0%})"
    way = "faster" if bias > 0 else "slower"
    return f"the model predicts it {way} than measured (median {bias:+.0%}): read this estimate with that in mind"
