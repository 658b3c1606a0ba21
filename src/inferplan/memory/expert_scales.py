"""Weight memory an engine adds by keeping the routed experts' block scales wider than the
checkpoint stores them (``catalog/data/engine_weight_rules.yaml``, ``catalog.weight_rules``).

SGLang's DeepSeek-V4 MoE on Hopper, for one, loads the FP4 experts' E8M0 scales (one byte per 32
weights) into float32 and keeps them so for DeepGEMM, which on SM90 reads float32 scale factors:
three more bytes per 32 expert weights than the checkpoint, 0.75 bits per weight.
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema import Accelerator
from inferplan.catalog.weight_rules import ExpertScaleRule
from inferplan.units import GiB


def expert_scale_rule(catalog: Catalog, engine: str, spec: ModelSpec, quant: Quantization, accel: Accelerator,
                      runner: str | None = None) -> ExpertScaleRule | None:
    """The rule that widens this deployment's expert scales (None: the engine keeps the checkpoint's).
    ``runner``: the MoE kernel path the deployment names (None: the engine's default, which a rule covers)."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    if arch is None or quant.native_format is None:
        return None
    return next((r for r in catalog.weight_rules
                 if r.engine == engine and r.expert_format == quant.native_format
                 and arch.model_type in r.model_types and accel.architecture in r.architectures
                 and (runner is None or runner in r.moe_runner_backends)), None)


def expert_scale_bytes(catalog: Catalog, engine: str, spec: ModelSpec, quant: Quantization, accel: Accelerator,
                       expert_bytes_per_gpu: float, runner: str | None = None) -> tuple[float, str | None]:
    """Bytes per GPU the wider scales add to ``expert_bytes_per_gpu`` of routed experts, and a note."""
    rule = expert_scale_rule(catalog, engine, spec, quant, accel, runner)
    if rule is None or not expert_bytes_per_gpu:
        return 0.0, None
    weights = expert_bytes_per_gpu * 8 / quant.bits_per_weight.value  # expert weights on the GPU
    extra = weights * rule.extra_bits_per_weight() / 8
    return extra, (
        f"{engine} keeps the expert block scales of {quant.id} on {accel.name} at "
        f"{rule.resident_scale_bytes.value:g} bytes per {rule.block_weights.value:g} weights "
        f"(checkpoint: {rule.checkpoint_scale_bytes.value:g}): +{extra / GiB:.2f} GiB per GPU ({rule.id})"
    )
