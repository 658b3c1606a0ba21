"""The speed model under vLLM's data parallelism without expert parallelism: the MoE layers run one
tensor-parallel group of TP x DP GPUs (engines.yaml ``moe_tp_spans_data_parallel``, eng-moe-tp-dp-vllm),
so each GPU holds and reads 1/(TP x DP) of every routed expert, for the tokens of every data-parallel
rank, which the default all-gather/reduce-scatter dispatch brings to it and sends back once per MoE
layer. SGLang's data-parallel copies keep their own TP split, and expert parallelism stays priced as
all-to-alls."""

import dataclasses

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.performance.phases import allreduce_one_s, decode_step, gather_scatter_s, local_latency_s
from inferplan.performance.rates import rates_for
from inferplan.performance.work import model_work

CATALOG = load_catalog()
MODELS = ["qwen3-30b-a3b", "deepseek-v4-flash", "gpt-oss-120b"]


def _work(model: str, engine: str = "vllm", dp: int | None = None, ep: bool = False):
    mp = plan_memory(Deployment(model=model, gpu="h100-sxm", gpus=2 * (dp or 1), engine=engine, tensor_parallel_size=2,
                                data_parallel_size=dp, enable_expert_parallel=ep), CATALOG)
    rates = rates_for(CATALOG, mp.accelerator, mp.gpu_format, mp.result.engine, None, mp.hardware, mp.kv_dtype.id)
    return mp, model_work(mp, CATALOG), rates


@pytest.mark.parametrize("model", MODELS)
def test_vllm_tp2_dp2_without_expert_parallelism_halves_the_expert_bytes_each_gpu_reads(model):
    _, alone, _ = _work(model)
    _, shared, _ = _work(model, dp=2)
    assert shared.expert_data_parallel == 2 and shared.expert_parallel == 1
    assert shared.expert_bytes_per_gpu == pytest.approx(alone.expert_bytes_per_gpu / 2)
    # a GPU's slice of every expert serves both ranks' tokens: 8 tokens a rank touch what 16 would on one
    assert shared.touched_expert_share(8) == pytest.approx(alone.touched_expert_share(16))
    # a prefill chunk touches every expert: each GPU reads half the expert bytes a TP-2 copy's GPU reads
    read_shared = shared.weights_read_per_gpu(8192) - shared.dense_bytes_per_gpu
    read_alone = alone.weights_read_per_gpu(8192) - alone.dense_bytes_per_gpu
    assert read_shared == pytest.approx(read_alone / 2, rel=1e-6)


def test_sglang_data_parallel_copies_read_their_own_tp_split():
    _, alone, _ = _work("qwen3-30b-a3b", engine="sglang")
    _, copies, rates = _work("qwen3-30b-a3b", engine="sglang", dp=2)
    assert copies.expert_data_parallel == 1
    assert copies.expert_bytes_per_gpu == pytest.approx(alone.expert_bytes_per_gpu)
    assert gather_scatter_s(copies, rates, 8) == 0.0


def test_copies_the_planner_lays_out_gather_no_tokens():
    mp = plan_memory(Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=4, engine="vllm", tensor_parallel_size=2),
                     CATALOG)
    assert mp.result.parallel.data_parallel_size == 2 and model_work(mp, CATALOG).expert_data_parallel == 1


@pytest.mark.parametrize("model", MODELS)
def test_the_gathered_tokens_cost_an_all_gather_and_a_reduce_scatter_per_moe_layer(model):
    mp, shared, rates = _work(model, dp=2)
    _, alone, _ = _work(model)
    tokens = 16
    gathered = tokens * 2 * shared.hidden_size * 2  # both ranks' 16-bit hidden states
    # TP 2 x DP 2 sits in one NVLink domain: a ring over the two GPUs of each tensor-parallel rank
    per_layer = local_latency_s(rates, 2) + gathered / 2 / rates.link_bytes_per_s * 2
    assert allreduce_one_s(2, gathered, rates, span=4) == pytest.approx(per_layer)
    assert gather_scatter_s(shared, rates, tokens) == pytest.approx(shared.moe_layers * per_layer)
    step = dict(batch=tokens, context=1024)
    extra = decode_step(shared, mp.layout, rates, **step).comm_s - decode_step(alone, mp.layout, rates, **step).comm_s
    assert extra == pytest.approx(gather_scatter_s(shared, rates, tokens))


def test_expert_parallelism_keeps_its_all_to_all_and_gathers_nothing():
    _, ep, rates = _work("qwen3-30b-a3b", dp=2, ep=True)
    assert ep.expert_parallel == 4 and ep.expert_data_parallel == 2
    assert gather_scatter_s(ep, rates, 8) == 0.0


def test_a_strided_gather_across_domains_pays_the_scale_out_network():
    _, shared, rates = _work("qwen3-30b-a3b", dp=2)
    small = dataclasses.replace(rates, domain_gpus=2)  # each TP pair its own domain: the DP ranks a domain apart
    assert gather_scatter_s(shared, small, 16) > gather_scatter_s(shared, rates, 16)


def test_a_gather_past_the_scale_up_domain_is_said_and_refused_without_a_network():
    from inferplan.performance.network import network_notes

    mp = plan_memory(Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=16, engine="vllm", tensor_parallel_size=8,
                                data_parallel_size=2), CATALOG)
    work = model_work(mp, CATALOG)
    rates = rates_for(CATALOG, mp.accelerator, mp.gpu_format, mp.result.engine, None, mp.hardware, mp.kv_dtype.id)
    assert any("the MoE layers' TP x DP group over 16 GPUs" in n for n in network_notes(mp, work, rates))
    unknown = dataclasses.replace(mp, hardware=dataclasses.replace(mp.hardware, scale_out=None))
    with pytest.raises(InvalidScenarioError) as err:
        network_notes(unknown, work, dataclasses.replace(rates, scale_out_bytes_per_s=0.0))
    assert err.value.field == "data_parallel_size" and "all-gathers" in str(err.value)
    assert err.value.allowed.startswith("TP x DP <= 8 (")
