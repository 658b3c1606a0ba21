"""How long a search may run, a way to stop it from outside, and the stages its progress names.

A search checks its ``Budget`` between cells (and as it simulates each pick): past the
deadline, or once ``cancel()`` is called (the HTTP client has gone), it stops with
``OutOfTimeError`` instead of computing an answer nobody will read. The same checks report its
progress (``Progress``), each stage named as a progress bar says it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from inferplan.errors import OutOfTimeError

# over twice the slowest search measured on the shared 2-core review machine (51 s, users 3e8), and
# longer than an HTTP client or a person at a terminal waits for an answer
SEARCH_DEADLINE_S = 120.0
NARROWER = ("name fewer models, systems, accelerators, engines, quantizations or kv_cache_dtypes, or fewer "
            "statuses and form factors")

# (done, total, stage): how far a stage has gone, each stage named as a progress bar says it
Progress = Callable[[int, int, str], None]
MODEL_STAGE = "modelling the cells"
CHECK_STAGE = "simulating the picks"


@dataclass(frozen=True)
class Budget:
    deadline_s: float = field(default_factory=lambda: SEARCH_DEADLINE_S)  # read when made: a test may lower it
    started_s: float = field(default_factory=time.monotonic)
    stopped: threading.Event = field(default_factory=threading.Event, repr=False)

    def from_now(self) -> "Budget":
        """This budget with its clock started now and the same stop: a search's time is the time it runs, not
        the time its request waited for a turn to run in (``shells/api_work.py``)."""
        return dataclasses.replace(self, started_s=time.monotonic())

    def cancel(self) -> None:
        """Stop the search at its next check (from another thread)."""
        self.stopped.set()

    def check_cancelled(self) -> None:
        """Stop once ``cancel()`` was called, whatever the deadline: the check of work its inputs bound
        (a simulation, ``search/simulate.py``)."""
        if self.stopped.is_set():
            raise OutOfTimeError("the work was stopped: whoever asked for it has gone")

    def check(self, done: int = 0, total: int = 0, stage: str = MODEL_STAGE) -> None:
        self.check_cancelled()
        elapsed = time.monotonic() - self.started_s
        if elapsed > self.deadline_s:
            where = f" ({stage}, {done:,} of {total:,})" if total else ""
            raise OutOfTimeError(f"the search ran past its time limit of {self.deadline_s:g} s{where}",
                                 allowed=f"a search that finishes within {self.deadline_s:g} s: {NARROWER}")

    def watching(self, progress: Callable[..., None] | None) -> Callable[..., None]:
        """``progress`` (or nothing) with this budget checked first at each call."""
        def watched(done: int, total: int, *stage: str) -> None:
            self.check(done, total, *stage)
            if progress is not None:
                progress(done, total, *stage)
        return watched
