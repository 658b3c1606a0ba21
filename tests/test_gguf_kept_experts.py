"""GGUF K-quant and Q8_0 builds of gpt-oss keep the checkpoint's MXFP4 routed experts
(quantizations.yaml keeps_checkpoint_experts, from llama.cpp's gpt-oss converter): the files are
within a few percent of the MXFP4 one, not re-quantized experts at the K-quant's bits."""

import dataclasses

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.memory.weights import weight_bytes

CATALOG = load_catalog()
GIB = 2**30


@pytest.mark.parametrize(("model", "quant", "published_gib", "rel", "source"), [
    # unsloth/gpt-oss-20b-GGUF gpt-oss-20b-Q4_K_M.gguf: 'size_in_gb': 11.6 (10.80 GiB; llama-bench prints
    # 10.81 GiB for the same file); its non-expert tensors mix Q4_K to Q8_0
    ("gpt-oss-20b", "gguf-q4_k_m", 10.80, 0.05,
     "github.com/geerlingguy/ai-benchmarks@65454c819ed73bb7605c486c246e8c7d6bac0530:group_data/all.py"),
    # a Q8_0 file lays out as ggml-org's MXFP4_MOE one (experts MXFP4, every other tensor Q8_0), which
    # llama-bench prints at 11.27 GiB; bartowski's quants of it are all about 12.1 GB (= 11.27 GiB)
    ("gpt-oss-20b", "gguf-q8_0", 11.27, 0.03, "https://huggingface.co/bartowski/openai_gpt-oss-20b-GGUF"),
    # unsloth/gpt-oss-120b-GGUF: Q4_K_M 58.46 GiB (58.45 GiB in llama-bench; 62.9 GB in the listing
    # above), Q8_0 59.03 GiB
    ("gpt-oss-120b", "gguf-q4_k_m", 58.46, 0.03, "https://ailocalcheck.com/model/unsloth/gpt-oss-120b-GGUF"),
    ("gpt-oss-120b", "gguf-q8_0", 59.03, 0.03, "https://ailocalcheck.com/model/unsloth/gpt-oss-120b-GGUF"),
])
def test_gpt_oss_gguf_sizes_match_the_published_files(model, quant, published_gib, rel, source):
    """Computed from parameters (no checkpoint of that format in the catalogue) the weights land
    on the published file sizes; the tolerance covers the tokenizer in the file and the non-expert
    mix a K-quant writes (the catalogue's Q4_K_M bits are Llama-3.1-8B's whole-file average)."""
    spec = resolve_model(CATALOG, model)
    assert spec.checkpoint(quant) is None  # the size comes from the rule, not a stored checkpoint
    w = weight_bytes(spec, CATALOG.quantization(quant))
    assert w.total_bytes / GIB == pytest.approx(published_gib, rel=rel), source
    assert any("routed experts kept in the checkpoint's mxfp4" in a for a in w.assumptions)


@pytest.mark.parametrize("quant", ["gguf-q8_0", "gguf-q6_k", "gguf-q5_k_m", "gguf-q4_k_m", "gguf-q4_0",
                                   "gguf-q3_k_m", "gguf-q2_k", "gguf-iq4_xs", "gguf-iq1_s"])
def test_every_gguf_type_made_by_llama_quantize_keeps_gpt_oss_experts_at_mxfp4(quant):
    """llama-quantize re-quantizes no tensor already quantized (the converter's MXFP4 experts) unless told to
    (--allow-requantize), whatever type it writes."""
    spec = resolve_model(CATALOG, "gpt-oss-120b")
    q = CATALOG.quantization(quant)
    w = weight_bytes(spec, q)
    params = count_params(spec.architecture)
    assert w.expert_bytes == pytest.approx(params.experts * 4.25 / 8)
    # without the rule the same format re-quantizes the experts at its own bits
    bare = weight_bytes(spec, q.model_copy(update={"keeps_checkpoint_experts": ()}))
    assert bare.expert_bytes == pytest.approx(params.experts * q.bits_per_weight.value / 8)


def test_the_rule_applies_only_to_the_converter_it_names():
    """A MoE whose checkpoint is BF16 (Qwen3-30B-A3B, sized from the format's bits rather than its published
    Q4_K_M file) is quantized whole; so is a gpt-oss layout standing in for a model whose checkpoint is not MXFP4."""
    q = CATALOG.quantization("gguf-q4_k_m")
    qwen = dataclasses.replace(resolve_model(CATALOG, "qwen3-30b-a3b"), checkpoints=())
    params = count_params(qwen.architecture)
    assert weight_bytes(qwen, q).expert_bytes == pytest.approx(params.experts * q.bits_per_weight.value / 8)
    oss = dataclasses.replace(resolve_model(CATALOG, "gpt-oss-20b"), native_quantization="bf16")
    params = count_params(oss.architecture)
    assert weight_bytes(oss, q).expert_bytes == pytest.approx(params.experts * q.bits_per_weight.value / 8)
