"""vLLM and SGLang on Apple GPUs run on MLX (vllm-metal, SGLang's MLX runtime): their memory is Metal's
working set times the engine's fraction, with no CUDA graphs or CUDA start-up check, and they load
the formats their Metal back ends load (``engines.yaml`` ``metal_working_set``, ``metal_formats``)."""

from __future__ import annotations

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.catalog.schema import Software
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.units import GiB

CATALOG = load_catalog()
MAC = dict(gpu="apple-m3-ultra", max_model_len=8500)


def test_vllm_on_a_mac_budgets_the_metal_working_set_without_cuda_graphs():
    # vllm-metal: KV = recommended working set x --gpu-memory-utilization - MLX memory - profile overhead
    r = fit(Deployment(model="qwen3-coder-480b-a35b", engine="vllm", quantization="mlx-4bit", **MAC), CATALOG)
    assert r.gpu_memory_bytes == pytest.approx(0.75 * 512 * GiB)
    assert r.usable_bytes_per_gpu == pytest.approx(0.92 * 0.75 * 512 * GiB)
    assert r.cuda_graph_bytes_per_gpu == 0 and r.startup_shortfall_bytes_per_gpu == 0
    assert r.fits
    assert any("runs on MLX" in a for a in r.assumptions)


def test_the_same_engine_on_a_cuda_gpu_keeps_its_cuda_graphs():
    r = fit(Deployment(model="qwen3-8b", engine="vllm", gpu="h100-sxm", max_model_len=8192), CATALOG)
    assert r.cuda_graph_bytes_per_gpu > 0


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_fp8_weights_are_refused_on_a_mac_naming_the_formats_it_loads(engine):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(model="qwen3-coder-480b-a35b", engine=engine, quantization="fp8-block", **MAC), CATALOG)
    assert e.value.field == "quantization" and "Apple M3 Ultra" in str(e.value)
    assert "bf16" in e.value.allowed and "fp8-block" not in e.value.allowed


def test_the_metal_list_decides_there_and_the_formats_own_lists_elsewhere():
    vllm, mlx4, fp8 = CATALOG.engine("vllm"), CATALOG.quantization("mlx-4bit"), CATALOG.quantization("fp8-block")
    assert vllm.loads(mlx4, Software.METAL) and not vllm.loads(fp8, Software.METAL)
    assert vllm.loads(fp8, Software.CUDA) and not vllm.loads(mlx4, Software.CUDA)
    unlisted = vllm.model_copy(update={"metal_formats": None})  # no list: the formats' own engine lists
    assert unlisted.loads(fp8, Software.METAL) and not unlisted.loads(mlx4, Software.METAL)


def test_a_metal_format_list_needs_a_source_and_known_formats(tmp_path):
    good = yaml.safe_load((DATA_DIR / "engines.yaml").read_text())
    stated = next(e for e in good["engines"] if e.get("metal_formats"))
    for record, match in ((dict(stated, metal_formats_source=None), "metal_formats needs a metal_formats_source"),
                          (dict(stated, metal_formats=["fp9"]), "unknown weight format 'fp9'")):
        bad = tmp_path / "engines.yaml"
        bad.write_text(yaml.safe_dump({"sources": good["sources"], "engines": [record]}))
        with pytest.raises(CatalogError, match=match):
            load_files([bad, DATA_DIR / "quantizations.yaml", DATA_DIR / "quantizations_mlx.yaml"])


def test_sglang_on_a_mac_launches_its_mlx_runtime_without_cuda_graphs():
    from inferplan.deploy.command import launch_command

    mac = launch_command(Deployment(model="qwen3-8b", engine="sglang", **MAC), CATALOG)
    assert mac.env == {"SGLANG_USE_MLX": "1"} and "--disable-cuda-graph" in mac.argv
    assert mac.script.startswith("SGLANG_USE_MLX=1 python3 -m sglang.launch_server ")
    cuda = launch_command(Deployment(model="qwen3-8b", engine="sglang", gpu="h100-sxm", max_model_len=8192), CATALOG)
    assert cuda.env == {} and "--disable-cuda-graph" not in cuda.argv


def test_a_software_launch_argument_the_parser_lacks_is_refused_on_load():
    from pydantic import ValidationError

    from inferplan.catalog.flags_schema import EngineFlags, flags_for

    raw = flags_for(CATALOG, "sglang").model_dump(mode="json")
    raw["software_launch"][0]["args"] = ["--no-such-flag"]
    with pytest.raises(ValidationError, match="--no-such-flag"):
        EngineFlags.model_validate(raw)
