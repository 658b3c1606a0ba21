"""Which free-memory figure an engine release reads on an integrated GPU, as data (``free_memory_queries`` of a
rule in ``data/engine_memory_rules.yaml``).

On a CUDA integrated GPU (``Accelerator.integrated_gpu``: GB10, Jetson) the device has no memory of its own, and
cudaMemGetInfo's free figure counts the OS's reclaimable page cache as used. A release that sizes its KV cache from
that figure (``device``) gets less the more of the checkpoint the page cache holds when it reads it; one that reads
the OS's available memory instead (``os_available``: psutil's ``available``, MemAvailable) does not. Each entry
states one query from a release on, inside the rule's releases, with the engine source it was read from.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from inferplan.catalog.schema import Frozen

FreeMemoryReading = Literal["device", "os_available"]


class FreeMemoryQuery(Frozen):
    """The free-memory figure an engine reads on an integrated GPU, from ``first_release`` on (a later entry of
    the same rule takes over from its own first_release)."""

    first_release: str  # inclusive, inside the rule's range
    query: FreeMemoryReading
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""
