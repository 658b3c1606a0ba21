"""A model as the planner uses it (``ModelSpec``), built from a catalogue card.

A ``ModelSpec`` joins what the catalogue card states (parameters, checkpoint sizes) with the
architecture read from the verbatim config.json it points to, or from a local import. Where a
card has no published architecture but names a ``kv_proxy``, the proxy's attention layout is used
and the spec's ``assumptions`` say so. A config path or a cached Hugging Face repo becomes a spec in
``memory/resolve.py``, which counts its parameters.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.hf_import import architecture_from_config, read_config
from inferplan.catalog.hf_keep import KeptGroups
from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import ModelCard


@dataclass(frozen=True)
class CheckpointSize:
    quantization: str
    size_bytes: float
    name: str
    source: str  # a source id, or where a local import read it
    non_expert_bits_per_weight: float | None = None  # the build keeps non-expert weights at other bits
    mtp_layers: bool = True  # False: the build holds none of the model's multi-token-prediction layers
    mtp_extra_parameters: float = 0.0  # held with the MTP layers beyond the config's count of them
    vision_encoder: bool = True  # False: the file holds the text model alone (the projector is a file apart)


@dataclass(frozen=True)
class KeptUnquantized:
    """Parameter groups a build at ``quantization`` keeps at 16 bits, and where that is stated."""

    quantization: str
    groups: KeptGroups
    source: str  # a source id, or "config.json quantization_config" for an import


@dataclass(frozen=True)
class LayerFormats:
    """A build at ``quantization`` that names a format per module (ModelOpt MIXED_PRECISION): each
    (group, quantization id, its bits per weight, share of the group's layers) listed; the rest of
    a group, and every group not listed, unquantized."""

    quantization: str
    formats: tuple[tuple[str, str, float, float], ...]
    source: str


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    architecture: Architecture | None
    architecture_is_proxy: bool
    total_params: float | None
    active_params: float | None
    checkpoints: tuple[CheckpointSize, ...]
    native_quantization: str | None  # what the published (first) checkpoint ships in
    context_tokens: int | None
    assumptions: tuple[str, ...] = ()
    card: ModelCard | None = None
    kept_unquantized: tuple[KeptUnquantized, ...] = ()
    layer_formats: tuple[LayerFormats, ...] = ()

    def checkpoint(self, quantization: str) -> CheckpointSize | None:
        return next((c for c in self.checkpoints if c.quantization == quantization), None)

    @property
    def builds(self) -> tuple[str, ...]:
        """The weight formats the model is published in: every build its card lists, sized or not
        (``checkpoints`` holds only the sized ones, whose byte counts set the weights)."""
        listed = self.card.checkpoints if self.card is not None else self.checkpoints
        return tuple(dict.fromkeys(c.quantization for c in listed))

    def kept(self, quantization: str) -> KeptUnquantized | None:
        return next((k for k in self.kept_unquantized if k.quantization == quantization), None)

    def formats(self, quantization: str) -> LayerFormats | None:
        return next((f for f in self.layer_formats if f.quantization == quantization), None)


def kept_from_config(arch: Architecture) -> tuple[KeptUnquantized, ...]:
    """What an imported config.json's quantization_config leaves unquantized, for its own format."""
    quant = arch.quant
    if quant is None or not (quant.kept_unquantized.shares or quant.kept_unquantized.unmapped):
        return ()
    return (KeptUnquantized(quant.quantization, quant.kept_unquantized, "config.json quantization_config"),)


def formats_from_config(catalog: Catalog, arch: Architecture | None) -> tuple[LayerFormats, ...]:
    """The per-module formats an imported config.json's quantization_config lists, each with the
    catalogue's bits for its format."""
    quant = arch.quant if arch else None
    if quant is None or not quant.layer_formats:
        return ()
    formats = tuple((group, qid, catalog.quantization(qid).bits_per_weight.value, share)
                    for group, qid, share in quant.layer_formats)
    return (LayerFormats(quant.quantization, formats, "config.json quantization_config.quantized_layers"),)


@functools.lru_cache(maxsize=256)
def _card_architecture(config_path: Path) -> Architecture:
    return architecture_from_config(read_config(config_path))


def _architecture(catalog: Catalog, config: str) -> Architecture:
    """A card's config.json as the catalogue imported it when it was built (else imported now)."""
    built = catalog.architectures.get(config)
    return built if built is not None else _card_architecture(catalog.data_dir / config)


def spec_from_card(catalog: Catalog, card: ModelCard) -> ModelSpec:
    arch: Architecture | None = None
    proxy = False
    assumptions: list[str] = []
    if card.config:
        arch = _architecture(catalog, card.config)
    elif card.kv_proxy:
        proxy_card = catalog.models.records[card.kv_proxy]
        if proxy_card.config:
            arch = _architecture(catalog, proxy_card.config)
            proxy = True
            assumptions.append(
                f"{card.name} has no published config.json in the catalogue; its KV cache layout "
                f"is taken from {proxy_card.name} (kv_proxy) — replace with the real config when public"
            )
    checkpoints = tuple(
        CheckpointSize(c.quantization, c.size_bytes.value, c.name, c.size_bytes.source,
                       c.non_expert_bits_per_weight.value if c.non_expert_bits_per_weight else None, c.mtp_layers,
                       c.mtp_extra_parameters.value if c.mtp_extra_parameters else 0.0, c.vision_encoder)
        for c in card.checkpoints
        if c.size_bytes is not None
    )
    # a card states what its builds keep unquantized (its config.json may be another build's)
    kept = tuple(
        KeptUnquantized(c.quantization, _card_kept_groups(c.keeps_unquantized, arch), c.keeps_unquantized.source)
        for c in card.checkpoints
        if c.keeps_unquantized is not None
    )
    native = arch.quant.quantization if arch and arch.quant and not proxy else None
    if native is None and card.checkpoints:
        native = card.checkpoints[0].quantization
    return ModelSpec(
        id=card.id,
        name=card.name,
        architecture=arch,
        architecture_is_proxy=proxy,
        total_params=card.total_params.value if card.total_params else None,
        active_params=card.active_params.value if card.active_params else None,
        checkpoints=checkpoints,
        native_quantization=native,
        # a card without a context takes its config's (positions, or what a YaRN rope_scaling opens)
        context_tokens=int(card.context_tokens.value) if card.context_tokens else config_context(arch, proxy),
        assumptions=tuple(assumptions),
        card=card,
        kept_unquantized=kept,
        layer_formats=formats_from_config(catalog, None if proxy else arch),
    )


def _card_kept_groups(keeps, arch: Architecture | None) -> KeptGroups:
    """A card's kept groups: whole groups at share 1, a group kept in some layers at its share of the
    layers (without an architecture the layer count is unknown, so such a group is counted as quantized)."""
    partial = tuple((g, min(1.0, n / arch.num_layers)) for g, n in keeps.layers.items()) if arch and arch.num_layers \
        else ()
    return KeptGroups(tuple((g, 1.0) for g in keeps.groups) + partial)


def config_context(arch: Architecture | None, proxy: bool) -> int | None:
    if arch is None or proxy:
        return None
    return max(arch.max_position_embeddings, arch.rope_context_tokens) or None


def looks_like_path(name: str) -> bool:
    """True for a config.json or an existing file/folder (``~user`` forms that cannot expand are not paths)."""
    if name.endswith(".json"):
        return True
    try:
        return Path(name).expanduser().exists()
    except (RuntimeError, OSError, ValueError):
        return False
