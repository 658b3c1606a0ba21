"""How many hosts one engine instance spans: an instance needs more GPUs than one host holds on a node-class
system (an HGX board: its GPUs in one host), a bare GPU's scale-up domain or PCIe server, or a rack's compute
tray (its ``os_host_gpus``). ``fit`` states it beside the memory answer; ``deploy`` writes one command per host."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import resolve_hardware
from inferplan.memory.layout import host_gpus as catalogue_host_gpus
from inferplan.memory.layout import instance_gpus, rack_of
from inferplan.units import plural

HOST_TIERS = ("node", "server", "workstation", "desktop", "lab-box", "single-gpu")  # one host each


@dataclass(frozen=True)
class HostSplit:
    """An instance's GPUs over the hosts it needs."""

    gpus: int  # the instance's (TP × PP × DP)
    hosts: int
    gpus_per_host: int  # of the instance, on each host
    host_gpus: int  # one host holds
    what: str  # the host, in words


def host_split(d: Deployment, catalog: Catalog, host_gpus: int | None = None) -> HostSplit | None:
    """How one instance of ``d`` is spread over hosts; None when it fits one (or its hosts are not in the
    catalogue: a rack's that records no ``os_host_gpus``). A rack's OS host is its compute tray (a GB200
    NVL72's 4 GPUs), though the speed model lays an instance over its whole NVLink domain. ``host_gpus``: the GPUs
    the hosts really have where fewer than the catalogue's host (a rented instance's)."""
    hw = resolve_hardware(catalog, d)
    gpus = instance_gpus(d)
    rack = hw.system if hw.system is not None else rack_of(catalog, hw)
    tray = rack.os_host_gpus if rack is not None else None
    if hw.system is not None and hw.system.tier not in HOST_TIERS and tray is None:
        return None
    host = int(tray.value) if tray is not None else catalogue_host_gpus(hw)
    if host_gpus is not None and host_gpus < host:
        host, what = host_gpus, "one host"
    elif tray is not None:  # a rack whose NVLink domain is more than one OS host: the launch is per host
        what = f"one {rack.name} compute tray"
    elif hw.system is not None:
        what = f"one {hw.system.name}"
    else:
        what = f"one host's {host}-GPU {'PCIe server' if hw.pcie_server_gpus > hw.domain_gpus else 'scale-up domain'}"
    if gpus <= host:
        return None
    hosts = -(-gpus // host)
    return HostSplit(gpus, hosts, -(-gpus // hosts), host, what)


def spans_hosts_note(split: HostSplit, d: Deployment) -> str:
    rank = f"TP {d.tensor_parallel_size} × PP {d.pipeline_parallel_size}"
    dp = d.data_parallel_size or 1
    ranks = f"{dp} data-parallel ranks of {plural(split.gpus // dp, 'GPU')}"
    what = (f"{ranks} ({rank}), {split.gpus} GPUs in all, are" if dp > 1
            else f"one instance of {split.gpus} GPUs ({rank}) is")
    return (f"{what} more than {split.what} holds ({plural(split.host_gpus, 'GPU')}): it needs {split.hosts} hosts, "
            f"{plural(split.gpus_per_host, 'GPU')} each")
