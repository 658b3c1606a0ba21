"""The command (and config file) that joins a disaggregated deployment's prefill and decode pools,
filled from the engine's router template (``DisaggregationRule.router`` in engine_flags.yaml)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.launch_modes_schema import DisaggregationRule
from inferplan.errors import UnsupportedSettingError

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


def router_argv(rule: DisaggregationRule, workers: dict[str, list[Worker]],
                template: tuple[str | tuple[str, ...], ...] | None = None,
                startup_window_s: int | None = None) -> tuple[str, ...]:
    """The router's argv for these workers (from ``template``, default the rule's router): an argument naming
    one role's worker written once per worker, a nested group once per worker; ``startup_window_s``: how long it
    waits for the workers to start, where the router takes it (``router_startup_timeout_flag``)."""
    argv: list[str] = []
    for item in rule.router if template is None else template:
        group = (item,) if isinstance(item, str) else item
        role = next((r for part in group if (r := _role(part))), None)
        if role is None:
            argv += [_fill(part, "prefill", None, workers) for part in group]
            continue
        for worker in workers[role]:
            argv += [_fill(part, role, worker, workers) for part in group]
    if rule.router_startup_timeout_flag and startup_window_s:
        argv += [rule.router_startup_timeout_flag, str(startup_window_s)]
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


def filled(text: str, role: str, worker: Worker) -> str:
    """``text`` with one ``role`` worker's placeholders filled in."""
    return _fill(text, role, worker, {r: [worker] for r in ROLES})


def router_file(rule: DisaggregationRule, workers: dict[str, list[Worker]]) -> dict | None:
    """The router's config file for these workers (None: the router takes no file)."""
    return None if rule.router_file is None else _filled(rule.router_file.template, workers)


def router_notes(role: str, flags: EngineFlags) -> tuple[str, ...]:
    """For one side of a disaggregated deployment: what joins the prefill and decode pools (one
    worker of each at PREFILL_HOST and DECODE_HOST)."""
    rule = flags.disaggregation
    if role == "both" or rule is None or not rule.router:
        return ()
    port = rule.first_worker_port or flags.default_port
    workers = {r: [Worker(f"{r.upper()}_HOST", port, worker_ports(rule, 0))] for r in ROLES}
    note = f"the prefill and decode pools are joined by: {shlex.join(router_argv(rule, workers))}"
    config = router_file(rule, workers)
    if config is not None:
        note += f", with {rule.router_file.name}: {json.dumps(config, separators=(', ', ': '))}"
    note += f" ({rule.router_note})" if rule.router_note else ""
    return (note + "; inferplan deploy --prefill-instances N --replicas M prints both pools and the router, "
                   "as many instances as the plan runs",)


def role_args(role: str, flags: EngineFlags) -> list[str]:
    rule = flags.disaggregation
    if rule is None:
        raise UnsupportedSettingError(f"{flags.engine} {flags.version} has no prefill/decode disaggregation", field="role",
                                      allowed="both")
    values = rule.roles[role]
    if rule.json_flag:
        return [rule.json_flag, json.dumps(values, separators=(",", ":"))]
    return [part for flag, value in values.items() for part in (flag, value)]
