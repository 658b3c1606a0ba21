"""What a search's picks promise holds end to end: every pick's launch command is produced, whatever
its length; the platforms, objectives and tie-breaks rank what a buyer or renter expects."""

from __future__ import annotations

from fastapi.testclient import TestClient

from inferplan.deploy.pools import pools_launch
from inferplan.inputs import MAX_TEXT_CHARS
from inferplan.inputs.deployment import Deployment
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.api import create_app

# the search whose TensorRT-LLM disaggregated pick once failed on its own launch script's length
LONG_SCRIPT_SEARCH = {"models": ["llama-3.3-70b"], "users": 500, "workload": "coding-developer-p90",
                      "targets": {"ttft_p95_s": 2, "min_output_tokens_per_s_per_user": 30}, "top": 1}


def test_a_launch_script_longer_than_an_input_text_is_an_output_not_refused(catalog):
    d = Deployment(model="llama-3.3-70b", gpu="b200", quantization="bf16", engine="trtllm", max_model_len=9216,
                   tensor_parallel_size=2)
    pools = pools_launch(catalog, d, d.model_copy(update={"max_num_seqs": 64}), prefill_instances=8,
                         decode_instances=8, host_gpus=8)
    assert len(pools.script) > MAX_TEXT_CHARS


def test_a_search_whose_pick_has_a_long_launch_script_answers_with_it(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    r = client.post("/api/search", json=LONG_SCRIPT_SEARCH)
    assert r.status_code == 200, r.text[:400]
    pick = r.json()["results"][0]
    assert pick["disaggregated"] and len(pick["deploy"]) > MAX_TEXT_CHARS


def test_every_llamacpp_pick_across_systems_comes_with_its_launch_command(catalog):
    """llama.cpp takes one --split-mode (row or layer): a search offers only layouts it launches."""
    req = SearchRequest(models=("qwen3-235b-a22b-2507",), request_rate_per_s=0.2, input_len=8192, output_len=1024,
                        targets=Targets(ttft_p95_s=10), engines=("llamacpp",), quantizations=("gguf-q4_k_m",), top=1000)
    result = search(req, catalog)
    assert len(result.results) > 20
    assert any(r.tensor_parallel_size > 1 for r in result.results) and any(r.pipeline_parallel_size > 1 for r in result.results)
    refused = [(r.platform, r.tensor_parallel_size, r.pipeline_parallel_size) for r in result.results
               if r.deploy.startswith("no launch command")]
    assert not refused
    assert all(r.tensor_parallel_size == 1 or r.pipeline_parallel_size == 1 for r in result.results)


def test_the_default_search_rents_gpus_one_by_one_where_that_is_cheapest(catalog):
    """Buy or rent (the default) covers every way --rent alone would pay: one rented B200 here beats
    any whole system bought or rented."""
    req = SearchRequest(models=("llama-3.3-70b",), request_rate_per_s=0.3, input_len=2000, output_len=400,
                        targets=Targets(ttft_p95_s=1, tpot_p95_s=0.04), engines=("vllm",), disaggregated=False, top=1)
    both = search(req, catalog).results[0]
    rent = search(req.model_copy(update={"pricing": "rent"}), catalog).results[0]
    assert both.system is None and both.rent_or_buy == "rent"
    assert both.monthly_usd <= rent.monthly_usd * (1 + 1e-9)
