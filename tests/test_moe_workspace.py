"""The workspace vLLM keeps after its start-up profile where DeepSeek-V4's experts run on Marlin
(engine_moe_kernels.yaml, memory/moe_layout.py): under data parallelism the MoE kernel gets every rank's
tokens, and the buffer is one, shared with the attention's reservations, so the largest request is kept."""

import math

import pytest
from test_moe_kernels import _catalog_without_moe_workspaces

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.moe_layout import shared_request_bytes
from inferplan.memory.resolve import resolve_model

GiB = 2**30
CATALOG = load_catalog()
ARCH = resolve_model(CATALOG, "deepseek-v4-flash").architecture
RULE = CATALOG.moe_kernel_rules.records["vllm-mxfp4-deepseek-v4-hopper-marlin"]


def _kept(d, tmp_path):
    kept, unwired = fit(d, CATALOG), fit(d, _catalog_without_moe_workspaces(tmp_path))
    return kept.activation_bytes_per_gpu - unwired.activation_bytes_per_gpu, kept


def test_data_parallel_expert_parallel_gathers_every_ranks_tokens_into_the_moe_kernel(tmp_path):
    # vLLM's default allgather_reducescatter dispatch all-gathers the 8 DP ranks' 8192-token profile batches
    # (naive_dp_ep.py prepare -> all2all.py dispatch; modular_kernel.py sizes by the gathered M_full)
    d = Deployment(model="deepseek-v4-flash", gpu="h100-sxm", gpus=8, tensor_parallel_size=1, data_parallel_size=8,
                   enable_expert_parallel=True, max_model_len=65536)
    extra, kept = _kept(d, tmp_path)
    assert extra == pytest.approx(8 * 8192 * 6 * (4096 + 4096) * 2)  # 6 GiB, not one rank's 0.75 GiB
    assert any("(8 DP ranks × 8,192 tokens, all-gathered)" in a for a in kept.assumptions)


def test_data_parallel_without_expert_parallel_gathers_too(tmp_path):
    # without --enable-expert-parallel vLLM falls back to the same AllGather+ReduceScatter dispatch
    d = Deployment(model="deepseek-v4-flash", gpu="h200", gpus=4, tensor_parallel_size=2, data_parallel_size=2,
                   max_model_len=65536, engine_version="0.31.0")  # Marlin's shapes (Humming from 0.32.0)
    assert _kept(d, tmp_path)[0] == pytest.approx(2 * 8192 * 6 * (4096 + 4096) * 2)


def test_at_a_long_context_the_indexers_request_is_the_buffer_kept(tmp_path):
    # 1,000,000 tokens: the CSA indexer gathers 40 x 1e6 / 4 FP8 keys of 128 B with 4-byte scales and a
    # 1 MiB top-k workspace (1.23 GiB), more than the Marlin kernel's 0.75 GiB and the prefill gather's 1.00
    d = Deployment(model="deepseek-v4-flash", gpu="h200", gpus=2, max_model_len=1_000_000)
    extra, kept = _kept(d, tmp_path)
    assert extra == pytest.approx(10_000_000 * 128 + 10_000_000 * 4 + 2**20)
    note = next(a for a in kept.assumptions if "keeps one workspace" in a)
    assert "MoE kernel's 8,192 tokens" in note and "prefill gather" in note and "indexer's key gather" in note


def test_at_a_short_context_the_moe_kernels_request_is_kept(tmp_path):
    d = Deployment(model="deepseek-v4-flash", gpu="h200", gpus=2, max_model_len=32768, engine_version="0.31.0")
    assert _kept(d, tmp_path)[0] == pytest.approx(8192 * 6 * (4096 + 4096) * 2)


def test_the_prefill_gather_adds_its_index_tables_from_0_27_0():
    req = next(r for r in RULE.workspace.shared_with if r.shapes == "deepseek_v4_prefill_gather")
    gather = 4 * (math.ceil(1_000_000 / 4) + 128 + 8192) * 512 * 2
    before, _ = shared_request_bytes(req, ARCH, context_tokens=1_000_000, tokens=8192, release="0.26.0")
    after, said = shared_request_bytes(req, ARCH, context_tokens=1_000_000, tokens=8192, release="0.27.0")
    assert before == gather
    assert after == gather + 8192 * 640 * 4 + 8192 * 4  # round_up(512 top-k + 128 window, 128) int32 per token
    assert "4 × (250000 + 128 + 8192) × 512" in said
