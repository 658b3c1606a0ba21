"""On an integrated GPU (accelerators' `integrated_gpu`) an engine release that sizes its KV cache from the device's
free memory (engine_memory_rules.yaml `free_memory_queries`: device) gets less the more of the checkpoint the page
cache holds, so `fit` states a range: the plan's figure (page cache dropped) down to the figure less the page cache
the checkpoint can fill, with NVIDIA's drop-caches command; `deploy` puts the warning before the launch line. A GPU
with memory of its own, or a release reading the OS's available memory, gets no range."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.schema import Accelerator
from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.page_cache import page_cache_range
from inferplan.shells.cli import app
from inferplan.units import GiB

DROP = "sudo sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'"  # NVIDIA's DGX Spark troubleshooting pages
# the logged start ran with trtllm-serve's default step ('max_num_tokens=8192' in its log): stated, as a plan of a
# sliding-window model that states none is sized for a step of its whole context (memory.step_budget)
SPARK_TRTLLM = Deployment(model="gpt-oss-120b", system="dgx-spark", engine="trtllm", engine_version="1.1.0rc3",
                          max_num_batched_tokens=8192)


def test_the_dgx_spark_trtllm_start_gets_a_range_holding_the_logged_pool(catalog):
    # golden: gpt-oss-120b on one DGX Spark under TensorRT-LLM 1.1.0rc3 (free_gpu_memory_fraction 0.9). The plan's
    # 52.59 GiB is the upper end; the 60.8 GiB checkpoint fills all the memory the engine leaves, so the lower end is
    # 0. jeansblog/trt_llm's start-up log of that start printed a 5.95 GiB pool, inside the range.
    r = fit(SPARK_TRTLLM, catalog)
    assert r.kv_cache_range_high_bytes_per_gpu == r.kv_cache_bytes_per_gpu
    assert r.kv_cache_range_high_bytes_per_gpu / GiB == pytest.approx(52.59, rel=0.01)
    assert r.kv_cache_range_low_bytes_per_gpu / GiB == pytest.approx(0.0, abs=0.5)
    assert r.kv_cache_range_low_bytes_per_gpu <= 5.95 * GiB <= r.kv_cache_range_high_bytes_per_gpu
    assert DROP in r.page_cache_note and r.page_cache_note in r.assumptions  # the web page lists the assumptions


def test_the_range_leaves_the_point_figure_alone(catalog):
    r = fit(SPARK_TRTLLM, catalog)
    plain = fit(SPARK_TRTLLM.model_copy(update={"system": None, "gpu": "h100-sxm"}), catalog)
    assert plain.kv_cache_range_low_bytes_per_gpu is None and plain.page_cache_note is None
    assert r.fits and r.kv_cache_bytes_per_gpu > 50 * GiB


@pytest.mark.parametrize("d", [
    Deployment(model="gpt-oss-120b", gpu="h100-sxm", engine="trtllm"),  # memory of its own
    Deployment(model="gpt-oss-120b", gpu="gb10", engine="vllm", engine_version="0.11.1"),  # reads MemAvailable
    Deployment(model="gpt-oss-120b", gpu="gb10", engine="vllm"),  # the current release: the same
    Deployment(model="gpt-oss-120b", gpu="gb10", engine="sglang"),  # its reading is not stated
])
def test_no_range_where_the_reading_counts_no_page_cache(catalog, d):
    r = fit(d, catalog)
    assert r.kv_cache_range_low_bytes_per_gpu is None and r.page_cache_note is None


def test_vllm_before_the_available_memory_reading_gets_the_range(catalog):
    # vLLM 0.11.0 reads torch.cuda.mem_get_info() on every GPU; 0.11.1 adds psutil's available memory on GB10
    r = fit(Deployment(model="gpt-oss-120b", gpu="gb10", engine="vllm", engine_version="0.11.0"), catalog)
    assert r.kv_cache_range_low_bytes_per_gpu < r.kv_cache_range_high_bytes_per_gpu == r.kv_cache_bytes_per_gpu
    # vLLM subtracts the page cache as non-torch memory from a fraction of the total: all of it is lost
    assert r.kv_cache_range_high_bytes_per_gpu - r.kv_cache_range_low_bytes_per_gpu == pytest.approx(
        r.page_cache_bytes_per_gpu)


def _range(catalog, accel, rule, release="1.1.0rc3"):
    return page_cache_range(accel, "TensorRT-LLM", rule, release, kv_bytes_per_gpu=50 * GiB, total_bytes=120 * GiB,
                            in_use_bytes_per_gpu=60 * GiB, checkpoint_bytes=40 * GiB, memory_fraction=0.9)


def test_the_range_follows_the_data_fields(catalog):
    spark = catalog.accelerators.records["gb10"]
    rule = memory_rule(catalog, "trtllm", "1.1.0rc3")
    cold = _range(catalog, spark, rule)
    assert cold.low_bytes_per_gpu == pytest.approx(50 * GiB - 0.9 * 40 * GiB)  # min(checkpoint, memory left) x fraction
    # the accelerator's field unset, or the release's query turned to the OS's available memory: no range
    assert _range(catalog, spark.model_copy(update={"integrated_gpu": False}), rule) is None
    available = tuple(q.model_copy(update={"query": "os_available"}) for q in rule.free_memory_queries)
    assert _range(catalog, spark, rule.model_copy(update={"free_memory_queries": available})) is None
    assert _range(catalog, spark, rule.model_copy(update={"free_memory_queries": ()})) is None


def test_integrated_parts_are_the_cuda_socs_and_not_gh200(catalog):
    integrated = {a.id for a in catalog.accelerators if a.integrated_gpu}
    assert {"gb10", "jetson-agx-thor"} <= integrated
    assert "gh200" not in integrated  # its Hopper GPU has HBM of its own; only the CPU's memory is shared over C2C
    assert all(a.unified_memory and a.software.value == "cuda" and a.integrated_gpu_source
               for a in catalog.accelerators if a.integrated_gpu)


def test_an_unsourced_or_discrete_integrated_gpu_is_refused(catalog):
    spark = catalog.accelerators.records["gb10"].model_dump()
    with pytest.raises(ValueError, match="integrated_gpu_source"):
        Accelerator.model_validate({**spark, "integrated_gpu_source": None})
    with pytest.raises(ValueError, match="unified_memory"):
        Accelerator.model_validate({**spark, "unified_memory": False})


def test_text_and_json_show_the_range():
    runner = CliRunner()
    # fit's answer refuses prompts longer than the step, as the launch does: the context the logged step serves
    args = ["fit", "--model", "gpt-oss-120b", "--system", "dgx-spark", "--engine", "trtllm", "--max-num-batched-tokens", "8192",
            "--max-model-len", "8192"]
    text = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert "KV cache after a cold start: 0.00 GiB to 52.59 GiB per GPU" in text.stdout
    assert DROP in text.stdout
    answer = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert answer["kv_cache_range_low_bytes_per_gpu"] <= answer["kv_cache_range_high_bytes_per_gpu"]
    assert DROP in answer["page_cache_note"]


def test_deploy_warns_before_the_launch_line_on_a_spark(catalog):
    # 8,192 tokens: within max_num_tokens, as TensorRT-LLM does not chunk a sliding-window model's prompts
    cmd = launch_command(Deployment(model="gpt-oss-120b", system="dgx-spark", engine="trtllm", max_model_len=8192), catalog)
    lines = cmd.script.splitlines()
    assert lines[-1] == cmd.text and lines[-2].startswith("# ") and DROP in lines[-2]
    assert any(DROP in n for n in cmd.notes)
    plain = launch_command(Deployment(model="gpt-oss-120b", gpu="h100-sxm", engine="trtllm", max_model_len=8192), catalog)
    assert "drop_caches" not in plain.script


def test_the_api_answers_with_the_range(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "test.db"))
    answer = client.post("/api/fit", json={"model": "gpt-oss-120b", "system": "dgx-spark", "engine": "trtllm"}).json()
    assert answer["kv_cache_range_high_bytes_per_gpu"] == answer["kv_cache_bytes_per_gpu"]
    assert DROP in answer["page_cache_note"]
    plain = client.post("/api/fit", json={"model": "gpt-oss-120b", "gpu": "h100-sxm", "engine": "trtllm"}).json()
    assert plain["kv_cache_range_low_bytes_per_gpu"] is None and plain["page_cache_note"] is None
