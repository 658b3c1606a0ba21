"""A search pick with separate prefill and decode pools launches on the hosts it pays for: each rented
instance is a host of its GPUs, every worker pinned within its host, the router pointing at the host
that runs it; and ``replicas`` means the decode pool's instances in every field of the pick."""

from __future__ import annotations

import re

import pytest

from inferplan.search.request import SearchRequest
from inferplan.search.run import search

DISAGGREGATING = ("vllm", "sglang", "trtllm")


@pytest.fixture(scope="module")
def rented(catalog):
    """qwen3-8b on GB200, rented in 4-GPU instances: prefill TP4 + decode TP4 picks take two instances."""
    return search(SearchRequest(models=("qwen3-8b",), request_rate_per_s=2.0, input_len=1000, output_len=200,
                                accelerators=("gb200",), pricing="rent", engines=DISAGGREGATING, speculative=False,
                                disaggregated=True, top=300), catalog)


def _spread(res, engine: str):
    # pools over several rented 4-GPU trays, each engine instance within one (a wider one takes hosts of its own)
    picks = [r for r in res.results if r.engine == engine and r.disaggregated and r.gpus > r.rented_instance_gpus
             and all(p.gpus_per_instance <= r.rented_instance_gpus for p in r.pools)]
    assert picks, f"no {engine} pick over several rented instances"
    return picks


@pytest.mark.parametrize("engine", DISAGGREGATING)
def test_no_worker_of_a_rented_pick_names_a_gpu_its_instance_lacks(rented, engine):
    for r in _spread(rented, engine):
        devices = [int(i) for line in r.deploy.splitlines() if line.endswith(" &")
                   for i in re.search(r"CUDA_VISIBLE_DEVICES=([\d,]+)", line).group(1).split(",")]
        assert devices and max(devices) < r.rented_instance_gpus, (r.rank, r.deploy)
        assert "HOST1" in r.deploy  # a worker on the second host
        router = r.deploy.split("EOF")[-1] if engine == "trtllm" else r.deploy.splitlines()[-1]
        assert "HOST1" in (router if engine != "trtllm" else r.deploy.split("disagg_config.yaml")[1]), r.deploy


def test_replicas_is_the_decode_pools_in_the_json_the_scenario_and_the_simulation(rented):
    pools = [r for r in rented.results if r.disaggregated]
    assert pools
    for r in pools:
        assert r.replicas == r.decode_instances == r.pools[1].instances
        assert r.scenario["replicas"] == r.replicas == r.simulate["replicas"]
        assert r.prefill_instances == r.pools[0].instances == r.scenario["prefill_pool"]["instances"]


def _deploy_flags(r) -> list[str]:
    """The ``inferplan deploy`` flags a pick with separate pools states (its decode instance, its pools)."""
    pre = r.pools[0]
    argv = ["deploy", "--model", r.model, "--gpu", r.accelerator, "--gpus", str(r.gpus_per_instance),
            "-tp", str(r.tensor_parallel_size), "-pp", str(r.pipeline_parallel_size), "-q", r.quantization,
            "--kv-cache-dtype", r.kv_cache_dtype, "--engine", r.engine, "--max-model-len", str(r.max_model_len),
            "--max-num-seqs", str(r.max_num_seqs_per_rank), "--prefill-instances", str(r.prefill_instances),
            "--prefill-tensor-parallel-size", str(pre.tensor_parallel_size),
            "--prefill-pipeline-parallel-size", str(pre.pipeline_parallel_size), "--replicas", str(r.replicas)]
    if r.expert_parallel:
        argv += ["-dp", str(r.data_parallel_size), "--enable-expert-parallel"]
    if pre.expert_parallel:
        argv += ["--prefill-data-parallel-size", str(pre.data_parallel_size), "--prefill-expert-parallel"]
    if r.speculative_tokens:
        argv += ["--speculative-tokens", str(r.speculative_tokens), "--speculative-method", "mtp"]
    if r.rented_instance_gpus:
        argv += ["--host-gpus", str(r.rented_instance_gpus)]
    return argv


@pytest.mark.parametrize("engine", DISAGGREGATING)
def test_deploy_with_a_picks_flags_prints_its_launch(rented, engine):
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    picks = [p for p in rented.results if p.engine == engine and p.disaggregated]
    assert picks, f"no {engine} pick with separate pools"
    for r in picks[:2]:
        out = CliRunner().invoke(app, _deploy_flags(r))
        assert out.exit_code == 0, out.output
        assert out.stdout.strip() == r.deploy.strip()


@pytest.mark.parametrize("engine", DISAGGREGATING)
def test_a_picks_pools_as_kubernetes_request_exactly_its_gpus(rented, engine, catalog):
    import yaml

    from inferplan.deploy.pools_plan import PrefillLayout, pools_plan
    from inferplan.inputs.deployment import Deployment

    r = _spread(rented, engine)[0]
    d = Deployment(model=r.model, gpu=r.accelerator, gpus=r.gpus_per_instance, tensor_parallel_size=r.tensor_parallel_size,
                   quantization=r.quantization, engine=r.engine, max_model_len=r.max_model_len,
                   max_num_seqs=r.max_num_seqs_per_rank)
    layout = PrefillLayout(prefill_instances=r.prefill_instances, prefill_tensor_parallel_size=r.pools[0].tensor_parallel_size,
                           replicas=r.replicas, host_gpus=r.rented_instance_gpus)
    plan = pools_plan(d, layout, catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    deployments = {x["metadata"]["labels"]["app.kubernetes.io/component"]: x for x in docs if x["kind"] == "Deployment"}
    assert set(deployments) == {"prefill", "decode", "router"}
    requested = 0
    for role, pool in (("prefill", r.pools[0]), ("decode", r.pools[1])):
        spec = deployments[role]["spec"]
        gpus = next(iter(spec["template"]["spec"]["containers"][0]["resources"]["requests"].values()))
        assert (spec["replicas"], gpus) == (pool.instances, pool.gpus_per_instance)
        requested += spec["replicas"] * gpus
    assert requested == r.gpus == plan.gpus
    assert "resources" not in deployments["router"]["spec"]["template"]["spec"]["containers"][0]
    services = {x["metadata"]["name"] for x in docs if x["kind"] == "Service"}
    router = deployments["router"]["spec"]["template"]["spec"]["containers"][0]
    named = " ".join(router["args"]) + " ".join(str(x.get("data")) for x in docs if x["kind"] == "ConfigMap")
    assert all(deployments[role]["metadata"]["name"] in named for role in ("prefill", "decode")), named
    assert deployments["router"]["metadata"]["name"] in services
