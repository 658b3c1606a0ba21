"""Weight bytes: from the real checkpoint size when known, else parameters × bits.

Quantized GPU formats (FP8, NVFP4, MXFP4, INT4 …) quantize the linear layers (attention, MLP,
experts); token embeddings, lm_head, norms and routers stay at 16 bits. GGUF k-quants also
quantize the embeddings. A format's ``bits_per_weight`` includes its block scales.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.checkpoint_schema import KeptCheckpointExperts
from inferplan.catalog.hf_keep import KeptGroups
from inferplan.catalog.models import KeptUnquantized, LayerFormats, ModelSpec
from inferplan.catalog.quantization_schema import Quantization
from inferplan.errors import InvalidScenarioError
from inferplan.memory.params import ParamBreakdown, count_params
from inferplan.units import fmt_billions, fmt_gib

UNQUANTIZED_BITS = 16  # embeddings, lm_head, norms and routers in GPU quantized checkpoints


@dataclass(frozen=True)
class WeightEstimate:
    total_bytes: float  # one full copy of the model
    expert_bytes: float  # part of it in routed experts (what expert parallelism shards)
    replicated_bytes: float  # part every tensor-parallel rank keeps whole (norms, DSA indexers)
    quantization: str
    method: str  # "checkpoint size" or "parameters × bits"
    assumptions: tuple[str, ...] = ()
    embedding_bytes: float = 0.0  # token embeddings (a lookup table: not read whole per step)
    head_bytes: float = 0.0  # the output projection (lm_head; for tied embeddings, the embedding table again)
    head_is_embedding: bool = False  # tied: one table at both ends, held twice once they are different pipeline stages
    mtp_bytes: float = 0.0  # multi-token-prediction layers loaded to draft with (in total_bytes; a step does not read them)
    mtp_expert_bytes: float = 0.0  # their routed experts (in expert_bytes)


@dataclass(frozen=True)
class _Parts:
    total: float
    expert: float
    embedding: float
    head: float  # lm_head (0 when tied to the embeddings)


def output_bits(quant: Quantization, hidden_size: int | None) -> float | None:
    """Bits of the output projection where the format writes it in a type of its own (llama.cpp
    Q4_0: Q6_K, or Q8_0 when a row is not a whole number of Q6_K super-blocks); None: as the other
    non-expert weights."""
    if quant.output_bits_per_weight is None:
        return None
    row = quant.output_row_weights.value if quant.output_row_weights else 1
    if hidden_size and hidden_size % row and quant.output_fallback_bits_per_weight:
        return quant.output_fallback_bits_per_weight.value
    return quant.output_bits_per_weight.value


def kept_expert_bits(spec: ModelSpec, quant: Quantization) -> KeptCheckpointExperts | None:
    """The rule by which ``quant``'s builds of ``spec`` keep the routed experts in the format the
    checkpoint ships them in (llama.cpp's gpt-oss GGUFs: MXFP4), or None."""
    arch = spec.architecture
    if arch is None or spec.architecture_is_proxy or arch.moe is None:
        return None
    return next((k for k in quant.keeps_checkpoint_experts
                 if k.quantization == spec.native_quantization and arch.model_type in k.model_types), None)


def _parts_bytes(params: ParamBreakdown, quant: Quantization, non_expert_bits: float | None = None,
                 head_bits: float | None = None, kept: KeptGroups = KeptGroups(),
                 expert_bits: float | None = None, formats: LayerFormats | None = None) -> _Parts:
    """Bytes by part computed from the parameter breakdown: routed experts at the format's bits
    (``expert_bits`` where the build keeps the checkpoint's own expert format), the other linear
    layers at its non-expert bits when it has them, edges at 16 bits unless the format quantizes
    them too; the output projection at ``head_bits`` when the format gives it a type of its own (a
    tied table is written in that type at both ends). The groups the build keeps unquantized
    (``kept``: each with the share of its layers kept) are at 16 bits. A build that names a format
    per module (``formats``) sets every group's bits from its listing alone."""
    if formats is not None:
        return _listed_parts_bytes(params, formats)
    bits = quant.bits_per_weight.value
    if non_expert_bits is None:
        non_expert_bits = quant.non_expert_bits_per_weight.value if quant.non_expert_bits_per_weight else None
    other_bits = non_expert_bits or bits
    bits = expert_bits or bits
    # a format that states its non-expert bits covers lm_head with them (GGUF MXFP4_MOE, vLLM's
    # --mxfp4-layers ...,lm_head); the embedding table only where the format quantizes embeddings
    embedding_bits = other_bits if quant.quantizes_embeddings else UNQUANTIZED_BITS
    if head_bits is not None:
        embedding_bits = embedding_bits if params.lm_head else head_bits
    else:
        head_bits = other_bits if quant.quantizes_embeddings or non_expert_bits else UNQUANTIZED_BITS
    if kept.share("embeddings"):
        embedding_bits = UNQUANTIZED_BITS
    if kept.share("lm_head"):
        head_bits = UNQUANTIZED_BITS
    small = (params.norms + params.router) * UNQUANTIZED_BITS / 8
    expert = params.experts * _kept_bits(bits, kept.share("experts")) / 8
    linear = expert + (
        params.attention * _kept_bits(other_bits, kept.share("attention"))
        + params.dense_mlp * _kept_bits(other_bits, kept.share("mlp"))
        + params.shared_experts * _kept_bits(other_bits, kept.share("shared_experts"))
    ) / 8
    embedding = params.embedding * embedding_bits / 8
    head = params.lm_head * head_bits / 8
    return _Parts(embedding + head + small + linear, expert, embedding, head)


def _listed_parts_bytes(params: ParamBreakdown, formats: LayerFormats) -> _Parts:
    """Bytes by part where each group's layers are in the formats the config lists for them, the
    layers it does not list at 16 bits (norms and routers too, as no format quantizes them)."""
    def bits(group: str) -> float:
        listed = [(b, s) for g, _, b, s in formats.formats if g == group]
        return sum(b * s for b, s in listed) + (1 - sum(s for _, s in listed)) * UNQUANTIZED_BITS

    expert = params.experts * bits("experts") / 8
    embedding = params.embedding * bits("embeddings") / 8
    head = params.lm_head * bits("lm_head") / 8
    linear = expert + (params.attention * bits("attention") + params.dense_mlp * bits("mlp")
                       + params.shared_experts * bits("shared_experts")) / 8
    small = (params.norms + params.router) * UNQUANTIZED_BITS / 8
    return _Parts(embedding + head + small + linear, expert, embedding, head)


def _formats_note(formats: LayerFormats) -> str:
    listed = ", ".join(f"{g} {q} ({b:g} bits" + (f", {s:.0%} of layers)" if s < 1 else ")")
                       for g, q, b, s in formats.formats)
    return f"formats by module: {listed}; modules not listed at 16 bits ({formats.source})"


def _kept_bits(bits: float, share: float) -> float:
    """Mean bits of a group whose ``share`` of layers is kept at 16 bits."""
    return share * UNQUANTIZED_BITS + (1 - share) * bits


def _kept_notes(kept: KeptUnquantized | None) -> list[str]:
    if kept is None:
        return []
    notes = []
    if kept.groups.shares:
        parts = ", ".join(g if s >= 1 else f"{g} ({s:.0%} of layers)" for g, s in kept.groups.shares)
        notes.append(f"kept unquantized at 16 bits in this build: {parts} ({kept.source})")
    if kept.groups.unmapped:
        shown = ", ".join(kept.groups.unmapped[:5]) + (" …" if len(kept.groups.unmapped) > 5 else "")
        notes.append(f"modules left unquantized that match no counted part, counted as quantized: {shown} "
                     f"({kept.source})")
    return notes


def _layer_expert_share(parts: _Parts) -> float:
    """The routed experts' share of the decoder layers' bytes (an MTP layer repeats a decoder layer)."""
    layers = parts.total - parts.embedding - parts.head
    return parts.expert / layers if layers > 0 else 0.0


def _mtp_notes(params: ParamBreakdown, loaded: bool, mtp_bytes: float, outside: bool = False) -> list[str]:
    if not params.mtp:
        return []
    if loaded:
        return [f"multi-token-prediction layers ({fmt_billions(params.mtp, '.1f')} parameters, {fmt_gib(mtp_bytes)}) "
                "loaded to draft with them (mtp_draft); they share the embeddings and lm_head"]
    if outside:
        return [f"multi-token-prediction layers ({fmt_billions(params.mtp, '.1f')} parameters, {fmt_gib(mtp_bytes)}) "
                "loaded by the draft worker after the KV cache is sized, outside the fraction (mtp_draft): not in "
                "these weights; the MTP draft's note says where they must fit"]
    return [f"multi-token-prediction layers ({fmt_billions(params.mtp, '.1f')} parameters) are in the checkpoint but not "
            "loaded without speculative decoding (mtp_draft)"]


def weight_bytes(spec: ModelSpec, quant: Quantization, *, mtp_loaded: bool = False,
                 mtp_outside: bool = False) -> WeightEstimate:
    """Bytes of weights for one copy of ``spec`` at ``quant``; ``mtp_loaded``: with its
    multi-token-prediction layers, which the engine loads to draft with them; ``mtp_outside``: without
    them, as the engine's draft worker loads them outside the fraction after the KV cache is sized (the notes
    say so, not that they are not loaded)."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    params = count_params(arch) if arch else None
    ckpt = spec.checkpoint(quant.id)
    kept = spec.kept(quant.id)
    groups = kept.groups if kept else KeptGroups()
    formats = spec.formats(quant.id)
    native_experts = kept_expert_bits(spec, quant)
    expert_bits = native_experts.bits_per_weight.value if native_experts else None
    if ckpt is not None:
        assumptions = [f"weights = published {ckpt.name} checkpoint size ({ckpt.source})"]
        total = ckpt.size_bytes
        expert = embedding = head = 0.0
        if params is not None:
            parts = _parts_bytes(params, quant, ckpt.non_expert_bits_per_weight, output_bits(quant, arch.hidden_size),
                                 groups, expert_bits, formats)
            assumptions += [_formats_note(formats)] if formats else _kept_notes(kept)
            if mtp_loaded and not ckpt.mtp_layers:
                raise InvalidScenarioError(f"{spec.name}'s {ckpt.name} build holds no multi-token-prediction layers "
                                           "to draft with", field="mtp_draft", allowed="no MTP draft with this build")
            # the checkpoint's MTP layers, with what its file holds beside them, pro rata (none in a build that
            # leaves them out)
            held = params.mtp + ckpt.mtp_extra_parameters
            mtp = held * total / (params.total + held) if ckpt.mtp_layers else 0.0
            total -= mtp
            if ckpt.mtp_layers:
                assumptions += _mtp_notes(params, mtp_loaded, mtp, mtp_outside)
            elif params.mtp:
                assumptions.append(f"the {ckpt.name} build holds none of the model's multi-token-prediction layers")
            # the checkpoint fixes the total; the computed parts share it out
            expert = total * parts.expert / parts.total if parts.total else 0.0
            embedding = total * parts.embedding / parts.total if parts.total else 0.0
            head = total * parts.head / parts.total if parts.total else 0.0
            if mtp_loaded:
                mtp_expert = mtp * _layer_expert_share(parts)
                total, expert = total + mtp, expert + mtp_expert
        if spec.architecture and spec.architecture.has_vision_tower:
            assumptions.append("checkpoint size includes the vision encoder, which the engine also loads"
                               if ckpt.vision_encoder else
                               f"the {ckpt.name} file holds the text model alone: the vision projector (mmproj) "
                               "llama-server fetches with --hf-repo is a file of its own, not in these weights")
        replicated = (params.norms * 2 + params.indexer * total / max(params.total, 1)) if params else 0.0
        tied = params is not None and not params.lm_head
        loaded = params is not None and mtp_loaded
        return WeightEstimate(total, expert, replicated, quant.id, "checkpoint size", tuple(assumptions), embedding,
                              embedding if tied else head, tied, mtp if loaded else 0.0, mtp_expert if loaded else 0.0)
    if params is not None:
        head_bits = output_bits(quant, arch.hidden_size)
        parts = _parts_bytes(params, quant, head_bits=head_bits, kept=groups, expert_bits=expert_bits, formats=formats)
        other = quant.non_expert_bits_per_weight
        note = (
            f"weights = {fmt_billions(params.total)} parameters: "
            + (f"routed experts kept in the checkpoint's {native_experts.quantization} at {expert_bits:g} bits "
               f"({native_experts.source}), other layers at {quant.bits_per_weight.value:g} bits"
               if native_experts else
               f"routed experts at {quant.bits_per_weight.value:g} bits, other layers at {other.value:g} bits"
               if other else f"linear layers at {quant.bits_per_weight.value:g} bits")
            + f" ({quant.id}), "
            + ("embeddings too" if quant.quantizes_embeddings else "embeddings, lm_head, norms and routers at 16 bits")
            + (f"; the output projection at {head_bits:g} bits" + ("" if params.lm_head else " (tied: the embedding table too)")
               if head_bits is not None else "")
        )
        assumptions = ([f"weights = {fmt_billions(params.total)} parameters: {_formats_note(formats)}"] if formats
                       else [note, *_kept_notes(kept)])
        mtp = mtp_expert = 0.0
        if params.mtp and (mtp_loaded or mtp_outside):  # the MTP layers at the mean bits of the decoder layers they copy
            layers = parts.total - parts.embedding - parts.head
            drafted = params.mtp * layers / max(params.total - params.embedding - params.lm_head, 1)
            assumptions += _mtp_notes(params, mtp_loaded, drafted, mtp_outside)
        if params.mtp and mtp_loaded:
            mtp = drafted
            mtp_expert = mtp * _layer_expert_share(parts)
            parts = _Parts(parts.total + mtp, parts.expert + mtp_expert, parts.embedding, parts.head)
        if spec.architecture and spec.architecture.has_vision_tower:
            assumptions.append("vision encoder not counted: config.json does not size it")
        replicated = params.norms * 2 + params.indexer * quant.bits_per_weight.value / 8
        tied = not params.lm_head
        return WeightEstimate(parts.total, parts.expert, replicated, quant.id, "parameters × bits",
                              tuple(assumptions), parts.embedding, parts.embedding if tied else parts.head, tied,
                              mtp, mtp_expert)
    if spec.total_params is None:
        raise InvalidScenarioError(
            f"{spec.name} has no architecture, no parameter count and no {quant.id} checkpoint size",
            field="quantization",
            allowed=", ".join(c.quantization for c in spec.checkpoints) or "none known",
        )
    total = spec.total_params * quant.bits_per_weight.value / 8
    expert_share = 0.0
    return WeightEstimate(
        total,
        expert_share,
        0.0,
        quant.id,
        "parameters × bits",
        (
            f"weights = {fmt_billions(spec.total_params, '.0f')} published parameters × "
            f"{quant.bits_per_weight.value:g} bits: no {quant.id} checkpoint size and no config.json; "
            "real mixed-precision checkpoints are larger",
        ),
    )
