"""How SGLang's release keeps a hybrid model's state pool beyond the split itself: the state dtype, the
early releases' fixed pools, data-parallel attention and the smallest-fit probes
(memory/state_pool.py, engine_memory_rules.yaml's hybrid_state_split)."""

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit


def _qwen3_next(engine: str = "sglang", version: str | None = None, **more) -> Deployment:
    return Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine=engine, tensor_parallel_size=4,
                      max_model_len=32768, engine_version=version, **more)


def test_stated_slots_do_not_refuse_the_smallest_fit_probes_over_pipeline_stages():
    # at its full context the deployment does not fit; the probes try pipeline layouts without the split
    r = fit(Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine="sglang", tensor_parallel_size=2,
                       max_mamba_cache_size=5))
    assert not r.fits and r.state_slots == 5


def test_a_stated_state_pool_that_runs_no_request_is_refused_at_its_flag():
    # 4 slots, 5 a running request holds (Qwen3-Next's extra buffer): no request runs, which is no memory shortfall
    with pytest.raises(InvalidScenarioError) as err:
        fit(_qwen3_next(max_mamba_cache_size=4))
    assert err.value.field == "max_mamba_cache_size" and "at least 5" in err.value.allowed


def test_sglang_keeps_the_recurrent_state_in_float32_where_the_config_names_none():
    # Qwen3-Next's config names no mamba_ssm_dtype: SGLang's float32 temporal state, vLLM's 16 bits
    sglang, vllm = fit(_qwen3_next()), fit(_qwen3_next("vllm"))
    assert sglang.state_bytes_per_sequence > 1.9 * vllm.state_bytes_per_sequence
    assert sglang.state_slots == pytest.approx(713, abs=3) and sglang.state_running_cap == sglang.state_slots // 5


def test_stated_slots_are_divided_over_dp_attention_ranks():
    # SGLang divides a stated --max-mamba-cache-size by the DP attention ranks before sizing each rank's pool
    d = _qwen3_next(max_mamba_cache_size=100).model_copy(update={"tensor_parallel_size": 2, "data_parallel_size": 2,
                                                                  "enable_expert_parallel": True})
    r = fit(d)
    assert r.state_slots == 50 and r.state_running_cap == 10
    assert any("100 as stated over 2 DP attention ranks" in a for a in r.assumptions)


def test_concurrency_above_the_state_pool_cap_runs_the_cap_and_queues_the_rest():
    capped, at_cap = fit(_qwen3_next(concurrency=1000)), fit(_qwen3_next(concurrency=142))
    assert capped.state_running_cap == 142
    assert capped.largest_context_tokens == at_cap.largest_context_tokens  # the 858 above the cap hold no KV
    assert "concurrency 1,000 is above the 142 sequences the state pool" in capped.concurrency_note
    assert capped.queued_sequences == 858 and capped.running_cap_flag == "--max-mamba-cache-size"
    assert at_cap.queued_sequences == 0 and "wait in the queue" not in at_cap.concurrency_note


def test_early_releases_keep_a_fixed_pool_with_the_radix_cache_off():
    # 0.5.3: Qwen3-Next runs with the radix cache off, 512 slots, one a request
    early = fit(_qwen3_next(version="0.5.3"))
    assert early.state_slots == 512 and early.state_running_cap == 512
    assert fit(_qwen3_next(version="0.5.3", max_num_seqs=64)).state_slots == 64  # --max-running-requests sets them
    # 0.5.4 to 0.5.6: Nemotron-H with the radix cache off (512 slots, cap ratio 1), Qwen3-Next on the ratio
    nano = Deployment(model="nemotron-nano-9b-v2", accelerator="h100-sxm", engine="sglang", max_model_len=32768)
    assert fit(nano.model_copy(update={"engine_version": "0.5.6"})).state_running_cap == 512
    assert fit(nano.model_copy(update={"engine_version": "0.5.13"})).state_running_cap < 512
    assert fit(_qwen3_next(version="0.5.6")).state_slots != 512


def test_a_stated_running_cap_sets_each_dp_attention_ranks_fixed_pool():
    # 0.5.3, radix cache off: max_num_seqs 64 on each of 2 DP attention ranks is --max-running-requests 128, which
    # SGLang divides over the ranks: 64 slots a rank
    d = _qwen3_next(version="0.5.3", max_num_seqs=64, data_parallel_size=2, enable_expert_parallel=True)
    assert fit(d).state_slots == 64


def test_a_stated_slot_count_is_refused_where_the_release_solves_it_from_the_ratio():
    from inferplan.errors import InvalidScenarioError
    with pytest.raises(InvalidScenarioError) as e:
        fit(_qwen3_next(version="0.5.6", max_mamba_cache_size=100))
    assert e.value.field == "max_mamba_cache_size"
    # the inputs as the domain spells them: the CLI says each as its flag, the API as its field
    assert "--" not in str(e.value) + e.value.allowed and "(engine_version)" in e.value.allowed
    assert fit(_qwen3_next(version="0.5.13", max_mamba_cache_size=100)).state_slots == 100


def test_deploy_writes_no_state_pool_flag_the_planned_release_lacks():
    from inferplan.deploy import launch_command
    from inferplan.errors import UnsupportedSettingError
    with pytest.raises(UnsupportedSettingError) as e:  # --mamba-full-memory-ratio is first in 0.5.4
        launch_command(_qwen3_next(version="0.5.3", mamba_full_memory_ratio=0.5))
    assert e.value.field == "mamba_full_memory_ratio" and "0.5.4" in e.value.allowed
    assert "--mamba-full-memory-ratio" in launch_command(_qwen3_next(version="0.5.6", mamba_full_memory_ratio=0.5)).argv


def test_sglang_0_5_3_refuses_a_hybrid_model_outside_its_fixed_pool_list():
    # the 0.5.3 wheel ships only Qwen3-Next and Falcon-H1 hybrids; Kimi Linear loads from 0.5.5
    d = Deployment(model="kimi-linear-48b-a3b", gpu="h100-sxm", engine="sglang", engine_version="0.5.3")
    with pytest.raises(InvalidScenarioError) as err:
        fit(d)
    assert err.value.field == "engine_version" and err.value.allowed == "0.5.5 or later"
    assert fit(d.model_copy(update={"engine_version": "0.5.5"})).state_slots


def test_sglang_0_5_4_refuses_kimi_linear_which_its_wheel_does_not_ship():
    # the 0.5.4 wheel's hybrids are Qwen3-Next, Falcon-H1 and Nemotron-H; kimi_linear.py is first in 0.5.5
    d = Deployment(model="kimi-linear-48b-a3b", gpu="h100-sxm", engine="sglang", engine_version="0.5.4")
    with pytest.raises(InvalidScenarioError) as err:
        fit(d)
    assert err.value.field == "engine_version" and err.value.allowed == "0.5.5 or later"


def test_sglang_0_5_4_divides_qwen3_nexts_solved_slots_over_dp_attention_ranks(tmp_path):
    # 0.5.4-0.5.12 model_runner.py: a Gated DeltaNet model's ratio-solved max_mamba_cache_size // dp_size under
    # DP attention; the state memory so freed goes to the KV pool
    name = "engine_memory_rules.yaml"
    data = yaml.safe_load((DATA_DIR / name).read_text())
    for rule in data["memory_rules"]:
        for entry in rule.get("hybrid_state_split", ()):
            entry.pop("solved_slots_over_attention_dp_architectures", None)
    (tmp_path / name).write_text(yaml.safe_dump(data))
    undivided_catalog = load_files([*(p for p in DATA_DIR.glob("**/*.yaml") if p.name != name), tmp_path / name])
    d = _qwen3_next(version="0.5.6").model_copy(update={"tensor_parallel_size": 2, "data_parallel_size": 2,
                                                         "enable_expert_parallel": True})
    divided, undivided = fit(d), fit(d, undivided_catalog)
    assert divided.state_slots == undivided.state_slots // 2 > 0
    assert divided.kv_cache_tokens > undivided.kv_cache_tokens
    assert any("divided over 2 DP attention ranks" in a for a in divided.assumptions)
