"""A launch whose one engine instance needs more GPUs than one host holds: a node-class system
(an HGX board: its GPUs in one host), or a bare GPU's scale-up domain or PCIe server. Such an
instance spans hosts, which a single `vllm serve` on one machine, or one Kubernetes pod, does not
give; the launch command says so rather than leaving it to fail at start-up."""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import resolve_hardware

HOST_TIERS = ("node", "server", "workstation", "desktop", "lab-box", "single-gpu")  # one host each


def spans_hosts_note(d: Deployment, catalog: Catalog) -> tuple[str, ...]:
    """A note when one instance of ``d`` (TP × PP) needs more GPUs than one host holds."""
    hw = resolve_hardware(catalog, d)
    instance = d.tensor_parallel_size * d.pipeline_parallel_size
    if hw.system is not None:
        if hw.system.tier not in HOST_TIERS:
            return ()  # a rack's hosts are not in the catalogue
        host, what = hw.system.accelerator_count, f"one {hw.system.name}"
    else:
        host = max(hw.domain_gpus, hw.pcie_server_gpus, 1)
        what = f"one host's {host}-GPU {'PCIe server' if hw.pcie_server_gpus > hw.domain_gpus else 'scale-up domain'}"
    if instance <= host:
        return ()
    return (f"one instance of {instance} GPUs (TP {d.tensor_parallel_size} × PP {d.pipeline_parallel_size}) is more "
            f"than {what} holds ({host} GPUs): it spans {-(-instance // host)} hosts, which this one-machine command "
            "and one Kubernetes pod do not give; run it with the engine's multi-node launch (vLLM and SGLang over "
            "Ray or --nnodes, a LeaderWorkerSet on Kubernetes), or state a layout that fits one host",)
