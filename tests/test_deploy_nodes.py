"""One instance past one host: a command per host (head and workers) in the engine's own flags, or a refusal."""

import json
import os
import shlex
import subprocess

import pytest
import yaml

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import kubernetes_manifest, launch_command
from inferplan.deploy.command import engine_flags
from inferplan.errors import InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment

CATALOG = load_catalog()
H100_HOST_GPUS = 8  # an H100 SXM scale-up domain (one HGX board)


def _command(engine: str = "vllm", **kw):
    kw = {"model": "qwen3-8b", "gpu": "h100-sxm", "tensor_parallel_size": 8, "pipeline_parallel_size": 2, **kw}
    return launch_command(Deployment(engine=engine, **kw), CATALOG)


def _notes(**kw) -> str:
    return " ".join(launch_command(Deployment(model="qwen3-8b", **kw), CATALOG).notes)


def _options(argv: tuple[str, ...]) -> list[str]:
    return [a for a in argv if a.startswith("-") and not a.lstrip("-").replace(".", "").isdigit()]


def _value(argv: tuple[str, ...], flag: str) -> str:
    assert argv.count(flag) == 1, f"{flag} appears {argv.count(flag)} times in {argv}"
    return argv[argv.index(flag) + 1]


def test_an_instance_past_one_host_says_it_runs_over_hosts_and_one_within_does_not():
    assert "needs 2 hosts" in _notes(gpu="h100-sxm", gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2)
    assert "needs 2 hosts" in _notes(system="hgx-h100", gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2)
    assert "hosts" not in _notes(gpu="h100-sxm", gpus=8)
    assert "hosts" not in _notes(system="hgx-h100", gpus=16, tensor_parallel_size=8)  # two copies of one host each


@pytest.mark.parametrize("tp, pp, hosts", [(8, 2, 2), (8, 4, 4), (16, 1, 2), (4, 3, 2), (8, 1, 1)])
def test_the_hosts_are_the_instances_gpus_over_a_hosts_rounded_up(tp, pp, hosts):
    command = _command(tensor_parallel_size=tp, pipeline_parallel_size=pp)
    assert command.hosts == hosts == -(-tp * pp // H100_HOST_GPUS)
    assert len(command.host_commands) == (hosts if hosts > 1 else 0)
    assert [h.role for h in command.host_commands] == (["head"] + ["worker"] * (hosts - 1) if hosts > 1 else [])


def test_vllm_at_its_current_release_starts_every_host_with_its_node_rank_and_only_the_head_serves():
    command = _command()
    flags = engine_flags(CATALOG, "vllm")
    head, worker = command.host_commands
    assert command.argv == head.argv and command.text == head.text
    for host in command.host_commands:
        assert host.argv[:2] == ("vllm", "serve")
        assert set(_options(host.argv[2:])) <= flags.accepts()
        assert tuple(shlex.split(host.text)) == host.argv
        assert _value(host.argv, "--nnodes") == "2" and _value(host.argv, "--master-addr") == "$HEAD_IP"
        assert _value(host.argv, "--node-rank") == str(host.host)
    assert "--headless" in worker.argv and "--headless" not in head.argv
    assert _value(head.argv, "--port") == "8000" and "--port" not in worker.argv and "--host" not in worker.argv
    assert command.flags_checked_against == "0.11.1"  # the release that has --nnodes


def test_vllm_before_its_native_multi_host_launch_joins_a_ray_cluster_and_serves_from_the_head():
    command = _command(engine_version="0.10.2")
    head, worker = command.host_commands
    assert "--nnodes" not in head.argv and "--headless" not in head.argv
    assert _value(head.argv, "--distributed-executor-backend") == "ray"
    assert any(line.startswith("ray start --head") for line in head.before)
    assert worker.argv[:2] == ("ray", "start") and "--address=$HEAD_IP:6379" in worker.argv
    assert "vllm" not in worker.argv  # the head alone starts vLLM over the cluster


def test_an_older_vllm_spreads_whole_data_parallel_ranks_over_hosts_and_only_the_head_serves():
    command = _command(engine_version="0.10.2", model="qwen3-30b-a3b", tensor_parallel_size=4, pipeline_parallel_size=1,
                       data_parallel_size=4, enable_expert_parallel=True)
    flags = engine_flags(CATALOG, "vllm")
    head, worker = command.host_commands
    for host in command.host_commands:
        assert set(_options(host.argv[2:])) <= set(flags.accepted) and "--nnodes" not in host.argv
        assert _value(host.argv, "--data-parallel-size") == "4" and _value(host.argv, "--data-parallel-size-local") == "2"
        assert _value(host.argv, "--data-parallel-address") == "$HEAD_IP"
    assert _value(worker.argv, "--data-parallel-start-rank") == "2" and "--headless" in worker.argv
    assert "--data-parallel-start-rank" not in head.argv and "--headless" not in head.argv
    assert _value(head.argv, "--port") == "8000" and "--port" not in worker.argv


@pytest.mark.parametrize("release", ("0.10.2", None))
def test_vllm_refuses_data_parallel_ranks_wider_than_a_host(release):
    # each rank TP 8 × PP 2: not whole on one host; --nnodes would lay every rank over all four hosts
    with pytest.raises(UnsupportedSettingError) as err:
        _command(engine_version=release, tensor_parallel_size=8, pipeline_parallel_size=2, data_parallel_size=2,
                 enable_expert_parallel=True)
    assert err.value.field == "tensor_parallel_size"
    assert "whole on one host" in str(err.value) and "without data-parallel ranks" in str(err.value)


def test_vllm_at_its_current_release_keeps_each_data_parallel_rank_whole_on_one_host():
    # vLLM's --nnodes alone (data_parallel_size_local defaulting to data_parallel_size) would split each TP 4
    # rank 2 + 2 over the hosts; --data-parallel-size-local puts two whole ranks on each
    command = _command(model="llama-3.3-70b", tensor_parallel_size=4, pipeline_parallel_size=1, data_parallel_size=4)
    head, worker = command.host_commands
    for host in command.host_commands:
        assert _value(host.argv, "--data-parallel-size-local") == "2" and "--nnodes" not in host.argv
        assert _value(host.argv, "--data-parallel-address") == "$HEAD_IP"
    assert _value(worker.argv, "--data-parallel-start-rank") == "2" and "--headless" in worker.argv
    assert "--data-parallel-start-rank" not in head.argv


def test_sglang_gives_every_host_the_heads_address_and_its_rank():
    command = _command("sglang")
    flags = engine_flags(CATALOG, "sglang")
    head, worker = command.host_commands
    for host in command.host_commands:
        assert set(_options(host.argv[3:])) <= set(flags.accepted)
        assert _value(host.argv, "--dist-init-addr") == "$HEAD_IP:20000" and _value(host.argv, "--nnodes") == "2"
        assert _value(host.argv, "--node-rank") == str(host.host)
        assert tuple(shlex.split(host.text)) == host.argv
    assert _value(head.argv, "--port") == "30000" and "--port" not in worker.argv


@pytest.mark.parametrize("engine", ("trtllm", "ktransformers"))
def test_an_engine_without_a_multi_host_launch_says_its_one_host_command_does_not_hold_the_instance(engine):
    command = _command(engine, model="qwen3-30b-a3b", tensor_parallel_size=16, pipeline_parallel_size=1)
    assert command.hosts == 1 and command.host_commands == ()
    said = " ".join(command.notes)
    assert "needs 2 hosts" in said and f"no multi-host launch for {engine}" in said and "(vllm, sglang" in said
    with pytest.raises(UnsupportedSettingError) as err:  # one pod of 16 GPUs no node holds
        kubernetes_manifest(Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", engine=engine, tensor_parallel_size=16),
                            CATALOG)
    assert err.value.field == "engine" and "vllm" in err.value.allowed and "sglang" in err.value.allowed


MACS = dict(model="qwen3-235b-a22b", gpu="apple-m3-ultra", engine="llamacpp")


@pytest.mark.parametrize("hosts", (2, 3))
def test_llamacpp_spreads_pipeline_stages_over_hosts_with_rpc_servers(hosts):
    """llama.cpp tools/rpc: rpc-server on each other host (bound past 127.0.0.1, its default, on port 50052),
    llama-server --rpc host:port,... on host 0, which splits the layers over its GPUs and theirs."""
    command = launch_command(Deployment(**MACS, gpus=hosts, pipeline_parallel_size=hosts), CATALOG)
    head, *workers = command.host_commands
    assert command.hosts == hosts and head.argv[0] == "llama-server"
    assert _value(head.argv, "--rpc") == ",".join(f"$HOST{i}_IP:50052" for i in range(1, hosts))
    assert set(_options(head.argv[1:])) <= set(engine_flags(CATALOG, "llamacpp").accepted)
    for w in workers:
        assert w.argv == ("rpc-server", "--host", "0.0.0.0", "--port", "50052") and "--port" in head.argv
    assert subprocess.run(["bash", "-n", "-c", command.script], check=False).returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOST")}
    run = subprocess.run(["bash", "-c", head.script.replace(head.text, "echo started")], env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "HOST1_IP" in run.stderr and "started" not in run.stdout
    given = {f"HOST{i}_IP": f"10.0.0.{i}" for i in range(1, hosts)}
    run = subprocess.run(["bash", "-c", head.script.replace(head.text, "echo started " + head.text.split("--rpc ")[1])],
                         env={**env, **given}, capture_output=True, text=True, check=False)
    assert run.stdout.startswith("started " + ",".join(f"10.0.0.{i}:50052" for i in range(1, hosts)))


def test_llamacpp_over_hosts_is_refused_for_tensor_parallel_ranks_and_as_a_manifest():
    with pytest.raises(UnsupportedSettingError) as err:
        launch_command(Deployment(model="llama-3.1-70b", gpu="h100-sxm", engine="llamacpp", tensor_parallel_size=16),
                       CATALOG)
    assert err.value.field == "tensor_parallel_size"
    with pytest.raises(UnsupportedSettingError) as err:
        kubernetes_manifest(Deployment(**MACS, gpus=2, pipeline_parallel_size=2), CATALOG)
    assert err.value.field == "format"


def test_fits_two_macs_suggestion_is_the_rpc_launch_deploy_writes():
    from inferplan.memory.suggest import fit_or_suggest
    d = Deployment(**MACS)
    more = next(s for s in fit_or_suggest(d, CATALOG).suggestions if s.kind == "gpus")
    assert more.changes["pipeline_parallel_size"] == more.changes["gpus"] == 2
    command = launch_command(d.model_copy(update=more.changes), CATALOG)
    assert command.hosts == 2 and command.host_commands[1].argv[0] == "rpc-server"


def test_gpus_that_do_not_split_evenly_over_hosts_are_refused():
    with pytest.raises(InvalidScenarioError) as err:
        _command(tensor_parallel_size=1, pipeline_parallel_size=9, model="llama-3.1-70b")  # 9 GPUs: 2 hosts of 4.5
    assert err.value.field == "tensor_parallel_size"


def test_each_hosts_lines_are_a_shell_script_that_stops_without_the_heads_address():
    command = _command()
    assert subprocess.run(["bash", "-n", "-c", command.script], check=False).returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "HEAD_IP"}
    worker = command.host_commands[1]
    run = subprocess.run(["bash", "-c", worker.script.replace(worker.text, "echo started")], env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "HEAD_IP" in run.stderr and "started" not in run.stdout
    run = subprocess.run(["bash", "-c", worker.script.replace(worker.text, "echo started")], capture_output=True,
                         text=True, check=False, env={**env, "HEAD_IP": "10.0.0.1"})
    assert run.stdout.strip() == "started"


def _lws(**kw) -> tuple[dict, dict]:
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", **kw)
    docs = list(yaml.safe_load_all(kubernetes_manifest(d, CATALOG)))
    assert [doc["kind"] for doc in docs] == ["LeaderWorkerSet", "Service"]
    assert docs[0]["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    return docs[0], docs[1]


@pytest.mark.parametrize("tp, pp, gpus", [(8, 2, 16), (8, 2, 32), (4, 3, 24)])
def test_a_multi_host_instance_is_a_leader_worker_set_of_one_pod_per_host(tp, pp, gpus):
    lws, service = _lws(tensor_parallel_size=tp, pipeline_parallel_size=pp, gpus=gpus)
    template = lws["spec"]["leaderWorkerTemplate"]
    hosts = -(-tp * pp // H100_HOST_GPUS)
    assert template["size"] == hosts and lws["spec"]["replicas"] == gpus // (tp * pp)
    leader = template["leaderTemplate"]["spec"]["containers"][0]
    worker = template["workerTemplate"]["spec"]["containers"][0]
    for container in (leader, worker):
        assert container["resources"]["limits"] == container["resources"]["requests"] == {"nvidia.com/gpu": tp * pp // hosts}
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
        assert _value(tuple(container["args"]), "--master-addr") == "$(LWS_LEADER_ADDRESS)"
    assert _value(tuple(worker["args"]), "--node-rank") == "$(LWS_WORKER_INDEX)" and "--headless" in worker["args"]
    assert "readinessProbe" in leader and "readinessProbe" not in worker and "ports" not in worker
    leader_labels = template["leaderTemplate"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= leader_labels.items()
    assert not service["spec"]["selector"].items() <= template["workerTemplate"]["metadata"]["labels"].items()
    assert service["spec"]["ports"][0]["port"] == leader["ports"][0]["containerPort"]


def test_a_ray_launch_is_refused_as_a_leader_worker_set():
    with pytest.raises(UnsupportedSettingError) as err:
        _lws(tensor_parallel_size=8, pipeline_parallel_size=2, engine_version="0.10.2")
    assert err.value.field == "engine_version" and "LeaderWorkerSet" in str(err.value)


SPANNING = ["deploy", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--tensor-parallel-size", "8",
            "--pipeline-parallel-size", "2"]


def test_the_cli_prints_every_hosts_lines_and_its_json_lists_them():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    runner = CliRunner()
    r = runner.invoke(app, SPANNING)
    assert r.exit_code == 0, r.output
    assert "# host 0 of 2 (head" in r.stdout and "# host 1 of 2 (worker" in r.stdout and "--headless" in r.stdout
    command = json.loads(runner.invoke(app, [*SPANNING, "--json"]).stdout)["command"]
    assert command["hosts"] == 2 and [h["role"] for h in command["host_commands"]] == ["head", "worker"]
    assert command["argv"] == command["host_commands"][0]["argv"]
    r = runner.invoke(app, [*SPANNING, "--engine", "trtllm", "--format", "k8s", "--json"])
    assert r.exit_code == 2 and json.loads(r.stdout)["error"]["field"] == "--engine"


def test_the_api_answers_the_hosts_and_names_the_engine_it_refuses(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "test.db"))
    deployment = {"model": "qwen3-8b", "gpu": "h100-sxm", "tensor_parallel_size": 8, "pipeline_parallel_size": 2}
    r = client.post("/api/deploy", json={"deployment": deployment, "format": "k8s"})
    assert r.status_code == 200, r.text
    assert r.json()["command"]["hosts"] == 2 and len(r.json()["command"]["host_commands"]) == 2
    assert [d["kind"] for d in yaml.safe_load_all(r.json()["manifest"])] == ["LeaderWorkerSet", "Service"]
    r = client.post("/api/deploy", json={"deployment": {**deployment, "engine": "trtllm"}, "format": "k8s"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "deployment.engine"


def test_a_search_pick_over_two_systems_carries_every_hosts_command():
    from inferplan.search.request import SearchRequest, Targets
    from inferplan.search.run import search

    req = SearchRequest(models=("deepseek-v3",), request_rate_per_s=0.2, input_len=2000, output_len=200,
                        targets=Targets(ttft_p95_s=10), systems=("hgx-h100",), engines=("vllm",), disaggregated=False,
                        pricing="buy", top=1)
    pick = search(req, CATALOG).results[0]
    assert pick.tensor_parallel_size * pick.pipeline_parallel_size == 16  # DeepSeek-V3 needs two 8-GPU systems
    assert "# host 0 of 2 (head" in pick.deploy and "# host 1 of 2 (worker" in pick.deploy
    assert pick.deploy.count("--headless") == 1 and pick.deploy.count("--nnodes 2") == 2


def test_a_multi_host_argument_with_an_unknown_placeholder_is_refused_on_load():
    from pydantic import ValidationError

    raw = engine_flags(CATALOG, "vllm").model_dump(mode="json")
    raw["multi_host"][0]["every_host"] = ["--node-rank", "{rank}"]
    with pytest.raises(ValidationError, match="unknown placeholders: {rank}"):
        type(engine_flags(CATALOG, "vllm")).model_validate(raw)
    for host in _command(model="qwen3-30b-a3b", tensor_parallel_size=4, data_parallel_size=4, pipeline_parallel_size=1,
                         enable_expert_parallel=True, engine_version="0.10.2").host_commands:
        assert not [a for a in host.argv if "{" in a]  # every placeholder filled


def test_data_parallel_ranks_over_hosts_are_named_as_ranks_not_one_instance():
    said = " ".join(_command(model="llama-3.3-70b", tensor_parallel_size=4, pipeline_parallel_size=1,
                             data_parallel_size=4).notes)
    assert "4 data-parallel ranks of 4 GPUs (TP 4 × PP 1), 16 GPUs in all" in said
    assert "one instance of 16 GPUs" not in said


@pytest.mark.parametrize("system", ("gb200-nvl72", "gb300-nvl72"))
def test_an_nvl72_instance_past_one_compute_tray_is_launched_over_trays(system):
    # an NVL72's OS host is a 4-GPU compute tray (its NVLink domain is all 72): TP 8 runs on two trays
    tray = next(s for s in CATALOG.systems if s.id == system).os_host_gpus
    assert tray is not None and tray.value == 4 and tray.source in CATALOG.sources
    command = launch_command(Deployment(model="deepseek-v3", system=system, tensor_parallel_size=8), CATALOG)
    assert command.hosts == 2 and [h.role for h in command.host_commands] == ["head", "worker"]
    assert _value(command.host_commands[1].argv, "--nnodes") == "2"
    lws = next(yaml.safe_load_all(kubernetes_manifest(
        Deployment(model="deepseek-v3", system=system, tensor_parallel_size=8), CATALOG)))
    assert lws["kind"] == "LeaderWorkerSet" and lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert worker["resources"]["limits"] == {"nvidia.com/gpu": 4}
    assert launch_command(Deployment(model="llama-3.3-70b", system=system, tensor_parallel_size=4), CATALOG).hosts == 1


def test_sglang_refuses_whole_model_copies_over_hosts_and_keeps_dp_attention():
    # plain --dp-size with --nnodes splits each TP 4 copy 2 + 2 over the hosts and runs GPU ids past 7
    with pytest.raises(UnsupportedSettingError) as err:
        _command("sglang", model="llama-3.3-70b", tensor_parallel_size=4, pipeline_parallel_size=1, data_parallel_size=4)
    assert err.value.field == "data_parallel_size" and "router" in str(err.value) and "DP attention" in str(err.value)
    command = _command("sglang", model="deepseek-v3", tensor_parallel_size=8, pipeline_parallel_size=1,
                       data_parallel_size=2, enable_expert_parallel=True)
    assert command.hosts == 2 and "--enable-dp-attention" in command.argv and _value(command.argv, "--nnodes") == "2"


def test_a_flag_of_a_later_release_says_the_release_it_needs_not_the_source_tree_read():
    said = " ".join(_command().notes)  # TP 8 × PP 2: --nnodes, from vLLM 0.11.1
    assert "--nnodes" in said and "needs vllm 0.11.1 or later" in said and "main at" not in said


def test_a_bare_gb200_gpu_over_its_nvl72_domain_is_launched_over_compute_trays():
    # a search lays an NVL72 cell out as bare GB200 GPUs of the 72-GPU domain: their OS host is still a tray
    command = _command(model="deepseek-v3", gpu="gb200", tensor_parallel_size=8, pipeline_parallel_size=1)
    assert command.hosts == 2 and "compute tray holds (4 GPUs)" in " ".join(command.notes)
    assert _command(model="qwen3-8b", gpu="h100-sxm", tensor_parallel_size=8, pipeline_parallel_size=1).hosts == 1


def test_a_leader_worker_set_tells_its_pods_the_leader_address_itself():
    """Under k8s the hosts' note names the address the LeaderWorkerSet sets, not a HEAD_IP the user would set."""
    from inferplan.deploy import launch_plan

    d = Deployment(model="qwen3-8b", gpu="h100-sxm", tensor_parallel_size=8, pipeline_parallel_size=2)
    notes = " ".join(launch_plan(d, CATALOG, output_format="k8s").command.notes)
    assert "LWS_LEADER_ADDRESS" in notes and "HEAD_IP" not in notes
    assert "HEAD_IP set to host 0's address" in " ".join(launch_plan(d, CATALOG).command.notes)


def test_a_release_whose_only_multi_host_launch_is_ray_is_refused_as_a_leader_worker_set_at_engine_version():
    """docs/search.md: the refusal names engine_version (the release the native launch needs), the Ray one beside it."""
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", tensor_parallel_size=8, pipeline_parallel_size=2,
                   engine_version="0.10.0")
    with pytest.raises(UnsupportedSettingError) as exc:
        kubernetes_manifest(d, CATALOG)
    assert exc.value.field == "engine_version" and "LeaderWorkerSet" in str(exc.value) and "ray" in str(exc.value)
