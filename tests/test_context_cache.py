"""The KV cache and compute buffer of engines that size their cache by the context (llama.cpp, MLX):
the padding rules read from llama.cpp's source, golden figures from printed start-up logs
(measurements/memory_field_local.yaml), and the held-out split of those logs."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import given, strategies as st

from inferplan.catalog.loader import DATA_DIR
from inferplan.catalog.memory_rules import memory_rule
from inferplan.memory.context_cache import compute_buffer_bytes, context_kv, padded_context
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.resolve import resolve_model
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
    assert current.model_copy(update={"slot_padding_tokens": None}) == new
    assert current.slot_padding_tokens == 256  # and each slot's share (src/llama-context.cpp at 001d906a)
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
