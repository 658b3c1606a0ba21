"""How an engine starts one serving instance over several hosts, as data (``engine_flags.yaml``, ``multi_host``).

One instance whose GPUs (TP × PP × DP) are more than one host holds runs one command per host: host 0, the
head, serves the API; the others join it. An engine record lists the ways it does that, in the order it
prefers them; a launch takes the first one the planned release has (``since``) and the layout allows
(``data_parallel``, ``whole_ranks``).
An argument may hold ``{hosts}`` (how many), ``{node_rank}`` (this host's index), ``{head}`` (host 0's
address), ``{workers}`` (the other hosts' addresses, comma-separated, each with ``worker_port``: llama.cpp's
``--rpc``), ``{local_ranks}`` and ``{start_rank}`` (the data-parallel ranks a host runs, and its first):
``deploy.nodes`` fills them for a shell (``$HEAD_IP``) or for a Kubernetes LeaderWorkerSet (the
addresses LWS gives each pod).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import model_validator

from inferplan.catalog.schema import Frozen

PLACEHOLDERS = ("{hosts}", "{node_rank}", "{head}", "{workers}", "{local_ranks}", "{start_rank}")


class MultiHostLaunch(Frozen):
    """One way to start an instance over several hosts: arguments added to each host's engine command, or a
    command the other hosts run instead of the engine (Ray's ``ray start --address``)."""

    method: Literal["native", "data_parallel", "ray", "rpc"]
    since: str | None = None  # the first release that takes it (None: every release the record covers)
    data_parallel: bool = True  # whether it starts an instance with data-parallel ranks too
    data_parallel_refusal: str | None = None  # why not, and what to run instead (said when it is refused)
    # it spreads the data-parallel ranks over hosts, each rank (TP × PP) whole on one: only for such a layout
    whole_ranks: bool = False
    kubernetes: bool = True  # whether one pod per host can run it as written (a LeaderWorkerSet)
    every_host: tuple[str, ...] = ()  # added to every host's engine command
    head: tuple[str, ...] = ()  # added to the head's engine command only
    workers: tuple[str, ...] = ()  # added to the other hosts' engine commands only
    head_before: tuple[tuple[str, ...], ...] = ()  # commands the head runs before its engine
    worker_command: tuple[str, ...] = ()  # what the other hosts run instead of the engine (empty: the engine)
    worker_port: int | None = None  # the port ``worker_command`` listens on, after each address in ``{workers}``
    # it spreads layers (pipeline stages) over the hosts, not tensor-parallel ranks: an instance with TP above 1
    # over hosts is refused
    layers_only: bool = False
    source: str
    note: str | None = None

    def engine_flags(self) -> tuple[str, ...]:
        """The engine options this way adds to engine commands (not the commands it runs beside them)."""
        return tuple(a for a in (*self.every_host, *self.head, *self.workers) if a.startswith("-"))

    @model_validator(mode="after")
    def _placeholders_known(self) -> "MultiHostLaunch":
        args = (*self.every_host, *self.head, *self.workers, *self.worker_command,
                *(a for command in self.head_before for a in command))
        unknown = sorted({p for a in args for p in re.findall(r"\{[^}]*\}", a)} - set(PLACEHOLDERS))
        if unknown:
            raise ValueError(f"unknown placeholders: {', '.join(unknown)} (known: {', '.join(PLACEHOLDERS)})")
        if any("{workers}" in a for a in args) and self.worker_port is None:
            raise ValueError("{workers} needs worker_port: the port each worker's address is written with")
        return self
