"""What ``fit`` offers a model named by its catalogue id that does not fit one home card (memory/engine_suggest.py, memory/offload_suggest.py,
memory/suggest.py): another engine's build split by layers where none holds it on the GPU alone, no offer at a
context below the floor, and a published file before a conversion or the planned format (a MoE model's expert
offload and its fewer bits at a shorter context too); every offered command fits when run. (An Ollama tag plans its
own build: test_ollama_tags.py.)"""

from __future__ import annotations

import dataclasses

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_steps import CONTEXT_STEP_TOKENS, longest_steps, whole_steps
from inferplan.memory.fit import fit, plan_memory, resolve_model
from inferplan.memory.engine_suggest import on_engine
from inferplan.memory.offload_suggest import context_floor
from inferplan.memory.smaller_builds import fewer_bits_shorter, has_file
from inferplan.memory.suggest import fit_or_suggest, longest_context


def _offers(model: str, gpu: str, catalog) -> tuple[Deployment, list]:
    d = Deployment(model=model, gpu=gpu)
    r = fit_or_suggest(d, catalog)
    assert not r.fits
    return d, list(r.suggestions)


def _llamacpp(offers: list) -> list:
    return [s for s in offers if s.changes.get("engine") == "llamacpp"]


def _fits(d: Deployment, changes: dict, catalog) -> bool:
    return fit(d.model_copy(update=changes), catalog).fits


@pytest.mark.parametrize("model, gpu", [("qwen3-32b", "rtx-4070"), ("gemma-3-27b", "rtx-4080")])
def test_a_dense_model_no_build_holds_on_the_card_is_offered_the_layer_split_of_the_smallest_published_file(
        model, gpu, catalog):
    d, offers = _offers(model, gpu, catalog)
    split = [s for s in _llamacpp(offers) if s.changes.get("n_gpu_layers")]
    assert len(split) == 1, [s.summary for s in offers]
    changes = split[0].changes
    assert changes["quantization"] == "gguf-q4_k_m" and "max_model_len" not in changes  # at the asked context
    assert "a published file" in split[0].summary and "--n-gpu-layers" in split[0].summary
    assert changes["host_memory_gb"] > 0 and _fits(d, changes, catalog)
    offload = next(s for s in offers if s.changes.get("cpu_offload_gb"))  # vLLM's own offload needs more host RAM
    assert changes["host_memory_gb"] < offload.changes["host_memory_gb"]


def test_no_offer_is_made_at_a_context_below_the_floor(catalog):
    floor = context_floor(catalog)
    assert CONTEXT_STEP_TOKENS < floor
    for model, gpu in [("gemma-3-27b", "rtx-4080"), ("qwen3-32b", "rtx-4090"), ("qwen3-14b", "rtx-4070"),
                       ("qwen3-8b", "rtx-4070")]:  # the last: the asked engine's own smaller weights at 1,024 tokens
        d, offers = _offers(model, gpu, catalog)
        for s in offers:
            assert s.changes.get("max_model_len", floor) >= floor, s.summary
            assert _fits(d, s.changes, catalog), s.summary


def test_the_longest_steps_start_at_the_floor():
    holds_512 = lambda tokens: tokens if tokens <= 512 else None  # noqa: E731
    assert longest_steps(holds_512, 40960) == (512, 512)
    assert longest_steps(holds_512, 40960, floor=2500) is None
    assert longest_steps(lambda tokens: tokens, 40960, floor=2500) == (40704, 40704)
    assert longest_steps(lambda tokens: tokens, 2560, floor=2500) is None  # no whole step at the floor below 2,560
    assert (whole_steps(2500), whole_steps(2560), whole_steps(0)) == (2560, 2560, CONTEXT_STEP_TOKENS)


@pytest.mark.parametrize("model, gpu", [("qwen3-32b", "rtx-5090"), ("gemma-3-27b", "rtx-5090")])
def test_a_published_file_that_holds_the_context_is_offered_before_a_conversion(model, gpu, catalog):
    d, offers = _offers(model, gpu, catalog)
    (other,) = _llamacpp(offers)
    assert other.changes["quantization"] == "gguf-q4_k_m" and "max_model_len" not in other.changes
    assert "a published file" in other.summary and _fits(d, other.changes, catalog)


def test_a_conversion_says_the_catalogue_names_no_file_of_it(catalog):
    d, offers = _offers("mistral-7b", "rtx-3070", catalog)
    (other,) = _llamacpp(offers)
    assert "converted from the bf16 build; the catalogue names no file of it" in other.summary
    assert _fits(d, other.changes, catalog)


def test_the_offers_floor_leaves_longest_context_to_its_other_callers_at_any_step(catalog):
    d = Deployment(model="qwen3-8b", gpu="rtx-4070", quantization="fp8")  # holds 1,024 tokens, below the floor
    assert 0 < longest_context(d, catalog, 40960) < context_floor(catalog)


@pytest.mark.parametrize("model, gpu", [("glm-4.5-air", "rtx-4090"), ("qwen3-coder-30b-a3b", "rtx-4090")])
def test_an_expert_offload_elsewhere_runs_a_published_file_before_the_planned_format(model, gpu, catalog):
    d, offers = _offers(model, gpu, catalog)
    (moe,) = [s for s in _llamacpp(offers) if s.changes.get("n_cpu_moe")]
    q = moe.changes["quantization"]
    assert has_file(resolve_model(catalog, model), q) and q != "bf16", moe.summary
    assert "published" in moe.summary and _fits(d, moe.changes, catalog)
    planned = {k: v for k, v in moe.changes.items() if k not in ("quantization", "host_memory_gb")}
    as_planned = fit(d.model_copy(update={**planned, "host_memory_gb": 1e6}), catalog)  # the same experts in bf16
    assert as_planned.quantization == "bf16"
    assert moe.changes["host_memory_gb"] * 2**30 < as_planned.host_memory_bytes_used


def test_an_expert_offload_with_no_smaller_published_build_keeps_the_planned_one(catalog):
    d, offers = _offers("gpt-oss-120b", "rtx-4090", catalog)
    (moe,) = [s for s in _llamacpp(offers) if s.changes.get("n_cpu_moe")]
    assert "quantization" not in moe.changes and "published" not in moe.summary
    assert _fits(d, moe.changes, catalog)


def test_a_build_that_holds_only_a_shorter_context_is_offered_beside_its_layer_split_at_the_asked_one(catalog):
    d, offers = _offers("qwen3-32b", "rtx-4090", catalog)  # Q4_K_M holds 22,016 of its 40,960 tokens whole
    held, split = _llamacpp(offers)
    assert held.changes["quantization"] == split.changes["quantization"] == "gguf-q4_k_m"
    assert held.changes["max_model_len"] < 40960 and "n_gpu_layers" not in held.changes
    assert "max_model_len" not in split.changes and split.changes["n_gpu_layers"] > 0  # at the asked context
    assert _fits(d, split.changes, catalog) and split.changes["host_memory_gb"] > 0
    offload = next(s for s in offers if s.changes.get("cpu_offload_gb"))
    assert split.changes["host_memory_gb"] < offload.changes["host_memory_gb"]
    assert offers.index(held) < offers.index(split) < offers.index(offload)


def test_no_layer_split_is_offered_beside_a_shorter_build_where_the_host_ram_is_short(catalog):
    d = Deployment(model="qwen3-32b", gpu="rtx-4090", host_memory_gb=8)  # the split needs about 10 GiB
    offers = fit_or_suggest(d, catalog).suggestions
    assert [s.changes.get("max_model_len") for s in _llamacpp(offers)] == [22016]


def test_an_engine_that_splits_by_layers_offers_its_own_published_file_split_beside_its_shorter_smaller_weights(catalog):
    d = Deployment(model="qwen3-32b", gpu="rtx-4090", engine="llamacpp", quantization="bf16")
    offers = list(fit_or_suggest(d, catalog).suggestions)
    smaller = next(s for s in offers if s.kind == "quantization" and "engine" not in s.changes)
    assert smaller.changes["max_model_len"] < 40960  # a Q5_K_M conversion at 9,216 tokens
    split, planned = [s for s in offers if s.changes.get("n_gpu_layers")]
    assert split.changes["quantization"] == "gguf-q4_k_m" and "a published file" in split.summary
    assert "max_model_len" not in split.changes and "quantization" not in planned.changes
    assert _fits(d, split.changes, catalog) and split.changes["host_memory_gb"] < planned.changes["host_memory_gb"]
    assert offers.index(smaller) < offers.index(split) < offers.index(planned)
    as_file = fit_or_suggest(d.model_copy(update={"quantization": "gguf-q4_k_m"}), catalog).suggestions
    assert len([s for s in as_file if s.changes.get("n_gpu_layers")]) == 1  # its own offload is that file's split


def _on_llamacpp(model: str, gpu: str, catalog, drop_file: str | None = None):
    """``model`` on ``gpu`` moved to llama.cpp, with its plan; ``drop_file``: a build whose published file is left out."""
    d = Deployment(model=model, gpu=gpu)
    mp = plan_memory(d, catalog)
    card = mp.spec.card
    kept = tuple(k.model_copy(update={"repo": None}) if k.quantization == drop_file else k for k in card.checkpoints)
    mp = dataclasses.replace(mp, spec=dataclasses.replace(mp.spec, card=card.model_copy(update={"checkpoints": kept})))
    return on_engine(d, "llamacpp", catalog)[0], mp


def test_fewer_bits_at_a_shorter_context_take_a_published_file_before_a_conversion_holding_as_long(catalog):
    there, mp = _on_llamacpp("gemma-4-26b-a4b", "rtx-4090", catalog)  # Q5_K_M holds the longest step too
    q, tokens = fewer_bits_shorter(there, mp, catalog)
    assert q.id == "gguf-q4_k_m" and has_file(mp.spec, q.id) and tokens == 262144 - CONTEXT_STEP_TOKENS


def test_fewer_bits_at_a_shorter_context_take_a_published_file_before_a_conversion_holding_longer(catalog):
    there, mp = _on_llamacpp("qwen3-coder-30b-a3b", "rtx-5090", catalog, drop_file="gguf-q4_k_m")
    q, tokens = fewer_bits_shorter(there, mp, catalog)  # Q8_0 a download; Q4_K_M now a conversion holding more
    assert q.id == "gguf-q8_0" and context_floor(catalog) <= tokens
    converted = fewer_bits_shorter(there, mp, catalog, keep=lambda f: f == "gguf-q4_k_m")
    assert converted[0].id == "gguf-q4_k_m" and converted[1] > tokens


def test_an_expert_offload_search_runs_once_per_build_where_none_fits_the_host_ram(catalog, monkeypatch):
    import inferplan.memory.engine_suggest as engine_suggest
    searched, search = [], engine_suggest._expert_offload

    def counted(at, mp, cat, least, built=None):
        searched.append((at.engine, at.quantization, built and built.id))
        return search(at, mp, cat, least, built)
    monkeypatch.setattr(engine_suggest, "_expert_offload", counted)
    d = Deployment(model="gpt-oss-120b", gpu="rtx-4090", host_memory_gb=16)  # its published file's offload needs more
    assert not [s for s in fit_or_suggest(d, catalog).suggestions if s.changes.get("n_cpu_moe")]
    assert searched and len(searched) == len(set(searched)), searched
