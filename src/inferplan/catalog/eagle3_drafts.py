"""Published EAGLE-3 draft checkpoints per catalogue model, as data (``data/eagle3_drafts.yaml``): the
draft's repository, its weights (parameters at a dtype), its decoder layers (each holding KV entries
per token as one of the target's full-attention layers) and, where stated, the acceptance length it
was measured at. The arithmetic lives in ``memory/eagle3.py``; this module only describes and checks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inferplan.catalog.provenance import Count
from inferplan.catalog.schema import SLUG, Frozen
from inferplan.errors import CatalogError

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


class DraftAcceptance(Frozen):
    """The mean tokens a verification step emits (accepted drafts and the bonus token), as measured."""

    length: Count  # tokens per target step, more than 1
    draft_tokens: int = Field(ge=1, le=32)  # drafted per step when it was measured


class Eagle3Draft(Frozen):
    """One published EAGLE-3 draft checkpoint for a catalogue model."""

    id: str = Field(pattern=SLUG)
    model: str  # the catalogue model it drafts for
    repo: str = Field(min_length=3)  # its Hugging Face repository, as --draft-model names it
    parameters: Count  # the checkpoint's own weights (the target's embeddings where it has none)
    embedding_parameters: Count | None = None  # its own token embeddings, counted in parameters (None: it has none)
    dtype: Literal["bf16", "fp16", "fp32"]
    decoder_layers: int = Field(1, ge=1, le=8)
    draft_vocab_size: int | None = Field(None, ge=1)  # its own lm_head's vocabulary, where smaller
    acceptance: DraftAcceptance | None = None  # None: the planner's default acceptance rate
    engines: tuple[str, ...] = Field(min_length=1)  # the engines its publisher shows it running on (sources)
    sources: tuple[str, ...] = Field(min_length=1)
    note: str

    @property
    def weight_bytes(self) -> float:
        return self.parameters.value * DTYPE_BYTES[self.dtype]


def drafts_for(catalog, model: str) -> tuple[Eagle3Draft, ...]:
    """The catalogue's EAGLE-3 drafts for ``model`` (a catalogue model id)."""
    return tuple(r for r in catalog.eagle3_drafts if r.model == model)


def draft_by_repo(catalog, model: str, repo: str) -> Eagle3Draft | None:
    """The catalogued draft for ``model`` published as ``repo`` or catalogued under that id (case-insensitive), or
    None."""
    name = repo.strip().lower()
    return next((r for r in drafts_for(catalog, model) if name in (r.repo.lower(), r.id)), None)


def check_eagle3_drafts(catalog) -> None:
    """Every draft names a catalogue model, known engines and known sources; an acceptance length above
    1 token."""
    for draft in catalog.eagle3_drafts:
        where = f"eagle3_drafts:{draft.id}"
        if draft.model not in catalog.models:
            raise CatalogError(f"{where}: unknown model {draft.model!r}", field=draft.id)
        for source in draft.sources:
            if source not in catalog.sources:
                raise CatalogError(f"{where}: unknown source {source!r}", field=draft.id)
        for engine in draft.engines:
            if engine not in catalog.engines:
                raise CatalogError(f"{where}: unknown engine {engine!r}", field=draft.id)
        if draft.acceptance is not None and draft.acceptance.length.value <= 1:
            raise CatalogError(f"{where}: an acceptance length counts the bonus token: more than 1", field=draft.id)
