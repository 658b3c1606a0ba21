"""A run measured with an EAGLE-3 draft keeps its draft end to end: import (the flag, the API field; the model's one
catalogued draft where none is named, a catalogued draft's id read as its repo) → the stored run → read back →
``validate --mine`` and the API, which predict it with the draft's memory and its published acceptance rate. A run
whose draft cannot be known, or cannot have run, is refused naming ``draft_model`` and what it takes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.eagle3_drafts import draft_by_repo
from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import DEFAULT_ACCEPTANCE_RATE
from inferplan.measurements.compare import compare_run
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.memory.eagle3 import acceptance_rate
from inferplan.memory.fit import fit
from inferplan.performance.run_record import run_deployment
from inferplan.shells.api import create_app
from inferplan.shells.cli import app
from inferplan.store import SCHEMA_VERSION, Store

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "measurements"
FILE = "vllm_bench_serve_c8.json"
REPO, DRAFT_ID = "AngelSlim/Qwen3-8B_eagle3", "eagle3-qwen3-8b-angelslim"  # qwen3-8b's one catalogued draft
RUN = ["--model", "qwen3-8b", "--gpu", "h100", "--engine", "vllm", "--kv-cache-tokens", 400_000]
DRAFTING = ["--speculative-tokens", 2, "--speculative-method", "eagle3"]


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _draft():
    catalog = load_catalog()
    return draft_by_repo(catalog, "qwen3-8b", REPO)


def _kv_tokens(**drafting) -> int:
    """The KV cache the memory plan gives the run's deployment, with or without the draft."""
    return fit(Deployment(model="qwen3-8b", gpu="h100-sxm", engine="vllm", speculative_tokens=2, **drafting),
               load_catalog()).kv_cache_tokens


@pytest.mark.parametrize("named", [[], ["--draft-model", REPO], ["--draft-model", DRAFT_ID],
                                   ["--draft-model", REPO.lower()]])
def test_a_run_keeps_its_draft_and_is_predicted_with_its_memory_and_published_acceptance(tmp_path, named):
    db = tmp_path / "runs.db"
    r = cli("measurements", "import", DATA / FILE, *RUN, *DRAFTING, *named, "--db", db, "--json")
    assert r.exit_code == 0, r.output
    (stored,) = json.loads(cli("measurements", "list", "--db", db, "--json").stdout)["measurements"]
    published = acceptance_rate(_draft())
    assert stored["draft_model"] == REPO  # as the catalogue spells it, whatever named it
    assert stored["acceptance_rate"] == pytest.approx(published) and published != pytest.approx(DEFAULT_ACCEPTANCE_RATE)

    (mine,) = json.loads(cli("validate", "--mine", "--db", db, "--json").stdout)["mine"]
    assert mine["run"]["draft_model"] == REPO
    with_draft, without = _kv_tokens(eagle3_draft=REPO), _kv_tokens()
    assert with_draft < without  # the draft's weights and its layer's KV come out of the pool
    assert mine["kv_cache_tokens"]["predicted"] == with_draft
    assert any(f"{REPO}'s published acceptance length" in n for n in mine["notes"])
    shown = " ".join(cli("measurements", "show", stored["id"], "--db", db).stdout.split())
    assert f"--draft-model {REPO}" in shown and "published acceptance length" in shown


def test_a_stated_acceptance_rate_wins_over_the_published_one(tmp_path):
    db = tmp_path / "runs.db"
    assert cli("measurements", "import", DATA / FILE, *RUN, *DRAFTING, "--acceptance-rate", 0.55, "--db", db).exit_code == 0
    (mine,) = json.loads(cli("validate", "--mine", "--db", db, "--json").stdout)["mine"]
    assert (mine["run"]["draft_model"], mine["run"]["acceptance_rate"]) == (REPO, 0.55)
    assert any("acceptance 0.55 as the run states it" in n for n in mine["notes"])


def test_a_model_with_no_catalogued_draft_is_refused_naming_draft_model_in_the_cli_and_the_api(tmp_path):
    run = ["--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", 2, "-tp", 2, "--engine", "vllm"]
    r = cli("measurements", "import", DATA / FILE, *run, *DRAFTING, "--db", tmp_path / "runs.db", "--json")
    assert r.exit_code == 2, r.output
    error = json.loads(r.stdout)["error"]
    assert error["field"] == "--draft-model" and "lists no EAGLE-3 draft for Llama 3.1 70B" in error["message"]
    assert "repo path" in error["allowed"] and f"{DRAFT_ID} = {REPO}" in error["allowed"]

    client = TestClient(create_app(tmp_path / "api.db"))
    provenance = {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 2, "tensor_parallel_size": 2, "engine": "vllm",
                  "speculative_tokens": 2, "speculative_method": "eagle3"}
    r = client.post("/api/measurements", json={"files": [{"name": FILE, "content": (DATA / FILE).read_text()}],
                                               "provenance": provenance})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "provenance.draft_model" and "repo path" in r.json()["error"]["allowed"]
    assert client.get("/api/measurements").json() == []


@pytest.mark.parametrize(("flags", "field", "said"), [
    (["--engine", "sglang"], "--draft-model", "runs on vllm"),  # the catalogued draft's publisher shows it on vLLM
    (["-pp", 2, "--gpus", 2], "--pipeline-parallel-size", "EAGLE-3 draft"),
])
def test_a_draft_that_cannot_have_run_is_refused(tmp_path, flags, field, said):
    run = ["--model", "qwen3-8b", "--gpu", "h100", *flags]
    r = cli("measurements", "import", DATA / FILE, *run, *DRAFTING, "--db", tmp_path / "runs.db", "--json")
    assert r.exit_code == 2, r.output
    error = json.loads(r.stdout)["error"]
    assert error["field"] == field and said in error["message"]


def test_the_api_round_trips_the_draft(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    provenance = {"model": "qwen3-8b", "gpu": "h100", "engine": "vllm", "kv_cache_tokens": 400_000,
                  "speculative_tokens": 2, "speculative_method": "eagle3", "draft_model": DRAFT_ID}
    r = client.post("/api/measurements", json={"files": [{"name": FILE, "content": (DATA / FILE).read_text()}],
                                               "provenance": provenance})
    assert r.status_code == 201, r.text
    (run,) = r.json()
    assert (run["draft_model"], run["acceptance_rate"]) == (REPO, pytest.approx(acceptance_rate(_draft())))
    assert client.get("/api/measurements").json()[0]["draft_model"] == REPO
    shown = client.get(f"/api/measurements/{run['id']}").json()
    assert shown["run"]["draft_model"] == REPO and shown["kv_cache_tokens"]["predicted"] == _kv_tokens(eagle3_draft=REPO)
    view = client.get("/api/measurements/view").json()
    assert view["runs"][0]["run"]["draft_model"] == REPO


def test_a_draft_named_by_its_catalogue_id_is_launched_as_its_repo():
    r = cli("deploy", "--model", "qwen3-8b", "--gpu", "h100", "--engine", "vllm", *DRAFTING, "--draft-model", DRAFT_ID,
            "--json")
    assert r.exit_code == 0, r.output
    text = json.dumps(json.loads(r.stdout))
    assert REPO in text and DRAFT_ID not in text


def test_a_run_stored_by_an_earlier_release_keeps_its_draft_and_is_predicted_with_it(tmp_path):
    """A database of version 1 (runs stating their drafts, not yet their engine settings) opens migrated: the run
    keeps its draft and its rate, loses nothing, and is compared with the draft's memory."""
    given = RunProvenance(model="qwen3-8b", gpu="h100", engine="vllm", kv_cache_tokens=400_000, speculative_tokens=2,
                          speculative_method="eagle3", draft_model=REPO, acceptance_rate=0.6)
    (run,) = read_runs(load_catalog(), [(FILE, (DATA / FILE).read_bytes())], given)
    settings = ("kv_cache_dtype", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "ubatch_size",
                "moe_runner_backend", "enforce_eager")
    body = {k: v for k, v in run.model_dump(mode="json", exclude={"id"}).items() if k not in settings}
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE measurements (id INTEGER PRIMARY KEY AUTOINCREMENT, model TEXT NOT NULL, "
                         "accelerator TEXT NOT NULL, body TEXT NOT NULL, created TEXT NOT NULL);")
        db.execute("INSERT INTO measurements (model, accelerator, body, created) VALUES (?, ?, ?, ?)",
                   (run.model, run.accelerator, json.dumps(body), "2026-11-02T10:00:00+00:00"))
        db.execute("INSERT INTO measurements (model, accelerator, body, created) VALUES (?, ?, ?, ?)",
                   (run.model, run.accelerator, json.dumps({**body, "note": "a second run"}), "2026-11-03T10:00:00+00:00"))
        unnamed = {**body, "note": "no draft named", "draft_model": None, "acceptance_rate": DEFAULT_ACCEPTANCE_RATE}
        db.execute("INSERT INTO measurements (model, accelerator, body, created) VALUES (?, ?, ?, ?)",
                   (run.model, run.accelerator, json.dumps(unnamed), "2026-11-04T10:00:00+00:00"))
        db.execute("PRAGMA user_version = 1")
    old, second, first = Store(path).list_measurements()  # newest first
    assert (first.note, second.note, old.note) == ("", "a second run", "no draft named")
    assert all((r.speculative_method, r.draft_model, r.acceptance_rate) == ("eagle3", REPO, 0.6) for r in (first, second))
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    drafting = run_deployment(first)  # the deployment the run measured: its draft and its draft tokens per step
    assert (drafting.eagle3_draft, drafting.speculative_tokens) == (REPO, 2)
    compared = compare_run(first)
    assert compared.kv_cache_tokens.predicted == _kv_tokens(eagle3_draft=REPO)
    assert any("acceptance 0.6 as the run states it" in n for n in compared.notes)
    # an EAGLE-3 run an earlier release stored without its draft is predicted as it was, and says so
    compared = compare_run(old)
    assert (old.draft_model, compared.kv_cache_tokens.predicted) == (None, _kv_tokens())
    assert "the run names no EAGLE-3 draft: predicted without a draft's memory" in compared.notes
