"""A launch whose one engine instance needs more GPUs than one host holds: a node-class system (an HGX
board: its GPUs in one host), or a bare GPU's scale-up domain or PCIe server. Such an instance runs one
command per host: host 0, the head, serves the API, and the others join it, by the first way the engine's
record lists (``EngineFlags.multi_host``) that the planned release has and the layout allows. vLLM starts
data-parallel ranks whole on each host with ``--data-parallel-size-local`` and ``--data-parallel-start-rank``
(``--nnodes`` alone would lay every rank over all the hosts), and one rank wider than a host from 0.11.1 with
``--nnodes``/``--node-rank``/``--master-addr`` (``--headless`` off the head), before over a Ray cluster;
SGLang with ``--nnodes``/``--node-rank``/``--dist-init-addr``; llama.cpp's pipeline stages with ``rpc-server`` on the
other hosts and ``--rpc`` on host 0. An engine with no such way keeps its one-host command, with a note that says it
does not hold the instance (``fit`` may plan such a layout; a Kubernetes manifest of it is refused).

Host 0's address is a placeholder: ``$HEAD_IP`` in a shell script (each host's lines check it is set), the
address a Kubernetes LeaderWorkerSet gives its pods in a manifest (``LEADER_WORKER_SET``); so are the other hosts'
where host 0 names them (llama.cpp's ``--rpc``): ``$HOST1_IP`` … in a shell script. A disaggregated pool's
instance over several hosts is written the same way, its role's flags on every host (SGLang's PD guide starts
each host of a multi-node prefill or decode instance with ``--disaggregation-mode`` beside ``--nnodes``,
``--node-rank`` and ``--dist-init-addr``); in a pools script, whose hosts are ``HOST0``, ``HOST1`` …, its head is
its first host, named ``$HEAD_IP`` on each of the instance's hosts (``POOL_ADDRESSING``), so every instance of
a pool runs the same lines.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from inferplan.catalog.flag_scope import runs_attention_dp
from inferplan.catalog.flags_schema import EngineFlags, flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import release_key
from inferplan.catalog.multihost_schema import MultiHostLaunch
from inferplan.deploy.image import planned_engine_release
from inferplan.deploy.output import Output
from inferplan.errors import InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.host_span import HostSplit, host_split, spans_hosts_note

HEAD_VARIABLE = "HEAD_IP"
WORKER_VARIABLE = "HOST{}_IP"  # host i's address, where host 0 names the others (llama.cpp's --rpc)
OWN_VARIABLE = "HOST_IP"  # the address of the host a line runs on (a pool worker's, told to its peers)
_ADDRESS = re.compile(r"\$\{?(HEAD|HOST\d*)_IP|\$\(\(")  # an argument the shell must expand: double-quoted
Target = Literal["shell", "k8s"]  # what runs the hosts' commands: a shell on each, or a LeaderWorkerSet's pods


@dataclass(frozen=True)
class Addressing:
    """How a host's command names host 0's address and its own index."""

    head: str
    worker_rank: str | None = None  # one text every worker's command takes (a pod template's); None: its index
    worker_start_rank: str | None = None  # the same for its first data-parallel rank, ``{local}`` ranks a host
    check: str | None = None  # a shell line each host runs first
    told: str = f"with {HEAD_VARIABLE} set to host 0's address"  # what the hosts' notes say to set


SHELL = Addressing(f"${HEAD_VARIABLE}", check=f': "${{{HEAD_VARIABLE}:?set {HEAD_VARIABLE} to the address of host 0}}"')
# the variables LWS sets in every pod of a group (flags-lws-examples): the leader's address, the pod's index
# a worker's first data-parallel rank is its index × the ranks a host runs: shell arithmetic, so its pod runs the
# command through a shell (``shell_arithmetic``), as llm-d's wide-EP LeaderWorkerSet starts vLLM (flags-llmd-wide-ep-lws)
LEADER_WORKER_SET = Addressing("$(LWS_LEADER_ADDRESS)", worker_rank="$(LWS_WORKER_INDEX)",
                               worker_start_rank="$((LWS_WORKER_INDEX * {local}))",
                               told="with host 0's address as LWS_LEADER_ADDRESS, which the LeaderWorkerSet sets in "
                                    "each pod of the group (nothing to set)")


# a pool instance's hosts in a pools script: every instance of a pool runs the same lines, each host told its own
# instance's head (the instance's first host) as $HEAD_IP, so a pool of many instances is written once per host part
POOL_ADDRESSING = Addressing(
    f"${HEAD_VARIABLE}", check=f': "${{{HEAD_VARIABLE}:?set {HEAD_VARIABLE} to the address of this instance\'s first host}}"',
    told=f"with {HEAD_VARIABLE} set on each of its hosts to the address of the instance's first host")


class HostCommand(Output):
    """What one host of a multi-host instance runs."""

    host: int  # 0: the head, which serves the API
    role: Literal["head", "worker"]
    argv: tuple[str, ...]  # the engine's command, or the command the host runs instead (ray start --address)
    text: str  # argv as one shell line, host 0's address left for the shell to fill in
    before: tuple[str, ...] = ()  # shell lines run first (ray start --head)
    script: str  # the host's lines: ``before``, then ``text``


@dataclass(frozen=True)
class HostsLaunch:
    """Each host's command (none where the engine has no multi-host launch: the notes say so)."""

    split: HostSplit
    commands: tuple[HostCommand, ...]
    notes: tuple[str, ...]


def over_hosts_refusal(d: Deployment, catalog: Catalog, host_gpus: int | None = None) -> str | None:
    """Why no command per host is written for one instance of ``d`` (at its planned engine release) that spans hosts: the
    engine has no multi-host launch, or none its release and the layout allow, or the GPUs split unevenly (None:
    it fits one host, or its per-host commands are written), as ``hosts_launch`` would refuse it; ``host_gpus``: as
    ``host_split`` takes it."""
    split = host_split(d, catalog, host_gpus)
    if split is None:
        return None
    flags = flags_for(catalog, catalog.engine(d.engine, field_name="engine").id)
    if flags is None or not flags.multi_host:
        return _no_multi_host(d, catalog, flags, split, "shell") if flags else spans_hosts_note(split, d)
    if split.gpus % split.hosts:
        return f"{spans_hosts_note(split, d)}, and its GPUs do not split evenly over the hosts"
    try:
        _launch(d, flags, planned_engine_release(d, catalog), split, False, runs_attention_dp(d, flags))
    except UnsupportedSettingError as exc:
        return str(exc)
    return None


def hosts_launch(d: Deployment, catalog: Catalog, flags: EngineFlags, release: str | None, *, engine: tuple[str, ...],
                 listen: tuple[str, ...], before: tuple[str, ...] = (), machine: tuple[str, ...] = (),
                 target: Target = "shell", env: dict[str, str] | None = None, attention_dp: bool = False,
                 pool: bool = False, host_gpus: int | None = None) -> HostsLaunch | None:
    """Each host's command for one instance of ``d`` spread over hosts (None: it fits one). ``engine``: the
    engine's command without ``listen`` (the API's host and port, given to the head alone); ``before``: lines
    each host running the engine runs first (its options file); ``machine``: lines every host runs first, one
    that only joins a cluster too (a Mac's raised GPU limit); ``env``: the environment it starts with;
    ``attention_dp``: the data-parallel ranks are attention data parallelism inside the TP ranks (SGLang with
    expert parallelism), not whole copies of the model; ``pool``: a pool instance in a pools script, its head its
    first host (``POOL_ADDRESSING``), else host 0; ``host_gpus``: the GPUs each host has, where fewer
    than the catalogue's (``host_split``)."""
    split = host_split(d, catalog, host_gpus)
    if split is None:
        return None
    if not flags.multi_host:
        return HostsLaunch(split, (), (_no_multi_host(d, catalog, flags, split, target),))
    if split.gpus % split.hosts:
        raise InvalidScenarioError(f"{spans_hosts_note(split, d)}, and {split.gpus} GPUs do not split evenly over "
                                   f"{split.hosts} hosts", field="tensor_parallel_size",
                                   allowed=f"an instance of a multiple of {split.hosts} GPUs, or at most {split.host_gpus}")
    addressing = LEADER_WORKER_SET if target == "k8s" else POOL_ADDRESSING if pool else SHELL
    launch = _launch(d, flags, release, split, target == "k8s", attention_dp)
    rank_gpus = d.tensor_parallel_size * d.pipeline_parallel_size
    commands = tuple(_host(i, split, launch, engine, listen, (*machine, *before), machine, addressing, rank_gpus,
                           env or {})
                     for i in range(split.hosts))
    head = "the instance's first host" if pool else "host 0 (the head)"
    where = f"{head} serves the API; every host runs its own lines"
    if _names(launch, "{head}"):
        where += f", {addressing.told}"
    if addressing.check and _names(launch, "{workers}"):
        where += (f", with {', '.join(WORKER_VARIABLE.format(i) for i in range(1, split.hosts))} set on {head} to the "
                  "other hosts' addresses")
    return HostsLaunch(split, commands, (f"{spans_hosts_note(split, d)}: {where}", *((launch.note,) if launch.note else ())))


def _no_multi_host(d: Deployment, catalog: Catalog, flags: EngineFlags, split: HostSplit, target: Target) -> str:
    """What to do about an instance past one host on an engine with no multi-host launch inferplan writes
    (TensorRT-LLM's MPI launch is not modelled): a note beside the one-host command; refused as a manifest, whose
    one pod of all its GPUs no node holds."""
    engines = ", ".join(f.engine for f in catalog.engine_flags if f.multi_host)
    fix = f"at most {split.host_gpus} GPUs per instance (TP × PP × DP), or an engine that has one ({engines})"
    said = f"{spans_hosts_note(split, d)}, and inferplan writes no multi-host launch for {flags.engine}"
    if target == "k8s":
        raise UnsupportedSettingError(said, field="engine", allowed=fix)
    return f"{said}: this command starts it on one host, which does not hold it; state {fix}"


def _launch(d: Deployment, flags: EngineFlags, release: str | None, split: HostSplit, kubernetes: bool,
            attention_dp: bool) -> MultiHostLaunch:
    """The first way of the engine's record the planned release has and the layout allows."""
    copies = (d.data_parallel_size or 1) > 1 and not attention_dp  # data-parallel ranks that are whole copies
    refusals: list[UnsupportedSettingError] = []
    who = f"{flags.engine} {release}" if release else flags.engine
    for launch in flags.multi_host:
        if launch.since and release and release_key(release) < release_key(launch.since):
            refusals.append(UnsupportedSettingError(
                f"{who} has no {launch.method} multi-host launch (from {launch.since})",
                field="engine_version", allowed=f"{launch.since} or later"))
        elif launch.whole_ranks and not _whole_ranks(d, split):
            if (d.data_parallel_size or 1) == 1:
                continue  # a way for data-parallel ranks only: nothing to refuse for one rank
            refusals.append(UnsupportedSettingError(
                f"{who} spreads data-parallel ranks over hosts only with each rank (TP × PP) whole on one host",
                field="tensor_parallel_size", allowed=f"TP × PP at most {split.host_gpus} with data_parallel_size above 1"))
        elif copies and not launch.data_parallel:
            refusals.append(UnsupportedSettingError(
                f"{who} starts an instance over hosts by {launch.method}, which inferplan writes without data-parallel "
                f"ranks{f': {launch.data_parallel_refusal}' if launch.data_parallel_refusal else ''}",
                field="data_parallel_size", allowed=f"1, or at most {split.host_gpus} GPUs per instance"))
        elif kubernetes and not launch.kubernetes:
            refusals.append(UnsupportedSettingError(
                f"{who} starts an instance over hosts by {launch.method}, which inferplan does not write as a "
                "LeaderWorkerSet",
                field="format", allowed="shell"))
        elif launch.layers_only and d.tensor_parallel_size > 1:
            refusals.append(UnsupportedSettingError(
                f"{who} spreads an instance over hosts by {launch.method}, layers (pipeline stages) only, not "
                f"tensor-parallel ranks", field="tensor_parallel_size",
                allowed=f"1 with pipeline stages over the hosts, or at most {split.host_gpus} GPUs per instance"))
        else:
            return launch
    first = refusals[0]
    raise UnsupportedSettingError("; ".join(str(r) for r in refusals), field=first.field, allowed=first.allowed)


def _whole_ranks(d: Deployment, split: HostSplit) -> bool:
    """Whether each host runs whole data-parallel ranks of ``d`` (two or more ranks, each TP × PP GPUs)."""
    rank = d.tensor_parallel_size * d.pipeline_parallel_size
    return (d.data_parallel_size or 1) > 1 and split.gpus_per_host % rank == 0


def _host(i: int, split: HostSplit, launch: MultiHostLaunch, engine: tuple[str, ...], listen: tuple[str, ...],
          before: tuple[str, ...], machine: tuple[str, ...], addressing: Addressing, rank_gpus: int,
          env: dict[str, str]) -> HostCommand:
    rank = str(i) if i == 0 or addressing.worker_rank is None else addressing.worker_rank
    local = split.gpus_per_host // rank_gpus  # data-parallel ranks per host, where they are whole on each
    start = str(i * local) if i == 0 or addressing.worker_start_rank is None else \
        addressing.worker_start_rank.replace("{local}", str(local))

    workers = ",".join(f"${WORKER_VARIABLE.format(j)}:{launch.worker_port}" for j in range(1, split.hosts))

    def fill(args: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(a.replace("{hosts}", str(split.hosts)).replace("{node_rank}", rank).replace("{head}", addressing.head)
                     .replace("{workers}", workers).replace("{local_ranks}", str(local))
                     .replace("{start_rank}", start) for a in args)

    if i == 0:
        argv, lines = (*engine, *fill(launch.every_host), *fill(launch.head), *listen), \
            (*before, *(shell_join(c) for c in launch.head_before))
    elif launch.worker_command:
        argv, lines = fill(launch.worker_command), machine
    else:
        argv, lines = (*engine, *fill(launch.every_host), *fill(launch.workers)), before
    checks = (addressing.check,) if addressing.check and _names(launch, "{head}") else ()
    if addressing.check and i == 0 and _names(launch, "{workers}"):  # host 0 names the others (--rpc)
        checks += tuple(f': "${{{v}:?set {v} to the address of host {j}}}"'
                        for j, v in ((j, WORKER_VARIABLE.format(j)) for j in range(1, split.hosts)))
    lines = checks + lines
    text = shell_join(argv)
    runs_engine = i == 0 or not launch.worker_command  # a host that joins a cluster starts no engine
    line = " ".join([*(env_words(env) if runs_engine else ()), text])
    return HostCommand(host=i, role="head" if i == 0 else "worker", argv=argv, text=text, before=lines,
                       script="\n".join((*lines, line)))


def shell_join(argv: tuple[str, ...]) -> str:
    """``argv`` as one shell line: each argument quoted where the shell needs it, host 0's address variable
    left for the shell to expand."""
    return " ".join(f'"{a}"' if _ADDRESS.search(a) else shlex.quote(a) for a in argv)


def shell_arithmetic(argv: tuple[str, ...]) -> bool:
    """Whether ``argv`` holds shell arithmetic (a LeaderWorkerSet worker's first rank), so it runs through a shell."""
    return any("$((" in a for a in argv)


def env_words(env: dict[str, str]) -> tuple[str, ...]:
    """``env`` as the shell's ``NAME=value`` words before a command, a host's address variable left to expand."""
    return tuple(f'{k}="{v}"' if _ADDRESS.search(v) else f"{k}={shlex.quote(v)}" for k, v in env.items())


def _names(launch: MultiHostLaunch, placeholder: str) -> bool:
    """Whether some host's command of ``launch`` holds ``placeholder``."""
    return any(placeholder in a for a in (*launch.every_host, *launch.head, *launch.workers, *launch.worker_command,
                                          *(a for command in launch.head_before for a in command)))


def hosts_script(launch: HostsLaunch) -> str:
    """Every host's lines, each under a comment that says which host runs them."""
    def label(c: HostCommand) -> str:
        return f"# host {c.host} of {launch.split.hosts} ({'head, serves the API' if c.host == 0 else 'worker'}):"

    return "\n".join(f"{label(c)}\n{c.script}" for c in launch.commands)
