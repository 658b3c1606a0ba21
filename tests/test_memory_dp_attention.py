"""Memory records run with attention data-parallel (SGLang --dp N --enable-dp-attention, vLLM
--data-parallel-size N --enable-expert-parallel) are planned as N attention ranks holding their own
attention weights and KV cache, the experts spread over all of them."""

from inferplan.validation.memory import check_point, deployment_for

RECORD = "d21-deepseek-v32-exp-tp8-b200-sglang-indexer"


def test_a_records_data_parallel_layout_reaches_the_deployment(catalog):
    point = catalog.memory_points.records[RECORD]
    d = deployment_for(point)
    assert (d.tensor_parallel_size, d.data_parallel_size, d.enable_expert_parallel) == (1, 8, True)


def test_dp_attention_v32_on_b200_plans_the_pool_sglang_allocated(catalog):
    """sgl-project/sglang PR #11309: DeepSeek-V3.2-Exp with --tp 8 --dp 8 --enable-dp-attention on 8x B200,
    'KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB' (GiB) per GPU. Planned as TP 8 the attention
    weights would be split eight ways and the pool 43 % larger."""
    assert abs(check_point(catalog.memory_points.records[RECORD], catalog).kv_error) < 0.10
