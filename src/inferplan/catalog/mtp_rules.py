"""What an engine allocates when it drafts with a model's own multi-token-prediction layers, as data
(``data/engine_mtp_rules.yaml``): whether the MTP layers' weights are loaded before the KV cache is
sized (and so take room from it), whether their attention gets entries in the target's KV pool, and
what the engine keeps outside its default memory fraction for the draft. The arithmetic lives in
``memory/mtp.py``; this module only describes and checks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.memory_rules import check_release_range, current_release, parse_engine_version
from inferplan.catalog.provenance import Bytes, release_key
from inferplan.catalog.schema import SLUG, Frozen, check_engine_and_sources
from inferplan.errors import CatalogError


class MtpRule(Frozen):
    """One engine's MTP draft: where its weights and KV entries go."""

    id: str = Field(pattern=SLUG)
    engine: str
    # the releases the rule holds for, inclusive (None: every earlier / every later release)
    first_release: str | None = None
    last_release: str | None = None
    weights_in_pool: bool  # loaded before the KV cache is sized: the pool loses their bytes
    kv_layers_in_pool: bool  # their attention has KV entries in the target's pool, on the last stage
    # where the engine counts them in the pool only when it knows their count: for these architectures
    # (config.json architectures[0]) or a config stating the count under one of these keys; any other
    # model's MTP layers get a draft pool of their own outside the fraction (kv_outside_note says so).
    # Both empty: every model's, as kv_layers_in_pool says
    kv_in_pool_architectures: tuple[str, ...] = ()
    kv_in_pool_config_keys: tuple[str, ...] = ()
    kv_in_pool_sources: tuple[str, ...] = ()
    kv_outside_note: str | None = None
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


def _covers(rule: MtpRule, release: str) -> bool:
    key = release_key(release)
    return (rule.first_release is None or release_key(rule.first_release) <= key) and (
        rule.last_release is None or key <= release_key(rule.last_release))


def mtp_rule(catalog, engine: str, engine_version: str | None = None) -> MtpRule | None:
    """The engine's MTP rule at ``engine_version`` (None: the release planned by default, the engine's
    current release where the catalogue records one); None: the engine does not draft with MTP layers."""
    rules = [r for r in catalog.mtp_rules if r.engine == engine]
    if len(rules) < 2:
        return rules[0] if rules else None
    release = None
    if engine_version is not None:
        try:
            release = parse_engine_version(engine_version)[0]
        except ValueError:
            release = None  # refused naming engine_version by the memory rule
    if release is None:
        current = current_release(catalog, engine)
        release = current.release if current else None
    if release is None:
        return next((r for r in rules if r.last_release is None), rules[-1])
    return next((r for r in rules if _covers(r, release)), None)


def rule_for_architecture(rule: MtpRule | None, arch: Architecture | None) -> MtpRule | None:
    """``rule`` as it holds for a model of ``arch``: where the engine counts the MTP layers in the target's
    pool only when it knows their count (``kv_in_pool_architectures``, ``kv_in_pool_config_keys``) and
    ``arch`` is neither listed nor states its count under a listed key, their KV is a draft pool of its own
    outside the fraction (``kv_layers_in_pool`` false, with ``kv_outside_note``)."""
    if rule is None or arch is None or not (rule.kv_in_pool_architectures or rule.kv_in_pool_config_keys):
        return rule
    if arch.hf_architecture in rule.kv_in_pool_architectures or arch.mtp_layers_key in rule.kv_in_pool_config_keys:
        return rule
    return rule.model_copy(update={"kv_layers_in_pool": False, "note": rule.kv_outside_note})


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
                                 (*rule.sources, *rule.pipeline_parallel_sources, *rule.default_draft_tokens_sources,
                                  *rule.kv_in_pool_sources))
        if (rule.kv_in_pool_architectures or rule.kv_in_pool_config_keys) and not (
                rule.kv_layers_in_pool and rule.kv_in_pool_sources and rule.kv_outside_note):
            raise CatalogError(f"{where}: kv_in_pool_architectures or kv_in_pool_config_keys need kv_layers_in_pool, "
                               "kv_in_pool_sources and kv_outside_note", field=rule.id)
        if rule.default_draft_tokens is not None and not rule.default_draft_tokens_sources:
            raise CatalogError(f"{where}: default_draft_tokens needs default_draft_tokens_sources", field=rule.id)
        if rule.max_pipeline_parallel_size is not None and not rule.pipeline_parallel_sources:
            raise CatalogError(f"{where}: max_pipeline_parallel_size needs pipeline_parallel_sources", field=rule.id)
        if rule.first_release is not None or rule.last_release is not None:
            check_release_range(rule.first_release or "0", rule.last_release)
        seen.add(rule.engine)
    for engine in seen:  # an engine's rules cover disjoint release ranges
        ranged = sorted((r for r in catalog.mtp_rules if r.engine == engine),
                        key=lambda r: release_key(r.first_release or "0"))
        for before, after in zip(ranged, ranged[1:]):
            if before.last_release is None or after.first_release is None or \
                    release_key(after.first_release) <= release_key(before.last_release):
                raise CatalogError(f"mtp_rules:{after.id}: its releases overlap {before.id}'s", field=after.id)
