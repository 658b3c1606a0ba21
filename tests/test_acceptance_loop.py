"""The loop closed: an acceptance pack is written, each client's results come back in, perf plans on
them (measured-local), the error against the prediction is shown, and they survive a restart —
through the CLI and the HTTP API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
runner = CliRunner()
H100 = ["--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"]


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_the_pack_names_every_client_and_predicts_each_run(tmp_path):
    r = cli("acceptance", *H100, "--workload", "chat-seat", "--input-len", "1024", "--output-len", "256", "--out", tmp_path / "pack", "--json")
    assert r.exit_code == 0, r.output
    pack = json.loads(r.stdout)["pack"]
    assert {b["client"] for b in pack["benchmarks"]} == {"vllm", "sglang", "genai-perf", "guidellm"}
    vllm_levels = [b["concurrency"] for b in pack["benchmarks"] if b["client"] == "vllm"]
    assert vllm_levels == pack["concurrencies"] and 1 in vllm_levels
    assert any("--max-concurrency" in b["argv"] for b in pack["benchmarks"])
    files = {p.name for p in (tmp_path / "pack").iterdir()}
    assert files == {"README.md", "launch.sh", "benchmarks.sh", "checklist.md", "predictions.json"}
    predictions = json.loads((tmp_path / "pack" / "predictions.json").read_text())["predictions"]
    assert [p["concurrency"] for p in predictions] == pack["concurrencies"]
    assert "power draw" in (tmp_path / "pack" / "checklist.md").read_text()


@pytest.mark.parametrize("layout", [["--system", "hgx-h200"], ["--gpu", "h200", "--gpus", "2"]])
def test_the_pack_lays_out_a_system_or_gpus_alone_as_deploy_does(tmp_path, layout):
    """Llama 3.1 70B in BF16 needs two H200s at vLLM 0.33's 0.92: a system or a GPU count without parallel sizes
    is laid out as fit, perf and deploy lay it out (TP 2), not as TP 1 copies stated by a default of the command."""
    r = cli("acceptance", "--model", "llama-3.1-70b", *layout, "--workload", "chat-seat", "--out", tmp_path / "pack",
            "--engine-version", "0.33.0", "--json")
    assert r.exit_code == 0, r.output
    assert "--tensor-parallel-size 2" in (tmp_path / "pack" / "launch.sh").read_text()


@pytest.mark.parametrize(("files", "flags"), [
    (["vllm_bench_serve_c8.json", "vllm_bench_serve_c32.json"], H100),
    (["sglang_bench_serving.jsonl"], ["--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "sglang"]),
    (["profile_export_genai_perf.json"], H100),
    (["guidellm_report.json"], H100),
    (["measured.csv"], H100),
    # one llama-bench run in its three output formats: one import refuses the same level twice, so each on its own
    *[([name], ["--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "llamacpp", "-q", "q4_0"])
      for name in ("llama_bench.json", "llama_bench.csv", "llama_bench.md")],
])
def test_round_trip_through_the_cli(tmp_path, files, flags):
    db = tmp_path / "runs.db"
    assert cli("acceptance", *flags, "--workload", "chat-seat", "--out", tmp_path / "pack").exit_code == 0
    r = cli("measurements", "import", *[DATA / f for f in files], *flags, "--engine-version", "x", "--db", db, "--json")
    assert r.exit_code == 0, r.output
    ids = [run["id"] for run in json.loads(r.stdout)["imported"]]
    slots = ["--max-num-seqs", "8"] if "llamacpp" in flags else []  # llama-server runs the slots it is started with
    perf = cli("perf", *flags, *slots, "--input-len", "1024", "--output-len", "256", "--concurrency", "8", "--db", db,
               "--json")
    assert perf.exit_code == 0, perf.output
    est = json.loads(perf.stdout)
    assert est["source"] == "measured-local" and est["measured_record"] in ids
    shown = json.loads(cli("measurements", "show", ids[0], "--db", db, "--json").stdout)
    assert all("error" in m for p in shown["points"] for m in p["metrics"]) and shown["median_abs_error"]
    # a restart: a new process reads the same file
    listed = json.loads(cli("measurements", "list", "--db", db, "--json").stdout)["measurements"]
    assert sorted(m["id"] for m in listed) == sorted(ids)
    mine = json.loads(cli("validate", "--mine", "--db", db, "--json").stdout)["mine"]
    assert len(mine) == len(ids)


def test_a_refused_file_names_its_key_and_imports_nothing(tmp_path):
    db = tmp_path / "runs.db"
    bad = tmp_path / "run.json"
    bad.write_text('{"completed": 3, "max_concurrency": 2, "output_throughput": 5}')
    r = cli("measurements", "import", DATA / "vllm_bench_serve_c8.json", bad, *H100, "--db", db, "--json")
    assert r.exit_code == 2
    assert json.loads(r.stdout)["error"]["field"] == "total_input_tokens" and "run.json" in r.output
    assert json.loads(cli("measurements", "list", "--db", db, "--json").stdout)["measurements"] == []


def test_delete_and_export(tmp_path):
    db = tmp_path / "runs.db"
    cli("measurements", "import", DATA / "measured.csv", *H100, "--db", db)
    exported = cli("measurements", "export", "--db", db)
    assert exported.exit_code == 0 and "speed_points:" in exported.stdout and "metric: tpot_s" in exported.stdout
    assert cli("measurements", "delete", 1, "--db", db).exit_code == 0
    missing = cli("measurements", "show", 1, "--db", db)
    assert missing.exit_code == 2 and "no stored measurement 1" in missing.output


def _upload(client, *names, **provenance):
    body = {"files": [{"name": n, "content": (DATA / n).read_text()} for n in names],
            "provenance": {"model": "llama-3.1-8b", "gpu": "h100", "engine": "vllm", **provenance}}
    return client.post("/api/measurements", json=body)


def test_round_trip_through_the_api_and_a_server_restart(tmp_path):
    db = tmp_path / "api.db"
    client = TestClient(create_app(db))
    r = _upload(client, "vllm_bench_serve_c8.json", "vllm_bench_serve_c32.json")
    assert r.status_code == 201, r.text
    ids = [run["id"] for run in r.json()]
    perf = client.post("/api/perf", json={"deployment": {"model": "llama-3.1-8b", "gpu": "h100"},
                                          "workload": {"input_len": 1024, "output_len": 256, "concurrency": 16}})
    assert perf.json()["source"] == "measured-local" and perf.json()["measured_record"] in ids
    shown = client.get(f"/api/measurements/{ids[0]}").json()
    assert shown["points"][0]["metrics"][0]["error"] is not None
    view = client.get("/api/measurements/view").json()
    assert len(view["chart"]["data"]["values"]) == 6 and len(view["runs"]) == 2
    restarted = TestClient(create_app(db))
    assert sorted(m["id"] for m in restarted.get("/api/measurements").json()) == sorted(ids)
    assert restarted.delete(f"/api/measurements/{ids[0]}").status_code == 204
    assert restarted.get(f"/api/measurements/{ids[0]}").status_code == 404


def test_the_api_refuses_a_bad_file_with_the_key(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    body = {"files": [{"name": "run.json", "content": '{"completed": 3, "max_concurrency": 2, "output_throughput": 5}'}],
            "provenance": {"model": "llama-3.1-8b", "gpu": "h100"}}
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "files", "0", "content"]  # the JSON path of the file's text
    assert r.json()["error"]["message"] == "run.json: total_input_tokens: missing"  # the place in it
    second = {**body, "files": [{"name": "good.json", "content": (DATA / "vllm_bench_serve_c8.json").read_text()},
                                {"name": "bad.jsonl", "content": '{"a": 1}'}]}
    r = client.post("/api/measurements", json=second)
    assert r.status_code == 422 and r.json()["error"]["field"] == "files.1.content", r.text
    assert r.json()["error"]["message"].startswith("bad.jsonl: line 1: ")
    no_gpu = client.post("/api/measurements", json={"files": body["files"], "provenance": {"model": "llama-3.1-8b"}})
    assert no_gpu.status_code == 422
    assert client.get("/api/measurements").json() == []


def test_the_api_refuses_a_run_stored_already(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    assert _upload(client, "vllm_bench_serve_c8.json").status_code == 201
    again = _upload(client, "vllm_bench_serve_c32.json", "vllm_bench_serve_c8.json")
    assert again.status_code == 409 and again.json()["detail"][0]["loc"] == ["body", "files"]
    assert "stored already" in again.json()["detail"][0]["msg"]
    assert len(client.get("/api/measurements").json()) == 1


def test_plan_sizes_capacity_on_your_runs(tmp_path):
    """The acceptance pack's runs are at the preset's lengths, so plan's capacity search uses them."""
    db = tmp_path / "runs.db"
    csv = tmp_path / "chat.csv"
    csv.write_text("concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s\n"
                   "1,2000,500,80,9,110\n4,2000,500,85,11,360\n16,2000,500,100,25,640\n64,2000,500,180,60,1050\n")
    assert cli("measurements", "import", csv, *H100, "--db", db).exit_code == 0
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: chat on one H100\nmodel: llama-3.1-8b\nplatform: {gpu: h100-sxm, gpus: 1, quote_usd_per_system: 30000}\n"
                        "workload: {preset: chat-seat, cache_hit_rate: 0}\ntarget_users: 100\n")
    mine = json.loads(cli("plan", scenario, "--draws", "0", "--db", db, "--json").stdout)["capacity"]["cell"]
    model = json.loads(cli("plan", scenario, "--draws", "0", "--db", tmp_path / "empty.db", "--json").stdout)["capacity"]["cell"]
    assert mine["source"] == "measured" and model["source"] != "measured"
    assert any("user-run-1-2000-500" in a for a in mine["assumptions"])
    assert mine["concurrency_at_target"] != model["concurrency_at_target"]


def test_the_launch_command_is_deploys():
    from inferplan.catalog.loader import load_catalog
    from inferplan.deploy import launch_command
    from inferplan.inputs.deployment import Deployment
    from inferplan.measurements.acceptance import acceptance_pack

    catalog = load_catalog()
    pack = acceptance_pack(Deployment(model="llama-3.1-8b", gpu="h100"), "chat-seat", catalog)
    assert pack.launch_from == "inferplan deploy"
    assert pack.launch.text == launch_command(pack.deployment, catalog).script


def test_search_plans_on_your_runs(tmp_path):
    """A stored run at the search's lengths is the measured profile of its cell: the cell's latency and
    speed come from it (CLI --db, and the API's own store)."""
    db = tmp_path / "runs.db"
    csv = tmp_path / "fast.csv"
    csv.write_text("concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s\n"
                   "1,2000,500,40,4,240\n4,2000,500,45,5,780\n16,2000,500,60,8,1900\n64,2000,500,120,20,3000\n")
    assert cli("measurements", "import", csv, *H100, "--db", db).exit_code == 0
    ask = ["search", "--model", "llama-3.1-8b", "--request-rate", "2", "--input-len", "2000", "--output-len", "500",
           "--accelerators", "h100-sxm", "--engines", "vllm", "--quantizations", "bf16", "--kv-cache-dtypes", "auto", "--max-gpus", "1",
           "--no-speculative", "--no-disaggregated", "--json"]

    def fastest(db_path):
        out = cli(*ask, "--db", db_path)
        assert out.exit_code == 0, out.stdout
        return max(r["output_tokens_per_s_per_user"] for r in json.loads(out.stdout)["results"])

    mine, model = fastest(db), fastest(tmp_path / "empty.db")
    assert mine != pytest.approx(model, rel=0.02)

    client = TestClient(create_app(db))
    body = {"models": ["llama-3.1-8b"], "request_rate_per_s": 2, "input_len": 2000, "output_len": 500,
            "accelerators": ["h100-sxm"], "engines": ["vllm"], "quantizations": ["bf16"], "kv_cache_dtypes": ["auto"], "max_gpus": 1,
            "speculative": False, "disaggregated": False}
    api = client.post("/api/search", json=body)
    assert api.status_code == 200
    assert max(r["output_tokens_per_s_per_user"] for r in api.json()["results"]) == pytest.approx(mine, rel=1e-6)


def test_a_llamacpp_pack_launches_slots_for_its_highest_concurrency_and_one_model_file(tmp_path):
    flags = ["--model", "qwen3-30b-a3b", "--gpu", "RTX 4090", "--engine", "llamacpp", "-q", "q4_k_m"]
    r = cli("acceptance", *flags, "--workload", "chat-seat", "--out", tmp_path / "pack", "--json")
    assert r.exit_code == 0, r.output
    pack = json.loads(r.stdout)["pack"]
    launch = pack["launch"]["argv"]
    slots, ctx = int(launch[launch.index("--parallel") + 1]), int(launch[launch.index("--ctx-size") + 1])
    top = max(pack["concurrencies"])
    assert top > 1 and slots == top and ctx == pack["deployment"]["max_model_len"] * top
    bench = next(b["argv"] for b in pack["benchmarks"] if b["client"] == "llama-bench")
    repo = launch[launch.index("--hf-repo") + 1].split(":")[0]  # Qwen's own GGUF build: the server fetches it
    assert bench[bench.index("-m") + 1] == f"<Qwen3-30B-A3B-Q4_K_M.gguf, as downloaded from {repo}>"
    port = launch[launch.index("--port") + 1]
    vllm = next(b["argv"] for b in pack["benchmarks"] if b["client"] == "vllm")
    assert vllm[vllm.index("--port") + 1] == port
    readme = (tmp_path / "pack" / "README.md").read_text()
    assert "--gpu rtx-4090" in readme and "--quantization q4_k_m" in readme  # the import line names the catalogue's id
