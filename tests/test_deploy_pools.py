"""A disaggregated deployment's launch script works as printed: every prefill and decode worker on
its own GPUs, port and options file, with the options the engine's workers need, and the router
that joins them; a search pick carries the notes ``inferplan deploy`` prints."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from inferplan.deploy.command import launch_command
from inferplan.deploy.pools import pools_launch
from inferplan.inputs.deployment import Deployment
from inferplan.search.deploying import launch_text
from inferplan.search.space import Cell, Platform

DISAGGREGATING = ("vllm", "sglang", "trtllm")


def _pools(catalog, engine: str, prefill_instances: int = 2, decode_instances: int = 2, host_gpus: int | None = 8):
    d = Deployment(model="qwen3-32b", gpu="h100-sxm", quantization="fp8-block", engine=engine, max_model_len=8192)
    return pools_launch(catalog, d, d.model_copy(update={"max_num_seqs": 64}), prefill_instances=prefill_instances,
                        decode_instances=decode_instances, host_gpus=host_gpus)


@pytest.mark.parametrize("engine", DISAGGREGATING)
def test_every_worker_has_its_own_port_gpus_and_per_worker_ports(catalog, engine):
    pools = _pools(catalog, engine)
    assert len(pools.workers) == 4
    assert len({w.port for w in pools.workers}) == 4
    pinned = [w.env["CUDA_VISIBLE_DEVICES"] for w in pools.workers]
    assert len(set(pinned)) == 4 and all(pinned)
    for extra in catalog_rule(catalog, engine).worker_ports:  # NIXL side channel, SGLang bootstrap port
        values = [w.env.get(extra) or w.argv[w.argv.index(extra) + 1] for w in pools.workers]
        assert len(set(values)) == 4, (extra, values)
    lines = pools.script.splitlines()
    assert sum(line.endswith(" &") for line in lines) == 4  # workers in the background, the router last
    assert lines[-1] == shlex.join(pools.router)


def catalog_rule(catalog, engine):
    return next(f for f in catalog.engine_flags if f.engine == engine).disaggregation


@pytest.mark.parametrize("engine", DISAGGREGATING)
def test_the_router_reaches_every_worker(catalog, engine):
    pools = _pools(catalog, engine)
    reached = " ".join(pools.router) + " " + " ".join(f.text for f in pools.files)
    for worker in pools.workers:
        assert re.search(rf"\b{worker.port}\b", reached), (worker.port, reached)


def test_trtllm_workers_read_their_own_options_file_with_the_cache_transceiver(catalog):
    pools = _pools(catalog, "trtllm")
    names = {w.role: w.argv[w.argv.index("--extra_llm_api_options") + 1] for w in pools.workers}
    assert names["prefill"] != names["decode"]
    for f in pools.files:
        if f.path in names.values():
            assert yaml.safe_load(f.text)["cache_transceiver_config"]["backend"] == "DEFAULT"
    config = yaml.safe_load(next(f.text for f in pools.files if f.path == "disagg_config.yaml"))
    assert config["context_servers"]["urls"] == [f"localhost:{w.port}" for w in pools.workers if w.role == "prefill"]
    assert config["generation_servers"]["num_instances"] == 2
    assert pools.router == ("trtllm-serve", "disaggregated", "-c", "disagg_config.yaml")


def test_one_side_of_the_pools_carries_the_options_its_worker_needs(catalog):
    d = Deployment(model="qwen3-32b", gpu="h100-sxm", quantization="fp8-block", engine="trtllm")
    command = launch_command(d, catalog, role="prefill")
    assert "cache_transceiver_config" in yaml.safe_load(command.files[0].text)
    assert command.port == 8001  # where the router's config looks for it


def test_workers_past_a_hosts_gpus_start_on_the_next_host(catalog):
    pools = _pools(catalog, "sglang", prefill_instances=3, decode_instances=3, host_gpus=4)
    assert "http://HOST1:" in " ".join(pools.router)
    assert any("span 2 hosts" in n for n in pools.notes)
    assert max(int(w.env["CUDA_VISIBLE_DEVICES"]) for w in pools.workers) == 3


def _cell(catalog, engine: str, model: str, quantization: str, gpus: int = 1) -> Cell:
    accel = catalog.accelerators.records["h100-sxm"] if engine != "llamacpp" else catalog.accelerators.records["rtx-4090"]
    platform = Platform(id=f"{gpus}x-{accel.id}", accelerator=accel, system=None, gpus=gpus, domain_gpus=gpus)
    return Cell(model=model, platform=platform, quantization=quantization, quantization_label="native",
                kv_cache_dtype="auto", engine=engine, tensor_parallel_size=1, pipeline_parallel_size=1)


def test_a_search_pick_carries_the_notes_deploy_prints(catalog):
    cell = _cell(catalog, "llamacpp", "qwen3-4b", "gguf-q4_k_m", gpus=2)
    launch = launch_text(catalog, cell.deployment(4096), cell, replicas=2)
    assert any("placeholder" in n or "replace <" in n for n in launch.notes), launch.notes
    assert any("one of 2 copies" in n for n in launch.notes), launch.notes


def test_a_disaggregated_pick_carries_the_router_note(catalog):
    cell = _cell(catalog, "vllm", "qwen3-8b", "bf16")
    launch = launch_text(catalog, cell.deployment(4096), cell, prefill=(cell.deployment(4096), cell, 1))
    assert any(n.startswith("router:") for n in launch.notes)
    assert launch.text.splitlines()[-1].startswith("vllm-router --vllm-pd-disaggregation")


def test_amd_workers_are_pinned_with_the_rocm_variable(catalog):
    d = Deployment(model="qwen3-8b", gpu="mi300x", engine="vllm", max_model_len=8192)
    pools = pools_launch(catalog, d, d, prefill_instances=1, decode_instances=1)
    assert [w.env.get("ROCR_VISIBLE_DEVICES") for w in pools.workers] == ["0", "1"]
    assert all("CUDA_VISIBLE_DEVICES" not in w.env for w in pools.workers)


def test_vllm_workers_over_several_hosts_tell_the_nixl_handshake_their_hosts_address(catalog):
    """vLLM's NIXL side channel host defaults to localhost and is set when prefiller and decoder are on
    different machines (nixl_connector_usage.md); SGLang and TensorRT-LLM find their own addresses."""
    pools = _pools(catalog, "vllm", prefill_instances=2, decode_instances=2, host_gpus=2)
    assert {w.env["VLLM_NIXL_SIDE_CHANNEL_HOST"] for w in pools.workers} == {"$HOST_IP"}  # each host's own address
    lines = pools.script.splitlines()
    for host in range(2):  # each host checks HOST_IP is set before its workers start, and the shell expands it
        part = lines[lines.index(f"# on HOST{host}:") + 1:]
        assert part[0].startswith(': "${HOST_IP:?') and all(
            'VLLM_NIXL_SIDE_CHANNEL_HOST="$HOST_IP" ' in line for line in part[1:3]), part
    assert any("VLLM_NIXL_SIDE_CHANNEL_HOST" in n and "HOST_IP" in n for n in pools.notes)
    one_host = _pools(catalog, "vllm", host_gpus=8)
    assert {w.env["VLLM_NIXL_SIDE_CHANNEL_HOST"] for w in one_host.workers} == {"localhost"}
    for engine in ("sglang", "trtllm"):
        assert not any("HOST" in k for w in _pools(catalog, engine, host_gpus=2).workers for k in w.env)


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_a_vllm_pool_pod_takes_its_own_ip_for_the_handshake_and_exposes_the_side_channel(catalog, role):
    from inferplan.deploy.manifest import kubernetes_manifest

    d = Deployment(model="qwen3-32b", gpu="h100-sxm", gpus=1, quantization="fp8-block", engine="vllm", max_model_len=8192)
    docs = list(yaml.safe_load_all(kubernetes_manifest(d, catalog, role=role)))
    container = next(x for x in docs if x["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in container["env"]
    assert 5600 in [p["containerPort"] for p in container["ports"]]
    shell = launch_command(d, catalog, role=role)
    assert shell.env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == f"{role.upper()}_HOST"  # as the router note names it
    assert any("--prefill-instances" in n for n in shell.notes)  # where both pools are printed as the plan runs them


def test_separate_pools_on_an_engine_without_them_or_pool_flags_alone_are_refused_naming_the_flag_or_field():
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from inferplan.shells.api import create_app
    from inferplan.shells.cli import app

    base = ["deploy", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-model-len", "4096"]
    out = CliRunner().invoke(app, [*base, "--engine", "llamacpp", "-q", "gguf-q4_k_m", "--prefill-instances", "1"])
    assert out.exit_code == 2 and "--prefill-instances" in out.output and "vllm" in out.output
    out = CliRunner().invoke(app, [*base, "--engine", "vllm", "--prefill-tensor-parallel-size", "2"])
    assert out.exit_code == 2 and "--prefill-tensor-parallel-size" in out.output
    out = CliRunner().invoke(app, [*base, "--engine", "vllm", "--prefill-instances", "1", "--role", "decode"])
    assert out.exit_code == 2 and "--role" in out.output
    client = TestClient(create_app())
    dep = {"model": "qwen3-8b", "gpu": "h100-sxm", "max_model_len": 4096}
    for body, field in (({"deployment": {**dep, "engine": "llamacpp", "quantization": "gguf-q4_k_m"}, "prefill_instances": 1},
                         "prefill_instances"),
                        ({"deployment": {**dep, "engine": "vllm"}, "replicas": 2}, "replicas"),
                        ({"deployment": {**dep, "engine": "vllm"}, "prefill_instances": 1, "role": "prefill"}, "role")):
        r = client.post("/api/deploy", json=body)
        assert r.status_code == 422 and r.json()["error"]["field"] == field, r.json()


def test_the_api_prints_both_pools_as_the_cli_does(catalog):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from inferplan.shells.api import create_app
    from inferplan.shells.cli import app

    body = {"deployment": {"model": "qwen3-8b", "gpu": "h100-sxm", "engine": "sglang", "max_model_len": 4096},
            "prefill_instances": 2, "replicas": 3, "host_gpus": 4}
    r = TestClient(create_app()).post("/api/deploy", json=body)
    assert r.status_code == 200 and r.json()["gpus"] == 5
    out = CliRunner().invoke(app, ["deploy", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "sglang",
                                   "--max-model-len", "4096", "--prefill-instances", "2", "--replicas", "3",
                                   "--host-gpus", "4"])
    assert out.stdout.strip() == r.json()["launch"]["script"].strip()
    assert r.json()["launch"]["script"].count("--disaggregation-mode decode") == 3 and "# on HOST1:" in out.stdout


@pytest.mark.parametrize("engine", DISAGGREGATING)
def test_the_routers_recorded_port_is_the_one_it_listens_on(catalog, engine):
    rule = catalog_rule(catalog, engine)
    pools = _pools(catalog, engine)
    config = next((yaml.safe_load(f.text) for f in pools.files if f.path == "disagg_config.yaml"), None)
    port = config["port"] if config else int(pools.router[pools.router.index("--port") + 1])
    assert rule.router_port == port
