"""Weight bytes by part: formats that store the routed experts and the rest at different bits."""

import dataclasses

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.models import CheckpointSize
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.memory.weights import weight_bytes

CATALOG = load_catalog()
GIB = 2**30


@pytest.mark.parametrize(("model", "llama_bench_gib"), [("gpt-oss-20b", 11.27), ("gpt-oss-120b", 59.02)])
def test_mxfp4_moe_gguf_size_follows_from_parameters(model, llama_bench_gib):
    """Experts at MXFP4 (4.25 bits), every other tensor at Q8_0 (8.5 bits) reproduces the file size
    llama-bench prints for ggml-org's GGUF (benches/dgx-spark.md) within 1.5%."""
    spec = dataclasses.replace(resolve_model(CATALOG, model), checkpoints=())
    w = weight_bytes(spec, CATALOG.quantization("gguf-mxfp4-moe"))
    assert w.method == "parameters × bits"
    assert w.total_bytes / GIB == pytest.approx(llama_bench_gib, rel=0.015)


def test_gguf_mxfp4_moe_is_smaller_than_the_bf16_attention_layout():
    spec = resolve_model(CATALOG, "gpt-oss-20b")
    gguf = weight_bytes(spec, CATALOG.quantization("gguf-mxfp4-moe"))
    hf = weight_bytes(spec, CATALOG.quantization("mxfp4"))
    assert gguf.total_bytes < hf.total_bytes
    assert gguf.expert_bytes == pytest.approx(hf.expert_bytes, rel=0.03)  # the experts are the same MXFP4 blocks


def test_checkpoint_split_keeps_bf16_attention_out_of_the_experts():
    """gpt-oss's safetensors keep attention, embeddings and lm_head in BF16: the checkpoint's expert
    share must equal the experts' own MXFP4 bytes, not a share that treats attention as 4-bit."""
    spec = resolve_model(CATALOG, "gpt-oss-20b")
    w = weight_bytes(spec, CATALOG.quantization("mxfp4"))
    params = count_params(spec.architecture)
    assert w.method == "checkpoint size"
    assert w.expert_bytes == pytest.approx(params.experts * 4.25 / 8, rel=0.02)
    assert w.embedding_bytes == pytest.approx(params.embedding * 2, rel=0.02)


def test_dsa_indexers_are_kept_whole_on_every_tensor_parallel_rank():
    """DeepSeek-V3.2's indexers (0.85B parameters) are replicated, not sharded, by vLLM and SGLang."""
    spec = resolve_model(CATALOG, "deepseek-v3.2")
    params = count_params(spec.architecture)
    w = weight_bytes(spec, CATALOG.quantization("fp8-block"))
    assert params.indexer / 1e9 == pytest.approx(0.85, rel=0.05)
    assert w.replicated_bytes > params.indexer * 0.9  # about a byte per parameter in the FP8 checkpoint


@pytest.mark.parametrize(("model", "printed_gib", "source"), [
    # llama-bench's README table: "llama 7B mostly Q4_0 | 3.56 GiB | 6.74 B"
    ("llama-2-7b", 3.56, "https://github.com/ggml-org/llama.cpp/blob/master/tools/llama-bench/README.md"),
    # llama-quantize's size table: Q4_0 "4.34G" for Llama-3-8B (the same layout as Llama 3.1 8B)
    ("llama-3.1-8b", 4.34, "https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/quantize.cpp"),
])
def test_q4_0_files_carry_their_output_tensor_at_q6_k(model, printed_gib, source):
    """llama-quantize writes output.weight as Q6_K in a Q4_0 file (llama-quant.cpp); at Q4_0's 4.5
    bits the files would be 3.53 and 4.21 GiB, 1 and 3 % short of what llama.cpp prints. Tolerance
    0.5 %: the printed figures are rounded to 0.01 GiB, and a file also carries its tokenizer."""
    w = weight_bytes(resolve_model(CATALOG, model), CATALOG.quantization("gguf-q4_0"))
    assert w.total_bytes / GIB == pytest.approx(printed_gib, rel=0.005), source
    assert any("output projection at 6.5625 bits" in a for a in w.assumptions)


def test_an_output_row_that_is_no_whole_q6_k_super_block_falls_back_to_q8_0():
    # gpt-oss's 2,880-wide rows are not a multiple of 256: llama-quant.cpp writes the output as Q8_0
    spec = dataclasses.replace(resolve_model(CATALOG, "gpt-oss-20b"), checkpoints=())
    w = weight_bytes(spec, CATALOG.quantization("gguf-q4_0"))
    params = count_params(spec.architecture)
    assert w.head_bytes == pytest.approx(params.lm_head * 8.5 / 8)


def test_a_tied_table_takes_the_output_type_at_both_ends():
    """llama-quant.cpp quantizes a tied token_embd as the output tensor (Q6_K in a Q4_0 file); llama.cpp
    keeps the input copy on the host and puts the table on the GPU as the output layer."""
    spec = resolve_model(CATALOG, "qwen3-4b")
    arch = spec.architecture
    w = weight_bytes(spec, CATALOG.quantization("gguf-q4_0"))
    table = arch.vocab_size * arch.hidden_size * 6.5625 / 8
    assert w.head_is_embedding
    assert w.embedding_bytes == pytest.approx(table) and w.head_bytes == pytest.approx(table)


def test_a_published_checkpoint_size_is_shared_out_with_the_output_at_its_own_bits():
    """With a checkpoint size the total is the file's; the output tensor's share of it follows its
    own bits, so the lm_head the speed model reads is larger at Q6_K than it would be at 4.5 bits."""
    base = resolve_model(CATALOG, "llama-3.1-8b")
    ckpt = CheckpointSize(quantization="gguf-q4_0", size_bytes=4.34 * GIB, name="stub Q4_0 file", source="test")
    spec = dataclasses.replace(base, checkpoints=(ckpt,))
    q4_0 = CATALOG.quantization("gguf-q4_0")
    with_output = weight_bytes(spec, q4_0)
    without = weight_bytes(spec, q4_0.model_copy(update={"output_bits_per_weight": None}))
    assert with_output.method == "checkpoint size" and with_output.total_bytes == pytest.approx(4.34 * GIB)
    # the file fixes the total, so the head's 6.5625 / 4.5 larger part comes out of the others' shares
    parts_with = weight_bytes(base, q4_0).total_bytes
    parts_without = weight_bytes(base, q4_0.model_copy(update={"output_bits_per_weight": None})).total_bytes
    assert with_output.head_bytes / without.head_bytes == pytest.approx(6.5625 / 4.5 * parts_without / parts_with, rel=1e-6)
