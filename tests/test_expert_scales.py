"""Expert block scales an engine keeps wider than the checkpoint (catalog/data/engine_weight_rules.yaml,
memory/expert_scales.py): the rule is data, applied where its engine, model type, expert format and
GPU architecture meet, and the weights of a deployment carry it."""

import dataclasses

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.catalog.registry import Registry
from inferplan.errors import CatalogError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.units import GiB

RULE = "sglang-deepseek-v4-fp4-expert-scales-hopper"


def _pro(**changes) -> Deployment:
    base = dict(model="deepseek-v4-pro", gpu="h200-sxm", tensor_parallel_size=8, engine="sglang",
                quantization="mixed-fp4-fp8", gpu_memory_utilization=0.88, max_model_len=1048576)
    return Deployment(**{**base, **changes})


def _without_rules(catalog):
    return dataclasses.replace(catalog, weight_rules=Registry("weight rules", {}))


def test_the_float32_scales_add_three_bytes_per_32_expert_weights(catalog):
    assert catalog.weight_rules.records[RULE].extra_bits_per_weight() == pytest.approx(0.75)


def test_deepseek_v4_pro_weights_on_hopper_sglang_match_the_printed_load(catalog):
    """SemiAnalysisAI/InferenceX issue #2128: 'Load weight end. ... mem usage=125.65 GB' (GiB) per GPU
    for DeepSeek-V4-Pro at TP 8 on H200 under SGLang, then no room for the KV cache at 0.88."""
    result = fit(_pro(), catalog)
    assert result.weights_bytes_per_gpu / GiB == pytest.approx(125.65, rel=0.02)
    assert not result.fits
    assert any(RULE in note for note in result.assumptions)


def test_the_rule_unwired_leaves_checkpoint_sized_weights_that_fit(catalog):
    """Without the rule the weights fall back to the checkpoint's width, 14 % below the printed load."""
    wired, bare = fit(_pro(), catalog), fit(_pro(), _without_rules(catalog))
    assert bare.fits and bare.weights_bytes_per_gpu / GiB < 0.9 * 125.65
    assert wired.weights_bytes_per_gpu - bare.weights_bytes_per_gpu == pytest.approx(16.9 * GiB, rel=0.03)


@pytest.mark.parametrize("runner", ["marlin", "flashinfer_mxfp4"])
def test_a_named_runner_that_packs_e8m0_scales_keeps_the_checkpoint_width(catalog, runner):
    """The SGLang cookbook starts DeepSeek-V4-Pro FP4 on 8x H200 at --mem-fraction-static 0.88 with
    --moe-runner-backend flashinfer_mxfp4 (or marlin): those MXFP4 methods keep E8M0 scales."""
    named, default = fit(_pro(moe_runner_backend=runner, max_model_len=9216), catalog), fit(_pro(max_model_len=9216), catalog)
    assert named.fits and not default.fits
    assert default.weights_bytes_per_gpu - named.weights_bytes_per_gpu == pytest.approx(16.9 * GiB, rel=0.03)
    assert fit(_pro(moe_runner_backend="deep_gemm"), catalog).weights_bytes_per_gpu == default.weights_bytes_per_gpu


@pytest.mark.parametrize("changes", [{"gpu": "b200"}, {"engine": "vllm"}, {"model": "deepseek-v3.2", "quantization": "fp8-block", "max_model_len": 32768}])
def test_the_rule_stays_off_outside_its_engine_model_and_gpu(catalog, changes):
    d = _pro(**changes)
    wired, bare = fit(d, catalog), fit(d, _without_rules(catalog))
    assert wired.weights_bytes_per_gpu == bare.weights_bytes_per_gpu


def _load_rule(tmp_path, **changes):
    shipped = yaml.safe_load((DATA_DIR / "engine_weight_rules.yaml").read_text())
    rule = {**shipped["weight_rules"][0], **changes}
    bad = tmp_path / "rules.yaml"
    bad.write_text(yaml.safe_dump({"sources": shipped["sources"], "weight_rules": [rule]}))
    paths = [p for p in DATA_DIR.rglob("*.yaml") if p.name != "engine_weight_rules.yaml"]
    return load_files([*paths, bad])


@pytest.mark.parametrize("changes, match", [({"engine": "nowhere"}, "unknown engine"),
                                            ({"architectures": ["hoper"]}, "unknown GPU architectures"),
                                            ({"expert_format": "fp5"}, "native_format"),
                                            ({"sources": ["nowhere"]}, "unknown source")])
def test_a_rule_naming_what_the_catalogue_lacks_fails_to_load(tmp_path, changes, match):
    with pytest.raises(CatalogError, match=match):
        _load_rule(tmp_path, **changes)


def test_a_runner_backend_for_an_engine_without_one_is_refused_naming_the_field(catalog):
    from inferplan.errors import InvalidScenarioError

    with pytest.raises(InvalidScenarioError) as err:
        fit(_pro(engine="vllm", moe_runner_backend="marlin", max_model_len=9216), catalog)
    assert err.value.field == "moe_runner_backend" and "sglang" in err.value.allowed


def test_the_launch_command_carries_the_runner_backend(catalog):
    from inferplan.deploy.command import launch_command

    argv = launch_command(_pro(moe_runner_backend="flashinfer_mxfp4", max_model_len=9216), catalog).argv
    assert argv[argv.index("--moe-runner-backend") + 1] == "flashinfer_mxfp4"
