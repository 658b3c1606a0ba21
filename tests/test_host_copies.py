"""A GPU count beyond one host with no parallel sizes (``--gpus 16`` of H100s) runs data-parallel copies
of the smallest instance that holds the model, each within one host, rather than one instance of a
one-GPU model pipelined over hosts; within one host, and for a model one host does not hold, the
engine's own split of one instance over the GPUs stands."""

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st

from inferplan.deploy.command import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.hardware import resolve_hardware
from inferplan.memory.layout import host_gpus
from inferplan.shells.api import create_app


def _layout(r):
    p = r.parallel
    return p.tensor_parallel_size, p.pipeline_parallel_size, p.data_parallel_size


@pytest.mark.parametrize(("gpus", "copies"), [(16, 16), (72, 72), (1000, 1000)])
def test_a_model_one_gpu_holds_runs_one_gpu_copies_beyond_one_host(catalog, gpus, copies):
    r = fit(Deployment(model="qwen3-8b", gpu="h100-sxm", gpus=gpus), catalog)
    assert r.fits and _layout(r) == (1, 1, copies) and r.parallel.gpus == gpus
    assert "smallest instance that holds the model" in r.layout_note and "state the parallel sizes" in r.layout_note


@pytest.mark.parametrize(("gpus", "layout", "used"), [(16, (8, 2, 1), 16), (24, (8, 3, 1), 24), (32, (8, 2, 2), 32),
                                                      (72, (8, 2, 4), 64)])
def test_a_model_one_host_does_not_hold_pipelines_across_hosts_only_as_far_as_it_needs(catalog, gpus, layout, used):
    """DeepSeek-V3 in FP8 does not fit on 8 H100s: one instance over 16 or 24 of them as the engine splits
    it (no two copies fit), two copies of TP 8 × PP 2 on 32, and four on 72 with one host idle."""
    assert not fit(Deployment(model="deepseek-v3", gpu="h100-sxm", gpus=8), catalog).fits
    r = fit(Deployment(model="deepseek-v3", gpu="h100-sxm", gpus=gpus), catalog)
    assert r.fits and _layout(r) == layout and r.parallel.gpus == used
    assert (f"{gpus - used} left idle" in r.layout_note) == (used < gpus)


def test_a_model_one_host_holds_does_not_span_hosts_for_want_of_a_second_copy(catalog):
    """Llama 3.1 70B in BF16 fits on 8 L40S at vLLM 0.33's 0.92 (not on 4): on 9, one copy of TP 8 and an idle
    GPU, not 9 pipeline stages."""
    r = fit(Deployment(model="llama-3.1-70b", gpu="l40s", gpus=9, engine_version="0.33.0"), catalog)
    assert r.fits and _layout(r) == (8, 1, 1) and r.parallel.gpus == 8 and "1 left idle" in r.layout_note


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_within_one_host_one_instance_spans_the_gpus(catalog, gpus):
    assert _layout(fit(Deployment(model="qwen3-8b", gpu="h100-sxm", gpus=gpus), catalog)) == (gpus, 1, 1)


def test_stated_sizes_beyond_one_host_are_kept(catalog):
    r = fit(Deployment(model="qwen3-8b", gpu="h100-sxm", gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2),
            catalog)
    assert _layout(r) == (8, 2, 1) and r.layout_note is None


def test_deploy_launches_one_gpu_copies_not_one_pipelined_instance(catalog):
    cmd = launch_command(Deployment(model="qwen3-8b", gpu="h100-sxm", gpus=1000), catalog)
    assert not {"--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size"} & set(cmd.argv)
    assert any("one of 1000 copies" in n for n in cmd.notes)


def test_api_deploy_of_sixteen_gpus_runs_copies(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    r = client.post("/api/deploy", json={"deployment": {"model": "qwen3-8b", "gpu": "h100-sxm", "gpus": 16}})
    assert r.status_code == 200, r.text
    assert "--pipeline-parallel-size" not in r.json()["command"]["argv"]


def test_a_count_past_the_largest_deployment_is_refused_naming_gpus(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    r = client.post("/api/fit", json={"model": "qwen3-8b", "gpu": "h100-sxm", "gpus": 100_001})
    assert r.status_code == 422 and r.json()["error"]["field"] == "gpus"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(["qwen3-8b", "qwen3-32b", "llama-3.1-70b", "deepseek-v3"]),
       gpu=st.sampled_from(["h100-sxm", "a100-80gb", "l40s", "rtx-4090", "h100-pcie", "mi300x"]), gpus=st.integers(9, 100))
def test_the_default_layout_beyond_one_host_accounts_for_every_gpu(catalog, model, gpu, gpus):
    """TP × PP × DP is the plan's GPU count, which is the deployment's less fewer GPUs than one instance
    (said in the note); where one host holds the model, no instance spans hosts."""
    d = Deployment(model=model, gpu=gpu, gpus=gpus)
    host = host_gpus(resolve_hardware(catalog, d))
    r = fit(d, catalog)
    p = r.parallel
    instance = p.tensor_parallel_size * p.pipeline_parallel_size
    assert instance * p.data_parallel_size == p.gpus <= gpus and gpus - p.gpus < instance
    assert (p.gpus < gpus) == (f"{gpus - p.gpus} left idle" in r.layout_note)
    if gpus > host and fit(Deployment(model=model, gpu=gpu, gpus=host), catalog).fits:
        assert instance <= host
