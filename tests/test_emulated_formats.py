"""A format an engine emulates (quantizations.yaml ``emulated_fallbacks``: vLLM's QuarkOCP_MX off MX hardware
dequantizes the packed MXFP4 weights into a bf16 copy every forward) is priced with that copy's traffic, runs
natively and unchanged where the hardware has kernels for it, is not the build ``fits`` or ``fit`` picks while
another runs properly, and says "emulated" wherever it is shown."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.matrix import fits_matrix
from inferplan.memory.suggest import smaller_weights
from inferplan.performance.context import ServingContext
from inferplan.performance.serving import estimate
from inferplan.shells.cli import app

CATALOG = load_catalog()
# Llama 3.3 70B's quantized linear weights (config: hidden 8192, 80 layers, 64 query and 8 KV heads of 128,
# MLP 28672 wide): q and o 8192², k and v 8192 x 1024 each, gate, up and down 8192 x 28672; the lm_head stays
# 16-bit in AMD's Quark checkpoint
LINEAR_WEIGHTS = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672)
BF16_COPY_BYTES_PER_WEIGHT = 2 + 2  # the dequantized copy written, then read by F.linear


def _context(gpu: str, quantization: str, release: str | None, gpus: int = 2) -> ServingContext:
    d = Deployment(model="llama-3.3-70b", gpu=gpu, gpus=gpus, quantization=quantization, engine_version=release,
                   max_model_len=4096)
    return ServingContext(CATALOG, d, Workload(input_len=1000, output_len=200))


def test_vllm_before_0_27_emulates_w4a4_mxfp4_on_h100_and_a_step_reads_the_bf16_copy():
    """vLLM 0.26.0 on an H100 (TP2): each decode step reads the packed weights (4.25 bits) and writes and
    reads a bf16 copy of every quantized weight: 68.4 B weights x 4 bytes / 2 GPUs = 136.9 GB more per GPU."""
    emulated = _context("h100-sxm", "mxfp4-w4a4", "0.26.0")
    marlin = _context("h100-sxm", "mxfp4-w4a4", "0.34.0")  # Marlin's fused weight-only kernel from 0.27.0
    extra = emulated.work.weights_read_per_gpu(1) - marlin.work.weights_read_per_gpu(1)
    # the 1.3 M norm weights the active parameters also hold are within the tolerance
    assert extra == pytest.approx(LINEAR_WEIGHTS * BF16_COPY_BYTES_PER_WEIGHT / 2, rel=1e-4)
    packed = marlin.work.weights_read_per_gpu(1)
    assert packed == pytest.approx(LINEAR_WEIGHTS * 4.25 / 8 / 2, rel=0.08)  # plus the 16-bit lm_head
    assert emulated.rates.compute_dtype == "bf16" and "emulated" in emulated.rates.notes[0]
    assert "emulated" not in " ".join(marlin.rates.notes)


def test_emulated_w4a4_mxfp4_decodes_slower_than_bf16_and_fp8_on_h100():
    w = Workload(input_len=1000, output_len=200, concurrency=1)

    def tpot(q: str) -> float:
        d = Deployment(model="llama-3.3-70b", gpu="h100-sxm", gpus=2, quantization=q, engine_version="0.26.0",
                       max_model_len=4096)
        return estimate(d, w, CATALOG).tpot_s
    assert tpot("mxfp4-w4a4") > tpot("bf16") > tpot("fp8")


def test_mi355x_runs_w4a4_mxfp4_natively_with_no_copy_at_the_measured_release():
    native = _context("mi355x", "mxfp4-w4a4", "0.11.2", gpus=1)
    assert native.rates.compute_dtype == "fp4" and native.work.materialized_bytes_per_weight == 0
    assert not any("emulat" in n for n in native.rates.notes)


def test_mi300x_emulates_w4a4_mxfp4_in_every_release():
    for release in ("0.11.2", None):
        assert _context("mi300x", "mxfp4-w4a4", release, gpus=1).work.materialized_bytes_per_weight == 4


def test_fits_picks_a_build_that_runs_over_one_emulated_in_more_columns(catalog):
    """405B on 2 x MI300X (384 GB) and 2 x MI325X (512 GB): MXFP4 W4A4 fits both, emulated on both (CDNA3 has
    no MX); Meta's FP8 build fits the MI325X pair natively, so the row is FP8."""
    cells = fits_matrix(models=["llama-3.1-405b"], gpus=["mi300x", "mi325x"], gpu_count=2, catalog=catalog).cells
    assert {c.quantization for c in cells} == {"fbgemm-fp8"}
    emulated = fits_matrix(models=["llama-3.1-405b"], gpus=["mi300x"], gpu_count=2, catalog=catalog).cells
    assert [(c.quantization, c.runs, c.result.fits) for c in emulated] == [("mxfp4-w4a4", "emulated in bf16", True)]


def test_the_grid_says_emulated_where_only_the_emulated_build_fits():
    out = CliRunner().invoke(app, ["fits", "--models", "llama-3.1-405b", "--gpus", "mi300x", "--gpu-count", "2"],
                             env={"COLUMNS": "120"}).output
    assert "mxfp4-w4a4" in out and "emulated" in out


def test_smaller_weights_skip_an_emulated_format_while_another_fits(catalog):
    """Llama 3.3 70B on one H100 at 104,448 tokens: MXFP4 W4A4 holds the whole context, NVFP4 and FP8 only a
    shorter one; vLLM 0.26.0 emulates MXFP4 there, so the offer is a format that runs, at a shorter context."""
    d = Deployment(model="llama-3.3-70b", gpu="h100-sxm", engine_version="0.26.0", max_model_len=104_448)
    assert fit(d.model_copy(update={"quantization": "mxfp4-w4a4"}), catalog).fits
    offer = smaller_weights(d, catalog)
    assert offer.changes["quantization"] != "mxfp4-w4a4" and "emulated" not in offer.summary


def test_smaller_weights_say_emulated_when_it_is_the_only_one(catalog):
    offer = smaller_weights(Deployment(model="llama-3.1-405b", gpu="mi300x", gpus=2, quantization="fp8"), catalog)
    assert offer.changes["quantization"] == "mxfp4-w4a4" and "emulated in bf16" in offer.summary


def test_an_emulated_moe_step_copies_every_expert_it_holds_and_reads_the_routed_copies():
    """vLLM's emulated fused-MoE path dequantizes whole w1/w2 expert tensors each forward, then the Triton
    experts read only the experts the step routes to: Qwen3-30B-A3B on an MI300X reads all 128 experts'
    packed bytes, writes all their bf16 copies and reads the touched ones (82.7 GB at batch 1, 102.5 at 8)."""
    d = Deployment(model="qwen3-30b-a3b", gpu="mi300x", quantization="mxfp4-w4a4", max_model_len=4096)
    work = ServingContext(CATALOG, d, Workload(input_len=100, output_len=10)).work
    dense_params = work.active_params - work.routed_active_params - work.lm_head_params
    for tokens in (1, 8):
        touched = work.touched_expert_share(tokens)
        copies = dense_params * BF16_COPY_BYTES_PER_WEIGHT + work.expert_params_per_gpu * (2 + 2 * touched)
        assert work.weights_read_per_gpu(tokens) == pytest.approx(
            work.dense_bytes_per_gpu + work.expert_bytes_per_gpu + copies)
    assert work.weights_read_per_gpu(1) < work.weights_read_per_gpu(8) < work.dense_bytes_per_gpu + (
        work.expert_bytes_per_gpu + (dense_params + work.expert_params_per_gpu) * BF16_COPY_BYTES_PER_WEIGHT)


def test_vllm_0_27_to_0_31_emulates_the_routed_experts_alone_on_h100():
    """From 0.27.0 the linear layers run Marlin, but a W4A4 checkpoint's experts ask MXFP4 activations, which only
    ROCm's AITER backend and the emulation take, until 0.32.0 runs them in CUTLASS's MXFP4 x MXFP4 kernel on
    compute capability 10.x-11.x and falls back to a weight-only expert kernel elsewhere."""
    def work(release: str | None):
        d = Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", quantization="mxfp4-w4a4", max_model_len=4096,
                       engine_version=release)
        return ServingContext(CATALOG, d, Workload(input_len=100, output_len=10))
    for release in ("0.27.0", "0.31.0"):
        ctx = work(release)
        w = ctx.work
        assert (w.materialized_bytes_per_weight, w.materialized_expert_bytes_per_weight) == (0.0, 4.0)
        copies = w.expert_params_per_gpu * (2 + 2 * w.touched_expert_share(1))
        assert w.weights_read_per_gpu(1) == pytest.approx(w.dense_bytes_per_gpu + w.expert_bytes_per_gpu + copies)
        assert any("routed experts emulated" in n for n in w.notes)
    for release in ("0.26.0", "0.32.0", "0.34.0", None):
        assert work(release).work.materialized_expert_bytes_per_weight == (4.0 if release == "0.26.0" else 0.0)
    dense = Deployment(model="llama-3.1-8b", gpu="h100-sxm", quantization="mxfp4-w4a4", engine_version="0.27.0",
                       max_model_len=4096)
    assert ServingContext(CATALOG, dense, Workload(input_len=100, output_len=10)).work.materialized_bytes_per_gpu(1) == 0


def test_the_labels_say_the_routed_experts_are_emulated_where_only_they_are():
    from inferplan.memory.precision import how_it_runs
    q, h100 = CATALOG.quantization("mxfp4-w4a4"), CATALOG.accelerator("h100-sxm")
    assert how_it_runs(q, h100, "vllm", "0.27.0", routed_experts=True) == "experts emulated in bf16"
    assert how_it_runs(q, h100, "vllm", "0.27.0") == "fallback to bf16 compute"  # a dense model's linear layers
    out = CliRunner().invoke(app, ["perf", "qwen3-30b-a3b", "--gpu", "h100", "-q", "mxfp4-w4a4", "--engine-version",
                                   "0.27.0", "--explain"])
    flat = " ".join(out.output.split())
    assert "its routed experts are emulated" in flat and "routed experts, where the model has them, emulated" in flat


def test_the_expert_source_says_which_gpus_run_the_experts_natively_from_0_32():
    # 0.32.0's CUTLASS_MXFP4_MXFP4 takes MXFP4 activations on compute capability 10.x-11.x, ahead of the emulation
    title = CATALOG.sources["q-vllm-quark-w4a4-moe-0270"].title
    assert "CutlassExpertsMxfp4" in title and "10.x and 11.x" in title


def test_rdna3_emulates_w4a4_mxfp4_after_its_w4a8_kernel_shipped():
    """vLLM 0.33.0's gfx11 MXFP4 kernel takes int8 activations; a W4A4 checkpoint asks MXFP4 ones, so an RX 7900
    XTX still runs the emulation at 0.34.0 (and at the planned release)."""
    for release in ("0.32.0", "0.34.0", None):
        d = Deployment(model="llama-3.1-8b", gpu="radeon-rx-7900-xtx", quantization="mxfp4-w4a4", engine_version=release,
                       max_model_len=4096)
        assert ServingContext(CATALOG, d, Workload(input_len=1000, output_len=200)).work.materialized_bytes_per_weight == 4
