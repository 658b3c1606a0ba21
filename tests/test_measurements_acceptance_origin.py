"""A stored run with draft tokens keeps where its acceptance rate came from, as its import recorded it (stated,
measured by the server, published for its draft, assumed by inferplan), and ``show``, ``validate --mine``, the export
and the API say it. A run stored by version 2, before the record (its rate possibly the 0.7 an import assumed where
nothing gave one, for ngram drafts too), opens migrated as "unknown", and one whose rate may be that assumption for a
method that has no default (ngram) is not predicted at it: every view says to restate it (delete the run and
import its file again with --acceptance-rate), which then predicts it at the stated rate."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.workload import DEFAULT_ACCEPTANCE_RATE
from inferplan.measurements.compare import compare_run
from inferplan.measurements.export import run_as_catalogue
from inferplan.measurements.records import RunProvenance, read_runs, run_settings
from inferplan.shells.api import create_app
from inferplan.shells.cli import app
from inferplan.store import SCHEMA_VERSION, Store

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "measurements"
PLAIN, SPEC = "vllm_bench_serve_c8.json", "vllm_bench_serve_spec_c8.json"  # llama-3.1-8b; qwen3-8b with spec_decode_*
NGRAM = {"gpu": "h100", "engine": "vllm", "speculative_tokens": 3}  # no method on llama-3.1-8b: ngram, as deploy launches
UNKNOWN = "unknown: stored before inferplan recorded where the rate came from"
RESTATE = "inferplan measurements delete 1"


def _read(name: str, **given):
    (run,) = read_runs(load_catalog(), [(name, (DATA / name).read_bytes())], RunProvenance(**given))
    return run


@pytest.mark.parametrize(("name", "given", "origin"), [
    (PLAIN, {**NGRAM, "acceptance_rate": 0.55}, "stated"),
    (SPEC, {"model": "qwen3-8b", "gpu": "h100", "engine": "vllm"}, "measured"),
    (PLAIN, {**NGRAM, "speculative_method": "eagle3", "model": "qwen3-8b"}, "published"),
    (PLAIN, {**NGRAM, "speculative_method": "eagle3", "draft_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}, "assumed"),
])
def test_an_import_records_where_the_rate_came_from_and_the_comparison_says_it(name, given, origin):
    run = _read(name, **given)
    assert run.acceptance_origin == origin
    (note,) = [n for n in compare_run(run.model_copy(update={"id": 1})).notes if "draft tokens per step" in n]
    said = {"stated": "acceptance 0.55 as the run states it (--acceptance-rate)",
            "measured": "as the server measured it (spec_decode_acceptance_length 2.6",
            "published": "AngelSlim/Qwen3-8B_eagle3's published acceptance length",
            "assumed": f"acceptance {DEFAULT_ACCEPTANCE_RATE:g} assumed by inferplan at import "
                       "(yuhuili/EAGLE3-LLaMA3.1-Instruct-8B publishes none)"}[origin]
    assert said in note and "predicted at" in note
    # only a rate the user stated is one of the flags the run states; only the run's own or a published one is exported
    assert ("--acceptance-rate" in run_settings(run)) == (origin == "stated")
    exported = run_as_catalogue(run.model_copy(update={"id": 1}))
    assert all(("acceptance_rate" in p) == (origin != "assumed") for p in exported["speed_points"])
    assert said in exported["sources"][0]["note"]


def test_a_run_without_draft_tokens_records_no_origin():
    run = _read(PLAIN, gpu="h100", engine="vllm")
    assert run.acceptance_origin is None and not any("acceptance" in n for n in compare_run(run).notes)


def _version_2_store(path: Path, *bodies: dict) -> None:
    """A store as version 2 wrote it: its runs state no acceptance_origin."""
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE measurements (id INTEGER PRIMARY KEY AUTOINCREMENT, model TEXT NOT NULL, "
                     "accelerator TEXT NOT NULL, body TEXT NOT NULL, created TEXT NOT NULL);")
    for body in bodies:
        db.execute("INSERT INTO measurements (model, accelerator, body, created) VALUES (?, ?, ?, ?)",
                   (body["model"], body["accelerator"], json.dumps(body), "2026-11-02T10:00:00+00:00"))
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()


def _as_version_2(run, **update) -> dict:
    body = run.model_dump(mode="json", exclude={"id", "acceptance_origin"}) | update
    body["points"] = [{k: v for k, v in p.items() if k != "failed_requests"} for p in body["points"]]
    return body


def test_a_version_2_run_opens_with_its_origin_unknown_and_ngram_at_the_assumed_rate_is_not_predicted(tmp_path):
    # as version 2 imported `--speculative-tokens 3` on this file: ngram at the 0.7 it assumed, stored as the run's rate
    assumed = _as_version_2(_read(PLAIN, **NGRAM, acceptance_rate=DEFAULT_ACCEPTANCE_RATE))
    plain = _as_version_2(_read(PLAIN, gpu="h100", engine="vllm"), note="no drafts")
    path = tmp_path / "v2.db"
    _version_2_store(path, assumed, plain)
    store = Store(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        stored = [json.loads(b) for (b,) in db.execute("SELECT body FROM measurements ORDER BY id")]
    assert stored[0]["acceptance_origin"] == "unknown" and "acceptance_origin" not in stored[1]
    assert {k: stored[0][k] for k in assumed if k != "points"} == {k: v for k, v in assumed.items() if k != "points"}
    run = store.get_measurement(1)
    assert (run.speculative_method, run.acceptance_rate, run.acceptance_origin) == ("ngram", 0.7, "unknown")
    compared = compare_run(run)
    assert compared.points and all(m.predicted is None for p in compared.points for m in p.metrics)
    assert all(p.problem.startswith("acceptance_rate: ") for p in compared.points) and not compared.median_abs_error
    (note,) = [n for n in compared.notes if "draft tokens per step" in n]
    assert f"3 draft tokens per step (ngram) not predicted: its acceptance 0.7 ({UNKNOWN})" in note
    assert RESTATE in note and f"import {PLAIN} again with --acceptance-rate" in note
    assert "--acceptance-rate" not in run_settings(run)  # not shown as a flag the run stated
    exported = run_as_catalogue(run)
    assert all("acceptance_rate" not in p for p in exported["speed_points"])
    assert any(f"acceptance_rate left out, acceptance 0.7 ({UNKNOWN})" in c for c in exported["speed_points"][0]["caveats"])
    assert compare_run(store.get_measurement(2)).median_abs_error  # a run without drafts is predicted as before


def test_a_version_2_run_at_another_rate_is_predicted_and_said_unknown(tmp_path):
    # 0.55 is no rate an import assumed: the user stated it (or the server measured it), so the run is predicted at it
    path = tmp_path / "v2.db"
    _version_2_store(path, _as_version_2(_read(PLAIN, **NGRAM, acceptance_rate=0.55)))
    compared = compare_run(Store(path).get_measurement(1))
    assert compared.median_abs_error and f"predicted at acceptance 0.55 ({UNKNOWN})" in "\n".join(compared.notes)


def test_a_rate_assumed_at_import_for_a_method_with_no_default_now_is_not_predicted():
    run = _read(PLAIN, **NGRAM, acceptance_rate=DEFAULT_ACCEPTANCE_RATE).model_copy(
        update={"id": 1, "acceptance_origin": "assumed"})
    compared = compare_run(run)
    assert all(m.predicted is None for p in compared.points for m in p.metrics)
    assert any("its acceptance 0.7 was assumed by inferplan at import, and ngram drafting has no default rate" in n
               and RESTATE in n for n in compared.notes)


def test_show_validate_mine_and_the_api_say_so_and_a_restated_run_is_predicted(tmp_path):
    path = tmp_path / "v2.db"
    _version_2_store(path, _as_version_2(_read(PLAIN, **NGRAM, acceptance_rate=DEFAULT_ACCEPTANCE_RATE)))
    for args in (["measurements", "show", "1"], ["validate", "--mine"]):
        r = runner.invoke(app, [*args, "--db", str(path)], env={"COLUMNS": "400"})
        assert r.exit_code == 0, r.output
        assert "not predicted" in r.output and RESTATE in r.output and "as the run states it" not in r.output
    client = TestClient(create_app(path))
    shown = client.get("/api/measurements/1").json()
    assert shown["run"]["acceptance_origin"] == "unknown" and any("DELETE /api/measurements/1" in n for n in shown["notes"])
    assert all(m["predicted"] is None for p in shown["points"] for m in p["metrics"])
    # restated as the notes say: deleted, and the file imported again with the rate the engine logged
    assert runner.invoke(app, ["measurements", "delete", "1", "--db", str(path)]).exit_code == 0
    r = runner.invoke(app, ["measurements", "import", str(DATA / PLAIN), "--gpu", "h100", "--speculative-tokens", "3",
                            "--acceptance-rate", "0.5", "--db", str(path), "--json"])
    assert r.exit_code == 0, r.output
    (run,) = Store(path).list_measurements()
    compared = compare_run(run)
    assert run.acceptance_origin == "stated" and compared.median_abs_error
    assert any("predicted at acceptance 0.5 as the run states it" in n for n in compared.notes)
