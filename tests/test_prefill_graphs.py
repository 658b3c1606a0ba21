"""SGLang's prefill CUDA graphs in its default mem_fraction_static (the sglang rule's
gpu_memory_defaults.prefill_graphs): on by default from 0.5.10 on CUDA, 8 MiB per captured token count
(1.5 GiB flat with latent attention), added to the reserve before its 10 GiB floor.

Golden numbers from the SGLang wheels (sources mr-sglang-wheels-pcg-v0510-v0514, -bcg-v0515-v0518,
-bcg-v0519-v0523): the capture sizes range(4, 33, 4) + range(48, 257, 16) + range(288, 513, 32) +
range(576, 1025, 64) + range(1280, 4097, 256) + range(4608, chunk + 1, 512) give 42, 50, 58 and 74 token
counts at a chunk of 2,048, 4,096, 8,192 and 16,384."""

import pytest
from pydantic import ValidationError

from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.prefill_graphs import PrefillGraphs
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.units import GiB, MiB

SIZES = {2048: 42, 4096: 50, 8192: 58, 16384: 74}


def _plan(catalog, model="llama-3.1-8b", gpu="h100-sxm", tp=1, **stated):
    return plan_memory(Deployment(model=model, gpu=gpu, tensor_parallel_size=tp, gpus=tp * stated.get(
        "pipeline_parallel_size", 1), engine="sglang", **stated), catalog)


def _fraction(catalog, mp, graph_batch, prefill_mib):
    """SGLang's fraction for the plan's GPU, chunk and graph batch with ``prefill_mib`` of prefill graphs."""
    reserve = catalog.engine("sglang").memory_fraction_reserve
    gpus = mp.result.parallel.tensor_parallel_size * mp.result.parallel.pipeline_parallel_size
    return reserve.fraction(mp.result.gpu_memory_bytes, mp.settings.max_num_batched_tokens, graph_batch, gpus,
                            0.0, prefill_mib * MiB)


@pytest.mark.parametrize(("chunk", "count"), list(SIZES.items()))
def test_the_capture_sizes_are_sglangs(catalog, chunk, count):
    graphs = memory_rule(catalog, "sglang", "0.5.23").gpu_memory_defaults.prefill_graphs_at("0.5.23")
    sizes = graphs.sizes(chunk)
    assert len(sizes) == count and sizes[:3] == (4, 8, 12) and sizes[-1] == min(chunk, 16384)


def test_the_term_comes_before_the_ten_gib_floor(catalog):
    reserve = catalog.engine("sglang").memory_fraction_reserve
    # H100 at TP 1: 13,440 MiB is above the floor, so the 58 sizes add 464 MiB
    assert reserve.reserved_bytes(81559 * MiB, 8192, 256, 1, 464 * MiB) == (13440 + 464) * MiB
    assert reserve.fraction(81559 * MiB, 8192, 256, 1, 0.0, 464 * MiB) == 0.830  # (81559 - 13904) / 81559
    # a 2,048-token chunk on an 80 GiB GPU reserves 3,728 MiB: the floor takes in the 336 MiB of 42 sizes
    assert reserve.reserved_bytes(80 * GiB, 2048, 8, 1, 336 * MiB) == 10240 * MiB


@pytest.mark.parametrize(("release", "prefill_mib"), [("0.5.9", 0), ("0.5.10", 464), ("0.5.13", 464), ("0.5.17", 464),
                                                      ("0.5.23", 464), (None, 464)])
def test_the_default_fraction_keeps_the_graphs_out_from_0510(catalog, release, prefill_mib):
    mp = _plan(catalog, engine_version=release)
    assert mp.settings.max_num_batched_tokens == 8192
    assert mp.settings.memory_fraction == _fraction(catalog, mp, 256, prefill_mib)
    notes = [a for a in mp.result.assumptions if "prefill CUDA graphs" in a]
    assert bool(notes) == bool(prefill_mib)
    assert not prefill_mib or "keeps 464 MiB out for them (8 MiB for each of 58 token counts" in notes[0]


def test_the_plan_keeps_less_kv_by_the_term(catalog):
    before, after = _plan(catalog, engine_version="0.5.9"), _plan(catalog, engine_version="0.5.23")
    free_at_start = after.result.gpu_memory_bytes - 0.61 * GiB
    lost = (before.settings.memory_fraction - after.settings.memory_fraction) * free_at_start
    assert before.settings.memory_fraction == 0.834 and after.settings.memory_fraction == 0.829
    assert before.result.kv_cache_bytes_per_gpu - after.result.kv_cache_bytes_per_gpu == pytest.approx(lost)


def test_a_stated_fraction_is_the_flag_and_says_nothing_of_the_term(catalog):
    mp = _plan(catalog, gpu_memory_utilization=0.85)
    assert mp.settings.memory_fraction == 0.85
    assert not [a for a in mp.result.assumptions if "prefill CUDA graphs" in a]


def test_a_stated_context_caps_the_largest_size_in_0513_to_0516_only(catalog):
    assert _plan(catalog, engine_version="0.5.13", max_model_len=4096).settings.memory_fraction == \
        _fraction(catalog, _plan(catalog, engine_version="0.5.13", max_model_len=4096), 256, 8 * SIZES[4096])
    capped = _plan(catalog, engine_version="0.5.17", max_model_len=4096)
    assert capped.settings.memory_fraction == _fraction(catalog, capped, 256, 8 * SIZES[8192])


@pytest.mark.parametrize(("model", "release", "prefill_mib"), [
    ("deepseek-v3", "0.5.14", 1536),  # piecewise graphs: MLA takes the flat figure
    ("deepseek-v3", "0.5.15", 0),  # breakable graphs: off for MLA
    ("deepseek-v3", "0.5.17", 0),  # off for MLA without sparse attention
    ("deepseek-v3.2", "0.5.17", 1536),  # ... kept with DSA
    ("deepseek-v3.2", "0.5.12", 0),  # DeepseekV32ForCausalLM on the piecewise off-list to 0.5.12
    ("deepseek-v3", "0.5.23", 1536),
])
def test_latent_attention_takes_the_flat_figure_where_the_release_captures(catalog, model, release, prefill_mib):
    mp = _plan(catalog, model=model, gpu="h200-sxm", tp=8, engine_version=release)
    assert mp.settings.memory_fraction == _fraction(catalog, mp, 512, prefill_mib)


@pytest.mark.parametrize(("stated", "release", "on"), [
    ({"pipeline_parallel_size": 2}, "0.5.14", False),  # piecewise graphs: off with pipeline stages
    ({"pipeline_parallel_size": 2}, "0.5.18", True),  # breakable graphs to 0.5.18: no pipeline rule
    ({"pipeline_parallel_size": 2}, "0.5.19", False),
])
def test_pipeline_stages_turn_them_off_by_release(catalog, stated, release, on):
    mp = _plan(catalog, model="llama-3.1-70b", tp=2, engine_version=release, **stated)
    assert mp.settings.memory_fraction == _fraction(catalog, mp, 256, 464 if on else 0)
    if not on:
        assert any("captures no prefill CUDA graphs with pipeline parallelism" in a for a in mp.result.assumptions)


@pytest.mark.parametrize(("model", "release", "on"), [
    ("gemma-3-27b", "0.5.23", False),  # a multimodal model outside the allow-list
    ("qwen3.5-397b-a17b", "0.5.15", False),  # multimodal: off in 0.5.15 ...
    ("qwen3.5-397b-a17b", "0.5.16", True),  # ... allow-listed from 0.5.16
])
def test_multimodal_models_capture_none_outside_the_allow_list(catalog, model, release, on):
    mp = _plan(catalog, model=model, gpu="b200", tp=8, engine_version=release)
    assert mp.settings.memory_fraction == _fraction(catalog, mp, 512, 8 * SIZES[16384] if on else 0)


def test_rocm_captures_none(catalog):
    mp = _plan(catalog, model="qwen3-8b", gpu="mi300x", max_model_len=8192)
    assert mp.settings.memory_fraction == _fraction(catalog, mp, 512, 0)
    assert any("captures no prefill CUDA graphs on rocm" in a for a in mp.result.assumptions)


def test_every_release_from_0510_has_its_entry_and_none_before(catalog):
    defaults = memory_rule(catalog, "sglang", "0.5.23").gpu_memory_defaults
    assert defaults.prefill_graphs_at("0.5.9") is None
    assert [defaults.prefill_graphs_at(f"0.5.{n}").backend for n in (10, 14, 15, 23)] == \
        ["tc_piecewise", "tc_piecewise", "breakable", "breakable"]


def test_capture_runs_go_up_without_overlap():
    entry = {"first_release": "0.5.10", "backend": "b", "off_flag": "--f", "software": ["cuda"], "mib_per_size": 8,
             "latent_attention": "flat", "latent_attention_mib": 1536, "sources": ["s"], "checked": "2026-12-06",
             "kind": "spec"}
    PrefillGraphs.model_validate({**entry, "capture_sizes": [{"start": 4, "stop": 32, "step": 4}, {"start": 48, "step": 16}]})
    for bad in ([{"start": 4, "step": 4}, {"start": 48, "step": 16}], [{"start": 4, "stop": 64, "step": 4},
                                                                       {"start": 48, "step": 16}]):
        with pytest.raises(ValidationError):
            PrefillGraphs.model_validate({**entry, "capture_sizes": bad})
