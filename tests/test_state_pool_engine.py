"""How SGLang's release keeps a hybrid model's state pool beyond the split itself: the state dtype, the
early releases' fixed pools, data-parallel attention, drafts, and the smallest-fit probes
(memory/state_pool.py, engine_memory_rules.yaml's hybrid_state_split)."""

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit


def _qwen3_next(engine: str = "sglang", version: str | None = None, **more) -> Deployment:
    return Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine=engine, tensor_parallel_size=4,
                      max_model_len=32768, engine_version=version, **more)


def test_stated_slots_do_not_refuse_the_smallest_fit_probes_over_pipeline_stages():
    # at its full context the deployment does not fit; the probes try pipeline layouts without the split
    r = fit(Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine="sglang", tensor_parallel_size=4,
                       max_mamba_cache_size=4))
    assert r.state_slots == 4


def test_sglang_keeps_the_recurrent_state_in_float32_where_the_config_names_none():
    # Qwen3-Next's config names no mamba_ssm_dtype: SGLang's float32 temporal state, vLLM's 16 bits
    sglang, vllm = fit(_qwen3_next()), fit(_qwen3_next("vllm"))
    assert sglang.state_bytes_per_sequence > 1.9 * vllm.state_bytes_per_sequence
    assert sglang.state_slots == pytest.approx(713, abs=3) and sglang.state_running_cap == sglang.state_slots // 5
