"""Engine facts read from engines.yaml, not keyed on an engine id in code: a catalogue copy whose engine
record states otherwise gives another answer."""

from __future__ import annotations

import dataclasses

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.registry import Registry
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.performance.serving import estimate

CAT = load_catalog()
V4 = Deployment(model="deepseek-v4-flash", gpu="h200", gpus=8, engine="vllm")


def _with_engine(engine: str, **changes):
    """The shipped catalogue with ``engine``'s record changed."""
    records = dict(CAT.engines.records)
    records[engine] = records[engine].model_copy(update=changes)
    return dataclasses.replace(CAT, engines=Registry(CAT.engines.kind, records))


def test_vllm_runs_the_compressed_attention_cache_in_the_types_its_record_lists():
    stated = V4.model_copy(update={"kv_cache_dtype": "bf16"})
    with pytest.raises(InvalidScenarioError) as e:
        plan_memory(stated, CAT)
    assert e.value.field == "kv_cache_dtype" and e.value.allowed == "auto | fp8"
    assert "vLLM runs DeepSeek V4 Flash 0731's compressed-attention cache in FP8 only" in str(e.value)
    assert plan_memory(stated, _with_engine("vllm", compressed_attention_kv_cache_dtypes=())).result.kv_cache_dtype == "bf16"


def test_the_compressed_attention_default_is_the_first_type_the_record_lists():
    on_mac = Deployment(model="deepseek-v4-flash", gpu="m3-ultra", engine="vllm", quantization="mlx-4bit")
    with pytest.raises(InvalidScenarioError) as e:  # vllm-metal stores no FP8 cache
        plan_memory(on_mac, CAT)
    assert "(vLLM runs DeepSeek-V4's compressed-attention cache in FP8 only)" in str(e.value)
    assert plan_memory(on_mac, _with_engine("vllm", compressed_attention_kv_cache_dtypes=())).result.kv_cache_dtype == "bf16"
    assert plan_memory(V4, _with_engine("vllm", compressed_attention_kv_cache_dtypes=("bf16", "fp8"))).result.kv_cache_dtype == "bf16"


def _graph_notes(catalog, engine: str) -> list[str]:
    d = Deployment(model="llama-3.1-8b", accelerator="h100-sxm", gpus=1, engine=engine)
    w = Workload(input_len=512, output_len=128, concurrency=8)
    return [a for a in estimate(d, w, catalog).assumptions if "graphs on (its default)" in a]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_graphs_note_follows_the_records_captures_decode_graphs(engine):
    assert _graph_notes(CAT, engine)
    assert _graph_notes(_with_engine(engine, captures_decode_graphs=False), engine) == []


def test_an_engine_recorded_as_capturing_decode_graphs_gets_the_note():
    assert _graph_notes(CAT, "trtllm") == []
    (note,) = _graph_notes(_with_engine("trtllm", captures_decode_graphs=True), "trtllm")
    assert note.startswith("trtllm with CUDA/HIP graphs on")


QWEN_DRAFTED = Deployment(model="qwen3-8b", gpu="h100", speculative_tokens=3, speculative_method="draft_model",
                          draft_checkpoint="Qwen/Qwen3-0.6B")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_draft_models_memory_is_counted_where_the_record_says_its_placement_is_read(engine):
    d = QWEN_DRAFTED.model_copy(update={"engine": engine})
    plain = plan_memory(Deployment(model="qwen3-8b", gpu="h100", engine=engine), CAT).result
    shipped = plan_memory(d, CAT).result
    flipped = plan_memory(d, _with_engine(engine, draft_model_memory_counted=engine != "vllm")).result
    counted, not_counted = (shipped, flipped) if engine == "vllm" else (flipped, shipped)
    assert counted.weights_bytes_per_gpu > plain.weights_bytes_per_gpu
    assert not_counted.weights_bytes_per_gpu == plain.weights_bytes_per_gpu
    assert any(f"speculative decoding by draft_model on {engine} with Qwen3 0.6B" in a for a in counted.assumptions)
    assert any("its weights and KV are not counted" in a for a in not_counted.assumptions)


@pytest.mark.parametrize(("engine", "field", "says"), [
    ("vllm", "compressed_attention_kv_cache_dtypes_source", "only supports fp8 kv-cache"),
    ("sglang", "captures_decode_graphs_source", "disable_cuda_graph defaults to False"),
    ("ktransformers", "captures_decode_graphs_source", "disable_cuda_graph: bool = False"),
])
def test_each_engine_fact_cites_a_source_that_states_it(engine, field, says):
    assert says in CAT.sources[getattr(CAT.engine(engine), field)].title
