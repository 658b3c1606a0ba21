"""The requests an engine release runs at once when no max_num_seqs is stated, as data (a field of a
``MemoryRule``, ``running_defaults``: each entry from its ``first_release`` to the next one's).

An engine either fixes the count (mlx-lm's BatchGenerator decodes 32 requests together; a server without
batching serves one request at a time) or derives it from the KV pool it sized: SGLang runs
``min(pool tokens // pool_tokens_per_request, its request table)``, the table holding
``min(max(int(pool tokens / context x requests_per_pool_context), requests_floor), requests_cap) + extra_rows`` rows
(each data-parallel attention rank from its own pool; no ``requests_cap`` before 0.2.7), and under pipeline parallelism
divides that cap over the micro-batches (``engines.yaml`` ``pp_batch_limits``, ``memory/running_cap.py``). ``memory/settings.py`` applies the entry; a
speculative draft's own cap (SGLang's 48, ``engine_tiers.DraftRunningCap``) and a stated max_num_seqs win.

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

from pydantic import Field, model_validator

from inferplan.catalog.provenance import release_key
from inferplan.catalog.schema import Frozen


class RequestTable(Frozen):
    """The rows of the request table an engine sizes from its KV pool (SGLang's ``max_num_reqs``)."""

    requests_per_pool_context: int = Field(ge=1)  # int(pool tokens / context x this) ...
    requests_floor: int = Field(ge=1)  # ... at least this ...
    requests_cap: int | None = Field(None, ge=1)  # ... at most this (None: no cap) ...
    # ... and this many requests more: SGLang 0.3.3-0.4.6 size the table max_num_reqs + 1 and run up to its size (1);
    # 0.2.0-0.3.0 run one request fewer than its max_num_reqs rows (-1)
    extra_rows: int = Field(0, ge=-1)

    def requests(self, pool_tokens: int, context_tokens: int) -> int:
        """The requests the table holds for a pool of ``pool_tokens`` at a context of ``context_tokens``."""
        rows = max(int(pool_tokens / context_tokens * self.requests_per_pool_context), self.requests_floor)
        return (rows if self.requests_cap is None else min(rows, self.requests_cap)) + self.extra_rows


class RunningDefault(Frozen):
    """From ``first_release`` on, the requests the engine runs at once without a stated max_num_seqs: a fixed
    ``running_requests``, or the pool's tokens over ``pool_tokens_per_request``, at most the ``request_table``;
    ``with_draft``: what it runs with a speculative draft (None: the same)."""

    first_release: str
    running_requests: int | None = Field(None, ge=1)
    pool_tokens_per_request: int | None = Field(None, ge=1)
    request_table: RequestTable | None = None
    with_draft: int | None = Field(None, ge=1)
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""

    @model_validator(mode="after")
    def _one_way(self) -> "RunningDefault":
        release_key(self.first_release)
        from_pool = self.pool_tokens_per_request is not None and self.request_table is not None
        if (self.running_requests is not None) == from_pool or \
                (not from_pool and (self.pool_tokens_per_request or self.request_table)):
            raise ValueError("a running default is a fixed running_requests, or pool_tokens_per_request with a "
                             "request_table")
        return self

    @property
    def from_pool(self) -> bool:
        return self.running_requests is None

    def pool_requests(self, pool_tokens: int, context_tokens: int) -> int:
        """The requests run at once from a pool of ``pool_tokens`` at ``context_tokens`` (at least one)."""
        return max(1, min(pool_tokens // self.pool_tokens_per_request,
                          self.request_table.requests(pool_tokens, context_tokens)))


def running_default_at(entries: tuple[RunningDefault, ...], release: str | None) -> RunningDefault | None:
    """The entry in force at ``release`` (a release number; None: the newest), None before the first."""
    reached = [e for e in entries if release is None or release_key(e.first_release) <= release_key(release)]
    return max(reached, key=lambda e: release_key(e.first_release)) if reached else None
