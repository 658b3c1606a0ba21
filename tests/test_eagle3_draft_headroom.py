"""An EAGLE-3 draft whose pool the engine allocates outside its fraction (SGLang through 0.5.13): the draft
worker takes the target's pool config, its token count, and holds a plain pool of that many tokens over its
own layers. On a hybrid target that pool is the tokens times one full-attention layer's KV per token per
GPU for each draft layer; the target pool's bytes (state slots, linear layers) do not scale it."""

import dataclasses

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.mtp_rules import mtp_rule
from inferplan.catalog.registry import Registry
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.eagle3 import Eagle3Memory, check_draft_headroom
from inferplan.memory.fit import fit
from inferplan.memory.resolve import resolve_model

CATALOG = load_catalog()
MODEL = "qwen3-next-80b-a3b"  # 48 layers, 12 of them full attention: 2 KV heads x 256 dims
TOKENS = 1_000_000
TOTAL = 80 * 2**30


def _plan() -> Eagle3Memory:
    spec = resolve_model(CATALOG, MODEL)
    draft = next(iter(CATALOG.eagle3_drafts)).model_copy(update={"model": spec.id, "decoder_layers": 1})
    return Eagle3Memory(draft.repo, draft, mtp_rule(CATALOG, "sglang", "0.5.13"))


def _check(plan: Eagle3Memory, room_bytes: float) -> None:
    """The check with the fraction set so that it leaves ``room_bytes`` beyond the draft reserve."""
    fraction = 1 - (room_bytes + plan.reserve_bytes) / TOTAL
    check_draft_headroom(plan, resolve_model(CATALOG, MODEL).architecture, 16, 1, TOTAL, fraction, TOKENS)


def test_a_hybrid_targets_outside_draft_pool_is_its_tokens_over_one_full_attention_layer():
    plan = _plan()
    assert not plan.rule.kv_layers_in_pool and not plan.rule.weights_in_pool
    pool = TOKENS * 2 * 2 * 256 * 2  # K and V, 2 heads x 256 dims at 16 bits: 2 KiB a token
    need = plan.draft.weight_bytes + pool
    _check(plan, need + 2**26)  # 64 MiB to spare: fits
    with pytest.raises(InvalidScenarioError) as exc:
        _check(plan, need - 2**26)
    assert exc.value.field == "draft_model"
    assert f"needs {need / 2**30:.2f} GiB" in str(exc.value)


def _drafting_catalog():
    """The catalogue with an EAGLE-3 draft for the hybrid target on SGLang (none is published)."""
    draft = next(iter(CATALOG.eagle3_drafts)).model_copy(
        update={"id": "eagle3-qwen3-next-test", "model": MODEL, "repo": "test/qwen3-next-eagle3", "engines": ("sglang",)})
    return dataclasses.replace(CATALOG, eagle3_drafts=Registry("eagle3 drafts", {draft.id: draft})), draft


def test_fit_sizes_a_hybrid_targets_outside_draft_pool_by_its_pool_tokens():
    """The room the fraction leaves is set about the draft's weights and its pool of the target's tokens: a
    little more fits, a little less is refused (the pool scaled from the hybrid pool's bytes instead comes to
    half as much on this target, and would fit)."""
    catalog, draft = _drafting_catalog()
    d = Deployment(model=MODEL, gpu="h200", engine="sglang", engine_version="0.5.13", tensor_parallel_size=2,
                   eagle3_draft=draft.repo, speculative_tokens=2)
    reserve = mtp_rule(catalog, "sglang", "0.5.13").fraction_reserve_bytes.value
    total = fit(d.model_copy(update={"gpu_memory_utilization": 0.8}), catalog).gpu_memory_bytes

    def at(room_bytes: float) -> Deployment:
        return d.model_copy(update={"gpu_memory_utilization": 1 - (room_bytes + reserve) / total})

    tokens = fit(at(4 * 2**30), catalog).kv_cache_tokens
    need = draft.weight_bytes / 2 + tokens * 2 * 256 * 2  # per GPU: 1 of the 2 KV heads x 256 dims, K and V, 16 bits
    assert fit(at(need + 2**27), catalog).fits  # a smaller fraction: fewer tokens, a smaller draft pool
    with pytest.raises(InvalidScenarioError) as exc:
        fit(at(need - 2**27), catalog)  # a larger fraction: more tokens, a larger draft pool
    assert exc.value.field == "draft_model" and "a draft pool of the target's tokens" in str(exc.value)
