"""Routed experts over expert-parallel ranks that do not divide them (memory/expert_split.py).

SGLang holds (experts + --ep-num-redundant-experts) / ep_size expert slots on every rank and asserts
that they divide (engines.yaml eng-ep-sglang-redundant): DeepSeek-V3/R1's 256 routed experts over 72
ranks start only with 32 redundant copies (288 = 4 x 72), each GPU then holding 4 experts per MoE
layer, not 256 / 72. vLLM gives the remainder to some ranks, so its even split stands.
"""

from collections import OrderedDict

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.deploy.command import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory import fit as fit_module, fit_weights
from inferplan.memory.expert_split import redundant_experts
from inferplan.memory.fit import fit, plan_memory
from inferplan.memory.resolve import resolve_model
from inferplan.memory.weights import weight_bytes
from inferplan.performance import work
from inferplan.performance.work import model_work

CATALOG = load_catalog()
FLAG = "--ep-num-redundant-experts"


def _ep(model: str, engine: str, ranks: int, system: str = "gb300-nvl72") -> Deployment:
    return Deployment(model=model, system=system, gpus=ranks, engine=engine, quantization="fp8", tensor_parallel_size=1,
                      data_parallel_size=ranks, enable_expert_parallel=True)


def _even_split(monkeypatch) -> None:
    """Fits from here on without the rule, every rank holding experts / ranks experts' weights (in a plan
    cache of their own, dropped after the test)."""
    for module in (fit_weights, work):
        monkeypatch.setattr(module, "redundant_experts", lambda *a, **k: 0)
    monkeypatch.setattr(fit_module, "_PLANS", OrderedDict())


@pytest.mark.parametrize("model", ["deepseek-r1", "deepseek-v3"])
@pytest.mark.parametrize(("engine", "ranks", "redundant"),
                         [("sglang", 72, 32), ("sglang", 64, 0), ("sglang", 8, 0), ("sglang", 48, 32),
                          ("vllm", 72, 0), ("trtllm", 72, 0)])
def test_the_fewest_redundant_experts_that_make_the_slots_divide(model, engine, ranks, redundant):
    spec = resolve_model(CATALOG, model)
    assert spec.architecture.moe.num_experts == 256
    assert redundant_experts(spec, CATALOG.engine(engine), ranks=ranks) == redundant


@pytest.mark.parametrize("model", ["deepseek-r1", "deepseek-v3"])
def test_sglang_on_72_ranks_holds_four_experts_per_moe_layer_and_launches_with_the_copies(model, monkeypatch):
    d = _ep(model, "sglang", 72)
    held = fit(d, CATALOG)
    argv = launch_command(d, CATALOG).argv
    assert argv[argv.index(FLAG) + 1] == "32" and argv[argv.index("--ep-size") + 1] == "72"
    assert any("32 redundant expert copies, 4 experts per MoE layer" in a for a in held.assumptions)
    spec = resolve_model(CATALOG, model)
    expert_bytes = weight_bytes(spec, CATALOG.quantization("fp8")).expert_bytes  # all 256 experts, every MoE layer
    _even_split(monkeypatch)
    even = fit(d, CATALOG)
    # 4 experts instead of 256 / 72 = 3.56 on each GPU (fp8 block scales add under 0.1%)
    assert held.weights_bytes_per_gpu - even.weights_bytes_per_gpu == pytest.approx(
        expert_bytes * (4 - 256 / 72) / 256, rel=0.01)
    assert held.kv_cache_bytes_per_gpu < even.kv_cache_bytes_per_gpu


@pytest.mark.parametrize(("engine", "ranks", "system"),
                         [("sglang", 8, "hgx-b200"), ("sglang", 64, "gb300-nvl72"), ("vllm", 72, "gb300-nvl72")])
def test_experts_that_divide_and_vllm_keep_the_even_split_and_no_flag(engine, ranks, system, monkeypatch):
    d = _ep("deepseek-r1", engine, ranks, system)
    held = fit(d, CATALOG)
    argv = launch_command(d, CATALOG).argv
    assert FLAG not in argv and not any("redundant" in a for a in held.assumptions)
    _even_split(monkeypatch)
    assert fit(d, CATALOG).weights_bytes_per_gpu == held.weights_bytes_per_gpu


def test_every_engine_that_adds_redundant_experts_has_a_flag_for_them():
    for engine in CATALOG.engines:
        if engine.expert_parallel_redundant:
            flags = next(f for f in CATALOG.engine_flags if f.engine == engine.id)
            rule = flags.settings["redundant_experts"]
            assert rule.flags[0] in flags.accepted, (engine.id, rule.flags)


def test_the_copies_add_no_weights_read_per_step(monkeypatch):
    # without an expert dispatch algorithm no token is routed to a copy: the speed model reads what the
    # even split holds (dense weights and the routed experts alone)
    d = _ep("deepseek-r1", "sglang", 72)
    held = model_work(plan_memory(d, CATALOG), CATALOG)
    _even_split(monkeypatch)
    even = model_work(plan_memory(d, CATALOG), CATALOG)
    assert held.expert_bytes_per_gpu == even.expert_bytes_per_gpu
    assert held.dense_bytes_per_gpu == pytest.approx(even.dense_bytes_per_gpu, rel=1e-12)
