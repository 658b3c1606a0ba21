"""vLLM's MXFP4 MoE kernel (catalog/data/engine_moe_kernels.yaml): each release picks Marlin or the
Triton kernel by GPU generation and install, and the weights a GPU holds follow that kernel's layout."""

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.catalog.moe_kernels import moe_kernel
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.moe_layout import padding_factor

GiB = 2**30
CATALOG = load_catalog()


@pytest.mark.parametrize("architecture, release, kernel", [
    ("ampere", "0.10.1", "marlin"), ("ampere", "0.19.0", "marlin"), ("ada", None, "marlin"),
    ("hopper", "0.10.1", "marlin"), ("hopper", "0.11.0 V1", "marlin"), ("hopper", "0.11.2", "marlin"),
    ("hopper", "0.12.0", "triton"), ("hopper", "0.14.1", "triton"), ("hopper", None, "triton"),
    ("cdna3", "0.11.0", "triton-rocm-cdna3"),
])
def test_each_release_picks_its_kernel_by_gpu_generation(architecture, release, kernel):
    # the 0.10-0.11 pip wheels do not carry triton_kernels (PR #27659 took the requirement out again);
    # from 0.12.0 the wheel vendors it (PR #28788); before Hopper Marlin always runs
    picked, rule = moe_kernel(CATALOG, "vllm", "mxfp4", architecture, release)
    assert picked.id == kernel and rule is not None


def test_a_named_kernel_overrides_the_release_rule_and_an_unknown_one_is_refused():
    picked, rule = moe_kernel(CATALOG, "vllm", "mxfp4", "hopper", "0.11.0", "triton")
    assert picked.id == "triton" and rule is None
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model="gpt-oss-120b", gpu="h100-sxm", max_model_len=4096, moe_kernel="cutlass"), CATALOG)
    assert err.value.field == "moe_kernel" and "marlin" in err.value.allowed


@pytest.mark.parametrize("architecture, named, allowed", [
    ("hopper", "triton-rocm-cdna3", "humming, marlin, triton"), ("ampere", "triton", "marlin")])
def test_a_named_kernel_no_release_runs_on_the_gpu_generation_is_refused(architecture, named, allowed):
    with pytest.raises(InvalidScenarioError) as err:
        moe_kernel(CATALOG, "vllm", "mxfp4", architecture, None, named)
    assert err.value.field == "moe_kernel" and err.value.allowed == allowed


def test_marlin_pads_the_experts_to_its_tile_multiples():
    # gpt-oss: hidden 2880 -> 3072 (256), intermediate 2880 -> 2944 (128) at TP 1, 720 -> 768 at TP 4
    assert padding_factor(2880, 2880, 256, 128) == pytest.approx(3072 * 2944 / 2880**2)
    assert padding_factor(2880, 720, 256, 128) == pytest.approx(3072 * 768 / (2880 * 720))
    assert padding_factor(2880, 2880, 1, 64) == 1.0


@pytest.mark.parametrize("release, printed_gib", [
    # vllm-project/vllm issue logs: 'Model loading took 65.97 GiB' at 0.10.1 (f10), 64.38 GiB at 0.14.1 (f12)
    ("0.10.1", 65.97), ("0.14.1", 64.38),
])
def test_gpt_oss_120b_on_one_h100_loads_the_weights_of_its_release_kernel(release, printed_gib):
    r = fit(Deployment(model="gpt-oss-120b", gpu="h100-sxm", max_model_len=4096, engine_version=release), CATALOG)
    assert r.weights_bytes_per_gpu / GiB == pytest.approx(printed_gib, rel=0.006)


def test_an_a100_runs_marlin_at_every_release():
    # d08: four A100 80GB at 0.10.1.1 printed 17.22 GiB per GPU (the checkpoint's shapes: 16.0 GiB)
    r = fit(Deployment(model="gpt-oss-120b", gpu="a100-80gb", tensor_parallel_size=4, max_model_len=16384,
                       engine_version="0.10.1.1"), CATALOG)
    assert any("Marlin" in a for a in r.assumptions)
    assert r.weights_bytes_per_gpu / GiB == pytest.approx(17.22, rel=0.01)


def test_overlapping_kernel_rules_are_refused(tmp_path):
    data = yaml.safe_load((DATA_DIR / "engine_moe_kernels.yaml").read_text())
    extra = dict(data["moe_kernel_rules"][1], id="vllm-mxfp4-hopper-overlap", first_release="0.11.0", last_release=None)
    data["moe_kernel_rules"].append(extra)
    path = tmp_path / "engine_moe_kernels.yaml"
    path.write_text(yaml.safe_dump(data))
    others = [p for p in DATA_DIR.glob("**/*.yaml") if p.name != "engine_moe_kernels.yaml"]
    with pytest.raises(CatalogError, match="overlap"):
        load_files([*others, path])


def test_the_cli_flag_names_the_kernel_and_a_wrong_one_exits_2():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    args = ["fit", "--model", "gpt-oss-120b", "--gpu", "h100-sxm", "-tp", "2", "--max-model-len", "16384",
            "--engine-version", "0.10.1.1", "--json"]  # Marlin by the release's rule; an install may run Triton
    runner = CliRunner()
    marlin = yaml.safe_load(runner.invoke(app, args).stdout)
    triton = yaml.safe_load(runner.invoke(app, [*args, "--moe-kernel", "triton"]).stdout)
    assert marlin["weights_bytes_per_gpu"] > triton["weights_bytes_per_gpu"]
    bad = runner.invoke(app, [*args, "--moe-kernel", "cutlass"])
    assert bad.exit_code == 2 and "--moe-kernel" in bad.output


@pytest.mark.parametrize("model, engine, kernel", [("llama-3.1-8b", "vllm", "nope"), ("llama-3.1-8b", "sglang", "marlin")])
def test_a_moe_kernel_the_engine_lacks_is_refused_for_any_model(model, engine, kernel):
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model=model, gpu="h100-sxm", max_model_len=4096, engine=engine, moe_kernel=kernel), CATALOG)
    assert err.value.field == "moe_kernel"


def test_a_moe_kernel_on_a_dense_model_is_refused_as_it_would_change_nothing():
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=4096, moe_kernel="marlin"), CATALOG)
    assert err.value.field == "moe_kernel" and "dense" in str(err.value)


@pytest.mark.parametrize("release", ["0.20.0", "0.22.0", "0.26.0", "0.31.0"])
def test_deepseek_v4_experts_run_on_marlin_on_hopper_while_gpt_oss_takes_triton(release):
    # vLLM 0.20.0-0.26.0 wheels: DeepSeek-V4's Mxfp4MoEMethod lists no Triton kernel and its Blackwell
    # kernels skip SM90, so Marlin runs; gpt-oss's GptOssMxfp4MoEMethod takes the vendored Triton kernel
    picked, rule = moe_kernel(CATALOG, "vllm", "mxfp4", "hopper", release, model_type="deepseek_v4")
    assert (picked.id, rule.id) == ("marlin", "vllm-mxfp4-deepseek-v4-hopper-marlin")
    picked, _ = moe_kernel(CATALOG, "vllm", "mxfp4", "hopper", release, model_type="gpt_oss")
    assert picked.id == "triton"


def test_deepseek_v4_on_hopper_holds_no_second_copy_of_the_expert_scales():
    d = Deployment(model="deepseek-v4-flash", gpu="h100-sxm", tensor_parallel_size=4, max_model_len=16384,
                   engine_version="0.22.0")
    r = fit(d, CATALOG)
    assert not any("extra copy of the expert block scales" in a for a in r.assumptions)
    triton = fit(d.model_copy(update={"moe_kernel": "triton"}), CATALOG)  # the gpt-oss path, named by hand
    assert triton.weights_bytes_per_gpu > r.weights_bytes_per_gpu + GiB


def _catalog_without_moe_workspaces(tmp_path):
    data = yaml.safe_load((DATA_DIR / "engine_moe_kernels.yaml").read_text())
    for rule in data["moe_kernel_rules"]:
        rule.pop("workspace", None)
    path = tmp_path / "engine_moe_kernels.yaml"
    path.write_text(yaml.safe_dump(data))
    others = [p for p in DATA_DIR.glob("**/*.yaml") if p.name != "engine_moe_kernels.yaml"]
    return load_files([*others, path])


def test_deepseek_v4s_marlin_kernel_keeps_its_workspace_in_the_start_up_peak(tmp_path):
    # vLLM 0.20-0.31: MarlinExperts.workspace_shapes asks (M x topk, max(N, K)) and (M x topk x max(2N, K),)
    # bf16 elements of the workspace manager, which keeps them after the profile's dummy batch of
    # max_num_batched_tokens tokens, so they sit under the sampler pass's peak: N = 2048 / TP 2, K = 4096
    d = Deployment(model="deepseek-v4-flash", gpu="h20", tensor_parallel_size=2, kv_cache_dtype="fp8",
                   max_model_len=121344, max_num_seqs=32, max_num_batched_tokens=8192, engine_version="0.26.0")
    kept, unwired = fit(d, CATALOG), fit(d, _catalog_without_moe_workspaces(tmp_path))
    workspace = 8192 * 6 * (max(1024, 4096) + max(2 * 1024, 4096)) * 2
    assert kept.activation_bytes_per_gpu - unwired.activation_bytes_per_gpu == pytest.approx(workspace)
    assert unwired.kv_cache_bytes_per_gpu - kept.kv_cache_bytes_per_gpu == pytest.approx(workspace)
    assert any("keeps one workspace after the start-up profile" in a for a in kept.assumptions)


@pytest.mark.parametrize("release", ["0.32.0", "0.33.0", "0.34.0", None])
def test_deepseek_v4_experts_run_on_humming_on_hopper_from_0_32(release):
    # the 0.32.0 wheel requires humming-kernels and prioritize_humming ranks it ahead of Marlin on SM 9.0
    picked, rule = moe_kernel(CATALOG, "vllm", "mxfp4", "hopper", release, model_type="deepseek_v4")
    assert (picked.id, rule.id) == ("humming", "vllm-mxfp4-deepseek-v4-hopper-humming")


def test_deepseek_v4s_humming_kernel_keeps_its_buffers_in_two_workspaces(tmp_path):
    # Humming's _workspace_shapes: output (M, K) | quanted_down_input (M x topk, N) | quanted input (M, K),
    # and down_output (M x topk, K) | gate_up_output (M x topk, 2N), bf16: N = 2048 / TP 2, K = 4096
    d = Deployment(model="deepseek-v4-flash", gpu="h20", tensor_parallel_size=2, kv_cache_dtype="fp8",
                   max_model_len=16384, max_num_seqs=32, max_num_batched_tokens=8192, engine_version="0.33.0")
    kept, unwired = fit(d, CATALOG), fit(d, _catalog_without_moe_workspaces(tmp_path))
    workspace = 8192 * max(4096, 6 * 1024, 4096) * 2 + 8192 * 6 * max(4096, 2 * 1024) * 2
    assert kept.activation_bytes_per_gpu - unwired.activation_bytes_per_gpu == pytest.approx(workspace)
    assert any("Humming" in a and "keeps one workspace" in a for a in kept.assumptions)


def test_the_workspace_closes_the_gh200_start_that_printed_too_little_kv_cache():
    # d06 (vllm-project/vllm issue #44376): 'To serve ... (30000), (6.66 GiB KV cache is needed, which is
    # larger than the available KV cache memory (5.44 GiB)': the 16384-token profile batch's workspace
    # (1.5 GiB per GPU) is what the plan lacked to refuse the start
    from inferplan.validation.memory import check_point

    check = check_point(CATALOG.memory_points.records["d06-deepseek-v4-flash-tp2-gh200-30k-fails"], CATALOG)
    assert check.predicted_fits is False and check.measured_fits is False
    assert abs(check.kv_error) < 0.05


def test_a_kernel_rule_without_a_workspace_adds_none():
    # gpt-oss on Hopper takes the vendored Triton kernel, whose rule states no kept workspace
    r = fit(Deployment(model="gpt-oss-120b", gpu="h100-sxm", max_model_len=4096, engine_version="0.26.0"), CATALOG)
    assert not any("keeps one workspace" in a for a in r.assumptions)
