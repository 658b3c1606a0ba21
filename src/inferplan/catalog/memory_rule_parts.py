"""The pieces of an engine release's memory rule (``memory_rules.MemoryRule``) that stand on their own.

How the forward pass and sampler are profiled (``ActivationProfile``, ``SamplerBackend``), the collective
library's buffers (``CollectiveBuffers``), the memory fraction a release defaults to (``ReleaseFraction``,
``TpFraction``), the engine's newest known release (``CurrentRelease``) and llama.cpp's ``-ngl`` placement
(``GpuLayerOrder``). They describe only; ``memory_rules.py`` checks them together and selects a rule.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.moe_profile import MoeProfileBuffers
from inferplan.catalog.provenance import release_key
from inferplan.catalog.schema import Frozen

class SamplerBackend(Frozen):
    """A top-k/top-p sampler an install may run in place of the rule's default one (vLLM V1: FlashInfer's
    rejection sampler where flashinfer is importable and enabled), with its bytes per (row × vocab entry)."""

    backend: Literal["flashinfer", "pytorch"]  # Deployment.topk_topp_sampler
    sampler_constant: str  # calibration.yaml id
    sources: tuple[str, ...] = Field(min_length=1)


class ActivationProfile(Frozen):
    """How the engine sizes the memory its forward pass needs outside the KV cache."""

    # sampler_and_forward: a dummy forward of `profile tokens` then a sampler pass over `sampler rows`
    # of full-vocab logits (a × rows × vocab + b × tokens × hidden / TP); forward_or_sampler: the
    # larger of the two passes, the forward's peak at its MLP (c × tokens × (hidden + MLP width / TP))
    # and the sampler's (a × rows × vocab), as a profile whose forward frees its tensors before the
    # sampler runs peaks at one of them; llamacpp_logits: one ubatch of logits; generic: a workspace
    # per token × hidden; mlx_in_flight: a prompt chunk's activations held by MLX's in-flight command
    # buffers (the rule's prefill_working_set); outside_fraction: not counted
    model: Literal["sampler_and_forward", "forward_or_sampler", "llamacpp_logits", "generic", "mlx_in_flight",
                   "outside_fraction"]
    sampler_constant: str | None = None  # calibration.yaml id, bytes per (row × vocab entry)
    # the sampler pass of an install that names another top-k/top-p backend (None named: sampler_constant)
    sampler_backends: tuple[SamplerBackend, ...] = ()
    # calibration.yaml id, bytes per (token × hidden / TP); forward_or_sampler: per (token × (hidden + MLP width / TP))
    forward_constant: str | None = None
    # generic: False where the engine profiles the whole step on every tensor-parallel rank and the step's
    # token × hidden tensors are whole there (the residual stream is not split), so the workspace is not / TP
    hidden_split_by_tp: bool = True
    # the tokens of the profiled batch when max_num_batched_tokens is not stated: the engine's default
    # (engines.yaml), or the max_model_len, at least `profile_tokens_floor` (V0 without chunked prefill)
    profile_tokens: Literal["engine_default", "max_model_len"] = "engine_default"
    profile_tokens_floor: int | None = Field(None, ge=1)
    # chunked prefill turned on by the engine when max_model_len exceeds this; the batch is then
    # `chunked_prefill_tokens` (None: the engine never turns it on by itself)
    chunked_prefill_above_tokens: int | None = Field(None, ge=1)
    chunked_prefill_tokens: int | None = Field(None, ge=1)
    # sampler_and_forward: the fused-MoE kernels' intermediate caches in the dummy forward, by release
    moe_buffers: tuple[MoeProfileBuffers, ...] = ()

    def sampler_constant_for(self, backend: str | None) -> str | None:
        """The calibration id of the sampler pass's bytes per (row × vocab entry) with ``backend``
        (Deployment.topk_topp_sampler; None or a backend the rule does not list: the rule's own)."""
        named = [b.sampler_constant for b in self.sampler_backends if b.backend == backend]
        return named[0] if named else self.sampler_constant

    @model_validator(mode="after")
    def _constants_named(self) -> "ActivationProfile":
        if self.model in ("sampler_and_forward", "forward_or_sampler") and not (self.sampler_constant and self.forward_constant):
            raise ValueError(f"a {self.model} profile names its sampler_constant and forward_constant")
        if (self.chunked_prefill_above_tokens is None) != (self.chunked_prefill_tokens is None):
            raise ValueError("chunked_prefill_above_tokens and chunked_prefill_tokens come together")
        ranges = [(release_key(m.first_release), release_key(m.last_release)) for m in self.moe_buffers]
        if any(lo > hi for lo, hi in ranges) or any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:])):
            raise ValueError("moe_buffers entries name ascending, non-overlapping release ranges")
        return self


class CollectiveBuffers(Frozen):
    """Device memory the engine's collective-communication library maps per GPU on some fabrics, inside
    what the rule counts as non-torch memory: NCCL's NVLink SHARP (NVLS) buffers, set up for a group of
    more than two GPUs on an NVSwitch domain of Hopper-or-later NVLink."""

    links: tuple[str, ...] = Field(min_length=1)  # accelerators.yaml scale_up.link values that carry it
    min_domain_gpus: int = Field(ge=2)  # an NVSwitch domain (a bridged pair or quad has no switch)
    min_group_gpus: int = Field(ge=2)  # GPUs in the tensor-parallel group
    bytes_per_rank_constant: str  # calibration.yaml id: bytes per GPU per rank of the group, per communicator
    communicators: int = Field(ge=1)  # NCCL communicators the engine holds over the group
    # calibration.yaml id: the size each communicator's buffer is rounded up to before it is allocated
    # (the multicast object's granularity); None: not rounded
    granularity_constant: str | None = None
    sources: tuple[str, ...] = Field(min_length=1)

    def bytes_per_gpu(self, catalog, link: str | None, domain_gpus: int, group_gpus: int) -> float:
        if link not in self.links or domain_gpus < self.min_domain_gpus or group_gpus < self.min_group_gpus:
            return 0.0
        per_communicator = catalog.constant(self.bytes_per_rank_constant) * group_gpus
        if self.granularity_constant:
            granularity = catalog.constant(self.granularity_constant)
            per_communicator = math.ceil(per_communicator / granularity) * granularity
        return per_communicator * self.communicators


class ReleaseFraction(Frozen):
    """The memory fraction an engine defaults to from one of its releases on (vLLM's gpu_memory_utilization)."""

    first_release: str  # inclusive, inside the rule's range; a later entry takes over from its own first_release
    value: float = Field(gt=0, le=1)
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""


class TpFraction(Frozen):
    """A fixed memory fraction a release picks by its tensor-parallel size (SGLang before PR #7054)."""

    min_tp: int = Field(ge=1)  # the fraction applies from this TP size up to the next entry's
    value: float = Field(gt=0, le=1)


class CurrentRelease(Frozen):
    """The engine's newest release the catalogue knows, planned with when a deployment names none."""

    release: str
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    # the release a measurement record that states none is planned at (None: the current release)
    records_without_release: str | None = None
    note: str = ""


class GpuLayerOrder(Frozen):
    """Which layers llama.cpp's ``-ngl N`` (``n_gpu_layers``) puts on the GPU, out of the repeating layers and the
    output layer: ``last``, the last N repeating layers, the output layer only when N exceeds them; ``first``,
    the output layer and then the last N - 1 repeating layers."""

    output_layer: Literal["last", "first"]
    sources: tuple[str, ...] = Field(min_length=1)
