"""Two files of one import that measured the same load level of the same deployment on the same day.

The plans pool the runs of one deployment, taking the newest run's point where two measured one load level
(``performance/local_runs.py``: newest by date, then by the order stored); two such runs imported together share
the date and differ only in the order stored (their ids), so the later file's figure would be kept arbitrarily and
the other dropped unread. The import refuses them naming both files and points, as ``formats.py`` refuses two
points of one file at one level.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from inferplan.errors import InvalidScenarioError


class _Run(Protocol):
    """What the check reads of a ``records.MeasuredRun`` (records imports this module, so it is not imported here)."""

    file: str
    points: Sequence[Any]

    def model_dump_json(self, *, exclude: set[str]) -> str: ...

# what each file of one import measures itself, beside the deployment and day it shares with the others; the
# acceptance rate a run is planned at is not among them: the plans keep runs of other rates apart (``_drafts``)
PER_FILE = {"id", "file", "points", "note", "measured_acceptance", "acceptance_origin", "kv_cache_tokens"}


def one_point_per_level(runs: list[_Run]) -> None:
    """Refuse the second of two runs of one deployment and day holding a point at the same load level (concurrency,
    lengths, request rate), naming both files and points."""
    seen: dict[tuple, tuple[int, str, int]] = {}
    whole = [run.model_dump_json(exclude={"id", "file"}) for run in runs]
    for k, run in enumerate(runs):
        if whole[k] in whole[:k]:
            continue  # the same run given twice: the store refuses it as that (``Store.add_measurements``)
        setup = run.model_dump_json(exclude=PER_FILE)
        for i, p in enumerate(run.points):
            level = (setup, p.concurrency, p.input_tokens, p.output_tokens, p.request_rate_per_s)
            if level in seen and seen[level][0] != k:
                _, first, j = seen[level]
                rate = f", {p.request_rate_per_s:g} requests/s" if p.request_rate_per_s else ""
                raise InvalidScenarioError(
                    f"{run.file}: point {i + 1} measures the load level of {first} point {j + 1} again (concurrency "
                    f"{p.concurrency}, {p.input_tokens}/{p.output_tokens} tokens{rate}) on the same deployment and day: "
                    "the plans would keep one and drop the other unread", field="file", located=True,
                    allowed="each load level of a deployment once a day in one import: leave one file out, or import "
                            "it on its own (a later import of the same day is taken as the newer run)")
            seen.setdefault(level, (k, run.file, i))
