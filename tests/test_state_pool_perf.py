"""The speed model runs a hybrid model under SGLang at most as many sequences as its state slots allow
(memory/state_pool.py), its KV limit the attention pool's, the rest queued: performance/context.py."""

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.serving import estimate


def _qwen3_next(engine: str) -> Deployment:
    return Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine=engine, tensor_parallel_size=4,
                      max_model_len=32768)


def test_sglang_runs_no_more_sequences_than_its_state_slots():
    d = _qwen3_next("sglang")
    cap = fit(d).state_running_cap
    e = estimate(d, Workload(input_len=1024, output_len=256, concurrency=400))
    assert cap is not None and e.running_per_instance == cap < 400
    assert any("running at once" in a for a in e.assumptions)  # the rest queue, and the answer says so


def test_the_kv_limit_of_a_split_pool_is_the_attention_pools_tokens():
    d = _qwen3_next("sglang")
    r = fit(d)
    e = estimate(d, Workload(input_len=1024, output_len=256, concurrency=1))
    assert e.max_concurrency == r.kv_cache_tokens // 1280  # 1,280 tokens a request: the attention pool's sequences


def test_vllm_keeps_one_pool_and_no_state_cap():
    e = estimate(_qwen3_next("vllm"), Workload(input_len=1024, output_len=256, concurrency=400))
    assert fit(_qwen3_next("vllm")).state_running_cap is None and e.running_per_instance == 400
