"""The intermediate buffers a release's fused-MoE kernels allocate in the start-up profile's dummy forward,
as data on a memory rule's activation profile (``ActivationProfile.moe_buffers``).

vLLM's fused-MoE paths (read in the 0.9.2-0.16.0 wheels) take three intermediate caches per MoE layer call
and free them when it returns: the gate/up output (tokens x top-k x 2I, I the GPU's share of an expert's
intermediate size) sharing one buffer with the down projection's output (tokens x top-k x H, H the hidden
size), and the activated half (tokens x top-k x I), so tokens x top-k x (max(2I, H) + I) elements of the
activations' dtype. The Triton path (``fused_experts_impl``) sizes them for at most
``VLLM_FUSED_MOE_CHUNK_SIZE`` tokens at a time, writing its output in place under PyTorch before 2.9;
Marlin (``fused_marlin_moe``: INT4 weight-only experts, and FP8 or NVFP4 experts on GPUs without native FP8 or
FP4) sizes them for every token at once and returns a new tokens x H output. A kernel entry may be bounded to
GPU architectures and software stacks (vLLM 0.11.1 takes Marlin for FP8 experts below compute capability 8.9
and never on ROCm).
From 0.17 the modular MoE kernel (``FusedMoEKernel``) takes its scratch from the worker's workspace
manager, one buffer that only grows and is kept after the profile: workspace13 (tokens x top-k x max(I, H),
sharing storage with the tokens x H output) beside workspace2 (tokens x top-k x max(2I, H)) for Marlin's and
gated Triton experts (``MarlinExperts``/``TritonExperts.workspace_shapes``; ``workspace_shapes`` names which,
H there the experts' input width, a LatentMoE model's latent width), so those bytes add to the
profile's peak instead of meeting the sampler pass in the larger of the two (``shapes: modular_workspaces``).
Emulated NVFP4 experts on ROCm (vLLM 0.20-0.24) dequantize every expert of the layer the GPU holds, w13 then w2,
to the activations' dtype before the Triton experts run, and free the copies when the layer returns
(``shapes: dequantized_experts``).
``memory/moe_buffers.py`` computes the bytes; the rule says how they meet the sampler pass.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.schema import Frozen
from inferplan.catalog.schema_base import Software


class MoeKernelBuffers(Frozen):
    """One fused-MoE kernel's intermediate caches, for the expert quantizations that run on it."""

    kernel: str  # a name for notes ("Marlin", "Triton fused_experts")
    quantizations: tuple[str, ...] = Field(min_length=1)  # quantizations.yaml ids whose experts run it
    chunk_tokens: int | None = Field(None, ge=1)  # tokens per call at most (None: the whole batch at once)
    output_copy: bool  # a new tokens x hidden output tensor beside the caches (not written in place)
    # intermediate_caches: tokens x top-k x (max(2I, H) + I), freed when the layer returns; modular_workspaces:
    # tokens x top-k x (max(I, H) + max(2I, H)) in the workspace manager's buffer, kept after the profile;
    # dequantized_experts: the GPU's experts of one layer dequantized to the activations' dtype in the call
    shapes: Literal["intermediate_caches", "modular_workspaces", "dequantized_experts"] = "intermediate_caches"
    # dequantized_experts only: bytes per expert weight live while one expert tensor (w13, then w2) is dequantized,
    # its output included; the dequantized w13 stays beside w2's
    dequant_peak_bytes_per_weight: float | None = Field(None, gt=0)
    # the modular kernel's experts' workspace_shapes (memory/moe_layout.py modular_workspace); with modular_workspaces only
    workspace_shapes: Literal["marlin", "triton", "humming"] | None = None
    without_expert_parallel: bool = False  # the experts take this kernel only without expert parallelism
    architectures: tuple[str, ...] = ()  # accelerators' architectures on which these experts run it (empty: every one)
    software: tuple[Software, ...] = ()  # the accelerators' software stacks on which they run it (empty: every one)
    sources: tuple[str, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _workspaces_hold_the_output(self) -> MoeKernelBuffers:
        if self.shapes == "modular_workspaces" and (self.output_copy or self.chunk_tokens):
            raise ValueError("modular_workspaces hold the output in workspace13, unchunked: output_copy must be "
                             "false and chunk_tokens unset")
        if (self.shapes == "modular_workspaces") != (self.workspace_shapes is not None):
            raise ValueError("workspace_shapes (marlin, triton or humming) names the experts' modular_workspaces, "
                             "and only those")
        if (self.shapes == "dequantized_experts") != (self.dequant_peak_bytes_per_weight is not None):
            raise ValueError("dequant_peak_bytes_per_weight names the dequantized_experts' peak, and only theirs")
        return self

    @property
    def kept(self) -> bool:
        """Whether the buffers stay allocated after the layer's call (the workspace manager's)."""
        return self.shapes == "modular_workspaces"

    def runs_on(self, architecture: str, software: Software, *, expert_parallel: bool = False) -> bool:
        """Whether the experts take this kernel on a GPU of ``architecture`` under ``software``."""
        return ((not self.architectures or architecture in self.architectures)
                and (not self.software or software in self.software)
                and not (self.without_expert_parallel and expert_parallel))


class MoeProfileBuffers(Frozen):
    """The fused-MoE kernels' buffers over a range of releases: intermediate caches of tokens x top-k x
    (max(2I, H) + I) elements (plus tokens x H where the kernel returns a new output), live inside one MoE
    layer's call of the dummy forward and freed before the sampler pass, or the modular kernel's workspaces,
    kept through it (``MoeKernelBuffers.shapes``)."""

    first_release: str  # inclusive
    last_release: str  # inclusive: the newest release read
    element_bytes: float = Field(gt=0)  # the activations' dtype (bf16/fp16: 2)
    kernels: tuple[MoeKernelBuffers, ...] = Field(min_length=1)
    composition: Literal["forward_beside_sampler"]  # held hidden states + max(sampler pass, MoE caches)
    # the default dispatch hands every GPU's experts the tokens of all data-parallel ranks, by these sources
    # (false: not described)
    data_parallel_gather: bool = False
    gather_sources: tuple[str, ...] = ()
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    @model_validator(mode="after")
    def _a_gather_has_sources(self) -> MoeProfileBuffers:
        if self.data_parallel_gather != bool(self.gather_sources):
            raise ValueError("data_parallel_gather takes gather_sources, and gather_sources only with it")
        return self

    def source_ids(self) -> tuple[str, ...]:
        return (*(s for k in self.kernels for s in k.sources), *self.gather_sources)
