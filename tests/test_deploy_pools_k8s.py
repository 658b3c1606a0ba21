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


def test_several_sglang_prefill_pods_are_each_found_by_the_router_with_its_bootstrap_port(catalog):
    """Behind one balancing Service the router's request and the decode's bootstrap lookup could land on different
    prefill pods: SGLang's router finds each pool's pods itself (service discovery by label), each prefill pod's
    bootstrap port from its annotation, under a ServiceAccount allowed to watch the namespace's pods."""
    plan = pools_plan(DEP, PrefillLayout(prefill_instances=3, replicas=2), catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    by_kind = {}
    for x in docs:
        by_kind.setdefault(x["kind"], []).append(x)
    pools = {x["metadata"]["labels"]["app.kubernetes.io/component"]: x for x in by_kind["Deployment"]}
    prefill, decode, router = pools["prefill"], pools["decode"], pools["router"]
    assert prefill["spec"]["replicas"] == 3 and decode["spec"]["replicas"] == 2
    assert sum(p["spec"]["replicas"] * p["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
               ["nvidia.com/gpu"] for p in (prefill, decode)) == plan.gpus == 5  # each pool in its instance's layout
    bootstrap = prefill["spec"]["template"]["metadata"]["annotations"]["sglang.ai/bootstrap-port"]
    container = prefill["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(bootstrap) == ports["kv-0"] != ports["http"]  # the bootstrap server the pod starts
    args = router["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--prefill" not in args and "--service-discovery" in args
    for role, pool in (("prefill", prefill), ("decode", decode)):  # each selector matches its pool's pods' label
        key, value = args[args.index(f"--{role}-selector") + 1].split("=")
        assert pool["spec"]["template"]["metadata"]["labels"][key] == value
    port = int(args[args.index("--service-discovery-port") + 1])
    assert all(p["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == port for p in (prefill, decode))
    assert args[args.index("--service-discovery-namespace") + 1] == "$(POD_NAMESPACE)"
    pod = router["spec"]["template"]["spec"]
    assert pod["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    role = by_kind["Role"][0]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    binding = by_kind["RoleBinding"][0]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == pod["serviceAccountName"] == by_kind["ServiceAccount"][0]["metadata"]["name"]
    assert "StatefulSet" not in by_kind


def test_without_pod_discovery_the_router_names_each_prefill_pod_of_a_statefulset_within_a_bound(catalog, monkeypatch):
    import inferplan.deploy.pools_plan as module
    from inferplan.deploy.pools import MAX_LISTED_WORKERS
    from inferplan.errors import InvalidScenarioError

    flags = module.engine_flags(catalog, "sglang")
    bare = flags.model_copy(update={"disaggregation": flags.disaggregation.model_copy(update={"pod_discovery": None})})
    monkeypatch.setattr(module, "engine_flags", lambda c, e: bare)
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
    with pytest.raises(InvalidScenarioError) as refused:
        pools_plan(DEP, PrefillLayout(prefill_instances=MAX_LISTED_WORKERS + 1), catalog, output_format="k8s")
    assert refused.value.field == "prefill_instances"


@pytest.mark.parametrize("engine", ("vllm", "trtllm"))
def test_engines_whose_peers_use_the_pods_own_address_keep_several_prefill_pods(catalog, engine):
    d = DEP.model_copy(update={"engine": engine})
    plan = pools_plan(d, PrefillLayout(prefill_instances=2, replicas=2), catalog, output_format="k8s")
    assert _services(plan.manifest)["prefill"]


def test_the_vllm_router_pod_runs_a_router_its_image_ships(catalog):
    """vLLM's toy proxy lives under tests/, which the vllm/vllm-openai image does not copy: the router pod runs
    vllm-router from its own image, one --prefill and one --decode URL per pool Service."""
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", engine="vllm", max_model_len=4096)
    plan = pools_plan(d, PrefillLayout(prefill_instances=2, replicas=1), catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    router = next(x for x in docs if x["kind"] == "Deployment" and x["metadata"]["name"].endswith("-router"))
    container = router["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "vllm/vllm-router:v0.1.17" != plan.image  # a release tag, never nightly
    assert container["command"] == ["vllm-router"]
    assert not any(a.startswith("tests/") or a.endswith(".py") for a in container["args"])
    services = _services(plan.manifest)
    for role in ("prefill", "decode"):
        url = container["args"][container["args"].index(f"--{role}") + 1]
        assert url == f"http://{services[role]['metadata']['name']}:{services[role]['spec']['ports'][0]['port']}"


def test_a_pool_of_several_expert_parallel_instances_is_a_manifest_with_one_instances_memory_note(catalog):
    """Two DP16 prefill instances on GB200 NVL72: the pool's Deployment holds 32 GPUs, and the note of the KV cache
    its connector leaves is one instance's, as the shell script plans it."""
    d = Deployment(model="deepseek-v3", system="gb200-nvl72", engine="vllm", data_parallel_size=32,
                   enable_expert_parallel=True)
    layout = PrefillLayout(prefill_instances=2, prefill_data_parallel_size=16, prefill_enable_expert_parallel=True,
                           replicas=3)
    plan = pools_plan(d, layout, catalog, output_format="k8s")
    shell = pools_plan(d, layout, catalog)
    kv = [n for n in plan.notes if n.startswith("prefill pool: with NixlConnector")]
    assert kv and kv == [n for n in shell.launch.notes if n.startswith("prefill pool: with NixlConnector")]
    assert "deepseek" in plan.manifest.lower()
