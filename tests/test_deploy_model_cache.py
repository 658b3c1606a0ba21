"""A Kubernetes pod keeps the checkpoint it downloads on a model cache (a claim the user names, or a node
directory), reads the Hugging Face token from an optional Secret, gets a /dev/shm sized for several GPUs, and
has a startup window that covers the checkpoint's download at the assumed rate and its load."""

from __future__ import annotations

import pytest
import yaml

from inferplan.deploy.command import engine_flags
from inferplan.deploy.manifest import kubernetes_manifest
from inferplan.deploy.model_cache import DEFAULT_CLAIM, LOAD_WINDOW_S, PROBE_PERIOD_S
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory

DSV3 = Deployment(model="deepseek-v3", gpu="h200", tensor_parallel_size=8)


def _pod(manifest: str) -> dict:
    return next(x for x in yaml.safe_load_all(manifest) if x["kind"] == "Deployment")["spec"]["template"]["spec"]


def test_a_tp8_pod_mounts_the_model_cache_and_the_token(catalog):
    pod = _pod(kubernetes_manifest(DSV3, catalog))
    container = pod["containers"][0]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["model-cache"]["persistentVolumeClaim"]["claimName"] == DEFAULT_CLAIM
    assert {"name": "model-cache", "mountPath": "/root/.cache/huggingface"} in container["volumeMounts"]
    token = next(e for e in container["env"] if e["name"] == "HUGGING_FACE_HUB_TOKEN")
    assert token["valueFrom"]["secretKeyRef"]["optional"] is True
    assert volumes["dshm"]["emptyDir"]["sizeLimit"] == "32Gi"  # not the one-GPU example's 2Gi


def test_the_startup_window_covers_the_checkpoint_download(catalog):
    container = _pod(kubernetes_manifest(DSV3, catalog))["containers"][0]
    probe = container["startupProbe"]
    window_s = probe["failureThreshold"] * probe["periodSeconds"]
    rate = engine_flags(catalog, "vllm").model_cache.download_bytes_per_s.value
    checkpoint = plan_memory(DSV3, catalog).result.weights_bytes
    assert checkpoint > 600e9  # DeepSeek-V3's FP8 checkpoint
    assert window_s >= checkpoint / rate + LOAD_WINDOW_S > 1800  # longer than the load window alone
    assert probe["periodSeconds"] == PROBE_PERIOD_S


def test_the_user_names_the_cache(catalog):
    claim = _pod(kubernetes_manifest(DSV3, catalog, model_cache="pvc:models"))
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "models"}} in claim["volumes"]
    node = _pod(kubernetes_manifest(DSV3, catalog, model_cache="/mnt/hf"))
    assert next(v for v in node["volumes"] if v["name"] == "model-cache")["hostPath"]["path"] == "/mnt/hf"
    with pytest.raises(InvalidScenarioError) as err:
        kubernetes_manifest(DSV3, catalog, model_cache="models")
    assert err.value.field == "model_cache"


def test_a_one_gpu_pod_keeps_the_small_shm(catalog):
    pod = _pod(kubernetes_manifest(Deployment(model="qwen3-8b", gpu="h100-sxm"), catalog))
    assert next(v for v in pod["volumes"] if v["name"] == "dshm")["emptyDir"]["sizeLimit"] == "2Gi"


def test_the_download_is_the_checkpoint_served_not_the_planned_format(catalog):
    """vLLM quantizing Gemma 2 27B's BF16 repo to FP8 at load downloads the BF16 weights (~54 GB), not 28 GB."""
    fp8 = kubernetes_manifest(Deployment(model="google/gemma-2-27b-it", gpu="h100-sxm", quantization="fp8"), catalog)
    assert "--quantization" in fp8 and "room for the 54 GB checkpoint" in fp8
    assert _pod(fp8)["containers"][0]["startupProbe"]["failureThreshold"] > (54e9 / 0.1e9 + LOAD_WINDOW_S) / PROBE_PERIOD_S - 1


def test_an_unknown_checkpoint_size_is_left_out(catalog):
    manifest = kubernetes_manifest(Deployment(model="Qwen/Qwen2.5-32B-Instruct", gpu="h100-sxm"), catalog)
    assert " 0 GB" not in manifest and "assumes no download" in manifest
    assert _pod(manifest)["containers"][0]["startupProbe"]["failureThreshold"] == LOAD_WINDOW_S // PROBE_PERIOD_S


@pytest.mark.parametrize("cache", ["pvc:Bad_Name", "pvc:-models", "pvc:" + "a" * 254, "/", "//", "mnt/hf", "pvc:"])
def test_a_cache_kubernetes_would_reject_or_the_node_root_is_refused(catalog, cache):
    with pytest.raises(InvalidScenarioError) as err:
        kubernetes_manifest(DSV3, catalog, model_cache=cache)
    assert err.value.field == "model_cache"


def test_a_model_cache_no_pod_mounts_is_refused_naming_the_flag():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app
    shell = ["deploy", "qwen3-8b", "--gpu", "h100-sxm", "--model-cache", "pvc:models"]
    trtllm = ["deploy", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "trtllm", "--format", "k8s",
              "--model-cache", "pvc:models"]
    pools = [*shell, "--prefill-instances", "1"]
    for argv in (shell, trtllm, pools):
        r = CliRunner().invoke(app, argv)
        assert r.exit_code == 2 and "--model-cache" in r.output, (argv, r.output)


def test_vllm_router_waits_as_long_as_the_workers_startup_window(catalog):
    """vllm-router gives up on workers not up after --worker-startup-timeout-secs (600 by default): a 70B
    checkpoint's download and load take longer, so the script and the router's pod wait the probe's window."""
    from inferplan.deploy.pools_plan import PrefillLayout, pools_plan

    d = Deployment(model="llama-3.1-70b", gpu="h100-sxm", engine="vllm", tensor_parallel_size=4, max_model_len=8192)
    layout = PrefillLayout(prefill_instances=1, replicas=1)
    router = pools_plan(d, layout, catalog).launch.router
    window_s = int(router[router.index("--worker-startup-timeout-secs") + 1])
    manifest = pools_plan(d, layout, catalog, output_format="k8s").manifest
    docs = list(yaml.safe_load_all(manifest))
    probe = next(x for x in docs if x["kind"] == "Deployment" and "decode" in x["metadata"]["name"]
                 )["spec"]["template"]["spec"]["containers"][0]["startupProbe"]
    assert window_s == probe["failureThreshold"] * probe["periodSeconds"] > 600 + LOAD_WINDOW_S
    pod = next(x for x in docs if x["kind"] == "Deployment" and x["metadata"]["name"].endswith("-router"))
    args = pod["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--worker-startup-timeout-secs") + 1] == str(window_s)


def test_a_one_gpu_amd_pod_gets_the_guides_amd_shm(catalog):
    """vLLM's Kubernetes guide sizes the one-GPU example's /dev/shm 2Gi on NVIDIA and 8Gi on AMD."""
    pod = _pod(kubernetes_manifest(Deployment(model="qwen3-8b", gpu="mi300x", engine="vllm"), catalog))
    assert next(v for v in pod["volumes"] if v["name"] == "dshm")["emptyDir"]["sizeLimit"] == "8Gi"
