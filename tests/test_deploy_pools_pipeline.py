"""A pool's instance runs pipeline stages only where the engine's KV connector hands them over
(``DisaggregationRule.pipeline``: vLLM's NixlConnector refuses handshake metadata from a stage past the first)."""

from __future__ import annotations

import pytest

from inferplan.deploy.pools_plan import PrefillLayout, pools_plan
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment

BASE = dict(model="qwen3-8b", gpu="h100-sxm", tensor_parallel_size=4)


@pytest.mark.parametrize("decode_pp, prefill_pp, field", [
    (2, None, "pipeline_parallel_size"),  # the prefill takes the decode's stages too
    (1, 2, "prefill_pipeline_parallel_size"),
])
def test_vllm_pools_of_pipeline_stages_are_refused_naming_the_size(catalog, decode_pp, prefill_pp, field):
    d = Deployment(engine="vllm", pipeline_parallel_size=decode_pp, **BASE)
    with pytest.raises(UnsupportedSettingError) as err:
        pools_plan(d, PrefillLayout(prefill_instances=1, prefill_pipeline_parallel_size=prefill_pp), catalog)
    assert err.value.field == field
    assert "NixlConnector" in str(err.value) and "pipeline stage" in str(err.value)


def test_an_engine_with_no_pipeline_bound_runs_pools_of_pipeline_stages(catalog):
    plan = pools_plan(Deployment(engine="sglang", pipeline_parallel_size=2, **BASE), PrefillLayout(prefill_instances=1),
                      catalog)
    assert "--pp-size 2" in plan.launch.script


def test_the_vllm_pipeline_bound_is_sourced(catalog):
    rule = next(f for f in catalog.engine_flags if f.engine == "vllm").disaggregation
    assert rule.pipeline.max_pipeline_parallel_size == 1
    assert rule.pipeline_refusal(1) is None and rule.pipeline_refusal(2)
