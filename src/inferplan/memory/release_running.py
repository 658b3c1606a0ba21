"""The running requests an engine release sets itself where no max_num_seqs is stated (the rule's
``running_requests_by_architecture`` and ``running_requests_with_draft``: ``catalog/running_requests.py``), per DP
attention rank as the release divides them, and why: SGLang's 256 for DeepSeek-V4 from 0.5.12, draft or not, and
else the 48 (32 at 0.4.4) it sets while a speculative draft runs. An architecture's default comes first: the
release sets it before the draft's, which then finds the value set and leaves it."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.catalog.running_requests import ReleaseRunningRequests, running_entry_at
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.state_pool import attention_dp_ranks, draft_method, draft_named


@dataclass(frozen=True)
class ReleaseRunning:
    """The running requests the release sets: ``entry``'s total, ``per_rank`` on each of ``ranks`` DP attention ranks;
    ``architecture``: the model's, where the release sets them for it (None: for the speculative draft)."""

    entry: ReleaseRunningRequests
    per_rank: int
    ranks: int
    architecture: str | None = None

    @property
    def why(self) -> str:
        return f"for {self.architecture}" if self.architecture else "with a speculative draft"


def release_running(d: Deployment, engine_name: str, rule: MemoryRule | None, release: str | None,
                    arch: Architecture | None) -> ReleaseRunning | None:
    """The running requests ``rule``'s ``release`` (None: the rule's open end) sets itself for ``d`` of ``arch``
    (None: none it sets, or max_num_seqs is stated). A share of 0 a rank, where the release has no floor, is
    refused naming data_parallel_size: the release stops at start-up (or admits no request)."""
    if rule is None or d.max_num_seqs:
        return None
    hf_architecture = arch.hf_architecture if arch is not None else None
    by_arch = running_entry_at(rule.running_requests_by_architecture, release)
    with_draft = running_entry_at(rule.running_requests_with_draft, release) if draft_named(d) else None
    if by_arch is not None and hf_architecture in by_arch.architectures:
        entry, entries, named = by_arch, rule.running_requests_by_architecture, hf_architecture
    elif with_draft is not None and with_draft.caps(draft_method(d, arch)):
        entry, entries, named = with_draft, rule.running_requests_with_draft, None
    else:
        return None
    running = ReleaseRunning(entry, entry.per_rank(attention_dp_ranks(d)), attention_dp_ranks(d), named)
    if running.per_rank == 0:
        floor_from = next((e.first_release for e in entries if e.running_requests_floor_per_rank), None)
        raise InvalidScenarioError(
            f"{engine_name} {release or entry.first_release} sets --max-running-requests {entry.running_requests} "
            f"itself {running.why} and divides it over the {running.ranks} DP attention ranks: "
            f"{entry.running_requests} // {running.ranks} = 0 each, so it serves no request "
            f"({', '.join(entry.sources)})", field="data_parallel_size",
            allowed=f"at most {entry.running_requests} DP attention ranks, a stated max_num_seqs"
                    + (f", or engine_version {floor_from} or later" if floor_from else ""))
    return running


def release_running_cause(engine_name: str, release: str | None, running: ReleaseRunning) -> str:
    """What sets the planned release's running requests, with its sources: "SGLang 0.5.23 sets
    --max-running-requests 48 itself with a speculative draft when none is given (sources)"."""
    entry = running.entry
    return (f"{engine_name} {release or entry.first_release} sets --max-running-requests {entry.running_requests} "
            f"itself {running.why} when none is given ({', '.join(entry.sources)})")


def release_running_note(engine_name: str, release: str | None, running: ReleaseRunning) -> str:
    """Why the planned release runs ``running.per_rank`` requests at most on each DP attention rank."""
    entry = running.entry
    total = running.per_rank * running.ranks
    each = f" ({running.per_rank} on each of {running.ranks} DP attention ranks)" if running.ranks > 1 else ""
    draft = ", with or without a speculative draft (a draft's cap applies only while none is set)" \
        if running.architecture else ""
    return (f"{engine_name} {release or entry.first_release} sets --max-running-requests {entry.running_requests} "
            f"itself {running.why} when none is given{draft}: at most {total} requests run at once{each}, the rest "
            f"queue ({', '.join(entry.sources)}); --max-num-seqs states another cap")
