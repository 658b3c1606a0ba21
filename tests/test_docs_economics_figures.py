"""The worked figures docs/economics.md quotes in its prose are the ones the code gives for the
scenarios they describe: each is read from the doc and compared with a fresh plan, so a doc figure
that drifts from the code fails here (as test_readme does for the README's output)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.scenario import load_scenario
from test_expert_parallel_cells import rack

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog()


@pytest.fixture(scope="module")
def doc() -> str:
    return " ".join((ROOT / "docs" / "economics.md").read_text().split())


def _figures(pattern: str, text: str) -> tuple[int, ...]:
    match = re.search(pattern, text)
    assert match, f"docs/economics.md no longer says {pattern!r}"
    return tuple(int(g.replace(",", "")) for g in match.groups())


def test_the_chat_seats_owned_and_rented_users_are_the_plans(doc):
    owned, rented = _figures(r"a DP8 expert-parallel cell carrying ([\d,]+) users\) but rents one 1-GPU cell "
                             r"carrying ([\d,]+) users", doc)
    r = plan(load_scenario(ROOT / "examples" / "chat-seats-h100.yaml"), CATALOG)
    assert (owned, rented) == (r.supported_users, r.rented_users)


def test_the_rack_replicas_and_the_expert_parallel_cell_are_the_plans(doc):
    figures = _figures(r"as 18 TP4 replicas carries ([\d,]+) users at ([\d,]+) output tokens/s per GPU; one 72-GPU "
                       r"expert-parallel cell carries ([\d,]+) users at ([\d,]+) per GPU", doc)
    narrow = plan(rack("sglang", 50, cell={"tensor_parallel_size": 4}), CATALOG).capacity
    wide = plan(rack("sglang", 50), CATALOG).capacity
    assert narrow.cells == 18 and wide.cell.gpus == 72
    assert figures == (narrow.supported_users, round(narrow.output_tokens_per_s / narrow.gpus),
                       wide.supported_users, round(wide.output_tokens_per_s / wide.gpus))


def test_the_ollama_slots_on_two_rtx_4090s_are_the_plans(doc):
    (slots,) = _figures(r"`qwen3:8b` on two RTX 4090s: spread, ([\d,]+) slots", doc)
    # the scenario at its default workload, as tests/test_ollama_plan_hosts.py plans it
    cell = plan(Scenario(model="qwen3:8b", platform={"gpu": "rtx-4090", "gpus": 2, "quote_usd_per_system": 5000}),
                CATALOG).capacity.cell
    assert cell.gpus == 2 and slots == cell.engine_slots


def test_the_rack_output_per_gpu_drafting_with_mtp_is_the_plans(doc):
    figures = _figures(r"the plan gives ([\d,]+) output tokens/s per GPU at 50 tok/s per user and ([\d,]+) at 100,", doc)
    drafted = [plan(rack("sglang", target, speculative={"tokens": 3, "acceptance_rate": 0.7}), CATALOG).capacity
               for target in (50, 100)]
    assert figures == tuple(round(c.output_tokens_per_s / c.gpus) for c in drafted)


def test_the_scenario_file_the_doc_shows_plans_as_written(tmp_path):
    block = re.search(r"## Scenario files\n.*?```yaml\n(.*?)```", (ROOT / "docs" / "economics.md").read_text(), re.S)
    assert block, "docs/economics.md shows no scenario file"
    (tmp_path / "scenario.yaml").write_text(block.group(1))
    scenario = load_scenario(tmp_path / "scenario.yaml")
    # every key it sets is one a reader may copy: none overrides what the catalogue knows of the model
    assert scenario.kv_bytes_per_token is None
    assert plan(scenario.model_copy(update={"target_users": 10}), CATALOG).supported_users > 0
