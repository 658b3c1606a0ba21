"""What an engine allocates when it drafts with a model's own multi-token-prediction layers, as data
(``data/engine_mtp_rules.yaml``): whether the MTP layers' weights are loaded before the KV cache is
sized (and so take room from it), whether their attention gets entries in the target's KV pool, and
what the engine keeps outside its default memory fraction for the draft. The arithmetic lives in
``memory/mtp.py``; this module only describes and checks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inferplan.catalog.provenance import Bytes
from inferplan.catalog.schema import SLUG, Frozen, check_engine_and_sources
from inferplan.errors import CatalogError


class MtpRule(Frozen):
    """One engine's MTP draft: where its weights and KV entries go."""

    id: str = Field(pattern=SLUG)
    engine: str
    weights_in_pool: bool  # loaded before the KV cache is sized: the pool loses their bytes
    kv_layers_in_pool: bool  # their attention has KV entries in the target's pool, on the last stage
    fraction_reserve_bytes: Bytes | None = None  # kept outside the default fraction while a draft runs
    # memory-rule variants (engine_memory_rules.yaml) whose releases budget the draft otherwise: not planned
    unplanned_variants: tuple[str, ...] = ()
    unplanned_note: str | None = None  # why, with the source
    # the largest pipeline_parallel_size the engine starts an MTP draft with (None: no bound known)
    max_pipeline_parallel_size: int | None = Field(None, ge=1)
    pipeline_parallel_sources: tuple[str, ...] = ()
    pipeline_parallel_note: str | None = None
    # the draft tokens per step the engine drafts when none are stated: "mtp_layers", the checkpoint's
    # MTP layer count (num_nextn_predict_layers); None: not known, planned as stated (0: none)
    default_draft_tokens: Literal["mtp_layers"] | None = None
    default_draft_tokens_sources: tuple[str, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    note: str


def mtp_rule(catalog, engine: str) -> MtpRule | None:
    """The engine's MTP rule (None: the engine does not draft with MTP layers)."""
    return next((r for r in catalog.mtp_rules if r.engine == engine), None)


def drafts_at_pipeline(catalog, engine: str, pipeline_parallel_size: int) -> bool:
    """Whether the engine starts an MTP or EAGLE-3 draft at this pipeline-parallel size (its rule's
    ``max_pipeline_parallel_size``; no rule or no bound: yes)."""
    rule = mtp_rule(catalog, engine)
    bound = rule.max_pipeline_parallel_size if rule else None
    return bound is None or pipeline_parallel_size <= bound


def check_mtp_rules(catalog) -> None:
    """Every rule names a known engine and known sources; one rule per engine."""
    seen: set[str] = set()
    for rule in catalog.mtp_rules:
        where = f"mtp_rules:{rule.id}"
        check_engine_and_sources(catalog, where, rule.id, rule.engine,
                                 (*rule.sources, *rule.pipeline_parallel_sources, *rule.default_draft_tokens_sources))
        if rule.default_draft_tokens is not None and not rule.default_draft_tokens_sources:
            raise CatalogError(f"{where}: default_draft_tokens needs default_draft_tokens_sources", field=rule.id)
        if rule.max_pipeline_parallel_size is not None and not rule.pipeline_parallel_sources:
            raise CatalogError(f"{where}: max_pipeline_parallel_size needs pipeline_parallel_sources", field=rule.id)
        if rule.engine in seen:
            raise CatalogError(f"{where}: a second rule for {rule.engine}", field=rule.id)
        seen.add(rule.engine)
