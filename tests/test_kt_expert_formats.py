"""KTransformers' CPU experts take the bytes of their --kt-method's format (kt_cpu_paths.yaml
expert_formats), whatever the GPU part is served in: kt-kernel's AMXINT4 / AMXINT8 conversion writes
4 / 8 bits per weight plus a 32-bit scale per output row (amx_buffers.hpp required_size); fit, its
suggestions, perf and deploy all plan that split."""

import pytest

from inferplan.deploy import launch_command
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.suggest import fit_or_suggest
from inferplan.performance.serving import estimate

GIB = 2**30
QWEN = dict(model="qwen3-235b-a22b", gpu="rtx-4090", engine="ktransformers", host_memory_gb=256, max_model_len=32768)
# Qwen3-235B-A22B: 94 MoE layers x 128 experts, each gate/up 1536 x 4096 and down 4096 x 1536 (config.json)
EXPERTS = 94 * 128
WEIGHTS_PER_EXPERT = 3 * 4096 * 1536
ROWS_PER_EXPERT = 2 * 1536 + 4096


@pytest.mark.parametrize("method, bits", [("AMXINT4", 4), ("AMXINT8", 8)])
def test_amx_cpu_experts_take_their_own_bits_plus_a_scale_per_row_whatever_the_gpu_format(method, bits):
    """Golden: the converted experts' bytes from the config's shapes and kt-kernel's buffer sizes."""
    expected = EXPERTS * (WEIGHTS_PER_EXPERT * bits + ROWS_PER_EXPERT * 32) / 8
    by_gpu_format = {q: fit(Deployment(**QWEN, kt_method=method, quantization=q)) for q in ("bf16", "fp8-block")}
    for r in by_gpu_format.values():
        assert r.host_memory_bytes_used == pytest.approx(expected, rel=1e-6)
    assert by_gpu_format["fp8-block"].weights_bytes_per_gpu < 0.6 * by_gpu_format["bf16"].weights_bytes_per_gpu


def test_the_reviewed_int4_setup_holds_its_experts_in_256_gib_of_host_ram():
    r = fit(Deployment(**QWEN, kt_method="AMXINT4"))
    assert 100 * GIB < r.host_memory_bytes_used < 110 * GIB < r.host_memory_budget_bytes


def test_a_native_method_keeps_the_checkpoints_own_experts():
    bf16 = fit(Deployment(**{**QWEN, "host_memory_gb": 512}, kt_method="BF16"))
    int4 = fit(Deployment(**QWEN, kt_method="AMXINT4"))
    assert bf16.host_memory_bytes_used > 3.9 * int4.host_memory_bytes_used


def test_a_stated_method_that_does_not_go_with_the_gpu_format_is_refused_naming_the_ones_that_do():
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(**QWEN, kt_method="AMXINT4", quantization="gguf-q8_0"))
    assert err.value.field == "kt_method" and err.value.allowed == "LLAMAFILE"


def test_fits_suggestions_keep_a_format_the_stated_method_runs_beside_and_each_deploys(catalog):
    r = fit_or_suggest(Deployment(**QWEN, kt_method="AMXINT4"), catalog)
    amx = next(f for p in catalog.kt_cpu_paths for f in p.expert_formats if f.kt_method == "AMXINT4")
    assert r.suggestions
    for s in r.suggestions:
        d = Deployment(**QWEN, kt_method="AMXINT4").model_copy(update=s.changes)
        assert d.quantization is None or d.quantization in amx.gpu_formats, s.summary
        argv = launch_command(d, catalog).argv
        assert argv[argv.index("--kt-method") + 1] == "AMXINT4"
        assert not argv[argv.index("--model-path") + 1].startswith("<")  # a published checkpoint


def test_perf_streams_the_int4_experts_not_the_gpu_formats():
    w = Workload(input_len=512, output_len=128, concurrency=1)
    base = {**QWEN, "max_model_len": 8192, "host_memory_gb": 512}
    int4 = estimate(Deployment(**base, kt_method="AMXINT4"), w, use_profiles=False)
    bf16 = estimate(Deployment(**base, kt_method="BF16"), w, use_profiles=False)
    # decode is host-memory-bound: a quarter of the bytes a token reads, well over twice the rate
    assert int4.output_tokens_per_s_per_user > 2.5 * bf16.output_tokens_per_s_per_user


def test_every_launch_pairing_of_format_and_method_is_one_the_plan_accepts(catalog):
    from inferplan.catalog.flags_schema import flags_for

    rule = flags_for(catalog, "ktransformers").settings["kt_method"]
    formats = {f.kt_method: f for p in catalog.kt_cpu_paths if p.release == "kt-kernel" for f in p.expert_formats}
    quantizations = {q.id for q in catalog.quantizations}
    for quantization, method in rule.values.items():
        assert quantization in formats[method].gpu_formats, (quantization, method)
    for f in formats.values():
        assert set(f.gpu_formats) <= quantizations


def test_a_format_no_cpu_method_runs_beside_is_refused_when_no_method_is_stated_as_when_one_is(catalog):
    """gpt-oss's MXFP4 checkpoint: kt-kernel converts AMX experts from 16-bit or FP8 checkpoints only."""
    d = Deployment(model="gpt-oss-120b", gpu="rtx-4090", engine="ktransformers", host_memory_gb=64)
    for stated in (None, "AMXINT4"):
        with pytest.raises(InvalidScenarioError) as err:
            fit(d.model_copy(update={"kt_method": stated}))
        assert err.value.field == ("quantization" if stated is None else "kt_method") and "mxfp4" in str(err.value)
    with pytest.raises(InvalidScenarioError):
        launch_command(d, catalog)


def test_no_ktransformers_command_is_offered_for_a_format_it_cannot_run(catalog):
    r = fit_or_suggest(Deployment(model="gpt-oss-120b", gpu="rtx-4090", host_memory_gb=64), catalog)
    assert r.suggestions and all(s.changes.get("engine") != "ktransformers" for s in r.suggestions)


def test_without_a_method_the_first_one_recorded_beside_the_format_is_planned_and_launched(catalog):
    d = Deployment(model="gpt-oss-120b", gpu="rtx-4090", engine="ktransformers", quantization="gguf-mxfp4-moe",
                   host_memory_gb=128, max_model_len=8192)
    argv = launch_command(d, catalog).argv
    assert argv[argv.index("--kt-method") + 1] == "LLAMAFILE"
    assert fit(d).host_memory_bytes_used == pytest.approx(fit(d.model_copy(update={"kt_method": "LLAMAFILE"}))
                                                          .host_memory_bytes_used)


R1 = dict(model="deepseek-r1", gpu="rtx-4090", engine="ktransformers", host_memory_gb=512)


def test_gguf_cpu_experts_run_beside_the_original_checkpoints_gpu_weights(catalog):
    """kt-kernel's LLAMAFILE reads GGUF experts on the CPU; the GPU part is served from the original
    checkpoint (kt-kernel README, Option C: --model the original, --kt-weight-path the GGUF directory), so
    DeepSeek-R1's GPU weights are its FP8 non-expert weights, as the fp8-block fit prices them, and the
    163,840-token context does not fit on one 4090; host RAM holds the GGUF file's experts."""
    from inferplan.memory.weights import weight_bytes
    from inferplan.memory.resolve import resolve_model
    gguf = fit(Deployment(**R1, quantization="gguf-q3_k_m"))
    fp8 = fit(Deployment(**R1, quantization="fp8-block"))
    assert gguf.quantization == "gguf-q3_k_m"
    assert gguf.weights_bytes_per_gpu == pytest.approx(fp8.weights_bytes_per_gpu, rel=1e-9)
    assert not gguf.fits and gguf.kv_cache_tokens < 163840
    spec = resolve_model(catalog, "deepseek-r1")
    experts = weight_bytes(spec, catalog.quantization("gguf-q3_k_m")).expert_bytes
    assert gguf.host_memory_bytes_used == pytest.approx(experts, rel=1e-9)
    assert any("original fp8-block checkpoint" in a for a in gguf.assumptions)


def test_the_gguf_launch_serves_the_original_checkpoint_and_reads_the_gguf_directory(catalog):
    cmd = launch_command(Deployment(**R1, quantization="gguf-q3_k_m", max_model_len=16384), catalog)
    argv = list(cmd.argv)
    assert argv[argv.index("--model-path") + 1] == "deepseek-ai/DeepSeek-R1"
    assert argv[argv.index("--kt-method") + 1] == "LLAMAFILE"
    assert argv[argv.index("--kt-weight-path") + 1] == "<GGUF directory>"
    qwen = launch_command(Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="ktransformers",
                                     host_memory_gb=128, quantization="gguf-q4_k_m", max_model_len=8192), catalog)
    assert qwen.argv[qwen.argv.index("--model-path") + 1] == "Qwen/Qwen3-30B-A3B"
    assert any("Qwen/Qwen3-30B-A3B-GGUF" in n for n in qwen.notes)
