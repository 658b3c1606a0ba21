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
    assert _value(argv, "--hf-repo") == "ggml-org/gpt-oss-120b-GGUF:mxfp4"  # the label its file names carry


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


def test_perf_names_the_concurrency_when_its_slots_do_not_fit(catalog):
    """Asked for more requests at once than slots fit: the error is the concurrency's, with the most that fit."""
    from inferplan.errors import InvalidScenarioError
    from inferplan.memory.slots import most_slots

    d = Deployment(**{**QWEN, "max_model_len": 8192})
    most = most_slots(d, catalog, 512)
    with pytest.raises(InvalidScenarioError) as err:
        estimate(d, W.model_copy(update={"concurrency": most + 1}), use_profiles=False)
    assert err.value.field == "concurrency" and err.value.allowed == f"1..{most} or max"


def test_weights_that_do_not_fit_are_refused_by_the_memory_plan_not_blamed_on_the_concurrency(catalog):
    """Not one slot fits (Llama-3.1-70B Q4_K_M on one 24 GB card): the memory plan's refusal names the GPUs,
    as at concurrency 1, rather than a concurrency range of 1..0."""
    from inferplan.errors import InvalidScenarioError

    d = Deployment(model="llama-3.1-70b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m")
    refusals = []
    for concurrency in (1, 2):
        with pytest.raises(InvalidScenarioError) as err:
            estimate(d, W.model_copy(update={"concurrency": concurrency}), use_profiles=False)
        refusals.append(err.value.field)
    assert refusals == ["gpus", "gpus"]


@pytest.mark.parametrize("stated", [None, 16384])
def test_the_concurrency_refusal_names_the_context_it_planned_and_one_that_holds_the_slots(catalog, stated):
    """The slots are max_model_len each: the refusal says which length (the model's own when none is
    stated), and the longest shorter one at which that many slots fit — a length that does hold them."""
    from inferplan.errors import InvalidScenarioError
    from inferplan.memory.resolve import resolve_model

    d = Deployment(**{**QWEN, "max_model_len": stated})
    with pytest.raises(InvalidScenarioError) as err:
        estimate(d, W.model_copy(update={"concurrency": 8}), use_profiles=False)
    own = resolve_model(catalog, "qwen3-30b-a3b").context_tokens
    message = str(err.value)
    assert f"at max_model_len {stated or own:,}" in message
    assert ("the model's own" in message) is (stated is None)
    shorter = int(message.split("8 fit at max_model_len ")[1].split()[0].replace(",", ""))
    assert W.input_len + W.output_len <= shorter < (stated or own)
    assert fit(d.model_copy(update={"max_model_len": shorter, "max_num_seqs": 8})).fits
    assert not fit(d.model_copy(update={"max_model_len": shorter + 256, "max_num_seqs": 8})).fits
    assert err.value.allowed.endswith(" or max")


def test_plan_starts_a_llamacpp_cell_with_the_most_slots_that_fit(catalog):
    """The Users + ROI plan sizes a llama.cpp cell as a search starts it: the most --parallel slots that
    fit at the request shape, not the engine's one default slot."""
    from inferplan.economics.capacity import cell_capacity
    from inferplan.economics.workloads import WorkloadOverrides, resolve_workload
    from inferplan.memory.slots import most_slots

    w = resolve_workload(catalog, WorkloadOverrides(preset="chat-seat"))
    cell = Deployment(model="qwen3-32b", gpu="rtx-5090", engine="llamacpp", quantization="gguf-q4_k_m",
                      max_model_len=w.input_tokens_per_request + w.output_tokens_per_request)
    cap = cell_capacity(catalog, cell, w)
    assert cap.engine_slots == most_slots(cell, catalog, 1024) > 1


def test_fit_says_the_slots_llamacpp_is_started_with_and_the_most_that_fit(catalog):
    """fit's 'at once' on llama.cpp is the --parallel slots of the launch (one, unstated), not the room
    left over, and it names the most that fit as a ready --max-num-seqs."""
    from typer.testing import CliRunner

    from inferplan.memory.slots import most_slots
    from inferplan.memory.suggest import fit_or_suggest
    from inferplan.shells.cli import app

    d = Deployment(**{**QWEN, "max_model_len": 8192})
    r = fit_or_suggest(d, catalog)
    most = most_slots(d, catalog, 1024)
    assert (r.started_slots, r.most_slots) == (1, most) and most > 1
    stated = fit_or_suggest(d.model_copy(update={"max_num_seqs": 2}), catalog)
    assert (stated.started_slots, stated.most_slots) == (2, None)
    out = CliRunner().invoke(app, ["fit", "--model", "qwen3-30b-a3b", "--gpu", "rtx-4090", "--engine", "llamacpp",
                                   "-q", "gguf-q4_k_m", "--max-model-len", "8192"], env={"COLUMNS": "200"}).output
    assert f"at once: 1 sequence of 8,192 tokens, the --parallel slots it is started with; {most} fit: --max-num-seqs {most}" in out
