"""Separate pools on Kubernetes: each pool's Service forwards the ports its peers reach a worker at, and an engine
whose decode reaches the prefill at the host the router names has the router name each prefill pod."""

from __future__ import annotations

import pytest
import yaml

from inferplan.deploy.pools_plan import PrefillLayout, pools_plan
from inferplan.inputs.deployment import Deployment

DEP = Deployment(model="qwen3-8b", gpu="h100-sxm", engine="sglang", max_model_len=4096)


def _services(manifest: str) -> dict[str, dict]:
    return {x["metadata"]["labels"]["app.kubernetes.io/component"]: x for x in yaml.safe_load_all(manifest)
            if x["kind"] == "Service"}


def test_the_prefill_service_forwards_the_bootstrap_port_the_router_hands_over(catalog):
    plan = pools_plan(DEP, PrefillLayout(prefill_instances=1, replicas=2), catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    prefill = _services(plan.manifest)["prefill"]
    router = next(x for x in docs if x["kind"] == "Deployment" and x["metadata"]["name"].endswith("-router"))
    args = router["spec"]["template"]["spec"]["containers"][0]["args"]
    at = args.index("--prefill")
    host = args[at + 1].removeprefix("http://").split(":")[0]
    bootstrap = int(args[at + 2])
    assert host == prefill["metadata"]["name"]
    assert bootstrap in {p["port"] for p in prefill["spec"]["ports"]}, prefill["spec"]["ports"]
    pod = next(x for x in docs if x["kind"] == "Deployment" and x["metadata"]["name"] == host)
    named = {p["name"]: p["containerPort"] for p in pod["spec"]["template"]["spec"]["containers"][0]["ports"]}
    target = next(p["targetPort"] for p in prefill["spec"]["ports"] if p["port"] == bootstrap)
    assert named[target] == bootstrap


def test_several_sglang_prefill_pods_are_each_named_to_the_router_with_its_bootstrap_port(catalog):
    """Behind one balancing Service the router's request and the decode's bootstrap lookup could land on different
    prefill pods: each prefill pod is a StatefulSet pod behind a headless Service, named to the router alone."""
    plan = pools_plan(DEP, PrefillLayout(prefill_instances=3, replicas=2), catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    prefill = _services(plan.manifest)["prefill"]
    name = prefill["metadata"]["name"]
    assert prefill["spec"]["clusterIP"] == "None"
    pods = next(x for x in docs if x["metadata"]["name"] == name and x["kind"] != "Service")
    assert pods["kind"] == "StatefulSet" and pods["spec"]["serviceName"] == name and pods["spec"]["replicas"] == 3
    router = next(x for x in docs if x["kind"] == "Deployment" and x["metadata"]["name"].endswith("-router"))
    args = router["spec"]["template"]["spec"]["containers"][0]["args"]
    named = [(args[i + 1], int(args[i + 2])) for i, a in enumerate(args) if a == "--prefill"]
    ports = {p["port"] for p in prefill["spec"]["ports"]}
    assert [url for url, _ in named] == [f"http://{name}-{i}.{name}:30000" for i in range(3)], named
    assert all(port in ports for _, port in named)
    decode = _services(plan.manifest)["decode"]
    assert "clusterIP" not in decode["spec"] and f"http://{decode['metadata']['name']}:30000" in args


@pytest.mark.parametrize("engine", ("vllm", "trtllm"))
def test_engines_whose_peers_use_the_pods_own_address_keep_several_prefill_pods(catalog, engine):
    d = DEP.model_copy(update={"engine": engine})
    plan = pools_plan(d, PrefillLayout(prefill_instances=2, replicas=2), catalog, output_format="k8s")
    assert _services(plan.manifest)["prefill"]
