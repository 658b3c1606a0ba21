"""vLLM's two GPU model runners (engine_memory_rules.yaml model_runners): which one a release runs a model on
by default, and what Model Runner V2 does to the CUDA-graph estimate (none before 0.29.0: its
profile_cudagraph_memory returns 0, the graphs are captured after the KV cache)."""

import shutil

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.catalog.memory_rules import memory_rule
from inferplan.deploy.command import launch_command
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit

CATALOG = load_catalog()
RUNNERS = memory_rule(CATALOG, "vllm", "0.26.0").model_runners


def _fit(model: str, release: str, catalog=CATALOG, **more):
    return fit(Deployment(model=model, gpu="h100-sxm", max_model_len=8192, engine_version=release, **more), catalog)


@pytest.mark.parametrize(("model", "release", "runner"), [
    ("qwen3-8b", "0.21.0", "V1"),  # VLLM_USE_V2_MODEL_RUNNER defaults to 0 through 0.21
    ("qwen3-8b", "0.22.0", "V2"),  # Qwen3ForCausalLM: the one architecture 0.22 lists
    ("llama-3.1-8b", "0.22.0", "V1"),
    ("llama-3.1-8b", "0.23.0", "V2"),
    ("gemma-3-12b", "0.24.0", "V1"),  # unlisted until every dense model defaults to V2
    ("gemma-3-12b", "0.25.0", "V2"),
    ("qwen3-30b-a3b", "0.28.0", "V1"),  # a MoE model outside the list
    ("deepseek-v2-lite", "0.25.0", "V2"),  # a listed MoE architecture
    ("nemotron-nano-9b-v2", "0.26.0", "V1"),  # hybrid: V1 even though dense
    ("qwen3-30b-a3b", "0.29.0", "V2"),  # every model from 0.29
])
def test_the_release_picks_the_runner_by_model(model, release, runner):
    r = _fit(model, release)
    assert r.model_runner == runner
    assert r.memory_rule.endswith(f"Model Runner {runner}")
    assert any(a.startswith(f"Model Runner {runner}: vLLM {release}'s default") for a in r.assumptions)


def test_the_listed_architectures_need_a_dense_unquantized_checkpoint_until_0_24():
    at_023, at_024 = RUNNERS.default_at("0.23.0"), RUNNERS.default_at("0.24.0")
    assert at_023.picks_v2("LlamaForCausalLM", moe=False, hybrid=False, quantized=False)
    assert not at_023.picks_v2("LlamaForCausalLM", moe=False, hybrid=False, quantized=True)
    assert at_024.picks_v2("LlamaForCausalLM", moe=False, hybrid=False, quantized=True)
    # 0.27 keeps a hybrid model on V1 only when its architecture is unlisted
    assert not RUNNERS.default_at("0.26.0").picks_v2("KimiK3ForConditionalGeneration", True, True, True)
    assert RUNNERS.default_at("0.27.0").picks_v2("KimiK3ForConditionalGeneration", True, True, True)


def test_model_runner_v2_counts_no_graph_estimate_before_0_29():
    v2 = _fit("qwen3-8b", "0.26.0")
    v1 = _fit("qwen3-8b", "0.26.0", model_runner="V1")
    assert v1.model_runner == "V1" and v1.cuda_graph_bytes_per_gpu == CATALOG.constant("vllm-cudagraph-estimate-bytes-per-gpu")
    assert v2.cuda_graph_bytes_per_gpu == 0
    assert v2.kv_cache_bytes_per_gpu == pytest.approx(v1.kv_cache_bytes_per_gpu + v1.cuda_graph_bytes_per_gpu, abs=1)
    assert any("estimates no CUDA-graph memory" in a for a in v2.assumptions)
    assert _fit("qwen3-8b", "0.29.0").cuda_graph_bytes_per_gpu == v1.cuda_graph_bytes_per_gpu  # V2 estimates from 0.29


def test_graphs_v2_captures_after_the_kv_cache_are_checked_in_the_start_up_headroom():
    tight = dict(gpu_memory_utilization=0.97)
    v2, v1 = _fit("qwen3-8b", "0.26.0", **tight), _fit("qwen3-8b", "0.26.0", model_runner="V1", **tight)
    pool = CATALOG.constant("vllm-v019-cudagraph-pool-bytes-per-gpu")
    # and V2's penalty arrays, which the 0.26 profile does not count (mr-vllm-wheels-profile-total-consumed):
    # 1,024 slots x 151,936 tokens x (an int32 count + one int32 bit mask per 32 tokens)
    arrays = 1024 * 151_936 * (4 + 4 / 32)
    assert v2.startup_shortfall_bytes_per_gpu == pytest.approx(v1.startup_shortfall_bytes_per_gpu + pool + arrays, abs=1)
    assert "CUDA graphs 1.04 GiB" in v2.startup_note and "penalty arrays 0.60 GiB" in v2.startup_note


def test_the_runner_choice_removed_from_the_data_counts_the_estimate_again(tmp_path):
    rules = DATA_DIR / "engine_memory_rules.yaml"
    data = yaml.safe_load(rules.read_text())
    for r in data["memory_rules"]:
        r.pop("model_runners", None)
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / rules.name).write_text(yaml.safe_dump(data, sort_keys=False))
    unwired = load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)
    r = _fit("qwen3-8b", "0.26.0", unwired)
    assert r.model_runner is None and r.cuda_graph_bytes_per_gpu > 0


def test_a_stated_runner_is_launched_and_refused_where_no_rule_models_it():
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", engine_version="0.26.0", model_runner="v1")
    assert launch_command(d, CATALOG).env == {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    with pytest.raises(InvalidScenarioError) as err:
        _fit("qwen3-8b", "0.11.0", model_runner="V2")
    assert err.value.field == "model_runner"


def test_a_rule_that_picks_a_model_runner_names_both_in_its_label_and_says_the_v2_sampler_bytes_are_assumed():
    for rule in (r for r in CATALOG.memory_rules if r.model_runners is not None):
        # "V1" alone would read as the model runner, not the engine
        assert ("Model Runner V2" if rule.model_runners.v2_only else "Model Runner V1 or V2") in rule.label
        assert rule.activation.sampler_constant in rule.model_runners.note and "kind assumed" in rule.model_runners.note
        assert "mr-vllm-wheels-mrv2-sampler-ops" in rule.model_runners.sources  # V2 runs V1's top-k/top-p ops
    plan = _fit("qwen3-8b", "0.31.0")
    assert "Model Runner V1 or V2" in plan.memory_rule and plan.memory_rule.endswith("Model Runner V2")
