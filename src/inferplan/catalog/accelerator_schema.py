"""An accelerator record and its links: the GPU (or SoC) a deployment names, with its memory, bandwidth,
compute, the configurations it is sold in and the networks it is built into.

As ``schema.py``: real annotations (no postponed ones), so pydantic builds validators without re-reading them.
"""

from pydantic import Field, model_validator

from inferplan.catalog.memory_config_schema import MemoryConfiguration
from inferplan.catalog.provenance import Bytes, BytesPerS, FlopPerS, Watts
from inferplan.catalog.schema_base import SLUG, ComputeDtype, Frozen, Software, Status


class ScaleUp(Frozen):
    """The fastest GPU-to-GPU link of the device."""

    link: str  # nvlink4, nvlink5, nvlink6, pcie4, pcie5, infinity-fabric, roce, none ...
    bandwidth_bytes_per_s: BytesPerS  # total bidirectional per GPU
    max_domain_gpus: int = Field(ge=1)  # largest all-to-all domain this link builds
    # a bridged card's own PCIe link (both directions): what reaches cards past the bridge
    pcie_bandwidth_bytes_per_s: BytesPerS | None = None


class ScaleOut(Frozen):
    """The network between scale-up domains (nodes or racks): what a collective pays once it
    leaves the fast link."""

    link: str  # infiniband-ndr, infiniband-xdr, roce, ethernet, efa ...
    nic: str | None = None  # ConnectX-7, ConnectX-8, ...
    bandwidth_bytes_per_s: BytesPerS  # one direction, per GPU (NIC line rate shared out per GPU)


class Accelerator(Frozen):
    id: str = Field(pattern=SLUG)
    name: str
    aliases: tuple[str, ...] = ()
    vendor: str
    architecture: str
    status: Status
    form_factor: str  # sxm, pcie, superchip, oam, workstation, consumer, soc, ...
    memory_type: str
    memory_bytes: Bytes  # as marketed
    memory_reported_bytes: Bytes | None = None  # total as the driver reports it
    unified_memory: bool = False  # shared with the CPU (DGX Spark, Apple, Ryzen AI Max)
    # the configurations the chip is sold in, ascending, the record's own among them: a name such as
    # "M4 Max 64GB" plans another (catalog/memory_config.py); configuration_of names the record it came from
    memory_configurations: tuple[MemoryConfiguration, ...] = ()
    configuration_of: str | None = None
    # a CUDA integrated GPU (cudaDevAttrIntegrated, torch's ``is_integrated``: GB10, Jetson): no memory of its
    # own, so cudaMemGetInfo's free figure lacks the OS's reclaimable page cache; stated only with its source
    integrated_gpu: bool = False
    integrated_gpu_source: str | None = None
    # the vendor's command that empties the page cache before an engine starts (an integrated GPU's)
    page_cache_drop_command: str | None = None
    page_cache_drop_command_source: str | None = None
    memory_bandwidth_bytes_per_s: BytesPerS
    peak_flop_per_s: dict[ComputeDtype, FlopPerS]  # dense
    native_formats: tuple[str, ...] = ()  # fp8, nvfp4, mxfp4, mxfp8, int8 ...
    scale_up: ScaleUp | None = None
    scale_out: ScaleOut | None = None  # the usual network of servers built on this part
    # the card's own link to the host (PCIe), one direction: what host-RAM copies cross
    host_link_bytes_per_s: BytesPerS | None = None
    tdp_w: Watts | None = None
    software: Software
    notes: tuple[str, ...] = ()

    @property
    def record_id(self) -> str:
        """The catalogue record this part is (a stated memory configuration: the record it came from)."""
        return self.configuration_of or self.id

    @property
    def memory_configurable(self) -> bool:
        """Sold in several memory configurations (a sized name plans one of them)."""
        return bool(self.memory_configurations)

    @model_validator(mode="after")
    def _integrated_is_sourced_unified_cuda(self) -> "Accelerator":
        sizes = [c.memory_bytes.value for c in self.memory_configurations]
        if sizes and (sizes != sorted(set(sizes)) or self.memory_bytes.value not in sizes):
            raise ValueError("memory_configurations are listed smallest first, each once, the record's memory_bytes among them")
        if self.integrated_gpu and not (self.unified_memory and self.software == Software.CUDA
                                        and self.integrated_gpu_source):
            raise ValueError("integrated_gpu is a CUDA part with unified_memory, stated with its integrated_gpu_source")
        if self.page_cache_drop_command and not (self.integrated_gpu and self.page_cache_drop_command_source):
            raise ValueError("page_cache_drop_command is an integrated_gpu's, stated with its page_cache_drop_command_source")
        return self
