"""The link a request's KV cache crosses from a prefill instance to a decode instance.

Both pools inside one scale-up domain (their GPUs together no more than the fast-link domain, each
instance inside one system): the fast link in one direction (half its two-way figure); else the
scale-out network between systems (or the accelerator's usual one). A rack whose fast-link domain spans
OS hosts (a GB200 NVL72's 4-GPU compute trays) counts as its one host for this: the engines' KV connectors
move the cache between hosts over RDMA (vLLM's NixlConnector: "transfers across hosts use RDMA",
mr-vllm-wheel-0340-imex in engine_memory_rules.yaml; SGLang's Mooncake names RDMA devices, its
disaggregation note in engine_flags.yaml), so pools over several trays hand over on the scale-out
network. Every GPU of the narrower instance carries its share, so the hand-over runs at the per-GPU
figure × those GPUs. Whether the pools sit inside one domain is ``economics.pools.inside`` over
``handover_domain``, which renting them in one host follows.
"""

from __future__ import annotations

import numpy as np

from inferplan.catalog.schema import Accelerator, System
from inferplan.economics.pools import handover_domain, inside


def _scale_out(accel: Accelerator, system: System | None):
    return system.scale_out if system is not None and system.scale_out else accel.scale_out


def fast(accel: Accelerator, system: System | None, domain_gpus: int, gpus, systems_per_instance: int = 1):
    """Whether pools of ``gpus`` GPUs in all hand the KV cache over the fast link (an array or a number)."""
    return inside(accel, handover_domain(system, domain_gpus), gpus, systems_per_instance)


def link_bytes_per_s(accel: Accelerator, system: System | None, domain_gpus: int, gpus, sending_gpus: int,
                     systems_per_instance: int = 1) -> np.ndarray:
    """Bytes/s one request's KV cache crosses at, for pools of ``gpus`` GPUs in all (an array or a
    number); NaN where no link is known."""
    up, out = accel.scale_up, _scale_out(accel, system)
    up_bw = up.bandwidth_bytes_per_s.value / 2 * sending_gpus if up and up.link != "none" else 0.0
    out_bw = out.bandwidth_bytes_per_s.value * sending_gpus if out else 0.0
    bw = np.where(fast(accel, system, domain_gpus, gpus, systems_per_instance), up_bw, out_bw)
    return np.where(bw > 0, bw, np.nan)


def link_name(accel: Accelerator, system: System | None, domain_gpus: int, gpus: int,
              systems_per_instance: int = 1) -> str:
    if bool(fast(accel, system, domain_gpus, gpus, systems_per_instance)) and accel.scale_up is not None:
        return accel.scale_up.link
    out = _scale_out(accel, system)
    return out.link if out else "none known"
