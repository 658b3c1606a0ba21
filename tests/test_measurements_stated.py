"""What an imported file states of its run is read (llama-bench's engine and weight type, vLLM's
--metadata, a quantized repo's name), a deployment that cannot hold the weights is refused naming
what to state, a run with no prediction still shows what it measured, and the HTTP upload takes the
files the CLI takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.measurements.compare import compare_run
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.shells.api import create_app
from inferplan.shells.api_measurements import MAX_CONTENT_CHARS, MAX_UPLOAD_BYTES
from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
VLLM_70B = json.loads((DATA / "vllm_bench_serve_c8.json").read_text()) | {"model_id": "meta-llama/Llama-3.3-70B-Instruct"}


def _read(name: str, content: str | bytes, **given):
    data = content.encode() if isinstance(content, str) else content
    return read_runs(load_catalog(), [(name, data)], RunProvenance(**given))[0]


def _llama_bench(model_type: str, filename: str | None = "models/Qwen3-30B-A3B-Q4_K_M.gguf") -> str:
    rows = json.loads((DATA / "llama_bench.json").read_text())
    for row in rows:
        row["model_type"] = model_type
        row.pop("model_filename")
        if filename:
            row["model_filename"] = filename
    return json.dumps(rows)


def test_a_llama_bench_file_is_a_llamacpp_run_in_the_weight_type_it_states():
    run = _read("lb.json", _llama_bench("qwen3moe 30B.A3B Q4_K - Medium"), gpu="RTX 4090", model="qwen3-30b-a3b")
    assert (run.engine, run.quantization) == ("llamacpp", "gguf-q4_k_m")
    assert run.engine_version.startswith("b5210")
    named = _read("lb.json", _llama_bench("qwen3moe 30B.A3B Q4_K - Medium"), gpu="RTX 4090")
    assert named.model == "qwen3-30b-a3b"  # from model_filename, its -Q4_K_M suffix read as the format
    assert _read("lb.json", _llama_bench("llama 8B BF16", None), gpu="h100", model="llama-3.1-8b").quantization == "bf16"
    stated = _read("lb.json", _llama_bench("qwen3moe 30B.A3B Q4_K - Medium"), gpu="h100", engine="vllm",
                   quantization="bf16", model="qwen3-30b-a3b")
    assert (stated.engine, stated.quantization) == ("vllm", "bf16")  # what the user states wins


def test_llama_bench_markdown_names_its_model_by_model_type_and_its_build_by_the_line_under_the_table():
    table = ("| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
             "| qwen3moe 30B.A3B Q4_K - Medium | 17.28 GiB | 30.53 B | CUDA | 99 | pp512 | 4266.10 ± 12.00 |\n"
             "| qwen3moe 30B.A3B Q4_K - Medium | 17.28 GiB | 30.53 B | CUDA | 99 | tg128 | 180.21 ± 0.50 |\n"
             "\nbuild: 5210b8c2 (5210)\n")
    run = _read("lb.md", table, gpu="RTX 4090")
    assert (run.model, run.quantization, run.engine_version) == ("qwen3-30b-a3b", "gguf-q4_k_m", "b5210 (5210b8c2)")
    assert _read("lb.json", _llama_bench("gpt-oss 120B MXFP4 MoE", None), gpu="h100").model == "gpt-oss-120b"


def test_an_unknown_llama_cpp_weight_type_is_refused_naming_model_type():
    with pytest.raises(InvalidScenarioError) as exc:
        _read("lb.json", _llama_bench("qwen3moe 30B.A3B IQ1_S - 1.5625 bpw"), gpu="RTX 4090", model="qwen3-30b-a3b")
    assert exc.value.field == "model_type" and "IQ1_S" in str(exc.value) and "lb.json" in str(exc.value)


def test_vllm_metadata_states_the_tensor_parallel_size_and_quantization():
    text = json.dumps(VLLM_70B | {"tensor_parallel_size": "2", "quantization": "fp8"})
    run = _read("r.json", text, gpu="h100")
    assert (run.model, run.tensor_parallel_size, run.gpus, run.quantization) == ("llama-3.3-70b", 2, 2, "fp8")
    assert _read("r.json", json.dumps(VLLM_70B | {"tp": 4}), gpu="h100").tensor_parallel_size == 4
    with pytest.raises(InvalidScenarioError) as exc:
        _read("r.json", json.dumps(VLLM_70B | {"tp": "two"}), gpu="h100")
    assert exc.value.field == "tp"


def test_a_deployment_that_cannot_hold_the_weights_is_refused_naming_the_parallel_size():
    with pytest.raises(InvalidScenarioError) as exc:
        _read("r.json", json.dumps(VLLM_70B), gpu="h100")  # 70B in BF16 on one 80 GB GPU
    assert exc.value.field == "tensor_parallel_size" and "141" in str(exc.value)
    assert _read("r.json", json.dumps(VLLM_70B), gpu="h100", tensor_parallel_size=2).gpus == 2


def test_a_quantized_repo_name_is_its_base_model_in_that_format():
    run = _read("r.json", json.dumps(VLLM_70B | {"model_id": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"}), gpu="h100",
                tensor_parallel_size=2)
    assert (run.model, run.quantization) == ("llama-3.3-70b", "fp8")
    awq = _read("r.json", json.dumps(VLLM_70B | {"model_id": "someone/Llama-3.1-8B-Instruct-AWQ"}), gpu="h100")
    assert (awq.model, awq.quantization) == ("llama-3.1-8b", "int4-awq")


def test_an_unknown_model_in_a_file_names_the_files_key_and_the_closest_models():
    with pytest.raises(InvalidScenarioError) as exc:
        _read("r.json", json.dumps(VLLM_70B | {"model_id": "RedHatAI/Llama-3.3-71B-Instruct-FP8-dynamic"}), gpu="h100")
    assert exc.value.field == "model_id" and "(the file's 'model_id')" in str(exc.value)
    assert exc.value.allowed.startswith("llama-3.3-70b") and "codellama" not in exc.value.allowed


def test_show_prints_the_measured_figures_when_no_prediction_is_made(tmp_path):
    run = _read("r.json", json.dumps(VLLM_70B), gpu="h100", tensor_parallel_size=2, max_model_len=10**6)
    point = compare_run(run).points[0]
    assert point.problem and [m.metric for m in point.metrics] == ["ttft_s", "tpot_s", "output_tokens_per_s_total"]
    assert all(m.predicted is None and m.error is None for m in point.metrics)
    db = tmp_path / "m.db"
    (tmp_path / "r.json").write_text(json.dumps(VLLM_70B))
    runner = CliRunner()
    imported = runner.invoke(app, ["measurements", "import", str(tmp_path / "r.json"), "--gpu", "h100", "-tp", "2",
                                   "--max-model-len", "1000000", "--db", str(db)])
    assert imported.exit_code == 0, imported.output
    shown = runner.invoke(app, ["measurements", "show", "1", "--db", str(db)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "48.30 ms" in shown.output and "927.5" in shown.output and "no prediction" in shown.output


def _upload(client, content: str, name: str = "m.csv"):
    return client.post("/api/measurements", json={"files": [{"name": name, "content": content}],
                                                  "provenance": {"model": "llama-3.1-8b", "gpu": "h100"}})


def test_the_api_takes_a_result_file_larger_than_a_note(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    rows = "\n".join(f"{c},1024,256,50.1,7.2,136.0,0.53" for c in range(1, 200))
    csv = "concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s,requests_per_s\n" + rows
    assert len(csv) > 4000
    assert _upload(client, csv).status_code == 201
    detailed = json.loads((DATA / "vllm_bench_serve_c8.json").read_text()) | {"ttfts": [0.048] * 400, "itls": [[0.0084] * 255] * 400}
    r = _upload(client, json.dumps(detailed), "detailed.json")
    assert len(json.dumps(detailed)) > 64 * 1024 and r.status_code == 201, r.text[:300]


def test_the_api_refuses_a_larger_upload_saying_the_limit(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    long = _upload(client, "x" * (MAX_CONTENT_CHARS + 1))
    assert long.status_code == 422 and long.json()["error"]["allowed"] == f"at most {MAX_CONTENT_CHARS:,} characters"
    r = _upload(client, "x" * (MAX_UPLOAD_BYTES + 1))
    assert r.status_code == 413 and r.json()["error"]["allowed"] == f"at most {MAX_UPLOAD_BYTES} bytes"
    other = client.post("/api/fit", json={"model": "x" * (70 * 1024)})
    assert other.status_code == 413 and "65536" in other.json()["error"]["allowed"]  # other routes keep theirs


@pytest.mark.parametrize("concurrency, how", [(8, "interpolated across your run"), (16, "scaled to your run")])
def test_the_perf_headline_names_the_source_the_json_gives(tmp_path, concurrency, how):
    runner, db = CliRunner(), tmp_path / "m.db"
    flags = ["--model", "llama-3.1-8b", "--gpu", "h100"]
    files = [str(DATA / f) for f in ("vllm_bench_serve_c8.json", "measured.csv")]
    assert runner.invoke(app, ["measurements", "import", *files, *flags, "--db", str(db)]).exit_code == 0
    perf = [*flags, "--input-len", "1024", "--output-len", "256", "--concurrency", str(concurrency), "--db", str(db)]
    assert json.loads(runner.invoke(app, ["perf", *perf, "--json"]).stdout)["source"] == "measured-local"
    headline = " ".join(runner.invoke(app, ["perf", *perf], env={"COLUMNS": "200"}).stdout.splitlines()[:2])
    assert "(measured-local: " in headline and how in headline and "(calibrated model," not in headline


def test_a_model_path_a_file_states_is_read_by_its_name_never_from_disk(tmp_path):
    folder = tmp_path / "Llama-3.1-8B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # an unreadable config: reading it would refuse the import
    run = _read("r.json", json.dumps(VLLM_70B | {"model_id": str(folder)}), gpu="h100")
    assert run.model == "llama-3.1-8b"


@pytest.mark.parametrize("backend, engine", [("sglang", "sglang"), ("sglang-oai", "sglang"), ("vllm", "vllm"),
                                             ("trt", "trtllm")])
def test_an_sglang_bench_serving_file_is_a_run_of_the_engine_its_backend_names(backend, engine):
    """bench_serving benchmarks other engines' servers too; its file says which in "backend". An
    SGLang run was stored as vLLM (the default) because the backend was not read."""
    lines = (DATA / "sglang_bench_serving.jsonl").read_text().splitlines()
    text = "\n".join(json.dumps(json.loads(line) | {"backend": backend}) for line in lines if line.strip())
    assert _read("s.jsonl", text, gpu="h100", model="llama-3.1-8b").engine == engine


@pytest.mark.parametrize("gpu, engine", [("apple-m1-max", "llamacpp"), ("h100", "vllm")])
def test_a_file_naming_no_engine_is_a_run_of_the_engine_its_gpu_runs_by_default(gpu, engine):
    csv = (DATA / "measured.csv").read_text()
    assert _read("m.csv", csv, gpu=gpu, model="llama-3.1-8b").engine == engine
