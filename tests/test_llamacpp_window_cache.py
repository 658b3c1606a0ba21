"""llama.cpp's sliding-window cache and recurrent state by build, read from its source at the release tags:
the iSWA cache (PR #13194, b5429) holds min(the other layers' cells in a stream, n_swa × the slots in it + the
batch) cells in each stream, a stream per slot from b6071 (one shared stream before, and with a unified cache);
the recurrent state sits in F32, conv and state tensors alike, since PR #5328 (b2366) brought the first
recurrent model."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.memory_rules import memory_rule
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_cache import context_kv
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.resolve import resolve_model
from inferplan.memory.state_pool import engine_state_architecture
from inferplan.shells.cli import app
from inferplan.units import MiB

GEMMA = "gemma-3-27b"  # 10 global layers, 52 sliding-window layers of 1,024 tokens, 16 KV heads × 128
GLOBAL_BYTES_PER_TOKEN = 10 * 16 * 128 * 2 * 2  # 81,920 (80 KiB)
WINDOW_BYTES_PER_TOKEN = 52 * 16 * 128 * 2 * 2  # 425,984 (416 KiB)


def _gemma_layout(catalog):
    layout = kv_layout(resolve_model(catalog, GEMMA).architecture, kv_bits=16, tp=1, pp=1)
    assert layout.growing_bytes_per_token_per_gpu == GLOBAL_BYTES_PER_TOKEN
    assert layout.window_bytes_per_token_per_gpu == WINDOW_BYTES_PER_TOKEN and layout.window_tokens == 1024
    return layout


def _kv(catalog, release, slots=11, flash_attention=True, unified=False, ubatch_tokens=512):
    rule = memory_rule(catalog, "llamacpp", release).context_cache
    return context_kv(rule, _gemma_layout(catalog), 8192 * (1 if unified else slots), flash_attention, slots=slots,
                      unified=unified, ubatch_tokens=ubatch_tokens, batch_tokens=2048)


def test_each_slot_has_its_own_window_cache(catalog):
    # 11 streams of 8,192 cells; each window stream GGML_PAD(min(8,192, 1,024 + 512), 256) = 1,536 cells
    kv = _kv(catalog, "b9273")
    assert kv.tokens == 90_112 and "the window layers 11 × 1,536 cells" in kv.note
    # 90,112 × 80 KiB = 7,040 MiB, 16,896 × 416 KiB = 6,864 MiB
    assert kv.bytes_per_gpu == 90_112 * GLOBAL_BYTES_PER_TOKEN + 11 * 1536 * WINDOW_BYTES_PER_TOKEN
    assert kv.bytes_per_gpu / MiB == 13_904


@pytest.mark.parametrize(("release", "flash_attention", "window_cells"), [
    ("b5264", False, 90_112),  # no iSWA cache: the window layers hold n_ctx cells as the others
    ("b5429", False, 13_312),  # PR #13194: one stream, GGML_PAD(1,024 × 11 + n_batch 2,048, 32)
    ("b5554", False, 11_776),  # PR #13833: n_ubatch 512 instead, GGML_PAD(11,776, 32)
    ("b6070", True, 11_776),   # the streams exist (b5913) but the context forces one unified cache
    ("b6071", True, 11 * 1536),   # a stream per slot: min(8,192, GGML_PAD(1,536, 256))
    ("b6900", True, 11 * 1536),   # no padding (b6868): min(8,192, 1,536)
])
def test_the_window_cache_by_build(catalog, release, flash_attention, window_cells):
    kv = _kv(catalog, release, flash_attention=flash_attention)
    assert kv.tokens == 90_112
    assert kv.bytes_per_gpu == 90_112 * GLOBAL_BYTES_PER_TOKEN + window_cells * WINDOW_BYTES_PER_TOKEN


@pytest.mark.parametrize(("release", "slots", "flash_attention", "window_cells_per_stream"), [
    # n_ubatch 300 tells the paddings apart (1,024 + 512 = 1,536 is a multiple of 256 and of 32):
    ("b6071", 11, False, 1344),  # min(8,192, GGML_PAD(1,024 + 300, 32)): the context's pad, 32 without -fa
    ("b6900", 11, True, 1324),   # PR #16812 (b6868): no padding at all
    ("b6975", 11, True, 1536),   # PR #17046: GGML_PAD(min(8,192, 1,324), 256) whatever -fa
    ("b5554", 3, True, 3584),    # one stream for the 3 slots: GGML_PAD(1,024 × 3 + 300, 256)
    ("b5554", 3, False, 3392),   # GGML_PAD(3,372, 32)
])
def test_the_window_padding_by_build(catalog, release, slots, flash_attention, window_cells_per_stream):
    kv = _kv(catalog, release, slots=slots, flash_attention=flash_attention, ubatch_tokens=300)
    streams = 1 if release == "b5554" else slots
    assert f"the window layers {streams} × {window_cells_per_stream:,} cells" in kv.note
    assert kv.bytes_per_gpu == (kv.tokens * GLOBAL_BYTES_PER_TOKEN
                                + streams * window_cells_per_stream * WINDOW_BYTES_PER_TOKEN)


def test_the_ubatch_size_flag_reaches_the_window_cache():
    # two slots of 8,192 with --ubatch-size 300: b6900 min(8,192, 1,024 + 300) = 1,324 window cells per slot;
    # b6071 (-fa off by default) GGML_PAD(1,324, 32) = 1,344
    def note(release):
        r = _fit("--engine-version", release, "--max-num-seqs", "2", "--ubatch-size", "300")
        return next(a for a in r["assumptions"] if a.startswith("KV cache for the context"))
    assert "the window layers 2 × 1,324 cells" in note("b6900")
    assert "the window layers 2 × 1,344 cells" in note("b6071")


def test_four_unified_slots_share_one_window_stream(catalog):
    # b6925-b7432's 4 slots over one unified cache: GGML_PAD(min(8,192, 1,024 × 4 + 512), 256) = 4,608 cells
    kv = _kv(catalog, "b7000", slots=4, unified=True)
    assert kv.tokens == 8192 and "the window layers 1 × 4,608 cells" in kv.note
    assert kv.bytes_per_gpu == 8192 * GLOBAL_BYTES_PER_TOKEN + 4608 * WINDOW_BYTES_PER_TOKEN


def test_one_short_slot_keeps_the_whole_context_in_its_window_layers(catalog):
    # 1,500 tokens → 1,536 cells; the window stream min(1,536, GGML_PAD(1,024 + 512, 256)) holds all 1,536, past
    # the 1,024-token window a sequence alone would keep
    rule = memory_rule(catalog, "llamacpp", "b9273").context_cache
    kv = context_kv(rule, _gemma_layout(catalog), 1500, True, slots=1, ubatch_tokens=512, batch_tokens=2048)
    assert kv.tokens == 1536 and kv.bytes_per_gpu == 1536 * (GLOBAL_BYTES_PER_TOKEN + WINDOW_BYTES_PER_TOKEN)


def _fit(*args):
    out = CliRunner().invoke(app, ["fit", GEMMA, "--gpu", "RTX 4090", "--engine", "llamacpp", "-q", "q4_k_m",
                                   "--max-model-len", "8192", "--json", *args])
    assert out.exit_code in (0, 1), out.output  # 1: it does not fit
    data = json.loads(out.output)
    return data.get("result", data)


def test_eleven_slots_of_gemma_3_27b_do_not_fit_an_rtx_4090():
    r = _fit("--max-num-seqs", "11")
    note = next(a for a in r["assumptions"] if a.startswith("KV cache for the context"))
    assert "13,904.00 MiB per GPU" in note and "7,977.33 MiB left for it: it does not fit" in note and not r["fits"]


def test_six_slots_are_the_most_that_fit():
    # 6 slots: 49,152 × 80 KiB + 6 × 1,536 × 416 KiB = 7,584 MiB of 8,097.33 MiB left;
    # 7 slots: 57,344 × 80 KiB + 7 × 1,536 × 416 KiB = 8,848 MiB of 8,073.33 MiB left
    assert _fit()["most_slots"] == 6
    assert _fit("--max-num-seqs", "6")["fits"] and not _fit("--max-num-seqs", "7")["fits"]


HYBRID = "nemotron-nano-9b-v2"  # 27 Mamba-2 layers: 128 heads × 80 × state 128, conv (10,240 + 2 × 8 × 128) × 3


@pytest.mark.parametrize(("engine", "release", "state_bytes"), [
    ("llamacpp", "b8025", 2 * 72_769_536),  # F32: 27 × (1,310,720 + 36,864) elements × 4 bytes = 145,539,072
    ("llamacpp", "b5264", 2 * 72_769_536),  # b5261 llama-context.cpp: type_k and type_v F32 for a recurrent model
    ("llamacpp", "b2366", 2 * 72_769_536),  # PR #5328, the first recurrent model, already F32
    ("vllm", None, 72_769_536),             # an engine whose rule states no dtype keeps the model's 16 bits
])
def test_llamacpp_keeps_a_recurrent_state_in_f32(catalog, engine, release, state_bytes):
    d = Deployment(model=HYBRID, gpu="h100", engine=engine, engine_version=release)
    rule = memory_rule(catalog, engine, release)
    arch = engine_state_architecture(rule, d, resolve_model(catalog, HYBRID).architecture)
    assert kv_layout(arch, kv_bits=16).state_bytes_per_seq_per_gpu == state_bytes


def test_the_concurrency_note_says_the_parallel_the_launch_states_and_the_slots_it_opens():
    out = CliRunner().invoke(app, ["fit", "llama-3.1-8b", "--gpu", "h100", "--engine", "llamacpp", "--engine-version",
                                   "b7000", "--max-model-len", "8192", "--concurrency", "6"])
    flat = " ".join(out.output.split())
    assert "(--parallel 1, which opens 4 slots over one unified cache)" in flat and "--parallel 4" not in flat


@pytest.mark.parametrize("stated", [(), ("--max-num-seqs", "2")])
def test_the_tokens_per_instance_are_the_slots_that_fit(stated):
    # 6 slots of 8,192 fit (above): 49,152 tokens, not the 63,746 a window of 1,024 per sequence would give
    r = _fit(*stated)
    assert r["fits"] and r["kv_cache_tokens"] == 6 * 8192
    assert "KV cache 49,152 tokens per instance: the 6 slots of 8,192 tokens whose cache fits" in " ".join(
        r["assumptions"])


def test_slots_that_do_not_fit_show_the_whole_slots_that_do():
    # 7 slots of 8,192 do not fit, 6 do: the tokens and the sequences at once are those 6, not 62,629 / 7.65
    r = _fit("--max-num-seqs", "7")
    assert not r["fits"] and r["kv_cache_tokens"] == 6 * 8192
    assert r["max_concurrency"] == 6 and r["most_slots"] == 6


def test_a_state_models_tokens_are_its_slots_that_fit():
    # nemotron-nano-9b-v2: a recurrent state per slot; the tokens are the slots that fit × 8,192, not the memory
    # left over a token's bytes
    out = CliRunner().invoke(app, ["fit", "nemotron-nano-9b-v2", "--gpu", "RTX 4090", "--engine", "llamacpp",
                                   "--max-model-len", "8192", "--json"])
    r = json.loads(out.output)
    r = r.get("result", r)
    assert r["kv_cache_tokens"] == r["most_slots"] * 8192


def test_the_tokens_note_before_the_iswa_cache_says_the_window_layers_hold_the_context():
    r = _fit("--engine-version", "b5000")
    note = next(a for a in r["assumptions"] if " tokens per instance: " in a)
    assert "the 1 slot of 8,192 tokens" in note and "the context's cells" in note and "micro-batch" not in note


def test_a_model_with_windows_and_a_state_gets_both_per_slot():
    # DeepSeek-V4-Flash: 128-token windows and a compressed state; each slot's stream GGML_PAD(128 + 512, 256) = 768
    out = CliRunner().invoke(app, ["fit", "deepseek-v4-flash", "--gpu", "h200", "--gpus", "8", "--engine", "llamacpp",
                                   "-q", "q4_k_m", "--kv-cache-dtype", "fp16", "--max-num-seqs", "4", "--json"])
    data = json.loads(out.output)
    note = next(a for a in data.get("result", data)["assumptions"] if a.startswith("KV cache for the context"))
    assert "4 recurrent states; the window layers 4 × 768 cells" in note


def test_the_window_and_state_sources_cite_upstream_builds(catalog):
    # the F32 state and the b6975 window pad cited at upstream release b8025 (bb96bfd3), not at a fork's tag
    rule = memory_rule(catalog, "llamacpp", "b9273").context_cache
    cited = [catalog.sources[s] for s in (*rule.sources, *rule.window_cache.sources)]
    assert not [s.id for s in cited if "354429a8" in s.url or "b9248" in s.title]
    assert any("bb96bfd3" in s.url and "llama-memory-recurrent.cpp lines 94-95" in s.title for s in cited)
