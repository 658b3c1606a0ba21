"""The search's layouts are the ones the planned engine release launches: a parallel size above 1 needs its
flag at that release (engine_flags.yaml first_release, as fit and perf refuse it), so SGLang before 0.4.6.post2 (no
--pp-size: flags-sglang-wheels-pp-size-v046-post2) gets no pipeline stages. The search plans the newest release (no
engine_version in a SearchRequest); a base deployment that states one is planned at it."""

import pytest

from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.search.request import SearchRequest
from inferplan.search.space import _launchable, _layouts, platforms

REQ = SearchRequest(models=("llama-3.1-70b",), request_rate_per_s=1, input_len=1000, output_len=200,
                    accelerators=("h100-pcie",), engines=("sglang",), speculative=False, disaggregated=False)


def _four_h100_pcie(catalog):
    return next(p for p in platforms(catalog, REQ) if p.gpus == 4)  # two NVLink pairs: PP across them


def _stages(catalog, release: str | None) -> set[int]:
    base = Deployment(model="llama-3.1-70b", gpu="h100-pcie", engine="sglang", max_model_len=1200,
                      engine_version=release)
    return {pp for _, pp, *_ in _layouts(catalog, base, _four_h100_pcie(catalog), catalog.engine("sglang"), REQ)}


def test_sglang_before_046_post2_is_searched_without_pipeline_stages(catalog):
    assert max(_stages(catalog, "0.5.6")) > 1 and max(_stages(catalog, None)) > 1
    # 0.4.6: no TP 2 x PP 2, and TP 4 would leave the NVLink pair (the search keeps tensor parallelism inside it)
    assert _stages(catalog, "0.4.6") <= {1}
    with pytest.raises(UnsupportedSettingError) as refused:  # the refusal the search keeps out of
        plan_memory(Deployment(model="llama-3.1-70b", gpu="h100-pcie", engine="sglang", engine_version="0.4.6",
                               tensor_parallel_size=2, pipeline_parallel_size=2), catalog)
    assert refused.value.field == "pipeline_parallel_size"


def test_a_split_the_release_cannot_launch_gives_way_to_one_it_can(catalog):
    p = _four_h100_pcie(catalog)
    layouts = [(2, 2, 1, False, 1)]
    assert _launchable(catalog, layouts, "sglang", p, 1, "0.5.6") == layouts
    assert all(pp == 1 for _, pp, *_ in _launchable(catalog, layouts, "sglang", p, 1, "0.4.6"))


def test_sglang_046_post2_launches_pipeline_stages(catalog):
    """0.4.6.post2 adds --pp-size: a post release is the flag's first, so 0.4.6 and 0.4.6.post1 are still refused."""
    assert max(_stages(catalog, "0.4.6.post2")) > 1 and _stages(catalog, "0.4.6.post1") <= {1}
    split = Deployment(model="llama-3.1-70b", gpu="h200-sxm", engine="sglang", engine_version="0.4.6.post2",
                       tensor_parallel_size=4, pipeline_parallel_size=2)
    assert plan_memory(split, catalog).settings.memory_fraction > 0
    with pytest.raises(UnsupportedSettingError):
        plan_memory(split.model_copy(update={"engine_version": "0.4.6.post1"}), catalog)
