"""The command (and config file) that joins a disaggregated deployment's prefill and decode pools,
filled from the engine's router template (``DisaggregationRule.router`` in engine_flags.yaml)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from inferplan.catalog.flags_schema import DisaggregationRule

ROLES = ("prefill", "decode")
_PLACEHOLDER = re.compile(r"\{(prefill|decode)\.(?!count\})")


@dataclass(frozen=True)
class Worker:
    """One serving instance of a pool as the router reaches it."""

    host: str
    port: int
    ports: dict[str, int] = field(default_factory=dict)  # the further per-worker ports (worker_ports)


def worker_ports(rule: DisaggregationRule, index: int) -> dict[str, int]:
    """The further ports the ``index``-th worker of the deployment takes (each worker its own)."""
    return {name: first + index for name, first in rule.worker_ports.items()}


def _role(text: str) -> str | None:
    found = {m.group(1) for m in _PLACEHOLDER.finditer(text)}
    return found.pop() if found else None


def _fill(text: str, role: str, worker: Worker | None, workers: dict[str, list[Worker]]) -> str:
    counts = {r: type("Count", (), {"count": len(workers[r])})() for r in ROLES}
    return text.format(**{**counts, role: worker}) if worker is not None else text.format(**counts)


def router_argv(rule: DisaggregationRule, workers: dict[str, list[Worker]]) -> tuple[str, ...]:
    """The router's argv for these workers: an argument naming one role's worker written once per
    worker, a nested group once per worker."""
    argv: list[str] = []
    for item in rule.router:
        group = (item,) if isinstance(item, str) else item
        role = next((r for part in group if (r := _role(part))), None)
        if role is None:
            argv += [_fill(part, "prefill", None, workers) for part in group]
            continue
        for worker in workers[role]:
            argv += [_fill(part, role, worker, workers) for part in group]
    return tuple(argv)


def _filled(value: object, workers: dict[str, list[Worker]]) -> object:
    if isinstance(value, dict):
        return {key: _filled(v, workers) for key, v in value.items()}
    if isinstance(value, list):
        out: list = []
        for item in value:
            role = _role(item) if isinstance(item, str) else None
            out += [_fill(item, role, w, workers) for w in workers[role]] if role else [_filled(item, workers)]
        return out
    if isinstance(value, str) and "{" in value:
        text = _fill(value, "prefill", None, workers)
        return int(text) if text.isdigit() else text
    return value


def router_file(rule: DisaggregationRule, workers: dict[str, list[Worker]]) -> dict | None:
    """The router's config file for these workers (None: the router takes no file)."""
    return None if rule.router_file is None else _filled(rule.router_file.template, workers)
