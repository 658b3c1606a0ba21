"""Separate pools of many instances get an answer proportionate to the request: identical workers are written
once (a Kubernetes workload with its replicas, a shell line with the hosts that run it), and where a router
must name every worker the count is bounded and refused beyond it, naming the field."""

from __future__ import annotations

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.deploy.pools import MAX_LISTED_WORKERS
from inferplan.deploy.pools_plan import PrefillLayout, pools_plan
from inferplan.inputs.deployment import Deployment
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

DEP = {"model": "qwen3-8b", "gpu": "h100-sxm", "max_model_len": 4096}
CLI = ["deploy", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-model-len", "4096"]


@pytest.mark.parametrize("engine", ("vllm", "trtllm"))
def test_thousands_of_instances_on_kubernetes_are_one_workload_per_pool(engine):
    body = {"deployment": {**DEP, "engine": engine}, "format": "k8s", "prefill_instances": 4096, "replicas": 4096,
            "host_gpus": 1}
    r = TestClient(create_app()).post("/api/deploy", json=body)
    assert r.status_code == 200, r.text[:400]
    answer = r.json()
    assert answer["launch"] is None  # the manifest is what runs: no per-worker shell script beside it
    docs = list(yaml.safe_load_all(answer["manifest"]))
    small = list(yaml.safe_load_all(TestClient(create_app()).post(
        "/api/deploy", json={**body, "prefill_instances": 1, "replicas": 1}).json()["manifest"]))
    assert [d["kind"] for d in docs] == [d["kind"] for d in small]  # as many documents as for one instance each
    workloads = [d for d in docs if d["kind"] == "Deployment" and d["spec"]["template"]["spec"]["containers"][0]
                 .get("resources")]
    assert sorted(d["spec"]["replicas"] for d in workloads) == [4096, 4096]
    gpus = sum(d["spec"]["replicas"] * d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
               ["nvidia.com/gpu"] for d in workloads)
    assert gpus == answer["gpus"] == 8192


@pytest.mark.parametrize("engine", ("vllm", "sglang", "trtllm"))
def test_hosts_that_run_the_same_workers_are_one_part_of_the_script(catalog, engine):
    d = Deployment(engine=engine, **DEP)
    plan = pools_plan(d, PrefillLayout(prefill_instances=64, replicas=64, host_gpus=1), catalog)
    launch = plan.launch
    assert [(g.first_host, g.last_host) for g in launch.hosts] == [(0, 63), (64, 127)]
    lines = launch.script.splitlines()
    assert sum(line.endswith(" &") for line in lines) == 2  # one worker line per pool
    assert "# on each of HOST0–HOST63 (64 hosts):" in lines and "# on each of HOST64–HOST127 (64 hosts):" in lines
    listed = " ".join(launch.router) + " ".join(f.text for f in launch.files)
    assert "HOST127" in listed and "HOST128" not in listed  # the router still names every worker's host


def test_workers_sharing_a_host_keep_their_own_gpus_and_ports_on_each_host(catalog):
    d = Deployment(engine="sglang", **DEP)
    launch = pools_plan(d, PrefillLayout(prefill_instances=16, replicas=16, host_gpus=8), catalog).launch
    assert [(g.first_host, g.last_host) for g in launch.hosts] == [(0, 1), (2, 3)]
    for group in launch.hosts:
        assert [w.env["CUDA_VISIBLE_DEVICES"] for w in group.workers] == [str(i) for i in range(8)]
        assert len({w.port for w in group.workers}) == 8
    urls = [launch.router[i + 1] for i, a in enumerate(launch.router) if a in ("--prefill", "--decode")]
    assert len(urls) == len(set(urls)) == 32  # every worker by its own host and port


@pytest.mark.parametrize(("stated", "field", "flag"), ((("prefill_instances", MAX_LISTED_WORKERS + 1), "prefill_instances",
                                                        "--prefill-instances"),
                                                       (("replicas", MAX_LISTED_WORKERS + 1), "replicas", "--replicas")))
def test_a_script_whose_router_would_name_too_many_workers_is_refused_naming_the_field(stated, field, flag):
    key, count = stated
    body = {"deployment": {**DEP, "engine": "vllm"}, "prefill_instances": 1, "host_gpus": 1, key: count}
    r = TestClient(create_app()).post("/api/deploy", json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == field, r.json()
    assert str(MAX_LISTED_WORKERS) in r.text and "format" in r.text.lower()
    args = {"prefill_instances": "1", **{key: str(count)}}
    out = CliRunner().invoke(app, [*CLI, "--engine", "vllm", "--host-gpus", "1", "--prefill-instances",
                                   args["prefill_instances"], *(("--replicas", args["replicas"]) if "replicas" in args else ())])
    assert out.exit_code == 2 and flag in out.output


def test_thousands_of_sglang_prefill_pods_are_found_by_the_router_not_listed(catalog):
    d = Deployment(engine="sglang", **DEP)
    plan = pools_plan(d, PrefillLayout(prefill_instances=4096, replicas=4096, host_gpus=1), catalog, output_format="k8s")
    few = pools_plan(d, PrefillLayout(prefill_instances=2, replicas=2, host_gpus=1), catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    assert [x["kind"] for x in docs] == [x["kind"] for x in yaml.safe_load_all(few.manifest)]
    router = next(x for x in docs if x["metadata"]["name"].endswith("-router") and x["kind"] == "Deployment")
    args = router["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--prefill" not in args and "--service-discovery" in args
    assert plan.manifest.count("http://") == 0  # no pod is named one by one


@pytest.mark.parametrize("engine", ("vllm", "sglang", "trtllm"))
def test_over_several_hosts_the_router_names_host_0_like_the_others(catalog, engine):
    # SGLang's router hands a prefill URL's host to the decode as the bootstrap host: localhost would be the decode's own
    d = Deployment(engine=engine, **DEP)
    several = pools_plan(d, PrefillLayout(prefill_instances=2, replicas=3, host_gpus=1), catalog).launch
    listed = " ".join(several.router) + " ".join(f.text for f in several.files)
    assert "HOST0" in listed and "localhost" not in listed
    one = pools_plan(d, PrefillLayout(prefill_instances=2, replicas=3), catalog).launch
    assert "localhost" in " ".join(one.router) + " ".join(f.text for f in one.files)  # every worker on the router's host


def test_the_module_s_host_ranges_are_ones_a_script_can_write():
    import re

    from inferplan.deploy import pools
    # a script's two pools hold at most MAX_LISTED_WORKERS instances each, so its hosts end before HOST1024
    hosts = [int(n) for n in re.findall(r"HOST(\d+)", pools.__doc__)]
    assert hosts and max(hosts) < 2 * MAX_LISTED_WORKERS
