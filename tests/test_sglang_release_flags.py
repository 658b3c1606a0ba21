"""SGLang flags younger than the releases the plan names (engine_flags.yaml first_release, read from the wheels):
--chunked-prefill-size from 0.2.7 (flags-sglang-wheels-chunked-prefill-v027), --enable-dp-attention from 0.3.6
(flags-sglang-wheels-dp-attention-v036), --ep-size from 0.4.1 (flags-sglang-wheels-ep-size-v041). fit, perf and
deploy refuse a plan that needs one at an older release, naming the field; the search keeps no such layout."""

import pytest

from inferplan.catalog.flag_scope import check_parallel_release
from inferplan.catalog.flags_schema import flags_for
from inferplan.deploy.command import launch_command
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.search.request import SearchRequest
from inferplan.search.space import _launchable, platforms

MOE = dict(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, engine="sglang", data_parallel_size=8,
           enable_expert_parallel=True)


@pytest.mark.parametrize("release", ["0.3.0", "0.4.0"])
def test_expert_parallel_before_041_is_refused_by_fit_and_deploy(catalog, release):
    d = Deployment(**MOE, engine_version=release)
    for plan in (plan_memory, launch_command):
        with pytest.raises(UnsupportedSettingError) as refused:
            plan(d, catalog)
        assert refused.value.field == "enable_expert_parallel" and refused.value.allowed.startswith("off")
    assert "--ep-size 8" in " ".join(launch_command(Deployment(**MOE, engine_version="0.4.1"), catalog).argv)


def test_attention_data_parallelism_needs_its_switchs_release(catalog):
    flags = flags_for(catalog, "sglang")
    assert flags.absent_parallel("0.3.5", 8, True) == "enable_expert_parallel"  # the younger of the two flags
    assert flags.absent_parallel("0.4.1", 8, True) is None
    assert flags.absent_parallel("0.3.0", 8, False) is None  # whole copies: --dp-size alone
    # the switch's own release, read where expert parallelism is older than it
    ep = flags.settings["enable_expert_parallel"].model_copy(update={"first_release": None})
    older_ep = flags.model_copy(update={"settings": {**flags.settings, "enable_expert_parallel": ep}})
    assert older_ep.absent_parallel("0.3.5", 8, True) == "data_parallel_size"
    assert older_ep.absent_parallel("0.3.6", 8, True) is None
    assert not older_ep.launches_split(1, 1, "0.3.5", 8, True) and older_ep.launches_split(1, 1, "0.3.6", 8, True)
    with pytest.raises(UnsupportedSettingError) as refused:
        check_parallel_release(older_ep, "0.3.0", 8, True)
    assert refused.value.field == "data_parallel_size" and "0.3.6" in str(refused.value)


def test_the_search_keeps_no_expert_parallel_layout_the_release_lacks(catalog):
    req = SearchRequest(models=("qwen3-30b-a3b",), request_rate_per_s=1, input_len=1000, output_len=200,
                        accelerators=("h100-sxm",), engines=("sglang",), speculative=False, disaggregated=False)
    p = next(p for p in platforms(catalog, req) if p.gpus == 8)
    layouts = [(1, 1, 8, True, 1), (8, 1, 1, False, 1)]
    assert _launchable(catalog, layouts, "sglang", p, 1, "0.4.1") == layouts
    assert _launchable(catalog, layouts, "sglang", p, 1, "0.4.0") == [(8, 1, 1, False, 1)]


@pytest.mark.parametrize(("release", "refused"), [("0.2.0", True), ("0.2.6", True), ("0.2.7", False)])
def test_a_stated_chunk_before_027_is_refused(catalog, release, refused):
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", engine="sglang", engine_version=release,
                   max_num_batched_tokens=2048)
    if not refused:
        assert "--chunked-prefill-size 2048" in " ".join(launch_command(d, catalog).argv)
        return
    for plan in (plan_memory, launch_command):
        with pytest.raises(UnsupportedSettingError) as error:
            plan(d, catalog)
        assert error.value.field == "max_num_batched_tokens"
