"""Engine memory rules (catalog/data/engine_memory_rules.yaml): each release selects its own rule,
the rule is what the budget applies, and a rule removed from the data is noticed."""

import shutil

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.catalog.memory_rules import MemoryRule, memory_rule, parse_engine_version, release_key
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.shells.cli import app
from inferplan.validation.docs_memory import DOC, render_memory_tables
from inferplan.validation.docs_tables import blocks, fill
from inferplan.validation.memory import check_point, deployment_for

GiB = 2**30
RULES = DATA_DIR / "engine_memory_rules.yaml"

# the rule each vLLM release line is planned with: read from the releases' code and pull requests
# (sources in the data file); removing or re-ranging a rule breaks this table
EXPECTED = {
    "0.2.5": "vllm-v0-device-used", "0.4.0": "vllm-v0-device-used",
    "0.4.1": "vllm-v0-growth-since-start", "0.5.3.post1": "vllm-v0-growth-since-start",
    "0.6.4": "vllm-v0-torch-peak-with-context", "0.6.5": "vllm-v0-baseline-profile",
    "0.7.3": "vllm-v0-profiled-increase", "0.8.5 V0": "vllm-v0-profiled-increase",
    "0.8.5": "vllm-v1-nccl-in-profile", "0.10.2": "vllm-v1-nccl-in-profile", "0.11.0": "vllm-v1-graphs-after-kv", "0.14.1": "vllm-v1-graphs-after-kv",
    "0.16.0": "vllm-v1-graphs-after-kv", "0.17.0": "vllm-v1-triton-sampler", "0.19.1": "vllm-v1-triton-sampler",
    "0.20.0": "vllm-v1-graphs-estimated", "0.20.2": "vllm-v1-graphs-estimated", "0.21.0": "vllm-v1-graphs-estimated", "0.27.1": "vllm-v1-graphs-estimated",
    "0.33.0": "vllm-v1-graphs-estimated", "0.34.0": "vllm-extensible-kv-cache",
}


@pytest.mark.parametrize("release, rule_id", EXPECTED.items())
def test_each_vllm_release_takes_the_rule_of_its_range(catalog, release, rule_id):
    assert memory_rule(catalog, "vllm", release).id == rule_id


def test_every_rule_is_selected_at_both_ends_of_its_range(catalog):
    for rule in catalog.memory_rules:
        suffix = f" {rule.variant}" if rule.variant else ""
        ends = [rule.first_release, *([rule.last_release] if rule.last_release else [])]
        assert [memory_rule(catalog, rule.engine, e + suffix).id for e in ends] == [rule.id] * len(ends)


def test_without_a_version_each_engine_takes_its_default_rule(catalog):
    assert memory_rule(catalog, "vllm").id == "vllm-extensible-kv-cache"  # the rule of the current release
    for engine in catalog.engines:
        assert memory_rule(catalog, engine.id).is_default


def test_the_default_rule_is_the_current_release_s(catalog):
    d = Deployment(model="llama-3.1-8b", gpu="h100", max_model_len=16000)
    default, stated = fit(d, catalog), fit(d.model_copy(update={"engine_version": "0.34.0"}), catalog)
    assert default.kv_cache_bytes_per_gpu == stated.kv_cache_bytes_per_gpu
    assert default.memory_rule_id == "vllm-extensible-kv-cache" and "V1" in default.memory_rule


def test_release_numbers_compare_as_numbers():
    assert release_key("0.10.1") > release_key("0.9.2") > release_key("0.6.4")
    assert release_key("0.11") == release_key("0.11.0") and release_key("v0.5.3.post1") == (0, 5, 3)
    assert parse_engine_version("V0 0.8.5") == parse_engine_version("0.8.5 v0") == ("0.8.5", "V0")
    with pytest.raises(ValueError):
        parse_engine_version("latest")


@pytest.mark.parametrize("version, message", [("banana", "not a release number"), ("0.1.0", "no vllm release 0.1.0"),
                                              ("0.11.0 V0", "has no V0 memory rule")])
def test_a_bad_engine_version_names_the_field_and_the_covered_releases(catalog, version, message):
    with pytest.raises(InvalidScenarioError, match=message) as info:
        memory_rule(catalog, "vllm", version)
    assert info.value.field == "engine_version" and "0.6.4 V0" in info.value.allowed


def test_a_v0_record_is_predicted_with_the_v0_rule(catalog):
    """vLLM 0.6.4 profiled a 20000-token batch on the RTX 3090 (f01): the V0 rule reserves its activation
    peak; V1's 8192-token profile would leave over a quarter more KV cache than the log's 3.81 GiB."""
    point = catalog.memory_points.records["f01-llama31-8b-rtx3090-20k"]
    check = check_point(point, catalog)
    assert check.memory_rule == memory_rule(catalog, "vllm", "0.6.4").label and check.rule_basis == "engine_release"
    assert abs(check.kv_error) < 0.07
    v1 = fit(deployment_for(point).model_copy(update={"engine_version": None}), catalog)
    assert v1.kv_cache_bytes_per_gpu > 1.25 * point.measured.kv_cache_bytes_per_gpu.value
    # the held-out sibling at 29000 tokens: the engine refused to start, and so does the plan
    assert check_point(catalog.memory_points.records["f02-llama31-8b-rtx3090-29k-fails"], catalog).predicted_fits is False


def test_the_budget_applies_what_the_rule_counts(catalog):
    d = Deployment(model="llama-3.1-8b", gpu="rtx-3090", max_model_len=20000)
    v0, v065 = fit(d.model_copy(update={"engine_version": "0.6.4"}), catalog), \
        fit(d.model_copy(update={"engine_version": "0.6.5"}), catalog)
    # same profile, a non-torch figure of 0.35 GiB against 1.79 GiB: the difference is all KV
    assert v0.activation_bytes_per_gpu == v065.activation_bytes_per_gpu
    assert v0.kv_cache_bytes_per_gpu - v065.kv_cache_bytes_per_gpu == pytest.approx((1.79 - 0.35) * GiB, rel=1e-3)
    estimated = fit(d.model_copy(update={"engine_version": "0.21.0"}), catalog)
    graphs = catalog.constant("vllm-cudagraph-estimate-bytes-per-gpu")
    last_after_kv = fit(d.model_copy(update={"engine_version": "0.19.1"}), catalog)  # the same sampler profile
    # 0.20.0 raised the default fraction from 0.9 to 0.92 with the estimate (vLLM PR #38284)
    assert estimated.usable_bytes_per_gpu / last_after_kv.usable_bytes_per_gpu == pytest.approx(0.92 / 0.9)
    fraction_gain = estimated.usable_bytes_per_gpu - last_after_kv.usable_bytes_per_gpu
    assert last_after_kv.kv_cache_bytes_per_gpu + fraction_gain - estimated.kv_cache_bytes_per_gpu == pytest.approx(graphs)
    assert estimated.cuda_graph_bytes_per_gpu == graphs and last_after_kv.cuda_graph_bytes_per_gpu == 0


def _catalog_without(tmp_path, rule_id):
    data = yaml.safe_load(RULES.read_text())
    data["memory_rules"] = [r for r in data["memory_rules"] if r["id"] != rule_id]
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / RULES.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)


def test_a_rule_removed_from_the_data_is_noticed(tmp_path):
    unwired = _catalog_without(tmp_path, "vllm-v0-torch-peak-with-context")
    with pytest.raises(InvalidScenarioError, match="no vllm release 0.6.4"):
        memory_rule(unwired, "vllm", "0.6.4")
    check = check_point(unwired.memory_points.records["f01-llama31-8b-rtx3090-20k"], unwired)
    assert check.predicted_kv_bytes is None and "0.6.4" in check.refused  # kept, with the refusal


def _rule(**changes):
    base = yaml.safe_load(RULES.read_text())["memory_rules"][0]
    return {**base, **changes}


@pytest.mark.parametrize("changes, message", [
    ({"first_release": "latest"}, "not a release number"),
    ({"last_release": "0.1.0"}, "before first_release"),
    ({"counted": ["weights", "activation_peak", "non_torch", "cuda_graphs"]}, "estimated CUDA graphs"),
    ({"non_torch_constants": None}, "needs non_torch_constants"),
])
def test_a_malformed_rule_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        MemoryRule.model_validate(_rule(**changes))


@pytest.mark.parametrize("edit, message", [
    (lambda rules: rules.append({**rules[0], "id": "vllm-overlap"}), "overlap"),
    (lambda rules: rules[0].update(default=True), "exactly one default"),
    (lambda rules: rules[0]["activation"].update(forward_constant="no-such-constant"), "unknown calibration constant"),
])
def test_the_loader_checks_the_rules_against_each_other_and_the_catalogue(tmp_path, edit, message):
    data = yaml.safe_load(RULES.read_text())
    edit(data["memory_rules"])
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / RULES.name).write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(CatalogError, match=message):
        load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)


def test_the_cli_names_the_rule_and_refuses_a_bad_version_in_one_line():
    runner = CliRunner()
    ok = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "rtx-3090", "--engine-version", "0.6.4"])
    assert ok.exit_code in (0, 1) and "memory rule: vLLM 0.6.4 (V0" in ok.output  # 1: the answer is "does not fit"
    bad = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "rtx-3090", "--engine-version", "0.1.0"])
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1
    assert bad.output.startswith("error: --engine-version:") and "0.20.0-0.33.0 V1, 0.34.0 and later V1" in bad.output


def test_the_api_takes_engine_version_and_answers_422_naming_it(tmp_path):
    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "t.db"))
    body = {"model": "llama-3.1-8b", "gpu": "rtx-3090", "max_model_len": 20000}
    assert client.post("/api/fit", json={**body, "engine_version": "0.6.4"}).json()["memory_rule_id"] == \
        "vllm-v0-torch-peak-with-context"
    bad = client.post("/api/fit", json={**body, "engine_version": "nope"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "engine_version"


def test_docs_memory_tables_are_a_fresh_render():
    tables = render_memory_tables()
    present = blocks(DOC.read_text())
    assert {name: present.get(name) for name in tables} == tables, \
        "docs/memory.md is stale: run `python -m inferplan.validation.docs_memory --write`"
    edited = DOC.read_text().replace("| `vllm-v0-torch-peak-with-context` | 0.6.4 V0 |", "| `vllm-v0-torch-peak-with-context` | 0.6.3 V0 |")
    assert edited != DOC.read_text() and fill(edited, tables) == DOC.read_text()


def test_a_scenario_names_its_engine_release_and_a_bad_one_names_the_key():
    from pathlib import Path

    from inferplan.economics.plan import plan
    from inferplan.economics.scenario import Scenario

    raw = yaml.safe_load((Path(__file__).parents[1] / "examples" / "chat-seats-h100.yaml").read_text())
    with pytest.raises(InvalidScenarioError) as info:
        plan(Scenario.model_validate({**raw, "engine_version": "0.1.0"}))
    assert info.value.field == "engine_version"


def test_the_v0_activation_constants_equal_their_fit_on_development_records(catalog):
    from inferplan.validation.calibrate import fit_vllm_v0_activation

    fit_ = fit_vllm_v0_activation(catalog)
    assert catalog.constant("vllm-v0-sampler-bytes-per-seq-vocab") == pytest.approx(fit_.sampler_bytes_per_seq_vocab, abs=0.01)
    assert catalog.constant("vllm-v0-forward-bytes-per-token-width") == pytest.approx(fit_.forward_bytes_per_token_hidden, abs=0.001)
    assert set(catalog.calibration.records["vllm-v0-sampler-bytes-per-seq-vocab"].fitted_on) == set(fit_.points)
    assert all(catalog.memory_points.records[p].split == "development" for p in fit_.points) and len(fit_.points) >= 3
