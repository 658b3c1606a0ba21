"""fit, perf and deploy plan one llama.cpp deployment: the GGUF build an unstated format means, the
--parallel slots that share --ctx-size (perf's concurrency is those slots, not the memory left over),
the shortfall of a cache that does not fit, and a local config.json served as a placeholder GGUF."""

import shutil

import pytest

from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.serving import estimate

QWEN = dict(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=32768)
W = Workload(input_len=1024, output_len=256, concurrency=1)


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_an_unstated_format_on_a_gguf_engine_is_the_models_gguf_build_in_fit_perf_and_deploy(catalog):
    d = Deployment(model="gpt-oss-120b", gpu="h100", engine="llamacpp", max_model_len=8192)
    assert fit(d).quantization == "gguf-mxfp4-moe"
    assert estimate(d, W, use_profiles=False).quantization == "gguf-mxfp4-moe"
    argv = launch_command(d, catalog).argv
    assert _value(argv, "--hf-repo").endswith(":MXFP4_MOE")


@pytest.mark.parametrize("slots", [None, 2, 4])
def test_perf_serves_the_slots_the_launch_opens(catalog, slots):
    d = Deployment(**{**QWEN, "max_model_len": 8192}, max_num_seqs=slots)
    argv = launch_command(d, catalog).argv
    opened = int(_value(argv, "--parallel"))
    assert opened == (slots or 1)
    assert int(_value(argv, "--ctx-size")) == 8192 * opened
    e = estimate(d, W, use_profiles=False)
    assert e.max_concurrency == opened  # not the requests the memory left over would hold (dozens)


def test_a_cache_that_does_not_fit_is_short_by_what_its_cells_lack():
    """8 slots of 32,768 tokens: 262,144 cells of 96 KiB (Qwen3-30B-A3B: 48 layers x 4 KV heads x 128 x
    2 x 2 bytes) is 24 GiB against the 5.6 GiB the weights and buffers leave."""
    r = fit(Deployment(**QWEN, max_num_seqs=8))
    assert not r.fits
    cells = 8 * 32768
    assert r.kv_cache_bytes_per_token == 96 * 1024
    assert r.shortfall_bytes == pytest.approx(cells * r.kv_cache_bytes_per_token - r.kv_cache_bytes_per_gpu, rel=1e-6)
    assert r.shortfall_bytes > 18 * 2**30


def test_a_local_config_json_gets_a_placeholder_gguf_not_an_hf_repo(catalog, tmp_path):
    shutil.copy(catalog.data_dir / "hf_configs" / "qwen3-8b.json", tmp_path / "config.json")
    d = Deployment(model=str(tmp_path / "config.json"), gpu="h100", engine="llamacpp", quantization="gguf-q4_k_m",
                   max_model_len=8192)
    command = launch_command(d, catalog)
    assert "--hf-repo" not in command.argv
    served = _value(command.argv, "-m")
    assert served.startswith("<") and served.endswith("-Q4_K_M.gguf>")
    assert any(served in note and "config" in note for note in command.notes)


def test_a_search_starts_llamacpp_with_the_most_slots_that_fit(catalog):
    from inferplan.search.service import service_curve

    d = Deployment(**{**QWEN, "max_model_len": 8192})
    slots = service_curve(d, W, catalog, use_profiles=False).slots
    assert slots > 1
    assert fit(Deployment(**{**QWEN, "max_model_len": 8192}, max_num_seqs=slots)).fits
    assert not fit(Deployment(**{**QWEN, "max_model_len": 8192}, max_num_seqs=slots + 1)).fits


def test_perf_at_a_concurrency_with_no_slots_stated_plans_that_many_slots(catalog):
    """No --max-num-seqs: perf at concurrency 4 plans llama-server started with --parallel 4 (and
    says so); at 'max' the most slots whose whole cache fits — the launch deploy prints for them."""
    from inferplan.memory.slots import most_slots

    d = Deployment(**{**QWEN, "max_model_len": 8192})
    four = estimate(d, W.model_copy(update={"concurrency": 4}), use_profiles=False)
    assert four.max_concurrency == 4 and four.concurrency == 4
    assert any("started with 4 slots" in a for a in four.assumptions)
    most = most_slots(d, catalog, 512)
    top = estimate(d, W.model_copy(update={"concurrency": "max"}), use_profiles=False)
    assert most > 4 and top.concurrency == top.max_concurrency == most
    assert fit(d.model_copy(update={"max_num_seqs": most})).fits
    assert not fit(d.model_copy(update={"max_num_seqs": most + 1})).fits
