"""A result file that saves the acceptance its server measured is predicted at it: vLLM's
``spec_decode_acceptance_length`` at the draft tokens per step its ``spec_decode_draft_tokens`` /
``spec_decode_num_drafts`` give, SGLang's ``accept_length`` at the run's stated draft tokens per step, each converted
to a rate per draft token as a catalogued draft's published length is (``memory.eagle3.rate_for_length``); a rate the
user states wins, and a file without those keys is imported as before.

The fixtures (tests/data/measurements/README.md has their sources) carry the keys as the clients write them:
``vllm_bench_serve_spec_c8.json`` the ``spec_decode_*`` keys ``benchmark()`` in vllm/benchmarks/serve.py (vLLM
009e6d4a) adds to the result (``result["spec_decode_acceptance_length"] = spec_decode_stats["acceptance_length"]`` …,
the length 1 + accepted / drafts: 1 + 48000 / 30000 = 2.6 at 90000 / 30000 = 3 draft tokens per step);
``sglang_bench_serving_spec.jsonl`` the ``"accept_length": accept_length`` of ``benchmark()``'s result dict in
python/sglang/bench_serving.py (SGLang 0033168f), the server's ``avg_spec_accept_length``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.eagle3_drafts import draft_by_repo
from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.measurements.compare import compare_run
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.measurements.serving_formats import parse_sglang, parse_vllm
from inferplan.memory.eagle3 import acceptance_rate, rate_for_length
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "measurements"
VLLM, SGLANG, PLAIN = "vllm_bench_serve_spec_c8.json", "sglang_bench_serving_spec.jsonl", "vllm_bench_serve_c8.json"
REPO = "AngelSlim/Qwen3-8B_eagle3"  # qwen3-8b's one catalogued draft, with a published acceptance length
QWEN = {"model": "qwen3-8b", "gpu": "h100", "engine": "vllm"}
LLAMA_SGLANG = {"model": "llama-3.1-8b", "gpu": "h100", "engine": "sglang"}


def _read(name: str, **given):
    (run,) = read_runs(load_catalog(), [(name, (DATA / name).read_bytes())], RunProvenance(**given))
    return run


def test_a_vllm_run_is_predicted_at_the_acceptance_its_server_measured():
    run = _read(VLLM, **QWEN, speculative_tokens=3, speculative_method="eagle3")
    measured = rate_for_length(2.6, 3)
    published = acceptance_rate(draft_by_repo(load_catalog(), "qwen3-8b", REPO))
    assert run.acceptance_rate == pytest.approx(measured) and measured != pytest.approx(published)
    assert (run.measured_acceptance.key, run.measured_acceptance.draft_tokens) == ("spec_decode_acceptance_length", 3)
    notes = compare_run(run).notes
    assert any("as the server measured it (spec_decode_acceptance_length 2.6 at 3 draft tokens per step" in n for n in notes)


def test_a_vllm_file_gives_the_draft_tokens_per_step_a_run_leaves_out():
    run = _read(VLLM, **QWEN)
    assert run.speculative_tokens == 3 and run.acceptance_rate == pytest.approx(rate_for_length(2.6, 3))
    assert run.speculative_method is not None  # as deploy launches drafts for the model


def test_a_stated_draft_count_below_the_files_is_refused_naming_the_file():
    with pytest.raises(InvalidScenarioError) as exc:
        _read(VLLM, **QWEN, speculative_tokens=2)
    assert exc.value.field == "speculative_tokens" and str(exc.value).startswith(VLLM)
    assert "spec_decode_draft_tokens / spec_decode_num_drafts is 3" in str(exc.value)


def test_an_sglang_run_is_predicted_at_its_last_lines_accept_length_and_its_stated_draft_tokens():
    run = _read(SGLANG, **LLAMA_SGLANG, speculative_tokens=4, speculative_method="ngram")
    assert run.acceptance_rate == pytest.approx(rate_for_length(2.47, 4))  # the last line's: the server's since it started
    notes = compare_run(run).notes
    assert any("as the server measured it (accept_length 2.47 at 4 draft tokens per step" in n for n in notes)


def test_an_sglang_accept_length_without_draft_tokens_per_step_is_refused_naming_them():
    with pytest.raises(InvalidScenarioError) as exc:
        _read(SGLANG, **LLAMA_SGLANG)
    assert exc.value.field == "speculative_tokens" and str(exc.value).startswith(SGLANG)
    assert "--speculative-num-steps" in exc.value.allowed


def test_a_length_past_the_draft_tokens_and_the_bonus_token_is_refused():
    with pytest.raises(InvalidScenarioError) as exc:
        _read(SGLANG, **LLAMA_SGLANG, speculative_tokens=1)  # 2.47 tokens kept a step from 1 draft: impossible
    assert exc.value.field == "accept_length" and str(exc.value).startswith(SGLANG)


def test_a_stated_acceptance_rate_wins_and_the_note_says_so(tmp_path):
    db = tmp_path / "runs.db"
    r = runner.invoke(app, ["measurements", "import", str(DATA / VLLM), "--model", "qwen3-8b", "--gpu", "h100", "--engine",
                            "vllm", "--speculative-tokens", "3", "--speculative-method", "eagle3", "--acceptance-rate",
                            "0.55", "--db", str(db)])
    assert r.exit_code == 0, r.output
    (mine,) = json.loads(runner.invoke(app, ["validate", "--mine", "--db", str(db), "--json"]).stdout)["mine"]
    assert mine["run"]["acceptance_rate"] == 0.55
    assert mine["run"]["measured_acceptance"]["rate"] == pytest.approx(rate_for_length(2.6, 3))
    assert any("acceptance 0.55 as the run states it (--acceptance-rate, over the 0.717 the server measured" in n
               for n in mine["notes"])


def test_the_cli_predicts_the_run_at_the_servers_acceptance(tmp_path):
    db = tmp_path / "runs.db"
    r = runner.invoke(app, ["measurements", "import", str(DATA / VLLM), "--model", "qwen3-8b", "--gpu", "h100",
                            "--engine", "vllm", "--db", str(db)])
    assert r.exit_code == 0, r.output
    (mine,) = json.loads(runner.invoke(app, ["validate", "--mine", "--db", str(db), "--json"]).stdout)["mine"]
    assert mine["run"]["speculative_tokens"] == 3
    assert any("as the server measured it" in n for n in mine["notes"])


def test_a_file_without_the_keys_is_read_as_before():
    assert not any(k.startswith(("acceptance", "draft_tokens")) for k in parse_vllm((DATA / PLAIN).read_text()).meta)
    assert not any(k.startswith("acceptance") for k in parse_sglang((DATA / "sglang_bench_serving.jsonl").read_text()).meta)
    run = _read(PLAIN, **QWEN, speculative_tokens=3, speculative_method="eagle3")
    published = acceptance_rate(draft_by_repo(load_catalog(), "qwen3-8b", REPO))
    assert run.measured_acceptance is None and run.acceptance_rate == pytest.approx(published)
    assert _read(PLAIN, **QWEN).speculative_tokens == 0


@pytest.mark.parametrize(("key", "value", "said"), [("spec_decode_acceptance_length", 0.8, "1 or more"),
                                                    ("spec_decode_num_drafts", 0, "no draft step")])
def test_a_bad_measured_acceptance_is_refused_naming_its_key(key, value, said):
    run = {**json.loads((DATA / VLLM).read_text()), key: value}
    with pytest.raises(InvalidScenarioError) as exc:
        parse_vllm(json.dumps(run))
    assert exc.value.field == key and said in str(exc.value)


def test_the_api_stores_the_servers_acceptance_and_refuses_an_accept_length_without_draft_tokens(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    files = [{"name": SGLANG, "content": (DATA / SGLANG).read_text()}]
    provenance = {**LLAMA_SGLANG, "speculative_tokens": 4, "speculative_method": "ngram"}
    r = client.post("/api/measurements", json={"files": files, "provenance": provenance})
    assert r.status_code == 201, r.text
    (run,) = r.json()
    assert run["measured_acceptance"]["key"] == "accept_length"
    assert run["acceptance_rate"] == pytest.approx(rate_for_length(2.47, 4))
    shown = client.get(f"/api/measurements/{run['id']}").json()
    assert any("as the server measured it (accept_length 2.47" in n for n in shown["notes"])

    r = client.post("/api/measurements", json={"files": files, "provenance": LLAMA_SGLANG})
    assert r.status_code == 422 and r.json()["error"]["field"] == "provenance.speculative_tokens", r.text


def test_export_says_what_the_server_measured():
    from inferplan.measurements.export import run_as_catalogue

    run = _read(VLLM, **QWEN, speculative_tokens=3).model_copy(update={"id": 1})
    (source,) = run_as_catalogue(run)["sources"]
    assert "acceptance 0.717 as the server measured it (spec_decode_acceptance_length 2.6 at 3 draft tokens per step" in source["note"]
    assert {p["acceptance_rate"] for p in run_as_catalogue(run)["speed_points"]} == {run.acceptance_rate}


def test_the_draft_a_file_with_draft_tokens_ran_is_taken_without_restating_its_count(tmp_path):
    # the file's spec_decode_draft_tokens / spec_decode_num_drafts give 3 draft tokens per step: the method, draft
    # and rate stated beside them apply, in the library, the CLI and the API alike
    run = _read(VLLM, **QWEN, speculative_method="eagle3", draft_model=REPO, acceptance_rate=0.6)
    assert (run.speculative_tokens, run.speculative_method, run.draft_model, run.acceptance_rate) == (3, "eagle3", REPO, 0.6)
    with pytest.raises(InvalidScenarioError) as exc:  # a file without draft tokens, and none stated: refused
        _read(PLAIN, **QWEN, speculative_method="eagle3")
    assert exc.value.field == "speculative_method" and "1 or more speculative_tokens" in exc.value.allowed
    db = tmp_path / "runs.db"
    r = runner.invoke(app, ["measurements", "import", str(DATA / VLLM), "--model", "qwen3-8b", "--gpu", "h100",
                            "--speculative-method", "eagle3", "--db", str(db)])
    assert r.exit_code == 0, r.output
    (mine,) = json.loads(runner.invoke(app, ["validate", "--mine", "--db", str(db), "--json"]).stdout)["mine"]
    assert (mine["run"]["speculative_tokens"], mine["run"]["speculative_method"]) == (3, "eagle3")
    client = TestClient(create_app(tmp_path / "api.db"))
    body = {"files": [{"name": VLLM, "content": (DATA / VLLM).read_text()}],
            "provenance": {**QWEN, "speculative_method": "eagle3"}}
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 201 and r.json()[0]["speculative_method"] == "eagle3", r.text
    body["files"] = [{"name": PLAIN, "content": (DATA / PLAIN).read_text()}]
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "provenance.speculative_method", r.text


def test_an_sglang_run_takes_its_draft_tokens_per_step_from_the_saved_server_info():
    # server_info carries the server's speculative arguments: EAGLE drafts speculative_num_steps tokens a step
    lines = [json.loads(line) for line in (DATA / SGLANG).read_text().splitlines()]
    server = {"speculative_algorithm": "EAGLE3", "speculative_num_steps": 4, "speculative_num_draft_tokens": 8}
    text = "".join(json.dumps({**line, "server_info": server}) + "\n" for line in lines)
    (run,) = read_runs(load_catalog(), [(SGLANG, text.encode())], RunProvenance(**LLAMA_SGLANG))
    assert run.speculative_tokens == 4 and run.acceptance_rate == pytest.approx(rate_for_length(2.47, 4))
