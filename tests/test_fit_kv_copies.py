"""fit prints the KV cache per token as the model holds it, and says where the instance holds it on several
tensor-parallel ranks (MLA's latent on every rank): DeepSeek-V3's latent is 61 layers x (512 + 64) values
x 2 bytes = 68.6 KiB per token at bf16 (config.json kv_lora_rank 512, qk_rope_head_dim 64)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.cli import app

DSV3_LATENT_BYTES = 61 * (512 + 64) * 2


def test_mla_under_tp_is_one_latent_per_token_held_on_every_rank(catalog):
    r = fit_or_suggest(Deployment(model="deepseek-v3", system="hgx-h200"), catalog)
    assert r.parallel.tensor_parallel_size == 8
    assert r.kv_cache_copies == pytest.approx(8)
    assert r.kv_cache_bytes_per_token_one_copy == pytest.approx(DSV3_LATENT_BYTES, rel=1e-9)
    assert r.kv_cache_bytes_per_token == pytest.approx(8 * DSV3_LATENT_BYTES, rel=1e-9)  # unchanged: what the instance holds


def test_heads_split_over_the_ranks_are_one_copy(catalog):
    r = fit_or_suggest(Deployment(model="llama-3.1-70b", gpu="H100", tensor_parallel_size=4), catalog)
    assert r.kv_cache_copies == 1 and r.kv_cache_bytes_per_token_one_copy == r.kv_cache_bytes_per_token


def test_fit_prints_the_models_size_and_the_replication():
    result = CliRunner().invoke(app, ["fit", "--model", "deepseek-v3", "--system", "hgx-h200"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "68.6 KiB per token, replicated on each of the 8 TP ranks (549.0 KiB across the instance)" in result.output
