"""The catalogue's shared building blocks: the frozen record base, the status, compute-format and software
enumerations, the id pattern, and the check every engine rule's record makes of its engine and sources.

As ``schema.py``: real annotations (no postponed ones), so pydantic builds validators without re-reading them.
"""

from enum import Enum

from pydantic import ConfigDict

from inferplan.errors import CatalogError
from inferplan.inputs import Input

SLUG = r"^[a-z0-9][a-z0-9._-]*$"


def check_engine_and_sources(catalog, where: str, record_id: str, engine: str, sources) -> None:
    """An engine rule's record names an engine and sources the catalogue has (CatalogError at ``where``)."""
    if engine not in catalog.engines:
        raise CatalogError(f"{where}: unknown engine {engine!r}", field=record_id)
    for source in sources:
        if source not in catalog.sources:
            raise CatalogError(f"{where}: unknown source {source!r}", field=record_id)


class Frozen(Input):
    """A catalogue entry (see inferplan.inputs: no NaN, no booleans for numbers). Its validator is
    built when a file is first validated, not at import: a start from the compiled catalogue never
    validates, so it never pays for building one."""

    model_config = ConfigDict(defer_build=True)


class Status(str, Enum):
    SHIPPING = "shipping"
    RAMP = "ramp"
    ROADMAP = "roadmap"
    DISCONTINUED = "discontinued"


class ComputeDtype(str, Enum):
    """Tensor-core input formats a peak FLOP/s figure is quoted for (dense, no sparsity)."""

    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    FP6 = "fp6"
    FP4 = "fp4"
    INT4 = "int4"


class Software(str, Enum):
    CUDA = "cuda"
    ROCM = "rocm"
    ONEAPI = "oneapi"
    SYNAPSEAI = "synapseai"
    METAL = "metal"
    NEURON = "neuron"
    VULKAN = "vulkan"
