"""A plan charges every GPU the platform states, whichever of them serve: capex, power, operating cost and
$/Mtok are the stated loadout's, while the users carried come from the replica cells that run. One replica of
an Ollama tag one GPU holds (ollama.yaml ``single_gpu``) on two stated GPUs leaves the other GPU idle: it is
still paid for and powered (at the plan's average draw; the catalogue has no idle-power figure, so an idle
GPU is charged as a busy one is). With no cell stated, the plan of an Ollama tag on one host's GPUs runs the one
``ollama serve`` fit plans at the slots it is started with (``economics.ollama_hosts.ollama_servers``), not a copy per GPU."""

from __future__ import annotations

import re

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory

CATALOG = load_catalog()
TWO = dict(model="qwen3:8b", engine="llamacpp", target_users=5,
           platform={"gpu": "rtx-4090", "gpus": 2, "quote_usd_per_system": 5000})


def _plan(**changes):
    return plan(Scenario(**{**TWO, **changes}), CATALOG)


def test_one_serving_cell_of_two_stated_gpus_pays_for_both():
    one = _plan(cell={"tensor_parallel_size": 1}, replicas=1)
    both = _plan(cell={"tensor_parallel_size": 1}, replicas=2)
    assert one.gpus == both.gpus == 2
    assert one.capex_usd == both.capex_usd == 5000
    assert one.monthly_costs.power_usd == pytest.approx(both.monthly_costs.power_usd)
    assert one.monthly_costs.operating_usd == pytest.approx(both.monthly_costs.operating_usd)
    # the throughput is the one serving cell's: half the users, so each token costs twice as much
    assert one.supported_users == pytest.approx(both.supported_users / 2, abs=1)
    assert one.owner_cost_usd_per_mtok_at_capacity == pytest.approx(2 * both.owner_cost_usd_per_mtok_at_capacity, rel=1e-3)


def test_the_idle_gpu_draws_power_beside_the_serving_one():
    alone = plan(Scenario(**{**TWO, "platform": {"gpu": "rtx-4090", "gpus": 1, "quote_usd_per_system": 2500}}), CATALOG)
    idle_beside = _plan(cell={"tensor_parallel_size": 1}, replicas=1)
    assert idle_beside.supported_users == alone.supported_users
    assert idle_beside.monthly_costs.power_usd == pytest.approx(2 * alone.monthly_costs.power_usd)


def test_an_ollama_tag_with_no_cell_stated_plans_the_one_server_fit_plans_at_its_slots_and_pays_for_every_gpu():
    stated = {k: v for k, v in TWO.items() if k not in ("engine", "target_users")}
    auto = plan(Scenario(**stated), CATALOG)
    copies = plan(Scenario(**stated, cell={"tensor_parallel_size": 1}), CATALOG)  # a stated cell: a copy per GPU
    assert (auto.capacity.cells, copies.capacity.cells) == (1, 2)
    assert auto.gpus == copies.gpus == 2 and auto.capex_usd == copies.capex_usd == 5000
    assert auto.monthly_costs.power_usd == pytest.approx(copies.monthly_costs.power_usd)
    # one slot: Ollama's prediction holds qwen3:8b on one GPU; at the slots the server is started with
    # (OLLAMA_NUM_PARALLEL) it passes 80 % of one GPU, and Ollama spreads it over both, as fit plans it
    one_slot = plan_memory(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2), CATALOG).result
    started = plan_memory(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2, max_model_len=auto.workload.input_tokens_per_request
                                     + auto.workload.output_tokens_per_request,
                                     max_num_seqs=auto.capacity.cell.engine_slots), CATALOG).result
    assert one_slot.parallel.gpus == 1
    assert auto.capacity.cell.gpus == started.parallel.gpus == 2
    said = " ".join(auto.assumptions)
    assert "leaves 1 idle" not in said and started.layout_note.endswith(next(a for a in auto.assumptions if "2 GPUs given" in a))
    # the GPUs are chosen at the context the generation batch is chosen at
    (chosen,) = re.findall(r"GiB at a context of ([\d,]+) tokens is past", said)
    (batched,) = re.findall(r"-b / -ub \d+: .*?at a context of ([\d,]+) tokens", said)
    assert chosen == batched
    (context,) = {m for a in one_slot.assumptions for m in re.findall(r"at ([\d,]+) tokens, the context Ollama gives", a)}
    assert f"not the {context} Ollama gives it on these GPUs" in said  # every GPU Ollama sees, as fit counts them
