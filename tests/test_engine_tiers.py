"""SGLang's defaults by GPU memory (engines.yaml defaults_by_gpu_memory, memory_fraction_reserve):
the chunk, the CUDA-graph batch and mem_fraction_static it picks on each GPU, as the plan uses them.

Golden numbers from SGLang 0.5.6 server_args._handle_gpu_memory_settings (source
eng-sglang-gpu-memory-defaults-v056; the same through 0.5.19), the 20-35 GiB tier from 0.5.20 (the memory
rule's gpu_memory_defaults, mr-sglang-wheels-tiers-v0520), the prefill CUDA graphs' term from 0.5.10
(tests/test_prefill_graphs.py) and a printed fraction (memory record d05: 0.911 on an MI355X at TP 1)."""

import pytest
from pydantic import ValidationError

from inferplan.catalog.engine_tiers import GpuMemoryTier, MemoryFractionReserve, tier_for
from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.search.service import service_curve
from inferplan.units import GiB, MiB

# (GPU, TP) -> (chunked_prefill_size, cuda_graph_max_bs) in SGLang 0.5.6 (to 0.5.19)
TIERS = {
    ("rtx-4090", 1): (2048, 24),
    ("rtx-4090", 4): (2048, 80),
    ("a100-40gb", 1): (4096, 32),
    ("l40s", 4): (4096, 160),
    ("h100-sxm", 1): (8192, 256),
    ("h100-sxm", 8): (8192, 512),
    ("h200-sxm", 1): (8192, 256),
    ("b200", 1): (16384, 512),
    ("mi300x", 1): (16384, 512),
    ("mi355x", 1): (16384, 512),
}


# from 0.5.20 the 20-35 GiB tier takes a larger chunk and graph batch; the others stay
TIERS_0520 = {**TIERS, ("rtx-4090", 1): (4096, 48), ("rtx-4090", 4): (4096, 160)}

# token counts SGLang captures prefill CUDA graphs at, by chunk
PREFILL_SIZES = {2048: 42, 4096: 50, 8192: 58, 16384: 74}


def _plan(catalog, gpu: str, tp: int = 1, engine: str = "sglang", **stated):
    return plan_memory(Deployment(model="qwen3-8b", gpu=gpu, tensor_parallel_size=tp, engine=engine, **stated), catalog)


@pytest.mark.parametrize(("release", "tiers"), [("0.5.6", TIERS), ("0.5.19", TIERS), ("0.5.20", TIERS_0520),
                                                (None, TIERS_0520)])
@pytest.mark.parametrize(("gpu", "tp"), list(TIERS))
def test_the_plan_takes_sglangs_chunk_for_the_gpus_memory(catalog, gpu, tp, release, tiers):
    chunk, graph = tiers[(gpu, tp)]
    mp = _plan(catalog, gpu, tp, engine_version=release)
    assert mp.settings.max_num_batched_tokens == chunk
    rule = memory_rule(catalog, "sglang", release)
    tier = tier_for(rule.gpu_memory_defaults.tiers_at(rule.planned_release(release), catalog.engine("sglang").
                                                      defaults_by_gpu_memory), mp.result.gpu_memory_bytes)
    assert tier.graph_batch(tp) == graph
    # the fraction follows the release's tier (no 10 GiB floor below 60 GiB, where the tiers differ), with the
    # prefill CUDA graphs' 8 MiB per captured size on CUDA from 0.5.10 (tests/test_prefill_graphs.py), times
    # AITER's factor on ROCm
    reserve = catalog.engine("sglang").memory_fraction_reserve
    prefill = 0 if release == "0.5.6" or gpu.startswith("mi") else 8 * PREFILL_SIZES[chunk] * MiB
    picked = reserve.fraction(mp.result.gpu_memory_bytes, chunk, graph, tp, 0.0, prefill) * (mp.fraction_scale or 1.0)
    assert mp.settings.memory_fraction == pytest.approx(picked)


def test_ktransformers_inherits_sglangs_tiers(catalog):
    assert catalog.engine("ktransformers").defaults_by_gpu_memory == catalog.engine("sglang").defaults_by_gpu_memory
    assert catalog.engine("ktransformers").memory_fraction_reserve == catalog.engine("sglang").memory_fraction_reserve


def test_a_stated_chunk_and_fraction_win_over_the_tier(catalog):
    mp = _plan(catalog, "b200", max_num_batched_tokens=4096, gpu_memory_utilization=0.8)
    assert (mp.settings.max_num_batched_tokens, mp.settings.memory_fraction) == (4096, 0.8)


@pytest.mark.parametrize(("gpu_mib", "chunk", "graph", "gpus", "fraction"), [
    (81559, 8192, 256, 1, 0.835),  # H100 80GB at TP 1: (81559 - 13440) / 81559
    (81559, 8192, 512, 8, 0.818),  # H100 at TP 8: 14848 MiB reserved
    (24564, 2048, 24, 1, 0.847),  # RTX 4090: 3760 MiB, no 10 GiB floor below 60 GiB
    (183359, 16384, 512, 1, 0.857),  # B200: 26240 MiB
])
def test_the_reserve_gives_sglangs_fraction(catalog, gpu_mib, chunk, graph, gpus, fraction):
    reserve = catalog.engine("sglang").memory_fraction_reserve
    assert reserve.fraction(gpu_mib * MiB, chunk, graph, gpus) == fraction


def test_the_ten_gib_floor_holds_above_sixty_gib(catalog):
    reserve = catalog.engine("sglang").memory_fraction_reserve
    assert reserve.reserved_bytes(80 * GiB, 2048, 8, 1) == 10240 * MiB
    assert reserve.reserved_bytes(40 * GiB, 2048, 8, 1) == (512 + 3072 + 16 + 128) * MiB


def test_the_plan_picks_the_fraction_sglang_printed_on_an_mi355x(catalog):
    # d05: 'self.server_args.mem_fraction_static 0.911' at TP 1 (the catalogue's MI355X total is
    # assumed from the datasheet less a driver reserve, so the third decimal may differ); at 8,192
    # tokens of context, where the AITER factor (tests/test_qwen2507.py) does not lower it
    assert _plan(catalog, "mi355x", max_model_len=8192).settings.memory_fraction == pytest.approx(0.911, abs=0.002)
    # on an H100 before prefill CUDA graphs (0.5.9), and with their 58 sizes' 464 MiB (0.5.23)
    assert _plan(catalog, "h100-sxm", engine_version="0.5.9").settings.memory_fraction == pytest.approx(0.835, abs=0.002)
    assert _plan(catalog, "h100-sxm", 8, engine_version="0.5.9").settings.memory_fraction == \
        pytest.approx(0.818, abs=0.002)
    assert _plan(catalog, "h100-sxm").settings.memory_fraction == pytest.approx(0.830, abs=0.002)
    assert _plan(catalog, "h100-sxm", 8).settings.memory_fraction == pytest.approx(0.812, abs=0.002)


def test_the_speed_layers_step_budget_is_the_tiers_chunk(catalog):
    w = Workload(input_len=1000, output_len=100)
    for gpu, chunk in (("b200", 16384), ("h100-sxm", 8192), ("rtx-4090", 4096)):  # 0.5.23's tiers
        curve = service_curve(Deployment(model="qwen3-8b", gpu=gpu, engine="sglang"), w, catalog, points=2)
        assert curve.token_budget == chunk


def test_tiers_go_up_without_overlap_and_end_open():
    tier = {"max_num_batched_tokens": 1, "cuda_graph_max_bs": 1}
    EngineDefaults.model_validate({"id": "e", "name": "e", "memory_fraction_meaning": "none",
                                   "block_tokens": {"value": 1, "unit": "count", "kind": "spec", "source": "s"},
                                   "defaults_by_gpu_memory": [{"below_gib": 20, **tier}, {**tier}]})
    for bad in ([{"below_gib": 35, **tier}, {"below_gib": 20, **tier}, tier], [{"below_gib": 20, **tier}],
                [tier, {"below_gib": 20, **tier}], [{"below_gib": 20, **tier}, {"below_gib": 20, **tier}, tier]):
        with pytest.raises(ValidationError):
            EngineDefaults.model_validate({"id": "e", "name": "e", "memory_fraction_meaning": "none",
                                           "block_tokens": {"value": 1, "unit": "count", "kind": "spec", "source": "s"},
                                           "defaults_by_gpu_memory": bad})


def test_the_graph_batch_takes_the_largest_tp_step_reached():
    tier = GpuMemoryTier(below_gib=60, max_num_batched_tokens=4096, cuda_graph_max_bs=32,
                         cuda_graph_max_bs_from_tp={4: 160, 8: 200})
    assert [tier.graph_batch(tp) for tp in (1, 3, 4, 7, 8, 16)] == [32, 32, 160, 160, 200, 200]
    assert MemoryFractionReserve(base_mib=0, mib_per_chunk_token=0, chunk_floor_tokens=0, mib_per_graph_batch=0,
                                 mib_per_eight_gpus=0, floor_mib=0, floor_above_gib=0,
                                 fraction_decimals=3).fraction(GiB, 1, 1, 1) == 1.0
