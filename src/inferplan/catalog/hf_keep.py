"""Which parameter groups a quantized checkpoint keeps unquantized, read from the module names
or patterns its ``quantization_config`` lists (``ignore`` in compressed-tensors and ModelOpt,
``modules_to_not_convert`` in fbgemm_fp8 and MXFP4, ``llm_int8_skip_modules`` in bitsandbytes,
``exclude_modules`` in ModelOpt NVFP4, ``ignored_layers``).

A pattern is a module name (``lm_head``, ``model.layers.0.self_attn``), a glob
(``model.language_model.layers.3.self_attn*``) or a regex (``re:.*self_attn.*``). It maps onto the
parts the weight estimator counts by the module words it names; a pattern that names a layer
keeps that group only in that layer, so a group's kept share is the fraction of the model's layers
listed (or all of them for a pattern without a layer number). A pattern that names no countable
part is returned as unmapped, for the estimate to state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# parts of the model that quantization formats leave at 16 bits by their own rule (norms, vision
# encoders the estimate does not count): listed, they change nothing
_NO_EFFECT = ("norm", "vision", "visual", "audio", "mm_projector", "multi_modal_projector", "embed_vision",
              "patch_embed", "mtp", "nextn")
# module words, most specific first: the first group whose word a pattern names takes it
_GROUP_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lm_head", ("lm_head", "output_layer")),
    ("embeddings", ("embed_tokens", "wte", "word_embeddings", "tok_embeddings")),
    ("router", ("mlp.gate$", "mlp.gate.", "mlp.gate*", "router", "shared_expert_gate", ".gate$")),
    ("shared_experts", ("shared_expert",)),
    ("experts", ("experts",)),
    ("attention", ("self_attn", "attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj",
                   "q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj", "linear_attn", "mixer")),
    ("mlp", ("mlp", "feed_forward", "gate_proj", "up_proj", "down_proj", "ffn")),
)
_LAYER = re.compile(r"layers?[._\\]+(\d+)(?![\d*+?\]])")
_EXPERT_INDEX = re.compile(r"experts[._\\]+\d")


@dataclass(frozen=True)
class KeptGroups:
    """Groups kept at 16 bits with the share of their layers kept, and the patterns not mapped."""

    shares: tuple[tuple[str, float], ...] = ()
    unmapped: tuple[str, ...] = ()

    def share(self, group: str) -> float:
        return dict(self.shares).get(group, 0.0)


def listed_modules(qc: dict) -> tuple[str, ...]:
    """The module names or patterns a ``quantization_config`` leaves unquantized, in every spelling."""
    found: list[str] = []
    for key in ("ignore", "modules_to_not_convert", "exclude_modules", "ignored_layers", "llm_int8_skip_modules"):
        found += [str(p) for p in (qc.get(key) or ())]
    nested = qc.get("quantization")  # ModelOpt's hf_quant_config.json nests its settings
    if isinstance(nested, dict):
        found += [str(p) for p in (nested.get("exclude_modules") or ())]
    return tuple(dict.fromkeys(found))


def group_of(pattern: str) -> str | None:
    """The counted parameter group a module name or pattern names, or None."""
    text = pattern.lower().removeprefix("re:")
    for group, words in _GROUP_WORDS:
        if any(_names(text, word) for word in words):
            return group
    return None


def _names(text: str, word: str) -> bool:
    if word.endswith("$"):  # a module that ends the name (the router ``mlp.gate``, not ``gate_proj``)
        stem = word[:-1]
        return text.rstrip("*$").endswith(stem) or text.endswith(stem + "$")
    return word in text


def layer_of(pattern: str) -> int | None:
    """The decoder layer a module name or pattern names, or None (a whole-model module or pattern)."""
    found = _LAYER.search(pattern.lower())
    return int(found.group(1)) if found else None


def names_no_counted_part(pattern: str) -> bool:
    """A module formats leave alone by their own rule or the estimate does not count (vision, MTP)."""
    return any(word in pattern.lower() for word in _NO_EFFECT)


def kept_groups(patterns: tuple[str, ...], n_layers: int) -> KeptGroups:
    """Map ``patterns`` onto the counted parameter groups; ``n_layers`` sizes a per-layer share."""
    layers: dict[str, set[int]] = {}
    whole: set[str] = set()
    unmapped: list[str] = []
    for pattern in patterns:
        text = pattern.lower().removeprefix("re:")
        group = group_of(pattern)
        if group is None or (group == "experts" and _EXPERT_INDEX.search(text)):
            if not any(word in text for word in _NO_EFFECT):
                unmapped.append(pattern)  # a single expert, or a module the estimate does not count
            continue
        layer = _LAYER.search(text)
        if layer and group not in ("lm_head", "embeddings"):
            layers.setdefault(group, set()).add(int(layer.group(1)))
        else:
            whole.add(group)
    shares = {g: 1.0 for g in whole}
    for group, listed in layers.items():
        if group not in shares:
            shares[group] = min(1.0, len(listed) / n_layers) if n_layers else 1.0
    return KeptGroups(tuple(sorted(shares.items())), tuple(unmapped))
