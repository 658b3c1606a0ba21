"""A "smaller weights" suggestion offers only formats the model exists in for the engine (its builds, the
engine's conversions of one, what its launcher quantizes one to at load: memory/precision.model_formats),
never one tied to another model (DeepSeek-V4's mixed FP4/FP8, a gpt-oss serving option); and every
command `fit` suggests fits when it is run."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.precision import model_formats
from inferplan.memory.resolve import resolve_model
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.cli import app

CATALOG = load_catalog()
runner = CliRunner()
TIED = {"mixed-fp4-fp8", "mxfp4-all-linear"}


@pytest.mark.parametrize("d", [
    Deployment(model="gemma-4-31b", gpu="rtx-5090"),
    Deployment(model="qwen3-32b", gpu="rtx-5090"),
    Deployment(model="llama-3.3-70b", gpu="rtx-5090", gpus=2, quantization="fp8"),
])
def test_smaller_weights_are_formats_the_model_exists_in(d):
    r = fit_or_suggest(d, CATALOG)
    assert not r.fits
    offered = {(s.changes.get("engine", "vllm"), s.changes["quantization"]) for s in r.suggestions
               if "quantization" in s.changes}
    assert not {q for _, q in offered} & TIED
    spec = resolve_model(CATALOG, d.model)
    assert all(q in model_formats(CATALOG, spec, engine) for engine, q in offered)  # another engine's: its formats


def test_the_formats_a_model_exists_in():
    """Qwen3-32B's builds, plus vLLM's FP8 made at load from its BF16 build and llama.cpp's own GGUF types."""
    spec = resolve_model(CATALOG, "qwen3-32b")
    vllm = model_formats(CATALOG, spec, "vllm")
    assert set(spec.builds) <= set(vllm) and vllm["fp8"] == "quantized from the bf16 build at load"
    assert not set(vllm) & TIED
    assert model_formats(CATALOG, spec, "llamacpp")["gguf-q6_k"] == "converted from the bf16 build"


@pytest.mark.parametrize("args", [
    ["--model", "gemma-4-31b", "--gpu", "RTX 5090"],
    ["--model", "qwen3-32b", "--gpu", "RTX 5090"],
    ["--model", "llama-3.3-70b", "--gpu", "RTX 5090", "--gpus", "2", "-q", "fp8"],
    ["--model", "deepseek-r1", "--gpu", "RTX 4090", "--quantization", "gguf-q3_k_m", "--engine", "ktransformers",
     "--host-memory-gb", "512"],
])
def test_every_suggested_command_fits_when_run(args):
    shown = runner.invoke(app, ["fit", *args])
    assert "To fit, run one of" in shown.output, shown.output
    commands = [shlex.split(line.strip())[1:] for line in shown.output.splitlines()
                if line.strip().startswith("inferplan fit ")]
    assert commands, shown.output
    for command in commands:
        r = runner.invoke(app, [*command, "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["fits"], command


@pytest.mark.parametrize("model", ["gemma-4-31b", "qwen3-32b"])
def test_a_mixed_expert_format_is_refused_for_a_dense_model(model):
    """mixed-fp4-fp8's 4.7 bits average FP4 routed experts and FP8 elsewhere: a dense model in it would be
    all FP8, not 4.7 bits a weight (Gemma 4 31B: 18.65 GiB where FP8 is 29.90), so it is refused."""
    from inferplan.errors import InvalidScenarioError
    from inferplan.memory.fit import fit
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model=model, gpu="rtx-5090", quantization="mixed-fp4-fp8"), CATALOG)
    assert err.value.field == "quantization" and "mixed-fp4-fp8" not in err.value.allowed
    assert fit(Deployment(model="deepseek-v4-flash", gpu="b200", gpus=8, quantization="mixed-fp4-fp8"), CATALOG)
