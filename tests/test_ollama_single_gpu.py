"""Of several GPUs, Ollama loads a tag on one alone where its predicted VRAM is at most 80 % of that GPU's free memory
(ollama.yaml ``single_gpu``, server/sched.go bestSingleGPUFit): a tag's build on a GPU count with no parallel sizes is
planned, priced and launched on that one GPU, the others idle; a larger model stays spread over them all."""

from __future__ import annotations

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.ollama_batch import on_ollama_gpu
from inferplan.memory.suggest import fit_or_suggest
from inferplan.performance.serving import estimate

from catalog_edits import with_record

CATALOG = load_catalog()
TWO = Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2)


def test_a_tag_one_gpu_holds_is_planned_on_that_gpu_alone():
    two = fit(TWO, CATALOG)
    one = fit(Deployment(model="qwen3:8b", gpu="rtx-4090", max_model_len=two.max_model_len), CATALOG)
    assert (two.parallel.gpus, two.parallel.pipeline_parallel_size, two.parallel.data_parallel_size) == (1, 1, 1)
    assert two.kv_cache_tokens == one.kv_cache_tokens
    assert two.layout_note.startswith("2 GPUs given: Ollama loads qwen3:8b on one of them alone")
    assert "leaves 1 idle" in two.layout_note
    # the context is the one Ollama gives on all the GPUs it sees (48 GiB: the model's own 40,960, not 24 GiB's 32,768)
    assert two.max_model_len == 40960 and "the context Ollama gives it on these GPUs" in two.build_note


def test_perf_counts_the_one_gpu_that_works():
    e = estimate(TWO, Workload(concurrency=1), CATALOG)
    assert e.gpus == 1 and e.output_tokens_per_s_per_gpu == e.output_tokens_per_s_total
    assert "Ollama loads qwen3:8b on one of them alone" in e.layout_note


def test_a_tag_past_the_share_of_one_gpu_stays_spread():
    spread = fit(Deployment(model="qwen3:32b", gpu="rtx-4090", gpus=2), CATALOG)
    assert (spread.parallel.gpus, spread.parallel.pipeline_parallel_size) == (2, 2)
    assert "Ollama loads" not in (spread.layout_note or "")
    # qwen3:8b with 3 slots: 122,880 tokens of context predict 21.6 GiB, past 80 % of one GPU's 23.6
    slots = fit(TWO.model_copy(update={"max_num_seqs": 3}), CATALOG)
    assert (slots.parallel.gpus, slots.parallel.pipeline_parallel_size) == (2, 2)


def test_a_stated_layout_is_planned_as_stated():
    stated = fit(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2, pipeline_parallel_size=2), CATALOG)
    assert (stated.parallel.gpus, stated.parallel.pipeline_parallel_size) == (2, 2)


def test_deploy_says_ollama_loads_it_on_one_gpu():
    small = launch_command(TWO, CATALOG)
    assert any(n.startswith("2 GPUs given: Ollama loads qwen3:8b on one") for n in small.notes)
    assert not any(n.startswith("pipeline_parallel_size") or "copies" in n for n in small.notes)
    large = launch_command(Deployment(model="qwen3:32b", gpu="rtx-4090", gpus=2), CATALOG)
    assert any(n.startswith("pipeline_parallel_size 2: not set, Ollama spreads") for n in large.notes)


def test_unwired_the_tag_is_spread_over_every_gpu():
    spreading = with_record(CATALOG, "ollama_runners", "ollama", single_gpu=None)
    unwired = fit(TWO.model_copy(update={"max_num_seqs": 2}), spreading)
    assert (unwired.parallel.gpus, unwired.parallel.pipeline_parallel_size) == (2, 2)


def test_the_slots_that_fit_are_those_ollama_still_loads_on_the_one_gpu():
    # at 3 slots Ollama's prediction passes 80 % of one RTX 4090 and it spreads the tag over both: the plan of one
    # GPU offers the 2 slots that keep it there, and its tokens per instance are those 2 slots', not 6 slots' of two
    plan = fit_or_suggest(TWO, CATALOG)
    assert plan.parallel.gpus == 1 and plan.most_slots == 2
    assert plan.kv_cache_tokens == 2 * plan.max_model_len
    assert on_ollama_gpu(with_default_engine(TWO.model_copy(update={"max_num_seqs": 3}), CATALOG), CATALOG).gpus == 2
