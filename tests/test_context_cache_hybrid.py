"""llama.cpp's slots by build: a hybrid model's (recurrent state + attention) cache, read from create_memory
(src/llama-model.cpp) at the release tags around PR #15050 (b6079) and PR #19559 (b8025), and the 4 unified slots
llama-server opens for --parallel 1 from PR #16736 (b6925) to PR #17997 (b7433, tools/server/server.cpp), which run
as many requests as the one cache they share holds."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.memory_rules import memory_rule
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.context_cache import context_kv, unified_slots
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.resolve import resolve_model
from inferplan.performance.context import ServingContext
from inferplan.shells.cli import app

HYBRID = "nemotron-nano-9b-v2"  # Nemotron-H: 4 attention layers among Mamba-2 layers
ATTENTION_BYTES_PER_TOKEN = 4 * 8 * 128 * 2 * 2  # 4 layers × 8 KV heads × head dim 128 × (K, V) × 2 bytes = 16,384
STATE_BYTES = 72_769_536  # one sequence's Mamba-2 conv + SSM state at 16 bits, as the catalogue resolves it (the
# layouts below; llama.cpp's own F32 state is twice it: test_llamacpp_window_cache.py)


def _hybrid_layout(catalog):
    layout = kv_layout(resolve_model(catalog, HYBRID).architecture, kv_bits=16, tp=1, pp=1)
    assert layout.growing_bytes_per_token_per_gpu == ATTENTION_BYTES_PER_TOKEN
    assert layout.state_bytes_per_seq_per_gpu == STATE_BYTES
    return layout


@pytest.mark.parametrize(("release", "cells"), [
    ("b8024", 3 * 24_576),  # each of the 3 slots' streams holds the whole n_ctx (3 × 8,192 = 24,576 cells)
    ("b8025", 24_576),      # PR #19559: each stream n_ctx_seq = 8,192, 3 × that
])
def test_a_hybrid_models_attention_takes_the_whole_context_per_slot_until_pr19559(catalog, release, cells):
    rule = memory_rule(catalog, "llamacpp", release).context_cache
    kv = context_kv(rule, _hybrid_layout(catalog), 3 * 8192, True, slots=3)
    assert kv.tokens == cells and kv.slot_tokens == 8192  # a slot still serves its share of n_ctx
    assert kv.bytes_per_gpu == cells * ATTENTION_BYTES_PER_TOKEN + 3 * STATE_BYTES  # b8024: 1,426,268,160 bytes


def test_an_attention_model_keeps_its_slot_shares_at_b8024(catalog):
    rule = memory_rule(catalog, "llamacpp", "b8024").context_cache
    layout = kv_layout(resolve_model(catalog, "llama-3.1-8b").architecture, kv_bits=16, tp=1, pp=1)
    assert context_kv(rule, layout, 3 * 8192, True, slots=3).tokens == 24_576


@pytest.mark.parametrize(("release", "cells"), [
    ("b6078", 24_128),      # the hybrid memory's cache built unified: one stream of n_ctx 24,100 padded to 32
    ("b6079", 3 * 24_128),  # PR #15050: a stream per slot, each the whole padded n_ctx
])
def test_pr15050_gives_each_slot_a_stream_of_the_whole_context(catalog, release, cells):
    rule = memory_rule(catalog, "llamacpp", release).context_cache
    assert context_kv(rule, _hybrid_layout(catalog), 24_100, False, slots=3).tokens == cells


def test_one_slot_is_the_same_in_every_build(catalog):
    for release in ("b6078", "b6079", "b8024", "b8025"):
        rule = memory_rule(catalog, "llamacpp", release).context_cache
        kv = context_kv(rule, _hybrid_layout(catalog), 8192, True, slots=1)
        assert kv.tokens == 8192 and kv.bytes_per_gpu == 8192 * ATTENTION_BYTES_PER_TOKEN + STATE_BYTES


def test_fit_plans_the_hybrid_cells_each_build_allocates():
    args = ["fit", HYBRID, "--gpu", "h100", "--engine", "llamacpp", "--max-model-len", "8192", "--max-num-seqs", "3",
            "--explain"]
    before = CliRunner().invoke(app, [*args, "--engine-version", "b8024"])
    after = CliRunner().invoke(app, [*args, "--engine-version", "b8025"])
    assert before.exit_code == 0 and after.exit_code == 0
    flat = [" ".join(r.output.split()) for r in (before, after)]
    # the 3 recurrent states in llama.cpp's F32: 3 × 2 × 72,769,536 = 436,617,216 bytes
    assert "24,576 tokens → 73,728 cells" in flat[0] and "1,568.39 MiB per GPU" in flat[0]  # + 73,728 × 16,384
    assert "24,576 tokens → 24,576 cells" in flat[1] and "800.39 MiB per GPU" in flat[1]  # + 24,576 × 16,384


def _fit_json(*args):
    out = CliRunner().invoke(app, ["fit", "--gpu", "h100", "--engine", "llamacpp", "--max-model-len", "8000", "--json", *args])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    return data.get("result", data)


@pytest.mark.parametrize(("release", "stated", "slots", "cells"), [
    ("b6924", [], 1, 8000),                          # before PR #16736: --parallel 1 is one slot
    ("b6925", [], 4, 8000),                          # PR #16736: 4 slots over one unified cache of n_ctx, unpadded
    ("b6925", ["--max-num-seqs", "1"], 4, 8000),     # the launch's --parallel 1 is the default: 4 slots all the same
    ("b7432", ["--max-num-seqs", "1"], 4, 8192),     # n_ctx padded to 256 (PR #17046), still 4 unified slots
    ("b7433", [], 1, 8192),                          # PR #17997: only an unset --parallel (-1) is auto; the launch states 1
    ("b7432", ["--max-num-seqs", "2"], 2, 2 * 8192),  # two slots stated: a stream each, no auto slots
])
def test_parallel_one_opens_four_unified_slots_from_pr16736_to_pr17997(release, stated, slots, cells):
    r = _fit_json("llama-3.1-8b", "--engine-version", release, *stated)
    # llama-3.1-8b: 32 layers × 8 KV heads × 128 × (K, V) × 2 bytes = 131,072 bytes a cell (0.125 MiB)
    note = next(a for a in r["assumptions"] if a.startswith("KV cache for the context"))
    assert f"→ {cells:,} cells" in note and f"{cells * 0.125:,.2f} MiB per GPU" in note
    assert r["running_cap"] == slots and r["started_slots"] == slots
    assert r["max_concurrency"] == (2 if slots == 2 else 1)  # 4 unified slots share one 8,000-token context


def test_four_unified_slots_keep_a_hybrid_models_state_each_and_one_attention_stream():
    r = _fit_json(HYBRID, "--engine-version", "b7432")
    note = next(a for a in r["assumptions"] if a.startswith("KV cache for the context"))
    # 8,192 cells × 16,384 bytes + 4 F32 states × 145,539,072 bytes = 716,374,016 bytes
    assert "→ 8,192 cells" in note and "683.19 MiB per GPU" in note and r["running_cap"] == 4


def test_four_unified_slots_share_their_cells_between_the_running_sequences():
    r = _fit_json("llama-3.1-8b", "--engine-version", "b7432", "--concurrency", "4")
    assert r["largest_context_tokens"] == 8192 // 4 and r["queued_sequences"] == 0


@pytest.mark.parametrize(("release", "draft", "opened"), [
    ("b6925", True, 4),   # a draft model opens the 4 slots too until PR #17017
    ("b6958", True, None),  # PR #17017: with a draft model the one slot stays
    ("b6958", False, 4), ("b7432", False, 4), ("b7433", False, None), ("b6924", False, None),
])
def test_a_draft_model_keeps_one_slot_from_pr17017(catalog, release, draft, opened):
    rule = memory_rule(catalog, "llamacpp", release).context_cache
    assert unified_slots(rule, 1, draft) == opened
    assert unified_slots(rule, 2, draft) is None


@pytest.mark.parametrize(("input_len", "output_len", "running"), [
    (5000, 1000, 1),  # 8,192 // 6,000: one request's tokens fill most of the one cache the 4 slots share
    (3000, 1000, 2),  # 8,192 // 4,000
    (1000, 1000, 4),  # all 4 slots: 8,000 tokens in 8,192 cells
])
def test_four_unified_slots_run_as_many_requests_as_their_one_cache_holds(catalog, input_len, output_len, running):
    d = Deployment(model="llama-3.1-8b", gpu="h100", engine="llamacpp", engine_version="b7432", max_model_len=8000,
                   max_num_seqs=1)
    ctx = ServingContext(catalog, d, Workload(input_len=input_len, output_len=output_len))
    assert ctx.mp.result.unified_cache_cells == 8192
    assert ctx.kv_limit == ctx.max_running == ctx.max_concurrency() == running


def test_perf_refuses_more_requests_than_the_unified_cache_holds():
    out = CliRunner().invoke(app, ["perf", "llama-3.1-8b", "--gpu", "h100", "--engine", "llamacpp", "--engine-version",
                                   "b7432", "--max-model-len", "8000", "--max-num-seqs", "1", "--concurrency", "4",
                                   "--input-len", "5000", "--output-len", "1000"])
    flat = " ".join(out.output.split())
    assert out.exit_code == 2 and "the KV cache holds 1 requests of 5000+1000 tokens" in flat
    assert "(4 slots sharing one 8,192-cell cache)" in flat


def test_fit_says_the_launchs_parallel_one_and_the_four_slots_sharing_one_cache():
    out = CliRunner().invoke(app, ["fit", "llama-3.1-8b", "--gpu", "h100", "--engine", "llamacpp", "--engine-version",
                                   "b7432", "--max-model-len", "8000", "--max-num-seqs", "1", "--concurrency", "4"])
    flat = " ".join(out.output.split())
    assert out.exit_code == 0, out.output
    assert ("at once: 1 sequence of 8,000 tokens, or up to 4 shorter ones: 4 slots sharing one 8,192-cell cache, which "
            "the launch's --parallel 1 opens") in flat
    assert "--parallel 1, which opens 4 slots over one unified cache" in flat and "--parallel 4" not in flat
    assert "4 sequences of 8,000 tokens" not in flat


def test_the_ctx_size_note_says_which_builds_unify_a_stated_parallel_one(catalog):
    note = flags_for(catalog, "llamacpp").settings["max_model_len"].note
    assert "is not unified and each slot gets ctx-size / parallel, except a --parallel 1 in builds b6925-b7432" in note
    assert "from b7433 only an unset --parallel is auto" in note
