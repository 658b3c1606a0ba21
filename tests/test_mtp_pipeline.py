"""An MTP draft under pipeline parallelism: vLLM and SGLang refuse it at start-up
(engine_mtp_rules.yaml ``max_pipeline_parallel_size``), so fit, perf and deploy refuse a stated one
and the search offers pipeline layouts without a draft only."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.mtp_rules import mtp_rule
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space

CATALOG = load_catalog()
V3_PP2 = dict(model="deepseek-v3", gpu="h100-sxm", gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2,
              max_model_len=8192)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_stated_mtp_draft_under_pipeline_parallelism_is_refused_naming_the_field(engine):
    fit(Deployment(**V3_PP2, engine=engine), CATALOG)  # the layout itself is planned
    with pytest.raises(InvalidScenarioError) as exc:
        fit(Deployment(**V3_PP2, engine=engine, mtp_draft=True), CATALOG)
    assert exc.value.field == "pipeline_parallel_size"
    assert "at most 1" in exc.value.allowed and "no MTP draft" in exc.value.allowed


def test_the_bound_is_sourced_data():
    rule = mtp_rule(CATALOG, "vllm")
    assert rule.max_pipeline_parallel_size == 1
    assert "mtp-vllm-pp-52069" in rule.pipeline_parallel_sources
    assert all(s in CATALOG.sources for s in rule.pipeline_parallel_sources)


def test_the_search_offers_no_mtp_draft_on_a_pipeline_layout():
    """A chat-seat search for DeepSeek-V3 on two HGX H100 under vLLM is TP8 x PP2; on one HGX B200 it is one
    stage, where the draft stays."""
    req = SearchRequest(models=("deepseek-v3",), systems=("hgx-h100", "hgx-b200"), engines=("vllm",),
                        request_rate_per_s=1.0, input_len=2000, output_len=500)
    cells = build_space(CATALOG, req, input_len=2000, output_len=500).cells
    assert any(c.pipeline_parallel_size > 1 for c in cells)
    assert any(c.speculative_tokens and c.pipeline_parallel_size == 1 for c in cells)
    assert not [c for c in cells if c.pipeline_parallel_size > 1 and c.speculative_tokens]
