"""Weight formats: how many bits one quantized weight costs, where an accelerator runs it natively, and which
engines load it or run a fallback for it elsewhere (a fused weight-only kernel, or an emulation that dequantizes
the weights every forward).

As ``schema.py``: real annotations (no postponed ones), so pydantic builds validators without re-reading them.
"""

from typing import Literal

from pydantic import Field

from inferplan.catalog.accelerator_schema import Accelerator
from inferplan.catalog.checkpoint_schema import KeptCheckpointExperts
from inferplan.catalog.provenance import Bits, Count, release_key
from inferplan.catalog.schema_base import SLUG, Frozen, Software


class FallbackRule(Frozen):
    """An engine that runs a format on an accelerator without its native format: weight-only, the
    weights dequantized inside the kernel and the math in ``Quantization.fallback_compute``."""

    engine: str  # an engine id from engines.yaml
    since: str | None = None  # the first release that has it (None: every release on record)
    source: str
    note: str | None = None


class EmulatedFallback(Frozen):
    """Where an engine's fallback for a format is an emulation, not a fused weight-only kernel: each forward
    dequantizes the packed weights into a full copy in ``materialized_format`` (writes it, then the
    matrix maths reads it) and runs in ``Quantization.fallback_compute``. It covers accelerators without
    native kernels for the format on ``software`` (and ``architectures``, empty: any) in the engine's
    releases from ``since`` (None: the first on record) before ``before`` (None: every later one), for the
    ``weights`` it names: every quantized weight, or the routed experts alone (the linear layers run a kernel)."""

    engine: str  # an engine id from engines.yaml
    software: tuple[Software, ...] = Field(min_length=1)
    architectures: tuple[str, ...] = ()
    weights: Literal["all", "routed_experts"] = "all"
    since: str | None = None  # the first release it covers
    before: str | None = None  # the first release that runs a kernel instead
    materialized_format: str  # a quantization id: the dtype the weights are dequantized to
    source: str
    note: str


class MixedModuleRule(Frozen):
    """The first release of an engine that builds a module a ModelOpt MIXED_PRECISION config lists in this
    format (earlier releases leave it unquantized)."""

    engine: str  # an engine id from engines.yaml
    since: str
    source: str


class Quantization(Frozen):
    """A weight format: how many bits one quantized weight costs, scales included."""

    id: str = Field(pattern=SLUG)
    name: str
    aliases: tuple[str, ...] = ()
    bits_per_weight: Bits
    # weights outside the routed experts when a format stores them differently (llama.cpp MXFP4_MOE:
    # experts MXFP4, every other 2-D tensor Q8_0); None: the same bits as the experts
    non_expert_bits_per_weight: Bits | None = None
    # the output projection (lm_head, or a tied embedding table) where the format writes it in a type
    # of its own (llama.cpp Q4_0 files: Q6_K), when its rows are a multiple of output_row_weights
    # weights; otherwise at output_fallback_bits_per_weight. None: as the other non-expert weights
    output_bits_per_weight: Bits | None = None
    output_row_weights: Count | None = None
    output_fallback_bits_per_weight: Bits | None = None
    weight_dtype: str  # storage: bf16, fp8, int8, int4, fp4 ...
    activation_dtype: str  # compute dtype when the hardware runs it natively
    native_format: str | None = None  # the accelerator format that runs it natively (fp8, nvfp4 ...)
    # software stacks whose engines have native kernels for it (empty: any stack with native_format);
    # elsewhere it runs the fallback even where the silicon has the format
    native_software: tuple[Software, ...] = ()
    fallback_compute: str = "bf16"  # compute dtype when the hardware lacks the native format
    quantizes_embeddings: bool = False  # GGUF quantizes token embeddings; most GPU formats do not
    # a format defined by its routed experts taking fewer bits than the rest (DeepSeek-V4's FP4 experts, FP8
    # elsewhere), its bits a whole-checkpoint average: a model without routed experts is refused in it
    needs_routed_experts: bool = False
    # weights quantized in square blocks of this many rows and columns, one scale each (FP8 128x128):
    # an engine whose tensor_parallel_splits include weight_block needs each rank's MLP width whole blocks
    weight_block: Count | None = None
    # llama.cpp K-quants: 256-weight super-blocks of sub-blocks with their own scales (6-bit packed
    # with minima in Q2-Q5_K, 8-bit in Q6_K), unpacked for every weight a matrix-vector kernel reads:
    # ALU work per weight that GPUs with few FLOP/s per byte of bandwidth feel (docs/speed.md)
    super_block_scales: bool = False
    # routed experts a checkpoint ships in another format that this format's builds keep as they are
    # (GGUF K-quants, i-quants and Q8_0 of gpt-oss: MXFP4); the other weights take this format's bits
    keeps_checkpoint_experts: tuple[KeptCheckpointExperts, ...] = ()
    engines: tuple[str, ...] = ()  # engines that load this format; empty: every engine
    # the engines of ``engines`` that run it where the accelerator does not run it natively (None: all of them)
    fallback_engines: tuple[FallbackRule, ...] | None = None
    # engines whose fallback for it on some accelerators and releases dequantizes the whole weights every forward
    emulated_fallbacks: tuple[EmulatedFallback, ...] = ()
    # engines whose ModelOpt MIXED_PRECISION config builds modules listed in this format only from a release
    mixed_modules_since: tuple[MixedModuleRule, ...] = ()
    notes: tuple[str, ...] = ()

    def native_on(self, accel: Accelerator) -> bool:
        """Whether ``accel`` runs this format's matrix maths natively (no format: always)."""
        if self.native_format is None:
            return True
        return self.native_format in accel.native_formats and (
            not self.native_software or accel.software in self.native_software)

    def emulation(self, accel: Accelerator, engine: str, release: str | None = None) -> EmulatedFallback | None:
        """The ``emulated_fallbacks`` rule by which ``engine`` (at ``release``; None: its current one) runs this
        format's every weight on ``accel`` (None: native kernels there, or a fused fallback)."""
        return next((r for r in self._emulations(accel, engine, release) if r.weights == "all"), None)

    def expert_emulation(self, accel: Accelerator, engine: str, release: str | None = None) -> EmulatedFallback | None:
        """The rule by which ``engine`` emulates this format's routed experts on ``accel``: one for every
        weight, else one for the experts alone (None: they run a kernel)."""
        return next(iter(sorted(self._emulations(accel, engine, release), key=lambda r: r.weights != "all")), None)

    def _emulations(self, accel: Accelerator, engine: str, release: str | None) -> list[EmulatedFallback]:
        if self.native_on(accel):
            return []
        return [r for r in self.emulated_fallbacks if r.engine == engine and accel.software in r.software
                and (not r.architectures or accel.architecture in r.architectures)
                and (r.since is None or release is None or release_key(release) >= release_key(r.since))
                and (r.before is None or (release is not None and release_key(release) < release_key(r.before)))]

    def fallback(self, engine: str) -> FallbackRule | None:
        """``fallback_engines``' rule for ``engine`` (None: none is recorded)."""
        return next((r for r in self.fallback_engines or () if r.engine == engine), None)

    def falls_back(self, engine: str, release: str | None = None) -> bool:
        """Whether ``engine`` (at ``release``; None: its planned release, a current one) runs this format where
        the accelerator has no native kernels for it: every engine where ``fallback_engines`` is not stated."""
        if self.fallback_engines is None:
            return True
        rule = self.fallback(engine)
        return rule is not None and (rule.since is None or release is None
                                     or release_key(release) >= release_key(rule.since))
