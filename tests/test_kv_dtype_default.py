"""The KV cache dtype a plan defaults to: llama.cpp's own f16 for any model (it has no FP8 cache), and a default the
engine does not store on the GPU refused naming what was defaulted and why."""

from typer.testing import CliRunner

from inferplan.shells.cli import app


def _fit(*args):
    return CliRunner().invoke(app, ["fit", "deepseek-v4-flash", *args])


def test_llamacpp_runs_deepseek_v4_with_its_own_f16_cache():
    out = _fit("--gpu", "h200", "--gpus", "8", "--engine", "llamacpp", "-q", "q4_k_m")
    assert out.exit_code in (0, 1), out.output
    assert "KV fp16" in out.output and "None" not in out.output


def test_a_default_the_gpu_does_not_store_is_named_with_its_reason():
    out = _fit("--gpu", "m3-ultra", "--engine", "vllm", "-q", "mlx-4bit")
    flat = " ".join(out.output.split())
    assert out.exit_code == 2 and "None" not in flat
    assert ("vLLM has no fp8 KV cache on Apple M3 Ultra, the KV cache DeepSeek V4 Flash 0731 gets when none is "
            "stated (vLLM runs DeepSeek-V4's compressed-attention cache in FP8 only): state one it stores") in flat
