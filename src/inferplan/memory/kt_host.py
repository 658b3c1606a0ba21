"""What a KTransformers deployment states about its CPU side, carried from the deployment to the
step times (performance/kt_cpu.py prices it against catalog/data/kt_cpu_paths.yaml)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KtHost:
    release: str | None  # Deployment.kt_release (None: the current kt-kernel path)
    method: str | None  # Deployment.kt_method, as --kt-method names it (None: from the weight format, else the release's default)
    quantization: str  # the deployment's weight format (kt-kernel picks --kt-method from it)
    sockets: int  # CPU sockets (NUMA nodes) the experts are spread over
    tokens_per_expert_per_token: float  # experts_per_token / num_experts: a step's tokens over the experts
