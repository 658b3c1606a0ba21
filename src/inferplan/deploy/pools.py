"""The launch script of a disaggregated deployment: every prefill and decode worker, each pinned to
its own GPUs with its own port, options file and per-worker ports, then the router that joins them.

Workers are laid out on consecutive GPUs of a host (``host_gpus`` each; a worker that would cross a
host's last GPU starts on the next host, ``HOST1``, ``HOST2`` ...), each listening on the engine's first
worker port plus its place on its host, and run in the background; the router, started last, stays in the
foreground. Hosts that run the same workers are written once, with the range of hosts that run them
(``HostGroup``: a pool of 64 1-GPU hosts is one line "on each of HOST0–HOST63"), each worker told its own
host's address as ``$HOST_IP`` where the engine needs it. An instance wider than one host takes hosts of its own,
whole, each running its part of the instance's multi-host launch (``deploy.nodes``), with its head, the instance's
first host, at ``$HEAD_IP``; inside one rack whose fast-link domain spans hosts (a GB200 NVL72's 18 compute trays),
starting on the next rack where it would cross a rack's last host. Every instance of a pool runs the same parts, so
each part is written once, for the same part of every instance (a pool of 64 instances over 4 hosts: 4 groups, not
256), its comment naming the hosts that run it. The router's command (or config file) names every
worker by its host and port (host 0 too, as ``HOST0``, once the workers span several hosts), so a script holds
at most ``MAX_LISTED_WORKERS`` instances of a pool; the
Kubernetes manifest (``deploy.pools_plan``) reaches a pool at its Service instead. Flag names, ports,
options and the router's command and config file are the engine's data (``DisaggregationRule`` in
engine_flags.yaml).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import yaml

from inferplan.catalog.loader import Catalog
from inferplan.deploy.command import (LaunchCommand, LaunchFile, Speculative, engine_flags, here_document,
                                      launch_command, planned_speculative, with_draft)
from inferplan.deploy.nodes import OWN_VARIABLE, env_words, over_hosts_refusal
from inferplan.memory.hardware import Hardware, resolve_hardware
from inferplan.memory.host_span import host_split
from inferplan.deploy.model_cache import startup_window_s
from inferplan.deploy.router import Worker, router_argv, router_file, worker_ports
from inferplan.errors import InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.deploy.output import Output
from inferplan.memory.fit import as_planned
from inferplan.memory.layout import instance_gpus, os_host_gpus, rack_of

LOCAL_HOST = "localhost"  # where the router reaches the workers when every one runs on its host
# the most instances of one pool a launch script starts: its router's command names each by host and port
# (a design bound, so an answer stays proportionate to what a person runs by hand; more run under --format k8s)
MAX_LISTED_WORKERS = 512
POOL_FIELDS = {"prefill": "prefill_instances", "decode": "replicas"}  # each pool's instances, as stated


class HostGroup(Output):
    """Hosts ``first_host`` to ``last_host`` (``HOSTn``; host 0 the router's), each running ``workers``; a part of
    instances over several hosts: the host ``part`` after each instance's first host (``heads``)."""

    first_host: int
    last_host: int
    workers: tuple[LaunchCommand, ...]  # on each of the hosts, on its own GPUs and port
    part: int | None = None  # a worker over several hosts: the hosts run its ``host_commands[part]``
    heads: tuple[int, ...] = ()  # with ``part``: the first host of each instance whose part the group runs

    @property
    def host_indices(self) -> tuple[int, ...]:
        """Every host the group's lines run on."""
        if self.part is not None and self.heads:
            return tuple(h + self.part for h in self.heads)
        return tuple(range(self.first_host, self.last_host + 1))


class PoolsLaunch(Output):
    """The commands that start a disaggregated deployment, as one script."""

    hosts: tuple[HostGroup, ...]  # every worker, hosts that run the same ones as one group
    router: tuple[str, ...]
    files: tuple[LaunchFile, ...]  # the workers' options files and the router's config, each once
    script: str
    notes: tuple[str, ...] = ()

    @property
    def workers(self) -> tuple[LaunchCommand, ...]:
        """Each group's worker commands, in order (a command shared by a group's hosts once)."""
        return tuple(w for group in self.hosts if not group.part for w in group.workers)


def check_listed(role: str, instances: int, *, why: str = "a launch script's router names each worker by its host "
                 "and port", instead: str = ", or the Kubernetes format, whose router reaches each pool at its Service") -> None:
    """Refuse more instances of a pool than a router lists one by one (``MAX_LISTED_WORKERS``)."""
    if instances > MAX_LISTED_WORKERS:
        raise InvalidScenarioError(f"{instances} {role} instances: {why}, for at most {MAX_LISTED_WORKERS} instances "
                                   "of a pool", field=POOL_FIELDS[role], allowed=f"at most {MAX_LISTED_WORKERS}{instead}")


def worker_notes(commands) -> tuple[str, ...]:
    """The notes of a pool's worker commands, each once, less the one-side router note (the router is written)."""
    return tuple(dict.fromkeys(n for c in commands for n in c.notes
                               if not n.startswith("the prefill and decode pools are joined by")))


def pools_launch(catalog: Catalog, prefill: Deployment, decode: Deployment, *, prefill_instances: int = 1,
                 decode_instances: int = 1, prefill_speculative: Speculative | None = None,
                 decode_speculative: Speculative | None = None, host_gpus: int | None = None) -> PoolsLaunch:
    """Every worker of ``prefill_instances`` prefill and ``decode_instances`` decode instances, and the
    router; ``host_gpus``: the GPUs one host has, at most one OS host's (a GB200 NVL72's compute tray; None: every
    worker on one host, or an instance's host where it spans several). An instance that spans hosts
    (``memory.host_span``) starts on a host no worker uses and takes its hosts whole, each running its part of the
    instance's multi-host launch (``deploy.nodes``, its head the script's host it starts on); the router names its
    head alone."""
    flags = engine_flags(catalog, decode.engine)
    rule = flags.disaggregation
    if rule is None:
        raise UnsupportedSettingError(f"{flags.engine} {flags.version} has no prefill/decode disaggregation",
                                      field="engine", allowed=", ".join(f.engine for f in catalog.engine_flags
                                                                        if f.disaggregation))
    pools = [("prefill", prefill, prefill_instances, prefill_speculative),
             ("decode", decode, decode_instances, decode_speculative)]
    for role, _, instances, _ in pools:
        check_listed(role, instances)
    first_port = rule.first_worker_port or flags.default_port
    hw = resolve_hardware(catalog, decode)
    planned = {role: as_planned(with_draft(d, catalog, planned_speculative(d, catalog, spec)), catalog)
               for role, d, _, spec in pools}
    if host_gpus is not None:  # no more than one OS host sees (a GB200 NVL72's 4-GPU compute tray)
        host_gpus = min(host_gpus, os_host_gpus(catalog, hw))
    elif any(host_split(p, catalog) for p in planned.values()):  # an instance spans hosts: no worker past a host's GPUs
        host_gpus = os_host_gpus(catalog, hw)
    rack_hosts = _rack_hosts(catalog, hw, host_gpus)
    placed: list[_Placed] = []
    gpu = 0
    for role, d, instances, spec in pools:
        size, split = instance_gpus(planned[role]), host_split(planned[role], catalog, host_gpus)
        spans = split is not None and over_hosts_refusal(planned[role], catalog, host_gpus) is None
        for _ in range(instances):
            if spans:  # on hosts of its own, whole: from the next host with no worker on it, inside one rack
                host_index = _in_one_rack(-(-gpu // host_gpus), split.hosts, rack_hosts)
                gpu = (host_index + split.hosts) * host_gpus
                placed.append(_Placed(role, d, spec, host_index, None, size, split.hosts))
                continue
            host_index, first = _place(gpu, size, host_gpus)
            gpu = host_index * (host_gpus or 0) + (first or 0) + size
            placed.append(_Placed(role, d, spec, host_index, first, size))
    several = len({h for p in placed for h in range(p.host, p.host + p.hosts)}) > 1
    # peers on other hosts reach a worker at its own host's address, set on each host as $HOST_IP
    address = f"${OWN_VARIABLE}" if several else LOCAL_HOST
    made: dict[tuple, LaunchCommand] = {}  # one command per distinct worker: hosts that run the same share it
    on_host: dict[int, list[tuple[LaunchCommand, int | None]]] = {}
    workers: dict[str, list[Worker]] = {"prefill": [], "decode": []}
    for p in placed:
        slot = len(on_host.setdefault(p.host, []))  # its place on its host: its port and further ports
        key = (p.role, slot, p.first, p.size, p.hosts > 1)  # every instance over several hosts runs the same parts
        if key not in made:
            made[key] = launch_command(p.d, catalog, role=p.role, speculative=p.spec, port=first_port + slot, worker=slot,
                                       devices=tuple(range(p.first, p.first + p.size)) if p.first is not None else None,
                                       address=address, pool_hosts=p.hosts > 1,
                                       host_gpus=host_gpus)
        for part in range(p.hosts):  # a worker over several hosts: each host runs its part
            on_host.setdefault(p.host + part, []).append((made[key], part if p.hosts > 1 else None))
        workers[p.role].append(Worker(_host(p.host, several), made[key].port, worker_ports(rule, slot)))
    window_s = max(startup_window_s(d, catalog, flags) for d in (prefill, decode))  # the router waits as long
    return _assemble(_groups(on_host), workers, rule, several, window_s)


@dataclass(frozen=True)
class _Placed:
    """A worker laid out: its pool, deployment and drafts, its (first) host, first device (None: not pinned), GPUs
    and the hosts it spans (above 1: hosts of its own, whole, from ``host``)."""

    role: str
    d: Deployment
    spec: Speculative | None
    host: int
    first: int | None
    size: int
    hosts: int = 1


def _groups(on_host: dict[int, list[tuple[LaunchCommand, int | None]]]) -> tuple[HostGroup, ...]:
    """Consecutive hosts that run the same workers as one group each; the same part of every instance over several
    hosts (the same lines) as one group, whatever hosts lie between."""
    groups: list[HostGroup] = []
    parts: dict[tuple, int] = {}  # (the commands' identities, part) -> its group's place: one command per distinct worker
    for index, runs in sorted(on_host.items()):
        commands, part = tuple(c for c, _ in runs), runs[0][1]
        if part is not None:
            key = (tuple(id(c) for c in commands), part)
            at = parts.get(key)
            if at is None:
                parts[key] = len(groups)
                groups.append(HostGroup(first_host=index, last_host=index, workers=commands, part=part,
                                        heads=(index - part,)))
            else:
                group = groups[at]
                groups[at] = group.model_copy(update={"last_host": index, "heads": (*group.heads, index - part)})
            continue
        last = groups[-1] if groups else None
        if last is not None and last.last_host == index - 1 and last.workers == commands and last.part is None:
            groups[-1] = last.model_copy(update={"last_host": index})
        else:
            groups.append(HostGroup(first_host=index, last_host=index, workers=commands))
    return tuple(groups)


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


def _rack_hosts(catalog: Catalog, hw: Hardware, host_gpus: int | None) -> int | None:
    """Hosts of ``host_gpus`` GPUs in one rack whose fast-link domain spans OS hosts (a GB200 NVL72's 18 compute
    trays), which an instance over several hosts stays inside (None: no such rack)."""
    rack = hw.system if hw.system is not None else rack_of(catalog, hw)
    if rack is None or rack.os_host_gpus is None or not host_gpus:
        return None
    return rack.accelerator_count // host_gpus


def _in_one_rack(host: int, hosts: int, rack_hosts: int | None) -> int:
    """The first host of an instance over ``hosts`` hosts that would start at ``host``: the next rack's first where
    it would cross a rack's last host (one rack holds it), as ``_place`` moves a worker to the next host."""
    if rack_hosts and hosts <= rack_hosts and host // rack_hosts != (host + hosts - 1) // rack_hosts:
        return -(-host // rack_hosts) * rack_hosts
    return host


def _host(index: int, several: bool) -> str:
    """The router's name for host ``index``: over several hosts every worker is named by the host it runs on, its
    own host included (SGLang's router hands a prefill's URL host to the decode as its bootstrap host, so a
    decode on another host would reach ``localhost``: its own)."""
    return f"HOST{index}" if several else LOCAL_HOST


def _where(group: HostGroup) -> str:
    """The comment over a group's lines: the host, or the hosts, that run each of them."""
    hosts = group.host_indices
    if group.part is not None and len(group.workers) == 1:
        n = len(group.workers[0].host_commands)
        which = "first host (its head)" if group.part == 0 else f"host {group.part + 1} of {n}"
        many = f"each {group.workers[0].role} instance's" if len(hosts) > 1 else f"the {group.workers[0].role} instance's"
        return f"# on {many} {which}: {host_list(hosts)}:"
    if len(hosts) == 1:
        return f"# on HOST{hosts[0]}:"
    return f"# on each of HOST{group.first_host}–HOST{group.last_host} ({len(hosts)} hosts):"


def host_list(hosts: tuple[int, ...]) -> str:
    """Hosts in order as few runs as evenly spaced hosts make: ``HOST0``, ``HOST0–HOST3``, ``HOST0, HOST4 … HOST60``
    (every 4th), with their count where there are several."""
    runs: list[list[int]] = []
    for h in hosts:
        run = runs[-1] if runs else None
        if run and (len(run) == 1 or h - run[-1] == run[1] - run[0]):
            run.append(h)
        else:
            runs.append([h])

    def text(run: list[int]) -> str:
        if len(run) == 1:
            return f"HOST{run[0]}"
        if len(run) == 2:
            return f"HOST{run[0]}, HOST{run[1]}"
        if run[1] - run[0] == 1:
            return f"HOST{run[0]}–HOST{run[-1]}"
        return f"HOST{run[0]}, HOST{run[1]} … HOST{run[-1]}"

    if len(hosts) == 1:
        return text(runs[0])
    return f"{_repeated(runs, text) or ', '.join(text(r) for r in runs)} ({len(hosts)} hosts)"


def _repeated(runs: list[list[int]], text) -> str | None:
    """Runs that repeat one run's hosts at a fixed period (instances packed rack by rack, the last rack's perhaps
    fewer) as that run and its period; None: they do not."""
    if len(runs) < 3:
        return None
    period = runs[1][0] - runs[0][0]
    shape = [h - runs[0][0] for h in runs[0]]
    for i, run in enumerate(runs):
        offsets = [h - run[0] for h in run]
        if run[0] - runs[0][0] != i * period or offsets != shape[:len(offsets)] or (len(run) < len(shape) and i < len(runs) - 1):
            return None
    return f"{text(runs[0])}, and the same every {period} hosts to HOST{runs[-1][-1]}"


def _assemble(groups: tuple[HostGroup, ...], workers: dict[str, list[Worker]], rule, several: bool,
              startup_window_s: int | None = None) -> PoolsLaunch:
    files: dict[str, LaunchFile] = {}
    lines: list[str] = []
    told = rule.peer_address.env if several else None  # the engine is told its worker's own address
    for group in groups:
        if several:
            lines.append(_where(group))
        if told:
            lines.append(f': "${{{OWN_VARIABLE}:?set {OWN_VARIABLE} to the address of this host}}"')
        for command in group.workers:
            if group.part is not None:  # its host's lines: the head's address checked, its options file written
                host = command.host_commands[group.part]
                engine = host.argv[:1] == command.argv[:1]  # a host that joins a cluster first starts no engine
                files.update({f.path: f for f in command.files})
                lines += [*host.before, " ".join([*(env_words(command.env) if engine else ()), host.text, "&"])]
                continue
            lines += [here_document(f) for f in command.files if f.path not in files]
            files.update({f.path: f for f in command.files})
            lines.append(" ".join([*env_words(command.env), command.text, "&"]))
    config = router_file(rule, workers)
    if config is not None:
        router_config = LaunchFile(path=rule.router_file.name, text=yaml.safe_dump(config, sort_keys=False))
        files[router_config.path] = router_config
        lines.append(here_document(router_config))
    router = router_argv(rule, workers, startup_window_s=startup_window_s)
    if several:
        lines.append("# on HOST0:")
    lines.append(shlex.join(router))
    commands = [w for g in groups for w in g.workers]
    notes = list(worker_notes(commands))
    if rule.router_note:
        notes.append(f"router: {rule.router_note}")
    if several:
        hosts = max(h for g in groups for h in g.host_indices) + 1
        set_own = f", with {OWN_VARIABLE} set on each host to its own address ({told})" if told else ""
        notes.append(f"the workers span {hosts} hosts: start each part on the hosts its comment names{set_own}, and "
                     f"replace HOSTn in the router's command (or config file) by host n's address (HOST0: the host the router runs on)")
    return PoolsLaunch(hosts=groups, router=router, files=tuple(files.values()), script="\n".join(lines),
                       notes=tuple(dict.fromkeys(notes)))
