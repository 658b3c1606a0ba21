"""The KV cache and compute buffer of engines that size their cache by the context (llama.cpp, MLX):
the padding rules read from llama.cpp's source, golden figures from printed start-up logs
(measurements/memory_field_local.yaml), and the held-out split of those logs."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import given, strategies as st
from typer.testing import CliRunner

from inferplan.catalog.loader import DATA_DIR
from inferplan.catalog.memory_rules import memory_rule
from inferplan.memory.context_cache import compute_buffer_bytes, context_kv, padded_context, slot_cells
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.resolve import resolve_model
from inferplan.shells.cli import app
from inferplan.validation.memory import validate_memory

MiB = 2**20
LOCAL = Path(DATA_DIR) / "measurements" / "memory_field_local.yaml"
OLD, NEW = "b5912", "b7406"  # a build before PR #17046 (issue #14847) and one after it (issue #18258)


def _layout(catalog, model):
    return kv_layout(resolve_model(catalog, model).architecture, kv_bits=16, tp=1, pp=1)


def test_the_held_out_split_follows_the_rule_declared_in_the_file():
    points = yaml.safe_load(LOCAL.read_text())["memory_points"]
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_the_release_picks_the_padding_llama_cpp_used(catalog):
    old = memory_rule(catalog, "llamacpp", OLD).context_cache
    new = memory_rule(catalog, "llamacpp", NEW).context_cache
    current = memory_rule(catalog, "llamacpp").context_cache  # the default pads as the builds after PR #17046
    assert (current.padding_tokens, current.slot_padding_tokens) == (new.padding_tokens, new.slot_padding_tokens) \
        == (256, 256)  # n_ctx and each slot's share (commit 16bcc125, b6975)
    assert old.slot_padding_tokens is None  # one cache for every sequence before PR #14363 (b5913)
    # src/llama-kv-cache-unified.cpp: 256 with flash attention, 32 without; src/llama-context.cpp: 256 always
    assert padded_context(old, 70000, flash_attention=False) == 70016
    assert padded_context(old, 70000, flash_attention=True) == 70144
    assert padded_context(new, 70000, flash_attention=False) == 70144
    assert padded_context(new, 35000, flash_attention=True) == 35072
    assert not old.flash_attention_default and new.flash_attention_default
    assert memory_rule(catalog, "mlx").context_cache.padding(False) == 256  # mlx-lm KVCache.step


@given(tokens=st.integers(1, 2_000_000), fa=st.booleans(), release=st.sampled_from([OLD, NEW]))
def test_the_padded_context_is_the_next_multiple_of_the_padding(catalog, tokens, fa, release):
    rule = memory_rule(catalog, "llamacpp", release).context_cache
    padded, pad = padded_context(rule, tokens, fa), rule.padding(fa)
    assert padded % pad == 0 and tokens <= padded < tokens + pad


def test_kv_for_the_context_is_the_printed_kv_buffer(catalog):
    # l01 (issue #15009): 70000 tokens, no flash attention -> 70016 cells, 48 layers × 512 K + 512 V at f16
    strix = context_kv(memory_rule(catalog, "llamacpp", OLD).context_cache, _layout(catalog, "qwen3-30b-a3b"),
                       70000, flash_attention=False)
    assert strix.tokens == 70016
    assert strix.bytes_per_gpu == pytest.approx(6564.00 * MiB, rel=1e-6)
    # l02 (issue #14824): 4096 tokens need no padding at either release
    for release in (OLD, NEW):
        mi300x = context_kv(memory_rule(catalog, "llamacpp", release).context_cache,
                            _layout(catalog, "qwen3-coder-480b-a35b"), 4096, flash_attention=False)
        assert mi300x.bytes_per_gpu == pytest.approx(992.00 * MiB, rel=1e-6)


def _graph(catalog):
    return memory_rule(catalog, "llamacpp").compute_graph


def test_the_compute_buffer_of_the_held_out_log(catalog):
    # l02: 4096 cells × 512 × (96 heads × 4 + 4) + 24 × 512 × 6144 = 848.00 MiB printed; 0.5 % tolerance
    arch = resolve_model(catalog, "qwen3-coder-480b-a35b").architecture
    got, _ = compute_buffer_bytes(_graph(catalog), catalog, arch, context_tokens=4096, ubatch_tokens=512,
                                  flash_attention=False)
    assert got == pytest.approx(848.00 * MiB, rel=0.005)
    # l01, the development log the activation constant was read from
    arch = resolve_model(catalog, "qwen3-30b-a3b").architecture
    got, _ = compute_buffer_bytes(_graph(catalog), catalog, arch, context_tokens=70016, ubatch_tokens=512,
                                  flash_attention=False)
    assert got == pytest.approx(4757131264, rel=0.005)


@pytest.mark.parametrize("vocab, hidden, heads, printed_mib", [
    (151936, 1536, 12, 299.75),  # Qwen2.5-1.5B on an Apple M4, 4096 cells (llama.cpp issue #11083)
    (151936, 2048, 16, 300.75),  # Qwen2.5-3B on an RTX 4080 SUPER, 4096 cells (LLamaSharp issue #1099)
])
def test_a_short_context_buffer_is_the_ubatch_logits(catalog, vocab, hidden, heads, printed_mib):
    # builds 4406 and 4701 reserve logits for the whole ubatch
    arch = SimpleNamespace(vocab_size=vocab, hidden_size=hidden, num_attention_heads=heads)
    graph = memory_rule(catalog, "llamacpp", OLD).compute_graph
    got, _ = compute_buffer_bytes(graph, catalog, arch, context_tokens=4096, ubatch_tokens=512,
                                  flash_attention=False)
    assert got == pytest.approx(printed_mib * MiB, rel=0.001)


def test_flash_attention_drops_the_score_matrix(catalog):
    arch = resolve_model(catalog, "qwen3-30b-a3b").architecture
    kwargs = dict(context_tokens=131072, ubatch_tokens=512)
    without, _ = compute_buffer_bytes(_graph(catalog), catalog, arch, flash_attention=False, **kwargs)
    with_fa, _ = compute_buffer_bytes(_graph(catalog), catalog, arch, flash_attention=True, **kwargs)
    assert without > 8 * with_fa  # 32 heads of f32 scores against a 6-byte mask per cell


def test_validate_memory_scores_llama_cpp_by_the_cache_it_allocates(catalog):
    # fails when the rule is unwired: the cache would then be all the memory left (+1269 % on l02)
    by_id = {c.id: c for c in validate_memory(catalog).checks}
    held_out = by_id["l02-qwen3-coder-480b-mi300x-rocm-4k"]
    assert held_out.kv_error == pytest.approx(0.0, abs=1e-3)
    assert held_out.compute_buffer_error == pytest.approx(0.0, abs=5e-3)
    # no build printed: the default rule pads 70000 to 70144 cells where the log's build padded to 70016
    strix = by_id["l01-qwen3-30b-a3b-strix-halo-vulkan-70k-fails"]
    assert strix.kv_error == pytest.approx((70144 - 70016) / 70016, rel=1e-3)
    assert strix.predicted_fits  # the log failed on Vulkan's single-allocation cap, which the planner does not model


@pytest.mark.parametrize(("release", "tokens", "fa", "per_slot", "cells"), [
    ("b5912", 24100, True, 8106, 24320),   # one cache of n_ctx padded to 256, shared by the slots
    ("b6070", 24100, True, 8106, 24320),   # PR #14363's streams only with LLAMA_SET_ROWS=1: still one cache
    ("b6071", 24100, True, 8192, 24576),   # PR #14959: each stream ceil(n_ctx / 3) padded to 256 with -fa
    ("b6867", 24100, False, 8064, 24192),  # ... and to 32 without
    ("b6868", 24001, True, 8001, 24003),   # PR #16812: no padding, each stream n_ctx / 3 rounded up
    ("b6924", 24001, True, 8001, 24003),
    ("b6925", 24001, True, 8000, 24000),   # PR #16736: n_ctx_seq = n_ctx / 3 rounded down
    ("b6974", 24000, True, 8000, 24000),
    ("b6975", 24000, True, 8192, 24576),   # PR #17046 (commit 16bcc125): n_ctx and each slot padded to 256
    ("b6975", 24000, False, 8192, 24576),
])
def test_each_build_splits_the_context_over_the_slots_as_its_source(catalog, release, tokens, fa, per_slot, cells):
    rule = memory_rule(catalog, "llamacpp", release).context_cache
    assert slot_cells(rule, tokens, 3, fa) == per_slot
    assert context_kv(rule, _layout(catalog, "llama-3.1-8b"), tokens, fa, slots=3).tokens == cells


def test_fit_at_the_slot_padding_boundary_plans_the_cells_the_build_allocates():
    args = ["fit", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "llamacpp", "--max-model-len", "8000",
            "--max-num-seqs", "3", "--explain"]
    before = CliRunner().invoke(app, [*args, "--engine-version", "b6974"])
    at = CliRunner().invoke(app, [*args, "--engine-version", "b6975"])
    assert before.exit_code == 0 and at.exit_code == 0
    flat = [" ".join(r.output.split()) for r in (before, at)]
    assert "24,000 cells (3 slots of 8,000, each a multiple of 1)" in flat[0]
    assert "24,576 cells (3 slots of 8,192, each a multiple of 256)" in flat[1]


def test_flash_attention_is_auto_from_pr15434(catalog):
    # common/common.h at commit e81b8e4b (b6325): flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO
    assert not memory_rule(catalog, "llamacpp", "b6324").context_cache.flash_attention_default
    assert memory_rule(catalog, "llamacpp", "b6325").context_cache.flash_attention_default
