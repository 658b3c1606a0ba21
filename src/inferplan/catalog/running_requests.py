"""The running requests an engine release sets itself where no max_num_seqs is stated, as data on its memory rule
(``engine_memory_rules.yaml``): SGLang's cap while a speculative draft runs (``running_requests_with_draft``) and its
default for an architecture, with or without a draft (``running_requests_by_architecture``: DeepSeek-V4's 256).

Each is the server's total, which the release divides over its DP attention ranks as it divides a stated
--max-running-requests; from the entry's ``running_requests_floor_per_rank`` on each rank runs at least that many.
A list holds entries by first release, each to the next. ``memory/settings.py`` applies them.

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

from typing import Annotated, TypeVar

from pydantic import AfterValidator, ConfigDict, Field

from inferplan.catalog.provenance import release_key
from inferplan.inputs import Input
from inferplan.inputs.deployment import SPECULATIVE_METHODS


def _methods(methods: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [m for m in methods if m not in SPECULATIVE_METHODS]
    if unknown:
        raise ValueError(f"unknown speculative methods {unknown}: allowed {', '.join(SPECULATIVE_METHODS)}")
    return methods


class ReleaseRunningRequests(Input):
    """From ``first_release`` on (to the next entry's), the running requests the release sets over the whole server."""

    model_config = ConfigDict(defer_build=True)

    first_release: str  # inclusive, inside the rule's range
    running_requests: int = Field(ge=1)
    # the fewest each DP attention rank runs (0: none, the total over the ranks as they divide, where a share of 0
    # stops the server at start-up)
    running_requests_floor_per_rank: int = Field(0, ge=0)
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""

    def per_rank(self, ranks: int) -> int:
        """What each of ``ranks`` DP attention ranks runs (0: the release refuses to start)."""
        return max(self.running_requests_floor_per_rank, self.running_requests // ranks)


class DraftRunningCap(ReleaseRunningRequests):
    """The running requests the release sets while a speculative draft of one of ``methods`` runs."""

    # inferplan's speculative methods the release caps (empty: every one)
    methods: Annotated[tuple[str, ...], AfterValidator(_methods)] = ()

    def caps(self, method: str) -> bool:
        return not self.methods or method in self.methods


class ArchitectureRunningRequests(ReleaseRunningRequests):
    """The running requests the release sets for a model of one of ``architectures``, with or without a draft."""

    architectures: tuple[str, ...] = Field(min_length=1)  # Hugging Face architecture names


Entry = TypeVar("Entry", bound=ReleaseRunningRequests)


def running_entry_at(entries: tuple[Entry, ...], release: str | None) -> Entry | None:
    """The entry holding at ``release`` (None: the rule's open end, the last entry); None before the first."""
    reached = [e for e in entries if release is None or release_key(e.first_release) <= release_key(release)]
    return max(reached, key=lambda e: release_key(e.first_release)) if reached else None
