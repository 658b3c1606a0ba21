"""A plan of an Ollama tag with no cell stated runs one ``ollama serve`` per operating-system host
(``economics.ollama_hosts.ollama_servers``): GPUs spanning hosts are one server on each (a rack's host is its compute
tray, ``os_host_gpus``), GPUs that are not whole hosts are refused naming ``platform.gpus``, and the rent route rents
one server per rented host as the owned route runs one per owned host."""

from __future__ import annotations

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory

CATALOG = load_catalog()


def _rtx(gpus: int):
    return plan(Scenario(model="qwen3:8b", platform={"gpu": "rtx-4090", "gpus": gpus, "quote_usd_per_system": 5000}),
                CATALOG)


def test_gpus_spanning_hosts_run_one_ollama_server_per_host():
    one_host, two_hosts = _rtx(8), _rtx(16)  # an RTX 4090 host is an 8-card PCIe server
    assert (one_host.capacity.cells, two_hosts.capacity.cells) == (1, 2)
    assert one_host.capacity.cell.gpus == two_hosts.capacity.cell.gpus == 8
    assert two_hosts.supported_users == pytest.approx(2 * one_host.supported_users, abs=2)
    assert any("one Ollama server on each host of 8 GPUs" in a for a in two_hosts.assumptions)
    assert any("this plan prices 2 servers of 8 GPUs" in a for a in two_hosts.assumptions)
    assert not any("this plan prices" in a for a in one_host.assumptions)


def test_a_plan_across_hosts_says_fit_lays_the_gpus_out_otherwise():
    # 16 RTX 4090s: the plan prices 2 servers of 8 GPUs, fit lays llama3.3:70b out as 4 copies of 4 GPUs
    p = plan(Scenario(model="llama3.3:70b", platform={"gpu": "rtx-4090", "gpus": 16, "quote_usd_per_system": 5000}),
             CATALOG)
    fitted = plan_memory(Deployment(model="llama3.3:70b", gpu="rtx-4090", gpus=16), CATALOG).result
    assert (p.capacity.cells, p.capacity.cell.gpus) == (2, 8)
    assert (fitted.parallel.pipeline_parallel_size, fitted.parallel.data_parallel_size) == (4, 4)
    assert any("`fit` and `deploy` of the tag with 16 GPUs lay it out over all of them" in a for a in p.assumptions)


def test_gpus_that_are_not_whole_hosts_are_refused_naming_the_platform_gpus():
    with pytest.raises(InvalidScenarioError, match="not whole hosts") as info:
        _rtx(9)
    assert info.value.field == "platform.gpus" and "a multiple of 8 GPUs" in info.value.allowed


def test_a_rack_runs_one_ollama_server_per_compute_tray():
    rack = plan(Scenario(model="deepseek-r1:671b", platform={"system": "gb200-nvl72"}), CATALOG)
    assert rack.capacity.cells == 18 and rack.capacity.cell.gpus == 4  # a GB200 NVL72 tray is one OS host of 4 GPUs
    assert rack.capacity.cell.data_parallel_size == 1 and rack.supported_users > 0
    assert any("one Ollama server on each host of 4 GPUs" in a for a in rack.assumptions)


def test_rent_runs_one_ollama_server_per_rented_host_as_the_owned_route_per_owned_host():
    p = plan(Scenario(model="qwen3:8b", workload={"preset": "agent-worker"}, target_users=500,
                      platform={"system": "hgx-h100"}, money={"rental": "rent-aws-p5.48xlarge-us-east-1"}), CATALOG)
    assert p.capacity.cells == 1 and p.capacity.cell.gpus == 1 and p.supported_users > 0
    assert p.rented_instance_gpus == p.rented_cell_gpus == 8
    assert p.rented_instances == p.rented_cells == p.loadouts


def test_a_system_named_alone_is_said_as_fit_says_it():
    p = plan(Scenario(model="gpt-oss:120b", platform={"system": "hgx-h100"}), CATALOG)
    note = next(a for a in p.assumptions if "Ollama runs one server" in a or "Ollama loads" in a)
    assert note.startswith("hgx-h100's 8 GPUs")
    fitted = plan_memory(Deployment(model="gpt-oss:120b", system="hgx-h100", max_num_seqs=p.capacity.cell.engine_slots,
                                    max_model_len=p.workload.input_tokens_per_request
                                    + p.workload.output_tokens_per_request), CATALOG).result
    assert fitted.layout_note.endswith(note) and fitted.parallel.gpus == p.capacity.cell.gpus
