"""The launch script of a disaggregated deployment: every prefill and decode worker, each pinned to
its own GPUs with its own port, options file and per-worker ports, then the router that joins them.

Workers are laid out on consecutive GPUs of a host (``host_gpus`` each; a worker that would cross a
host's last GPU starts on the next host, named ``HOST1``, ``HOST2`` ...), each listening on the
engine's first worker port plus its index, and run in the background; the router, started last,
stays in the foreground. Flag names, ports, options and the router's command and config file are the
engine's data (``DisaggregationRule`` in engine_flags.yaml).
"""

from __future__ import annotations

import shlex

import yaml

from inferplan.catalog.loader import Catalog
from inferplan.deploy.command import (LaunchCommand, LaunchFile, Speculative, engine_flags, here_document,
                                      launch_command, planned_speculative, with_draft)
from inferplan.deploy.router import Worker, router_argv, router_file, worker_ports
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.deploy.output import Output
from inferplan.memory.fit import as_planned
from inferplan.memory.layout import instance_gpus

LOCAL_HOST = "localhost"  # where the router reaches workers on its own host


class PoolsLaunch(Output):
    """The commands that start a disaggregated deployment, as one script."""

    workers: tuple[LaunchCommand, ...]
    router: tuple[str, ...]
    files: tuple[LaunchFile, ...]  # the workers' options files and the router's config, each once
    script: str
    notes: tuple[str, ...] = ()


def pools_launch(catalog: Catalog, prefill: Deployment, decode: Deployment, *, prefill_instances: int = 1,
                 decode_instances: int = 1, prefill_speculative: Speculative | None = None,
                 decode_speculative: Speculative | None = None, host_gpus: int | None = None) -> PoolsLaunch:
    """Every worker of ``prefill_instances`` prefill and ``decode_instances`` decode instances, and the
    router; ``host_gpus``: the GPUs one host has (None: every worker on one host)."""
    flags = engine_flags(catalog, decode.engine)
    rule = flags.disaggregation
    if rule is None:
        raise UnsupportedSettingError(f"{flags.engine} {flags.version} has no prefill/decode disaggregation",
                                      field="engine", allowed=", ".join(f.engine for f in catalog.engine_flags
                                                                        if f.disaggregation))
    pools = [("prefill", prefill, prefill_instances, prefill_speculative),
             ("decode", decode, decode_instances, decode_speculative)]
    first_port = rule.first_worker_port or flags.default_port
    placed: list[tuple[str, Deployment, Speculative | None, int, int | None, int]] = []  # role, d, drafts, host, first GPU, GPUs
    gpu = 0
    for role, d, instances, spec in pools:
        size = instance_gpus(as_planned(with_draft(d, catalog, planned_speculative(d, catalog, spec)), catalog))
        for _ in range(instances):
            host_index, first = _place(gpu, size, host_gpus)
            gpu = host_index * (host_gpus or 0) + (first or 0) + size
            placed.append((role, d, spec, host_index, first, size))
    hosts = {p[3] for p in placed}
    commands: list[LaunchCommand] = []
    workers: dict[str, list[Worker]] = {"prefill": [], "decode": []}
    for index, (role, d, spec, host_index, first, size) in enumerate(placed):
        # peers on other hosts reach a worker at its host's address (HOST0 for the router's own host)
        address = f"HOST{host_index}" if len(hosts) > 1 else LOCAL_HOST
        command = launch_command(d, catalog, role=role, speculative=spec, port=first_port + index, worker=index,
                                 devices=tuple(range(first, first + size)) if first is not None else None,
                                 address=address)
        commands.append(command)
        workers[role].append(Worker(_host(host_index), command.port, worker_ports(rule, index)))
    return _assemble(commands, workers, rule, hosts)


def _place(gpu: int, size: int, host_gpus: int | None) -> tuple[int, int | None]:
    """The host (index) and first device of a worker of ``size`` GPUs starting at GPU ``gpu`` of the
    deployment (None: a worker larger than a host is not pinned)."""
    if host_gpus is None:
        return 0, gpu
    if size > host_gpus:
        return gpu // host_gpus, None
    host, first = divmod(gpu, host_gpus)
    if first + size > host_gpus:  # it would cross the host's last GPU: the next host
        host, first = host + 1, 0
    return host, first


def _host(index: int) -> str:
    return LOCAL_HOST if index == 0 else f"HOST{index}"


def _assemble(commands: list[LaunchCommand], workers: dict[str, list[Worker]], rule, hosts: set[int]) -> PoolsLaunch:
    files: dict[str, LaunchFile] = {}
    lines: list[str] = []
    for command, worker in zip(commands, [w for role in ("prefill", "decode") for w in workers[role]]):
        lines += [here_document(f) for f in command.files if f.path not in files]
        files.update({f.path: f for f in command.files})
        where = "" if worker.host == LOCAL_HOST else f"# on {worker.host}:\n"
        lines.append(f"{where}{command.script.splitlines()[-1]} &")
    config = router_file(rule, workers)
    if config is not None:
        router_config = LaunchFile(path=rule.router_file.name, text=yaml.safe_dump(config, sort_keys=False))
        files[router_config.path] = router_config
        lines.append(here_document(router_config))
    router = router_argv(rule, workers)
    lines.append(shlex.join(router))
    notes = [n for c in commands for n in c.notes if not n.startswith("the prefill and decode pools are joined by")]
    if rule.router_note:
        notes.append(f"router: {rule.router_note}")
    if len(hosts) > 1:
        told = f" and the workers' {rule.peer_address.env}" if rule.peer_address.env else ""
        notes.append(f"the workers span {len(hosts)} hosts: start each line marked 'on HOSTn' on that host, with "
                     f"HOSTn replaced by its address (HOST0: the host the router runs on) in the router's command{told}")
    return PoolsLaunch(workers=tuple(commands), router=router, files=tuple(files.values()), script="\n".join(lines),
                       notes=tuple(dict.fromkeys(notes)))

