"""The memory plan a fit makes (``memory/fit.py``): its result and the intermediate objects it was made with,
for the layers above memory (speed, economics) and the layout searches (``memory/fit_copies.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.models import ModelSpec
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema import Accelerator, KvDtype
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.hardware import Hardware
from inferplan.memory.kv_cache import KvLayout
from inferplan.memory.offload import OffloadSplit
from inferplan.memory.stages import StageWeights
from inferplan.memory.weights import WeightEstimate


@dataclass(frozen=True)
class MemoryPlan:
    """Everything a memory fit worked out, for the layers above it (speed, economics)."""

    result: MemoryFit
    spec: ModelSpec
    accelerator: Accelerator
    quantization: Quantization
    kv_dtype: KvDtype
    weights: WeightEstimate
    layout: KvLayout
    settings: EngineSettings
    hardware: Hardware
    stage_weights: tuple[StageWeights, ...]  # per GPU of each pipeline stage, before what the engine adds
    offload: OffloadSplit | None = None  # weights and KV cache in host RAM
    fraction_scale: float = 1.0  # what the engine multiplies the memory fraction it is given by
    gpu_quantization: Quantization | None = None  # the GPU's weights' format where not ``quantization`` (kt LLAMAFILE)
    expert_data_parallel: int = 1  # data-parallel ranks that split the routed experts beside TP (memory/expert_split.py)

    @property
    def gpu_format(self) -> Quantization:
        """The format of the weights the GPU holds and computes with."""
        return self.gpu_quantization or self.quantization
