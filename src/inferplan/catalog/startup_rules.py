"""What an engine allocates at start-up after its KV cache is sized, outside its memory fraction.

vLLM V1 sizes the KV cache from ``total × gpu_memory_utilization``; what it allocates afterwards —
the CUDA graphs it captures (where they are not estimated into the budget) and the sampler warm-up
it runs after the capture — comes out of the ``total × (1 − gpu_memory_utilization)`` the fraction
leaves, next to the CUDA context created before the first memory reading. When those need more
than that headroom the engine fails at start-up although the KV cache was sized. A
``StartupHeadroom`` states, for one release line's ``MemoryRule`` (``engine_memory_rules.yaml``),
which of these parts the headroom must hold; the arithmetic is ``memory/startup.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from inferplan.catalog.running_defaults import RequestTable
from inferplan.catalog.schema import Frozen
from inferplan.catalog.schema_base import Software


class StartupHeadroom(Frozen):
    """The allocations that must fit in the memory a release's fraction leaves free on each GPU."""

    context_constant: str  # calibration.yaml id: the CUDA context made before the engine reads the memory
    # calibration.yaml ids (one GPU, several GPUs): the CUDA-graph pool captured after the KV cache is sized;
    # None where the release counts its graphs inside the fraction
    graph_constants: tuple[str, str] | None = None
    # the sampler warm-up after the capture repeats the profile's dummy sampler pass over max_num_seqs rows
    # of full-vocab logits: the rule's activation.sampler_constant bytes per (row × vocab entry)
    sampler_warmup: bool = True
    sources: tuple[str, ...] = Field(min_length=1)

    def constant_ids(self) -> tuple[str, ...]:
        return (self.context_constant, *(self.graph_constants or ()))


class MeasuredSizingOff(Frozen):
    """A deployment input with which the engine cannot size the KV cache from measured memory and sizes it as
    before the measured sizing (at ``MeasuredSizing.fraction_where_off``, from the profile estimate): e.g. vLLM
    0.34's LMCache connector, which shares the cache through legacy CUDA IPC."""

    field: str  # a Deployment field (inputs/deployment.py)
    values: tuple[str, ...] = ()  # the stated values that turn it off (empty: any stated value)
    also_stated: tuple[str, ...] = ()  # Deployment fields that must be stated too for the input to take effect
    said_as: str | None = None  # how a plan's notes name the input (None: the field and its value)
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def named(self, deployment) -> str:
        """The input as ``deployment`` states it, in a plan's notes."""
        return self.said_as or f"{self.field} {getattr(deployment, self.field)}"

    def applies(self, deployment) -> bool:
        """Whether ``deployment`` states this input (a field name no deployment has is an AttributeError)."""
        value = getattr(deployment, self.field)
        return value is not None and (not self.values or str(value) in self.values) and \
            all(getattr(deployment, f) is not None for f in self.also_stated)


class SizingFallback(Frozen):
    """A runtime of one software stack on which the engine finds the driver mapping the measured sizing needs
    unusable at start-up and sizes the cache as before (at ``MeasuredSizing.fraction_where_off``, from the
    profile estimate). The runtime's release is no deployment input, so ``fit`` states what the fallback costs.
    ``connectors``: only for an instance launching with one of these KV connectors (empty: any instance)."""

    software: Software
    runtime: str  # the runtimes it happens on, in words, with how to check for them
    connectors: tuple[str, ...] = ()  # the engine's kv_connector names it is limited to
    # the runtime as its platform comes unless an administrator changes it, in a few words (empty: a runtime the
    # platform does not come as): the engine's default then turns the cache off, so the plan sizes it off unless
    # the switch is stated on
    by_default: str = ""
    other_runtime: str = ""  # the runtime an administrator can give it instead, on which the cache stays on
    # what the engine does on the runtime when the switch is stated on (empty: nothing said)
    stated_on: str = ""
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def named(self, connector: str | None) -> str:
        """The default runtime as the cause of a cache sized from the profile: the connector, on its software stack."""
        return f"{_connector_on(connector, self.software)} {self.by_default}"

    def stated_on_said(self, connector: str | None) -> str:
        """What the engine does on the default runtime with the switch stated on for ``connector``, in a few words."""
        return f"--enable-extensible-kv-cache with {connector} on {self.software.value} {self.by_default}: {self.stated_on}"


class ConnectorRefusal(Frozen):
    """KV connectors with which the engine cannot size the cache from measured memory on one software stack: it
    turns the measured sizing off unless asked for it, and refuses it when asked (vLLM 0.34 on ROCm: connectors
    that register the cache with UCX or RDMA, which cannot register driver-mapped memory there)."""

    software: Software
    connectors: tuple[str, ...] = Field(min_length=1)  # the engine's kv_connector names
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def named(self, connector: str) -> str:
        """The refusal as the cause of a cache sized from the profile: the connector, on its software stack."""
        return _connector_on(connector, self.software)


def _connector_on(connector: str | None, software: Software) -> str:
    """A pool's KV connector (None: none named) on ``software``, as the cause of a cache sized from the profile."""
    on = f"{connector} (the KV connector of a disaggregated pool's instance) on" if connector else "on"
    return f"{on} {software.value}"


class MeasuredSizing(Frozen):
    """A KV cache sized from the memory measured after warm-up and CUDA-graph capture (vLLM's extensible KV
    cache, on by default from 0.34.0), not from a profile estimate: the cache gets the smaller of the fraction's
    budget and the memory free at start-up, each less what the engine holds (weights, runtime, CUDA graphs)
    and the activation peak, the second also less a margin of ``max(margin floor, margin_activation_fraction
    × activation peak)``. Nothing is checked after the sizing: it runs after the warm-up and capture. The
    inputs in ``off_with`` switch it off: the cache is then sized at ``fraction_where_off`` as before."""

    # the software stacks the engine sizes the cache this way on (vLLM: CUDA and ROCm, is_cuda_alike); elsewhere it
    # sizes as before, at fraction_where_off, and refuses a deployment that asks for it
    software: tuple[Software, ...] = Field(min_length=1)
    margin_floor_bytes: int = Field(ge=0)  # KV_CACHE_MARGIN_FLOOR_BYTES on CUDA
    # the floor on other software stacks (ROCm), where it differs
    margin_floor_bytes_by_software: dict[Software, int] = Field(default_factory=dict)
    margin_activation_fraction: float = Field(ge=0)  # KV_CACHE_MARGIN_FRACTION
    # the default fraction where the engine cannot use it (off CUDA and ROCm, or an off_with input) and sizes as before
    fraction_where_off: float = Field(gt=0, le=1)
    # the cache maps each layer's segment in whole granules of this size, dropping blocks until the rounded segments
    # fit the measured budget (0: not rounded)
    granule_bytes: int = Field(0, ge=0)
    off_with: tuple[MeasuredSizingOff, ...] = ()
    runtime_fallbacks: tuple[SizingFallback, ...] = ()
    connector_refusals: tuple[ConnectorRefusal, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def margin_floor(self, software: Software | None) -> int:
        """The margin's floor on a software stack (None: CUDA's)."""
        return self.margin_floor_bytes_by_software.get(software, self.margin_floor_bytes) if software else \
            self.margin_floor_bytes

    def margin_bytes(self, activation_bytes: float, software: Software | None = None) -> float:
        """The memory kept free beside the activation peak on ``software`` (None: CUDA)."""
        return max(float(self.margin_floor(software)), self.margin_activation_fraction * activation_bytes)

    def granule_rounded(self, kv_bytes: float, segments: int) -> float:
        """The KV bytes ``segments`` equal per-layer segments keep of ``kv_bytes`` once each is mapped in whole
        granules: a block fits while every segment's blocks stay within its whole granules."""
        if not self.granule_bytes or segments < 1 or kv_bytes <= 0:
            return kv_bytes
        step = segments * self.granule_bytes
        return (kv_bytes // step) * step

    def used_on(self, software: Software | None) -> bool:
        """Whether the engine sizes the cache from measured memory on ``software`` (None: CUDA)."""
        return software is None or software in self.software

    def switched_off_by(self, deployment, *, besides: str | None = None) -> MeasuredSizingOff | None:
        """The stated input that switches the measured sizing off for ``deployment``, if any (``besides``: a field
        not to count)."""
        return next((o for o in self.off_with if o.field != besides and o.applies(deployment)), None)

    def fallback_on(self, software: Software | None, connector: str | None = None) -> SizingFallback | None:
        """The runtimes of ``software`` on which the engine falls back to sizing as before (None: none stated), for
        an instance launching with the KV connector ``connector`` (None: none)."""
        return next((f for f in self.runtime_fallbacks if f.software == software and
                     (not f.connectors or connector in f.connectors)), None)

    def off_by_default(self, software: Software | None, connector: str | None) -> SizingFallback | None:
        """The fallback runtime of ``software`` for ``connector`` that is the platform's default (``by_default``),
        on which the engine turns the cache off where the switch is left to it, if any."""
        fallback = self.fallback_on(software, connector) if connector else None
        return fallback if fallback is not None and fallback.by_default else None

    def refused_with(self, software: Software | None, connector: str | None) -> ConnectorRefusal | None:
        """The refusal of ``connector`` (a kv_connector name; None: none) on ``software``, if any."""
        return next((r for r in self.connector_refusals if r.software == software and connector in r.connectors), None)

    def off_with_connector(self, software: Software | None,
                           connector: str | None) -> ConnectorRefusal | SizingFallback | None:
        """What turns the measured sizing off for an instance launching with ``connector`` on ``software`` where the
        switch is left to the engine: its refusal there (``refused_with``), else the platform's default runtime
        (``off_by_default``); None: neither."""
        return self.refused_with(software, connector) or self.off_by_default(software, connector)

    def source_ids(self) -> tuple[str, ...]:
        return (*self.sources, *(s for o in self.off_with for s in o.sources),
                *(s for f in self.runtime_fallbacks for s in f.sources),
                *(s for r in self.connector_refusals for s in r.sources))


class AttentionWorkspace(Frozen):
    """The buffers an attention backend allocates once the KV pool is sized, out of the memory the fraction
    leaves free (SGLang 0.5.6 with AITER on ROCm, models without latent attention).

    SGLang sizes its request table from the pool (``request_table``, the ``RequestTable`` its running
    requests are capped by), one int32 row of ``context`` token slots each (``request_table_bytes_per_slot``);
    the backend then keeps a paged-attention workspace of
    ``requests x query heads per GPU x ceil(context / partition_tokens) x (head_dim x
    bytes_per_output_element + bytes_per_partition_stats)`` bytes. ``memory/attention_workspace.py``
    does the arithmetic."""

    software: str  # the stack on which the engine runs the backend by default (a Software value)
    attention_backend: str  # the backend's name in the engine (SGLang --attention-backend)
    partition_tokens: int = Field(ge=1)  # _AITER_PARTITION_SIZE_ROCM
    bytes_per_output_element: int = Field(ge=1)  # the partial outputs are float32
    bytes_per_partition_stats: int = Field(ge=0)  # two float32 per (request, head, partition): max and sum
    request_table: RequestTable  # max_num_reqs, sized from the pool as for the running requests
    request_table_bytes_per_slot: int = Field(ge=0)  # req_to_token: int32 per (request, context position)
    sources: tuple[str, ...] = Field(min_length=1)
