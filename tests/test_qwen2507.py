"""The Qwen3 2507 re-releases (cards qwen3-30b-a3b-2507, qwen3-235b-a22b-2507: 262,144 native
positions, the original layers) and SGLang's AITER fraction factor on ROCm (engines.yaml
memory_fraction_reserve.fraction_scales, source eng-sglang-aiter-fraction-v056): x 0.85 above a
context of 8,192 tokens, on the fraction the engine picks itself."""

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit, plan_memory
from inferplan.memory.resolve import resolve_model
from inferplan.validation.memory import check_point

AITER_SCALE = 0.85  # server_args.py at SGLang 0.5.6: mem_fraction_static *= 0.85
MI355X_FRACTION = 0.911  # d05's printed mem_fraction_static at TP 1, before the factor


@pytest.mark.parametrize(("name", "card"), [
    ("qwen3-30b-a3b-2507", "qwen3-30b-a3b-2507"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b-2507"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507-FP8", "qwen3-30b-a3b-2507"),
    ("Qwen/Qwen3-30B-A3B-Thinking-2507", "qwen3-30b-a3b-2507"),
    ("qwen3-235b-a22b-2507", "qwen3-235b-a22b-2507"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "qwen3-235b-a22b-2507"),
    ("Qwen/Qwen3-235B-A22B-Thinking-2507", "qwen3-235b-a22b-2507"),
    ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"),  # the original release keeps its own card
])
def test_the_2507_names_resolve_to_the_2507_cards(catalog, name, card):
    assert resolve_model(catalog, name).id == card


@pytest.mark.parametrize(("model", "layers"), [("qwen3-30b-a3b-2507", 48), ("qwen3-235b-a22b-2507", 94)])
def test_the_2507_cards_open_262144_positions_with_the_original_kv_layout(catalog, model, layers):
    spec = resolve_model(catalog, model)
    assert spec.context_tokens == 262144
    assert spec.architecture.max_position_embeddings == 262144
    r = fit(Deployment(model=model, gpu="b200", gpus=4, tensor_parallel_size=4, max_model_len=262144), catalog)
    assert r.kv_cache_bytes_per_token == layers * 2 * 4 * 128 * 2  # 4 KV heads of 128 (one per GPU at TP 4), BF16


def test_the_2507_card_plans_its_native_context_the_original_refuses(catalog):
    plan = Deployment(model="qwen3-30b-a3b-2507", gpu="mi355x", engine="sglang", max_model_len=262144)
    assert fit(plan, catalog).fits
    with pytest.raises(InvalidScenarioError) as refused:  # the original card stops at 40,960 positions
        fit(plan.model_copy(update={"model": "qwen3-30b-a3b"}), catalog)
    assert refused.value.field == "max_model_len"
    assert check_point(_point(catalog, "d04-qwen3-30b-a3b-fp8-mi355x-sglang-fails"), catalog).refused is None


def _point(catalog, point_id):
    return next(p for p in catalog.memory_points if p.id == point_id)


def _fraction(catalog, gpu: str, model: str = "qwen3-30b-a3b-2507", **stated) -> float:
    d = Deployment(model=model, gpu=gpu, engine="sglang", **stated)
    return plan_memory(d, catalog).settings.memory_fraction


def test_sglang_lowers_its_fraction_for_aiter_on_rocm_above_8192_tokens(catalog):
    assert _fraction(catalog, "mi355x", max_model_len=262144) == pytest.approx(
        MI355X_FRACTION * AITER_SCALE, abs=0.002)
    assert _fraction(catalog, "mi355x", max_model_len=8192) == pytest.approx(MI355X_FRACTION, abs=0.002)
    # the model's own context decides when none is stated (SGLang's model_config.context_len)
    assert _fraction(catalog, "mi355x") == pytest.approx(MI355X_FRACTION * AITER_SCALE, abs=0.002)


def test_the_aiter_factor_stays_off_nvidia(catalog):
    b200 = 0.857  # SGLang 0.5.6 on a B200 at TP 1 (tests/test_engine_tiers.py)
    assert _fraction(catalog, "b200", max_model_len=262144, engine_version="0.5.6") == pytest.approx(b200, abs=0.002)
    # 0.5.23 keeps 592 MiB more out for the prefill CUDA graphs of its 16,384-token chunk (74 sizes)
    assert _fraction(catalog, "b200", max_model_len=262144) == pytest.approx(0.853, abs=0.002)
    assert _fraction(catalog, "b200", max_model_len=262144, gpu_memory_utilization=0.9) == 0.9


def test_a_stated_fraction_is_lowered_too(catalog):
    # server_args.py multiplies self.mem_fraction_static by 0.85 after it is set, whether
    # _handle_gpu_memory_settings picked it or --mem-fraction-static gave it
    assert _fraction(catalog, "mi355x", max_model_len=262144, gpu_memory_utilization=0.9) == pytest.approx(
        0.9 * AITER_SCALE)
    assert _fraction(catalog, "mi355x", max_model_len=8192, gpu_memory_utilization=0.9) == 0.9


@pytest.mark.parametrize(("model", "tp", "lowered"), [
    ("deepseek-v2-lite", 1, True),  # 16 KV heads per GPU: AITER
    ("deepseek-r1", 8, True),  # 128 / 8 = 16: AITER
    ("kimi-k2", 8, False),  # 64 / 8 = 8: Triton
    ("kimi-k2", 4, True),  # 64 / 4 = 16: AITER
])
def test_an_mla_model_is_lowered_where_it_takes_aiter(catalog, model, tp, lowered):
    # MLA on HIP: attention_backend 'aiter' when get_num_kv_heads(tp) is 16 or 128, else 'triton'
    d = Deployment(model=model, gpu="mi355x", engine="sglang", tensor_parallel_size=tp, gpus=tp,
                   max_model_len=32768, gpu_memory_utilization=0.8)
    assert plan_memory(d, catalog).settings.memory_fraction == pytest.approx(0.8 * AITER_SCALE if lowered else 0.8)


def test_d04_is_planned_with_the_lowered_fraction_and_says_so(catalog):
    check = check_point(_point(catalog, "d04-qwen3-30b-a3b-fp8-mi355x-sglang-fails"), catalog)
    # KV 203.90 GiB printed; x 0.85 planned leaves the pool within 10 % (without it: about +13 %)
    assert check.kv_error == pytest.approx(0.0, abs=0.10)
    plan = Deployment(model="Qwen/Qwen3-30B-A3B-Instruct-2507-FP8", gpu="mi355x", engine="sglang",
                      quantization="fp8-block", max_model_len=262144)
    assert any("aiter" in a and "0.85" in a for a in fit(plan, catalog).assumptions)


def test_the_note_on_a_stated_fraction_says_the_given_one_is_lowered(catalog):
    r = fit(Deployment(model="qwen3-30b-a3b", gpu="mi355x", engine="sglang", gpu_memory_utilization=0.9), catalog)
    note = next(a for a in r.assumptions if "attention backend" in a)
    assert "the one it is given" in note and "0.765 planned" in note
