"""A system named with no GPU count and no parallel sizes (``--system hgx-h200`` alone) runs data-parallel
copies: of one GPU where the model fits on one, else of the smallest instance that holds it, so that
`fit`, `perf` and `deploy` answer for the layout one would launch rather than eight copies that cannot load;
where no instance within the system holds the model, one instance over all its GPUs."""

import pytest
import yaml

from inferplan.deploy.command import engine_flags, launch_command
from inferplan.deploy.manifest import kubernetes_manifest
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import as_planned, fit


def _layout(r):
    p = r.parallel
    return p.tensor_parallel_size, p.pipeline_parallel_size, p.data_parallel_size


def test_a_model_too_big_for_one_gpu_runs_one_copy_of_the_smallest_instance(catalog):
    r = fit(Deployment(model="deepseek-r1", system="hgx-h200", engine="vllm"), catalog)
    assert r.fits and _layout(r) == (8, 1, 1)
    assert "smallest instance that holds the model" in r.layout_note


def test_copies_fill_the_system_and_a_smaller_instance_would_not_hold_the_model(catalog):
    r = fit(Deployment(model="llama-3.1-70b", system="hgx-h100", engine="vllm"), catalog)
    tp, pp, dp = _layout(r)
    assert r.fits and tp * pp * dp == 8 and dp > 1
    smaller = Deployment(model="llama-3.1-70b", system="hgx-h100", engine="vllm", tensor_parallel_size=tp // 2,
                         data_parallel_size=dp * 2)
    assert not fit(smaller, catalog).fits


def test_a_model_that_fits_one_gpu_keeps_one_gpu_copies(catalog):
    assert _layout(fit(Deployment(model="llama-3.1-8b", system="hgx-h100"), catalog)) == (1, 1, 8)


def test_a_model_no_instance_within_the_system_holds_is_planned_on_the_whole_system(catalog):
    """DeepSeek-R1 in BF16 needs more than eight 80 GB GPUs: the shortfall is that of one instance over all
    eight (as vLLM launches it there: TP 8), not of eight one-GPU copies, 60 times larger."""
    r = fit(Deployment(model="deepseek-r1", system="hgx-h100", engine="vllm", quantization="bf16"), catalog)
    assert not r.fits and _layout(r) == (8, 1, 1) and r.smallest_fit.gpus > 8
    assert "the largest the system allows" in r.layout_note


def test_the_shortfall_on_a_system_is_the_one_of_all_its_gpus(catalog):
    """DeepSeek-V3 FP8 on an HGX H100 at 1,280 tokens: 630.4 GiB of weights / 8 = 78.8 GiB per GPU
    against 72.85 usable; the system alone reports what --gpus 8 reports, not 560 GiB per GPU."""
    # at vLLM 0.33's 0.92 (0.34 sizes from the memory free at start-up)
    alone = fit(Deployment(model="deepseek-v3", system="hgx-h100", max_model_len=1280, engine_version="0.33.0"), catalog)
    eight = fit(Deployment(model="deepseek-v3", gpu="h100-sxm", gpus=8, max_model_len=1280, engine_version="0.33.0"),
                catalog)
    assert not alone.fits and _layout(alone) == (8, 1, 1)
    assert alone.shortfall_bytes == pytest.approx(eight.shortfall_bytes)
    # with Model Runner V2's penalty arrays and the 1.75 GiB of Triton MoE workspaces at 8,192 tokens
    assert 10 * 2**30 < alone.shortfall_bytes < 12 * 2**30
    assert alone.fewest_gpus_fit.gpus == 11


def test_the_hint_beyond_one_system_counts_whole_systems(catalog):
    """perf and deploy refuse with the GPU count and, beside it, the systems it takes: 11 GPUs are 2 HGX
    H100s, launched as TP 8 within each and a pipeline stage per system."""
    from inferplan.errors import InvalidScenarioError
    from inferplan.memory.refusal import refuse_unfit

    d = Deployment(model="deepseek-v3", system="hgx-h100", max_model_len=1280, engine_version="0.33.0")
    with pytest.raises(InvalidScenarioError) as e:
        refuse_unfit(fit(d, catalog), d, catalog)
    assert "needs 11 GPUs" in str(e.value)
    assert "(2 × hgx-h100: 16 GPUs, tensor parallel 8 × pipeline parallel 2)" in str(e.value)
    # with Model Runner V2's 0.51 GiB of penalty arrays and 1.75 GiB of Triton MoE workspaces
    assert "short by 11.2 GiB per GPU" in str(e.value)


@pytest.mark.parametrize(("gpus", "tp"), [(None, "8"), (8, "8")])
def test_deploy_launches_the_planned_instance(catalog, gpus, tp):
    cmd = launch_command(Deployment(model="deepseek-r1", system="hgx-h200", engine="vllm", gpus=gpus), catalog)
    assert cmd.argv[cmd.argv.index("--tensor-parallel-size") + 1] == tp


def test_deploy_of_one_gpu_copies_names_no_parallel_size(catalog):
    cmd = launch_command(Deployment(model="llama-3.1-8b", system="hgx-h100", engine="vllm"), catalog)
    assert "--tensor-parallel-size" not in cmd.argv


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_deploy_launches_one_copy_of_a_split_instance(catalog, engine):
    """Llama 3.1 70B on an HGX H100 is two copies of tensor parallel 4: the command starts one copy on 4
    GPUs (TensorRT-LLM runs no data-parallel ranks of a split instance, so one launch of both copies
    would be refused), and the plan of what it launches is the plan fit made."""
    d = Deployment(model="llama-3.1-70b", system="hgx-h100", engine=engine)
    cmd = launch_command(d, catalog)
    flags = engine_flags(catalog, engine)
    dp_rule = flags.settings.get("data_parallel_size")  # TensorRT-LLM: an options key
    dp_flags = dp_rule.flags if dp_rule else ()
    options = yaml.safe_load(cmd.files[0].text) if cmd.files else {}  # TensorRT-LLM: chunked prefill at 128K
    dp_key = flags.options_file.settings["data_parallel_size"].key if flags.options_file else None
    assert dp_key not in options and not set(dp_flags) & set(cmd.argv)
    assert _layout(fit(as_planned(d, catalog), catalog)) == _layout(fit(d, catalog)) == (4, 1, 2)


def test_the_manifest_runs_each_copy_in_a_pod_of_its_own(catalog):
    """DeepSeek-R1 on a GB200 NVL72 is nine copies of tensor parallel 8: nine replicas, not one pod asking
    for the rack's 72; each copy spans two 4-GPU compute trays (OS hosts), a LeaderWorkerSet of two pods."""
    d = Deployment(model="deepseek-r1", system="gb200-nvl72", engine="vllm", engine_version="0.33.0")  # at 0.92
    manifest = kubernetes_manifest(d, catalog)
    lws = next(doc for doc in yaml.safe_load_all(manifest) if doc["kind"] == "LeaderWorkerSet")
    container = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert lws["spec"]["replicas"] == 9 and lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert set(container["resources"]["limits"].values()) == {4}


def test_llamacpp_copies_split_by_layers_as_it_launches(catalog):
    """llama.cpp's own multi-GPU split is by layers (its row split leaves the KV cache on one GPU):
    DeepSeek-R1 in Q4_K_M on an HGX H200 is two copies of four pipeline stages, and the command says so."""
    d = Deployment(model="deepseek-r1", system="hgx-h200", engine="llamacpp", quantization="gguf-q4_k_m")
    assert _layout(fit(d, catalog)) == (1, 4, 2)
    argv = launch_command(d, catalog).argv
    assert argv[argv.index("--split-mode") + 1] == "layer"


def test_copies_that_do_not_divide_the_system_run_on_part_of_it(catalog):
    """DeepSeek-R1 in BF16 needs tensor parallel 16 of a GB200 NVL72's 72 GPUs: four copies on 64 of
    them, 8 idle (not 72 one-GPU copies that cannot load); deploy gives four 16-GPU replicas, each over
    four 4-GPU compute trays."""
    d = Deployment(model="deepseek-r1", system="gb200-nvl72", engine="vllm", quantization="bf16", engine_version="0.33.0")
    r = fit(d, catalog)
    assert r.fits and _layout(r) == (16, 1, 4) and r.parallel.gpus == 64 and "8 left idle" in r.layout_note
    lws = next(doc for doc in yaml.safe_load_all(kubernetes_manifest(d, catalog)) if doc["kind"] == "LeaderWorkerSet")
    container = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert lws["spec"]["replicas"] == 4 and lws["spec"]["leaderWorkerTemplate"]["size"] == 4
    assert set(container["resources"]["limits"].values()) == {4}


def test_a_layout_that_does_not_fill_the_gpus_names_no_flag_in_the_library(catalog):
    # the API answers with this message too: it names the GPU count, not the CLI's --gpus
    from inferplan.errors import InvalidScenarioError

    with pytest.raises(InvalidScenarioError) as exc:
        fit(Deployment(model="llama-3.1-8b", system="hgx-h100", data_parallel_size=2), catalog)
    assert exc.value.field == "data_parallel_size" and "--" not in str(exc.value) and "8 GPUs" in str(exc.value)
