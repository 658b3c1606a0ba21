"""What makes two stored runs the same measurement: a run's identity (its provenance and its points' figures)
and the refusal of a point a stored run holds already, as ``store.Store.add_measurements`` checks them."""

from __future__ import annotations

import json
import sqlite3

from inferplan.errors import ConflictError
from inferplan.measurements.records import MeasuredRun
from inferplan.performance.run_record import MeasuredPoint

# the point figures every importer has read: a run's identity (percentiles and the offered load,
# read later, do not make a re-import of the same file a different run)
IDENTITY_POINT_FIELDS = {"concurrency", "input_tokens", "output_tokens", "ttft_s", "tpot_s",
                         "output_tokens_per_s_total", "requests_per_s", "prefill_tokens_per_s"}


# what a result file the client appended more runs to states otherwise, beside its points: the date (vLLM's latest
# run's; an SGLang file states none, so the day of the import) and the acceptance the server measured (since it started)
APPENDED_FIELDS = {"id", "file", "points", "measured_on", "measured_acceptance", "acceptance_rate", "acceptance_origin"}


def _run_identity(run: MeasuredRun) -> str:
    """What makes two imports the same run: its provenance and the points' means, not the file's name (a copy of the
    file under another name measured nothing new) nor where its acceptance rate came from (a run stored before that
    was recorded, imported again, is the same run)."""
    return json.dumps({**run.model_dump(mode="json", exclude={"id", "file", "points", "acceptance_origin"}, exclude_none=True),
                       "points": [p.model_dump(mode="json", include=IDENTITY_POINT_FIELDS) for p in run.points]},
                      sort_keys=True)


def _no_stored_point(run: MeasuredRun, rows: list[sqlite3.Row]) -> None:
    """A run one of whose points a stored run of the same provenance holds already (every figure alike: the same
    measurement) is refused naming both: a result file the client appended to after it was imported (SGLang's
    bench_serving always appends) would count the stored point twice. What appending more runs changes is no new
    provenance (``APPENDED_FIELDS``)."""
    setup = run.model_dump(mode="json", exclude=APPENDED_FIELDS)
    for row in rows:
        stored = _measurement(row)
        if stored.model_dump(mode="json", exclude=APPENDED_FIELDS) != setup:
            continue
        held = {_point_identity(p) for p in stored.points}
        i, point = next(((i, p) for i, p in enumerate(run.points) if _point_identity(p) in held), (None, None))
        if point is not None:
            raise ConflictError(f"{run.file}: point {i + 1} (concurrency {point.concurrency}, {point.input_tokens}/"
                                f"{point.output_tokens} tokens) is stored already in run {row['id']}",
                                field="file", located=True, allowed=f"a file of points not stored yet (its new lines "
                                f"alone), or delete run {row['id']} first to import the whole file")


def _point_identity(point: MeasuredPoint) -> str:
    return json.dumps(point.model_dump(mode="json", include=IDENTITY_POINT_FIELDS), sort_keys=True)


def _measurement(row: sqlite3.Row) -> MeasuredRun:
    return MeasuredRun.model_validate({**json.loads(row["body"]), "id": row["id"]})
