"""A disaggregated pool's instance is sized as the engine sizes it with the KV connector the pool launches with:
vLLM 0.34's NixlConnector turns the extensible KV cache off when the switch is unset, on ROCm always
(``connector_refusals``) and on CUDA with no IMEX channel, as the driver comes (``runtime_fallbacks`` by_default), so
the pool holds the slots of --no-enable-extensible-kv-cache; an instance without pools keeps the extensible cache; a
stated switch on is refused on ROCm, as the launch refuses it, and kept on CUDA."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.extensible import pool_sized
from inferplan.search import evaluate
from inferplan.search.load import resolve_load
from inferplan.search.request import SearchRequest
from inferplan.search.run import model_cells
from inferplan.search.simulation import SimulationQuery, simulate_deployment
from inferplan.search.space import build_space
from inferplan.shells.cli import app

QWEN = ["--model", "qwen3-32b", "--max-model-len", "32768", "--request-rate", "1", "--input-len", "16000",
        "--output-len", "200", "--requests", "200"]
LLAMA = ["--model", "llama-3.1-70b", "--gpus", "1", "--max-model-len", "32768", "--request-rate", "1",
         "--input-len", "2000", "--output-len", "200", "--requests", "500"]
POOLS = ["--prefill-instances", "1", "--replicas", "1"]
OFF = "--no-enable-extensible-kv-cache"


def _slots(*args: str) -> int:
    out = CliRunner().invoke(app, ["simulate", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["slots"]


@pytest.mark.parametrize("model, slots", [(QWEN, 27), (LLAMA, 58)])
def test_a_rocm_pool_over_nixl_holds_the_slots_of_the_cache_switched_off(model, slots):
    pooled = _slots(*model, "--gpu", "mi300x", *POOLS)
    assert pooled == _slots(*model, "--gpu", "mi300x", *POOLS, OFF) == slots
    assert _slots(*model, "--gpu", "mi300x") > slots  # the same instance without pools: the extensible cache


def test_a_cuda_pool_holds_the_slots_of_the_cache_off_unless_it_is_stated_on():
    on = _slots(*QWEN, "--gpu", "h100-sxm", *POOLS, "--enable-extensible-kv-cache")
    assert _slots(*QWEN, "--gpu", "h100-sxm", *POOLS) == _slots(*QWEN, "--gpu", "h100-sxm", *POOLS, OFF) < on
    assert on == _slots(*QWEN, "--gpu", "h100-sxm")  # stated on: the slots of the instance without pools


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_pool_sized_turns_it_off_only_where_the_engine_does_and_the_switch_unset(catalog, role):
    rocm = Deployment(model="qwen3-32b", gpu="mi300x")
    for gpu in ("mi300x", "h100-sxm"):  # refused on ROCm; on CUDA, no IMEX channel as the driver comes
        sized = pool_sized(catalog, rocm.model_copy(update={"gpu": gpu}), role)
        assert (sized.kv_connector, sized.enable_extensible_kv_cache) == ("NixlConnector", None)  # the engine's doing
    for same in (rocm.model_copy(update={"gpu": "h100-sxm", "enable_extensible_kv_cache": True}),
                 rocm.model_copy(update={"engine": "sglang"}),
                 rocm.model_copy(update={"engine_version": "0.33.0"}),
                 rocm.model_copy(update={"enable_extensible_kv_cache": False})):
        assert pool_sized(catalog, same, role) is same


def test_a_rocm_pool_refuses_the_switch_stated_on(catalog):
    d = Deployment(model="qwen3-32b", gpu="mi300x", max_model_len=32768, enable_extensible_kv_cache=True)
    q = SimulationQuery(deployment=d, prefill_instances=1, request_rate_per_s=1.0, requests=50,
                        workload={"input_len": 2000, "output_len": 100})
    with pytest.raises(InvalidScenarioError, match="NixlConnector") as refused:
        simulate_deployment(q, catalog)
    assert refused.value.field == "enable_extensible_kv_cache"


@pytest.mark.parametrize("gpu, smaller", [("mi300x", True), ("h100-sxm", True)])
def test_the_search_sizes_a_decode_pool_as_the_pool_launches(catalog, gpu, smaller):
    req = SearchRequest(models=("qwen3-32b",), request_rate_per_s=4.0, input_len=16000, output_len=200,
                        accelerators=(gpu,), engines=("vllm",), speculative=False, disaggregated=True,
                        quantizations=("bf16",), max_gpus=1)
    rl = resolve_load(catalog, req)
    space = build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len, context_for=rl.context_for)
    models, _ = model_cells(catalog, space, rl, disaggregate=True)
    grids = evaluate.evaluate_cells(models, rl, pricing="buy")
    assert models
    for cm, gs in zip(models, grids):
        pool = cm.pool_curve("decode")
        assert (pool.slots < cm.curve.slots) is smaller and (pool.slots == cm.curve.slots) is not smaller
        assert max(g.cap.max() for g in gs[1:]) == pool.slots  # a decode pool's running cap: its own slots


@pytest.mark.parametrize("gpu, smaller", [("mi300x", True), ("h100-sxm", True)])
def test_a_scenario_s_decode_pool_carries_the_users_its_sizing_holds(catalog, gpu, smaller):
    from inferplan.economics.plan import plan
    from inferplan.economics.scenario import Scenario

    base = {"model": "qwen3-32b", "platform": {"gpu": gpu, "gpus": 2, "quote_usd_per_system": 50000},
            "cell": {"tensor_parallel_size": 1}, "replicas": 1, "workload": {"preset": "chat-seat"}, "target_users": 100}
    alone, pooled = (plan(Scenario.model_validate({**base, "prefill_pool": pool}), catalog).users_per_loadout_by_limit
                     for pool in (None, {"instances": 1, "cell": {"tensor_parallel_size": 1}}))
    assert (pooled["per-request memory"] < alone["per-request memory"]) is smaller
    assert (pooled["per-request memory"] == alone["per-request memory"]) is not smaller


def test_a_rocm_pool_s_plan_names_its_connector_as_the_cause_not_a_switch_never_stated(catalog):
    from inferplan.economics.plan import plan
    from inferplan.economics.scenario import Scenario

    base = {"model": "qwen3-32b", "platform": {"gpu": "mi300x", "gpus": 2, "quote_usd_per_system": 50000},
            "cell": {"tensor_parallel_size": 1}, "replicas": 1, "workload": {"preset": "chat-seat"}, "target_users": 100,
            "prefill_pool": {"instances": 1, "cell": {"tensor_parallel_size": 1}}}
    notes = plan(Scenario.model_validate(base), catalog).model_dump_json()
    assert "NixlConnector (the KV connector of a disaggregated pool's instance) on rocm switches the extensible KV " \
           "cache off" in notes
    assert OFF not in notes


def test_pool_sized_looks_its_memory_rule_up_once(catalog, monkeypatch):
    import inferplan.memory.extensible as extensible
    looked, lookup = [], extensible.memory_rule
    monkeypatch.setattr(extensible, "memory_rule", lambda *a: looked.append(a) or lookup(*a))
    d = Deployment(model="qwen3-32b", gpu="mi300x", enable_extensible_kv_cache=False)  # a switch stated: checked too
    assert pool_sized(catalog, d, "decode") is d and len(looked) == 1


def test_simulate_states_the_slots_an_imex_channel_keeps_and_the_tcp_hand_over_when_stated_on():
    def notes(*extra: str) -> tuple[int, list[str]]:
        out = CliRunner().invoke(app, ["simulate", *QWEN, "--gpu", "h100-sxm", *POOLS, *extra, "--json"])
        assert out.exit_code == 0, out.output
        report = json.loads(out.output)
        return report["slots"], [n for n in report["notes"] if n.startswith("decode pool:")]

    off, said = notes()
    on, stated = notes("--enable-extensible-kv-cache")
    assert off < on and len(said) == 1 and f"{off:,} slots, as planned" in said[0] and f"{on:,} slots" in said[0]
    assert len(stated) == 1 and "fall back to TCP" in stated[0] and "priced on nvlink" in stated[0]
    assert notes(OFF)[1] == []  # stated off: the plan is what vLLM runs, nothing to add
