"""The hardware a deployment names: its accelerator, how many, and the links between them.

A system (``--system hgx-h100``) fixes the accelerator, its count, its scale-up domain and its
network; a bare accelerator (``--gpu h100``) takes the accelerator's own link and the network
servers built on it usually carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator, ScaleOut, System
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.units import to_gbit_per_s


@dataclass(frozen=True)
class Hardware:
    accel: Accelerator
    gpus: int
    domain_gpus: int  # GPUs that reach each other over the accelerator's scale-up link
    scale_out: ScaleOut | None  # the network beyond that domain (the system's, else the usual one of the accelerator)
    system: System | None = None
    assumptions: tuple[str, ...] = ()
    # GPUs one server of PCIe cards holds: past a bridge or switch domain they still share PCIe
    # (0: not a PCIe card, or a system that states its own layout)
    pcie_server_gpus: int = 0


PCIE_FORM_FACTORS = ("pcie", "workstation", "consumer")
PCIE_SERVER_GPUS = 8  # assumed: the usual largest PCIe GPU server (8 double-width cards)


def system_domain_gpus(system: System, accel: Accelerator) -> int:
    """GPUs of ``system`` that talk over the accelerator's scale-up link: its fast-link domain,
    or every GPU in the box when they share PCIe (no fast link)."""
    if system.scale_up_domain_gpus > 1 or accel.scale_up is None or accel.scale_up.link == "none":
        return system.scale_up_domain_gpus
    return system.accelerator_count


def system_scale_out(system: System, accel: Accelerator) -> ScaleOut | None:
    """The network between ``system``s: its own, else the accelerator's usual one (None: not known)."""
    return system.scale_out or accel.scale_out


# the engine a deployment that names none runs, by the accelerator's software stack: llama.cpp on
# Apple silicon (vLLM's Metal support is a plugin that runs MLX, loading fewer formats), vLLM elsewhere
ENGINE_BY_SOFTWARE = {"metal": "llamacpp"}
DEFAULT_ENGINE = "vllm"


def default_engine(accel: Accelerator) -> str:
    """The engine ``accel``'s software stack runs when none is named (``ENGINE_BY_SOFTWARE``)."""
    return ENGINE_BY_SOFTWARE.get(accel.software.value, DEFAULT_ENGINE)


def with_default_engine(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` with the engine its hardware runs by default where it names none."""
    if "engine" in d.model_fields_set or not (d.gpu or d.system):
        return d
    engine = default_engine(resolve_hardware(catalog, d).accel)
    return d if engine == d.engine else d.model_copy(update={"engine": engine})


def resolve_hardware(catalog: Catalog, d: Deployment) -> Hardware:
    if d.system:
        system = catalog.system(d.system, "system")
        accel = catalog.accelerators.records[system.accelerator]
        if d.gpu and catalog.accelerator(d.gpu).id != accel.id:
            raise InvalidScenarioError(
                f"{system.name} holds {accel.name}, not {d.gpu}", field="gpu", allowed=accel.id
            )
        gpus = d.gpus or system.accelerator_count
        count = system.accelerator_count
        if gpus > count and gpus % count:
            raise InvalidScenarioError(
                f"{system.name} has {count} GPUs; {gpus} GPUs is neither a part of one nor a whole number of them",
                field="gpus",
                allowed=f"1..{count} or a multiple of {count} (several {system.id} joined by their network)",
            )
        out = system_scale_out(system, accel)
        notes = ()
        if gpus > count:
            net = f"{out.link} ({to_gbit_per_s(out.bandwidth_bytes_per_s.value):.0f} Gb/s per GPU)" if out else "a network the catalogue does not know"
            notes = (f"{gpus // count}× {system.name} joined by {net}",)
        return Hardware(accel, gpus, system_domain_gpus(system, accel), out, system, notes)
    accel = catalog.accelerator(d.gpu or "")
    instance = d.tensor_parallel_size * d.pipeline_parallel_size
    gpus = d.gpus or instance * (d.data_parallel_size or 1)
    domain = accel.scale_up.max_domain_gpus if accel.scale_up else 1
    pcie_server = PCIE_SERVER_GPUS if accel.form_factor in PCIE_FORM_FACTORS and accel.scale_up else 0
    return Hardware(accel, gpus, domain, accel.scale_out, pcie_server_gpus=pcie_server)
