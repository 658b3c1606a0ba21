"""plan gives the launch command of the replica cell it sized, as search --deploy writes a pick's: its parallel
flags are the cell's layout (an 8-GPU data-parallel-attention cell with its experts over the 8 GPUs, not 8
separate one-GPU copies)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.search.deploying import plan_launch
from inferplan.shells.cli import app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml"


def _flag(argv: list[str], name: str, default: int = 1) -> int:
    return int(argv[argv.index(name) + 1]) if name in argv else default


def test_plan_launches_the_cell_it_sized(catalog):
    s = Scenario.model_validate(yaml.safe_load(EXAMPLE.read_text()))
    r = plan(s, catalog)
    launch = plan_launch(catalog, s, r)
    argv = shlex.split(launch.text.splitlines()[-1])
    cell = r.capacity.cell
    assert argv[:3] == ["vllm", "serve", "openai/gpt-oss-120b"]
    assert _flag(argv, "--tensor-parallel-size") == cell.tensor_parallel_size
    assert _flag(argv, "--pipeline-parallel-size") == cell.pipeline_parallel_size
    assert _flag(argv, "--data-parallel-size") == cell.data_parallel_size
    assert ("--enable-expert-parallel" in argv) == cell.expert_parallel
    assert cell.gpus == 8 and cell.data_parallel_size == 8 and cell.expert_parallel  # the example's sized cell


def test_plan_json_carries_the_launch_under_deploy():
    r = CliRunner().invoke(app, ["plan", str(EXAMPLE), "--json", "--draws", "0"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    argv = shlex.split(data["deploy"].splitlines()[-1])
    assert _flag(argv, "--data-parallel-size") == data["capacity"]["cell"]["data_parallel_size"]


def test_plan_pools_on_bare_gpus_keep_to_each_host(catalog):
    """Bare 8-GPU hosts, two TP-4 decode cells and two TP-2 prefill instances: 12 GPUs over two hosts, each
    worker on GPUs 0-7 of its own host, bought or rented on 8-GPU instances."""
    for rented in (False, True):
        s = Scenario.model_validate({
            "name": "pools on bare GPUs", "model": "gpt-oss-120b", "workload": {"preset": "chat-seat"},
            "platform": {"gpu": "h100-sxm", "gpus": 8, "quote_usd_per_system": 250000}, "rented": rented,
            "target_users": 200, "cell": {"tensor_parallel_size": 4}, "replicas": 2,
            "prefill_pool": {"instances": 2, "cell": {"tensor_parallel_size": 2}}})
        text = plan_launch(catalog, s, plan(s, catalog)).text
        assert "# on HOST1:" in text
        devices = [int(g) for line in text.splitlines() if line.startswith("CUDA_VISIBLE_DEVICES=")
                   for g in line.split()[0].split("=")[1].split(",")]
        assert max(devices) == 7


def test_plan_prints_the_first_hosts_part_of_a_pools_script(tmp_path):
    """The text output cuts a script over several hosts at its second host's header, under a pools heading, and
    prints a one-host script whole."""
    scenario = tmp_path / "pools.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "pools on bare GPUs", "model": "gpt-oss-120b", "workload": {"preset": "chat-seat"},
        "platform": {"gpu": "h100-sxm", "gpus": 8, "quote_usd_per_system": 250000}, "target_users": 200,
        "cell": {"tensor_parallel_size": 4}, "replicas": 2,
        "prefill_pool": {"instances": 2, "cell": {"tensor_parallel_size": 2}}}))
    out = CliRunner().invoke(app, ["plan", str(scenario), "--draws", "0"], terminal_width=400).output
    assert "Launch (the prefill and decode pools and their router):" in out
    assert "# on HOST0:" in out and "# on HOST1:" not in out
    assert out.count("vllm serve") == 3  # HOST0's two prefill workers and one decode worker
    whole = CliRunner().invoke(app, ["plan", str(EXAMPLE), "--draws", "0"], terminal_width=400).output
    assert "Launch (one replica cell):" in whole and "more lines" not in whole


def test_the_api_plan_carries_the_launch_the_cli_json_does(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app
    scenario = yaml.safe_load(EXAMPLE.read_text())
    body = TestClient(create_app(tmp_path / "test.db")).post("/api/plan", json={"scenario": scenario, "draws": 0}).json()
    cli = json.loads(CliRunner().invoke(app, ["plan", str(EXAMPLE), "--json", "--draws", "0"]).stdout)
    assert body["deploy"] == cli["deploy"] and body["deploy_notes"] == cli["deploy_notes"]
    assert body["deploy"].splitlines()[-1].startswith("vllm serve")


@pytest.mark.parametrize("scenario", [
    {"name": "home", "model": "qwen3-30b-a3b", "quantization": "q4_k_m", "engine": "llamacpp",
     "platform": {"system": "rtx-3090-workstation"}, "workload": {"preset": "chat-seat"}, "target_users": 3},
    {"model": "llama-3.1-8b", "quantization": "gguf-q4_k_m", "engine": "llamacpp", "target_users": 50,
     "platform": {"gpu": "rtx-5090", "gpus": 1, "quote_usd_per_system": 4000}, "workload": {"preset": "chat-seat"}},
], ids=["system", "one-gpu"])
def test_a_llamacpp_plan_launches_the_slots_its_capacity_counts(catalog, scenario):
    """llama.cpp serves the --parallel slots it is started with; the plan sizes its users on the most slots that
    fit (economics/capacity.py cell_capacity), so its launch opens those, each the request's context, not
    llama-server's one slot."""
    s = Scenario.model_validate(scenario)
    r = plan(s, catalog)
    cell = r.capacity.cell
    argv = shlex.split(" ".join(line.rstrip("\\") for line in plan_launch(catalog, s, r).text.splitlines()))
    assert cell.engine_slots > 1 and cell.concurrency_at_target > 1  # sized on many requests at once
    assert _flag(argv, "--parallel") == cell.engine_slots
    assert _flag(argv, "--ctx-size") == cell.engine_slots * (r.workload.input_tokens_per_request
                                                             + r.workload.output_tokens_per_request)


def test_a_llamacpp_launch_opens_no_more_slots_than_the_release_allows(catalog):
    # 512 GB holds a thousand chat-seat slots of Qwen3-30B-A3B; llama.cpp refuses --parallel above LLAMA_MAX_SEQ (256)
    s = Scenario.model_validate({"name": "studio", "model": "qwen3-30b-a3b", "quantization": "q4_k_m",
                                 "platform": {"gpu": "M3 Ultra 512GB", "gpus": 1, "quote_usd_per_system": 9500,
                                              "power_w_per_system": 300},
                                 "workload": {"preset": "chat-seat"}, "target_users": 3})
    r = plan(s, catalog)
    argv = shlex.split(" ".join(line.rstrip("\\") for line in plan_launch(catalog, s, r).text.splitlines()))
    assert argv[0] == "llama-server" and _flag(argv, "--parallel") == r.capacity.cell.engine_slots == 256


def _ollama_parallel(catalog, platform: dict, **workload) -> tuple[int, int]:
    s = Scenario.model_validate({"model": "qwen3:8b", "target_users": 50, "platform": platform,
                                 "workload": {"preset": "chat-seat", **workload}})
    r = plan(s, catalog)
    serve = next(line for line in plan_launch(catalog, s, r).text.splitlines() if "ollama serve" in line)
    env = dict(word.split("=", 1) for word in shlex.split(serve) if "=" in word)
    return int(env["OLLAMA_NUM_PARALLEL"]), r.capacity.cell.engine_slots


def test_an_ollama_server_over_several_gpus_launches_the_slots_the_plan_counts(catalog):
    """A server Ollama spreads over a host's GPUs is counted at the most slots it is started with
    (economics/ollama_hosts.py ``_started``); its launch starts those, not OLLAMA_NUM_PARALLEL=1."""
    two = _ollama_parallel(catalog, {"gpu": "rtx-4090", "gpus": 2, "quote_usd_per_system": 5000})
    assert two[1] > 1 and two[0] == two[1]
    hgx = _ollama_parallel(catalog, {"system": "hgx-h100"}, target_output_tokens_per_s=70)
    assert hgx[1] > 1 and hgx[0] == hgx[1]


def test_an_ollama_server_on_one_gpu_launches_the_slots_the_plan_counts(catalog):
    s = Scenario.model_validate({"model": "qwen3:32b", "target_users": 50, "workload": {"preset": "chat-seat"},
                                 "platform": {"gpu": "rtx-5090", "gpus": 1, "quote_usd_per_system": 3000}})
    r = plan(s, catalog)
    assert r.capacity.cell.engine_slots == 20
    assert "OLLAMA_NUM_PARALLEL=20 ollama serve" in plan_launch(catalog, s, r).text


def test_a_vllm_plan_leaves_the_running_cap_to_the_engine(catalog):
    s = Scenario.model_validate(yaml.safe_load(EXAMPLE.read_text()))
    r = plan(s, catalog)
    assert r.capacity.cell.stated_max_num_seqs is None
    assert "--max-num-seqs" not in plan_launch(catalog, s, r).text
