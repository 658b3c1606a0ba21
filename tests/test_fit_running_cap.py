"""fit's largest context at a concurrency beyond what the engine runs at once: the engine's running cap
(vLLM's --max-num-seqs default or a stated one, SGLang's --max-running-requests and a hybrid model's state
pool, llama-server's --parallel slots, Ollama's OLLAMA_NUM_PARALLEL) runs, the rest queue holding no KV
cache (memory/running_cap.py)."""

import json

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.context import ServingContext
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

runner = CliRunner()


def _vllm(**more) -> Deployment:
    return Deployment(model="llama-3.1-8b", gpu="rtx-4090", max_model_len=8192, **more)


def test_vllm_runs_its_default_cap_and_the_rest_queue():
    # vLLM on a GPU under 70 GiB defaults to 256 sequences: 2,000 asked run 256, each a share of the cache
    over, at_cap = fit(_vllm(concurrency=2000)), fit(_vllm(concurrency=256))
    assert over.running_cap == 256 and over.running_cap_flag == "--max-num-seqs"
    assert over.queued_sequences == 1744 and at_cap.queued_sequences == 0
    # 47,616 tokens over 256 running is 186 each, 128 in whole 64-token blocks (over 2,000: 23, not one block)
    assert over.kv_cache_tokens == 47616 and over.largest_context_tokens == at_cap.largest_context_tokens == 128
    assert "above the 256 sequences the engine runs at once (--max-num-seqs 256)" in over.concurrency_note
    assert "in whole 64-token blocks" in over.concurrency_note


def test_a_stated_max_num_seqs_is_the_cap():
    over, at_cap = fit(_vllm(max_num_seqs=64, concurrency=500)), fit(_vllm(max_num_seqs=64, concurrency=64))
    assert over.running_cap == 64 and over.queued_sequences == 436
    assert over.largest_context_tokens == at_cap.largest_context_tokens
    assert "(--max-num-seqs 64)" in over.concurrency_note


def test_the_cap_is_per_data_parallel_instance():
    d = Deployment(model="llama-3.1-8b", gpu="h100-sxm", gpus=2, data_parallel_size=2, max_model_len=8192)
    # 1,024 sequences per instance on an H100 (vLLM's default from 70 GiB), two instances: 2,048 run at once
    at_cap, over = fit(d.model_copy(update={"concurrency": 2048})), fit(d.model_copy(update={"concurrency": 3000}))
    assert at_cap.running_cap == 1024 and at_cap.queued_sequences == 0
    assert over.queued_sequences == 952 and over.largest_context_tokens == at_cap.largest_context_tokens
    assert "above the 2,048 sequences" in over.concurrency_note and "--max-num-seqs 1024 per instance" in over.concurrency_note


def test_tensorrt_llm_caps_each_pipeline_micro_batch():
    # trtllm-serve's --max_batch_size (2048) holds for each of the pipeline's micro-batches: two stages run 4,096
    r = fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine="trtllm", gpus=2, pipeline_parallel_size=2,
                       max_model_len=8192, concurrency=5000))
    assert r.running_cap == 4096 and r.running_cap_flag == "--max_batch_size" and r.queued_sequences == 904
    assert "(--max_batch_size 2048 per micro-batch)" in r.concurrency_note


def test_perf_runs_the_cap_fit_reports():
    d = _vllm(max_num_seqs=64)
    ctx = ServingContext(load_catalog(), d, Workload(input_len=100, output_len=100))
    assert ctx.max_running == fit(d).running_cap == 64


def test_sglang_max_running_requests_caps_a_hybrid_model_below_its_state_pool():
    d = Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine="sglang", tensor_parallel_size=4,
                   max_model_len=32768, max_num_seqs=50)
    over, at_cap = fit(d.model_copy(update={"concurrency": 1000})), fit(d.model_copy(update={"concurrency": 50}))
    assert over.state_running_cap > 50 and over.running_cap == 50
    assert over.running_cap_flag == "--max-running-requests" and over.queued_sequences == 950
    assert over.largest_context_tokens == at_cap.largest_context_tokens


def _llamacpp(**more) -> Deployment:
    return Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                      max_model_len=8192, **more)


def test_llamacpp_runs_its_slots_each_with_its_share_of_the_context():
    # one --parallel slot of 8,192 cells: four asked run one at 8,192 tokens, not the memory left over / 4
    one = fit(_llamacpp(concurrency=4))
    assert one.running_cap == 1 and one.running_cap_flag == "--parallel" and one.queued_sequences == 3
    assert one.largest_context_tokens == 8192
    assert "(--parallel 1)" in one.concurrency_note and "wait in the queue" in one.concurrency_note
    four = fit(_llamacpp(max_num_seqs=4, concurrency=2))
    assert four.running_cap == 4 and four.queued_sequences == 0 and four.largest_context_tokens == 8192


def test_an_ollama_tag_names_its_servers_variable():
    r = fit(Deployment(model="llama3.1:8b", gpu="rtx-4090", concurrency=3))
    assert r.running_cap == 1 and r.running_cap_flag == "OLLAMA_NUM_PARALLEL" and r.queued_sequences == 2
    assert r.largest_context_tokens == r.max_model_len


def test_cli_and_json_say_the_cap_and_the_queue():
    args = ["fit", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--max-model-len", "8192", "--concurrency", "2000"]
    out = " ".join(runner.invoke(app, args, env={"COLUMNS": "200"}).stdout.split())
    assert "largest context at 2,000 concurrent sequences:" in out
    assert "the other 1,744 wait in the queue" in out
    answer = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert (answer["running_cap"], answer["running_cap_flag"], answer["queued_sequences"]) == (256, "--max-num-seqs", 1744)


def test_api_fit_says_the_cap(tmp_path):
    client = TestClient(create_app(tmp_path / "test.db"))
    r = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "rtx-4090", "max_model_len": 8192,
                                      "concurrency": 2000}).json()
    assert r["running_cap"] == 256 and r["queued_sequences"] == 1744 and "--max-num-seqs" in r["concurrency_note"]
