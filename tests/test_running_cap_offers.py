"""What fit offers when a concurrency leaves no context, and the running cap a search or a plan states with a
draft: each offer is accepted when followed."""

import re

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit, verdict_plan
from inferplan.memory.slots import with_draft_running_stated

CATALOG = load_catalog()


@pytest.mark.parametrize("stated", [
    # a hybrid model: each running sequence holds its recurrent state beside its tokens
    dict(model="nemotron-nano-9b-v2", gpu="rtx-4090", engine="vllm", max_model_len=8192, concurrency=3000),
    # TensorRT-LLM's cap holds each pipeline micro-batch
    dict(model="llama-3.1-70b", gpu="l40s", gpus=2, pipeline_parallel_size=2, quantization="fp8", engine="trtllm",
         max_model_len=4096, concurrency=100_000),
])
def test_the_running_cap_a_refusal_offers_is_accepted(stated):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(**stated), CATALOG)
    offered = int(re.search(r"at most ([\d,]+) \(the rest queue\)", e.value.allowed).group(1).replace(",", ""))
    r = fit(Deployment(**stated, max_num_seqs=offered), CATALOG)
    assert r.largest_context_tokens >= 1


def test_a_drafted_plan_states_its_cap_on_the_pool_it_sizes_with_the_draft():
    d = Deployment(model="deepseek-r1", gpu="b200", gpus=8, tensor_parallel_size=8, engine="sglang",
                   max_model_len=163_840, mtp_draft=True, speculative_tokens=3)
    plain = verdict_plan(d.model_copy(update={"mtp_draft": False, "speculative_tokens": 0}), CATALOG)
    started = with_draft_running_stated(d, CATALOG)
    assert 48 < started.max_num_seqs < plain.settings.max_num_seqs  # the draft's layers take some of the pool


def test_a_release_whose_draft_cap_leaves_a_rank_none_is_started_with_a_stated_cap():
    d = Deployment(model="deepseek-r1", system="gb200-nvl72", gpus=64, data_parallel_size=64, enable_expert_parallel=True,
                   engine="sglang", engine_version="0.5.22", mtp_draft=True, speculative_tokens=3, max_model_len=8192)
    with pytest.raises(InvalidScenarioError) as e:
        fit(d, CATALOG)
    assert e.value.field == "data_parallel_size"
    started = with_draft_running_stated(d, CATALOG)
    assert started.max_num_seqs and fit(started, CATALOG).running_cap == started.max_num_seqs


def test_a_launch_that_does_not_fit_names_no_running_cap_beside_the_kv_caches_count():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app
    # llama-server's 256 slots of 2,000 tokens do not fit: the count beside them is the memory budget's, not a cap
    out = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "llamacpp",
                                   "--quantization", "gguf-q4_k_m", "--max-model-len", "2000", "--max-num-seqs", "256"]).output
    assert "does not fit" in out and "the engine's cap" not in out
