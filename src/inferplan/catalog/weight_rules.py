"""How an engine keeps a checkpoint's expert block scales on the GPU, as data
(``data/engine_weight_rules.yaml``).

A block-scaled checkpoint stores one small scale per block of weights (MXFP4: one E8M0 byte per
32 FP4 values). An engine's MoE kernel may want those scales in a wider type on some GPUs and
converts them when it loads the weights, so the weights take more memory on the GPU than the
checkpoint on disk. An ``ExpertScaleRule`` states one such case: the engine, the architectures
(config ``model_type``) whose MoE method does it, the expert format, the GPU architectures it
happens on, and the bytes of one scale before and after, with the engine source read. The
arithmetic lives in ``memory/expert_scales.py``; this module only describes and checks.
"""

from __future__ import annotations

import datetime as dt

from pydantic import Field, model_validator

from inferplan.catalog.provenance import Bytes, Count, Kind
from inferplan.catalog.schema import SLUG, Frozen, check_engine_and_sources
from inferplan.errors import CatalogError


class ExpertScaleRule(Frozen):
    """One engine's resident width of the routed experts' block scales."""

    id: str = Field(pattern=SLUG)
    engine: str
    model_types: tuple[str, ...] = Field(min_length=1)  # config.json model_type whose MoE method converts
    expert_format: str  # quantizations.yaml native_format of the routed experts (mxfp4 ...)
    architectures: tuple[str, ...] = Field(min_length=1)  # accelerators.yaml architecture the path runs on
    # MoE runner backends, as the engine's flag names them, that take this path besides its default
    # (a deployment naming another runner keeps the checkpoint's scales)
    moe_runner_backends: tuple[str, ...] = ()
    block_weights: Count  # weights that share one scale
    checkpoint_scale_bytes: Bytes  # one scale as the checkpoint stores it
    resident_scale_bytes: Bytes  # one scale as the engine keeps it on the GPU
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Kind
    note: str

    @model_validator(mode="after")
    def _widens(self) -> "ExpertScaleRule":
        if self.block_weights.value < 1:
            raise ValueError("block_weights must be at least 1")
        if self.resident_scale_bytes.value < self.checkpoint_scale_bytes.value:
            raise ValueError("resident_scale_bytes is below checkpoint_scale_bytes: the rule states a widening")
        return self

    def extra_bits_per_weight(self) -> float:
        """Bits each expert weight gains on the GPU over the checkpoint."""
        return 8 * (self.resident_scale_bytes.value - self.checkpoint_scale_bytes.value) / self.block_weights.value


def check_weight_rules(catalog) -> None:
    """Every rule names a known engine, known sources, a GPU architecture of the catalogue and an
    expert format some quantization runs natively."""
    architectures = {a.architecture for a in catalog.accelerators}
    formats = {q.native_format for q in catalog.quantizations if q.native_format}
    for rule in catalog.weight_rules:
        where = f"weight_rules:{rule.id}"
        check_engine_and_sources(catalog, where, rule.id, rule.engine, rule.sources)
        unknown = sorted(set(rule.architectures) - architectures)
        if unknown:
            raise CatalogError(f"{where}: unknown GPU architectures {unknown}", field=rule.id,
                               allowed=", ".join(sorted(architectures)))
        if rule.expert_format not in formats:
            raise CatalogError(f"{where}: no quantization has native_format {rule.expert_format!r}", field=rule.id,
                               allowed=", ".join(sorted(formats)))
