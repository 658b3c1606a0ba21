"""Tensor-parallel sizes the engines start: vLLM and SGLang divide the query heads, the key/value
heads (or replicate each over TP / heads ranks), the MLP widths and, without expert parallelism,
the experts' width evenly over the ranks (engines.yaml tensor_parallel_splits)."""

from __future__ import annotations

import json
import shutil

import pytest

from inferplan.catalog.loader import DATA_DIR, load_catalog

from inferplan.deploy import launch_command
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit, plan_memory
from inferplan.memory.layout import as_launched
from inferplan.memory.resolve import resolve_model
from inferplan.memory.tp_split import allowed_tp_sizes, split_widths, tp_refusal, tp_splits
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space

GLM_AIR_L40S = dict(model="glm-4.5-air", gpu="l40s", engine="vllm")


def _value(argv: tuple[str, ...], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_glm_air_on_six_l40s_is_launched_tp2_pp3(catalog):
    """GLM-4.5-Air has 8 KV heads (config num_key_value_heads) and experts 1,408 wide: vLLM asserts
    8 % 6 and 1408 % 6 at TP 6, so six GPUs run as TP 2 x PP 3, and the command says so."""
    d = Deployment(**GLM_AIR_L40S, gpus=6)
    r = fit(d, catalog)
    assert (r.parallel.tensor_parallel_size, r.parallel.pipeline_parallel_size) == (2, 3)
    argv = launch_command(as_launched(d, catalog), catalog).argv
    assert (_value(argv, "--tensor-parallel-size"), _value(argv, "--pipeline-parallel-size")) == ("2", "3")


def test_a_stated_tp6_for_glm_air_is_refused_naming_the_kv_heads_and_the_sizes_allowed(catalog):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(**GLM_AIR_L40S, gpus=6, tensor_parallel_size=6), catalog)
    assert e.value.field == "tensor_parallel_size"
    assert "8 key/value heads" in str(e.value)
    # 96 query heads, 8 KV heads (16 and 32 replicate them), 10,944 dense and 1,408 expert widths
    assert e.value.allowed == "1, 2, 4, 8, 16, 32"


def test_the_smallest_instance_hint_names_a_layout_the_engine_starts(catalog):
    """bf16 GLM-4.5-Air overfills 4 L40S; the instance that holds it is 6 GPUs as TP 2 x PP 3, not TP 6."""
    s = plan_memory(Deployment(**GLM_AIR_L40S, gpus=4), catalog).result.fewest_gpus_fit
    assert (s.gpus, s.tensor_parallel_size, s.pipeline_parallel_size) == (6, 2, 3)


@pytest.mark.parametrize("model, tp", [
    ("qwen3-235b-a22b", 8),   # 4 KV heads: TP 8 holds each on two ranks
    ("gpt-oss-120b", 8),      # 8 KV heads, 64 query heads
    ("llama-3.3-70b", 8),     # 8 KV heads
    ("llama-3.3-70b", 16),    # a multiple of the 8 KV heads
    ("deepseek-v3", 16),      # MLA: one latent per token, no KV heads to split
    ("qwen3-next-80b-a3b", 8),  # 2 KV heads on its full-attention layers, linear attention not checked
])
def test_layouts_the_engines_run_stand(catalog, model, tp):
    spec = resolve_model(catalog, model)
    for engine in ("vllm", "sglang"):
        assert tp_splits(spec, catalog.engine(engine), tp), (model, engine, tp)


def test_expert_parallelism_splits_whole_experts_not_their_width(catalog):
    spec, vllm = resolve_model(catalog, "glm-4.5-air"), catalog.engine("vllm")
    assert "expert MLP width" in {w.what for w in split_widths(spec, vllm)}
    assert "expert MLP width" not in {w.what for w in split_widths(spec, vllm, expert_parallel=True)}


def test_engines_that_split_no_tensors_take_any_size(catalog):
    spec = resolve_model(catalog, "glm-4.5-air")
    assert tp_refusal(spec, catalog.engine("llamacpp"), 6) is None
    assert tp_refusal(spec, catalog.engine("vllm"), 6) is not None
    assert allowed_tp_sizes(spec, catalog.engine("trtllm")) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96]


SIX_KV_HEADS = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 6144,
                "intermediate_size": 16384, "num_attention_heads": 48, "num_key_value_heads": 6,
                "num_hidden_layers": 100, "vocab_size": 128256, "max_position_embeddings": 8192,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "silu"}
SIX_KV_CARD = """
sources:
  - id: test-six-kv-heads
    title: "test card: a 48-head model with 6 KV heads"
    url: https://example.org/test-six-kv-heads
    checked: 2026-12-05
models:
  - id: test-six-kv-heads
    name: Test six KV heads
    family: test
    status: test
    licence: {name: test}
    context_tokens: {value: 8192, kind: spec, source: test-six-kv-heads}
    checkpoints:
      - name: BF16
        quantization: bf16
    config: hf_configs/test-six-kv-heads.json
    config_source: test-six-kv-heads
    serving_engines: [vllm]
"""


def test_the_search_offers_no_tensor_parallel_size_the_engine_refuses(tmp_path):
    """A 48-head model with 6 KV heads that needs two H100s: doubling TP 2 to 4 and 8 inside an
    HGX H100 gives sizes that neither divide 6 nor are multiples of it; the search leaves them out."""
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    (data / "hf_configs" / "test-six-kv-heads.json").write_text(json.dumps(SIX_KV_HEADS))
    (data / "models" / "test_six_kv_heads.yaml").write_text(SIX_KV_CARD)
    catalog = load_catalog(data)
    req = SearchRequest(models=("test-six-kv-heads",), request_rate_per_s=1, input_len=1000, output_len=100,
                        systems=("hgx-h100",), engines=("vllm",), quantizations=("bf16",), speculative=False)
    cells = build_space(catalog, req, input_len=1000, output_len=100).cells
    assert {c.tensor_parallel_size for c in cells if not c.expert_parallel} == {2}
