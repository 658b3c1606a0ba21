"""A database written before runs stated their speculative decoding, host KV tier, KTransformers release and
host (version 0), before they stated the engine settings they were started with (version 1), or before a point
counted the requests that failed (version 2), opens migrated: every run reads as what it was (none of them; the
engine's defaults; failures not counted), nothing it held is lost, a re-import of the
same file is still the same run, and a database of a later release is refused rather than misread."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import ConflictError, InvalidScenarioError
from inferplan.measurements.compare import compare_run
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.store import SCHEMA_VERSION, Store

DATA = Path(__file__).parent / "data" / "measurements"
FILE = "vllm_bench_serve_c8.json"
GIVEN = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0")
# a run as the store held it before version 1: the fields of its time only, and a key no field reads
BEFORE = ("speculative_tokens", "speculative_method", "draft_model", "acceptance_rate", "kv_offloading_size",
          "kv_offloading_backend", "hicache_ratio", "hicache_size", "kt_release", "host_sockets",
          "host_memory_bandwidth_gb_per_s")
# what a run stored at version 1 did not state yet: the engine settings it was started with, CUDA graphs among them
SETTINGS = ("kv_cache_dtype", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "ubatch_size",
            "moe_runner_backend", "enforce_eager")


def _old_database(path: Path, version: int = 0) -> dict:
    (run,) = read_runs(load_catalog(), [(FILE, (DATA / FILE).read_bytes())], GIVEN)
    left_out = (*(BEFORE if version < 1 else ()), *(SETTINGS if version < 2 else ()))
    body = {k: v for k, v in run.model_dump(mode="json", exclude={"id"}).items() if k not in left_out}
    body["points"] = [{k: v for k, v in p.items() if k != "failed_requests"} for p in body["points"]]
    body["kept_by_an_older_release"] = "stays"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE measurements (id INTEGER PRIMARY KEY AUTOINCREMENT, model TEXT NOT NULL, "
                     "accelerator TEXT NOT NULL, body TEXT NOT NULL, created TEXT NOT NULL);")
    db.execute("INSERT INTO measurements (model, accelerator, body, created) VALUES (?, ?, ?, ?)",
               (run.model, run.accelerator, json.dumps(body), "2026-11-02T10:00:00+00:00"))
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    return body


@pytest.mark.parametrize("version", [0, 1, 2])
def test_an_older_database_opens_migrated_and_loses_nothing(tmp_path, version):
    path = tmp_path / "old.db"
    body = _old_database(path, version)
    store = Store(path)
    (run,) = store.list_measurements()
    assert (run.speculative_tokens, run.speculative_method, run.kv_offloading_size, run.kt_release) == (0, None, None, None)
    assert run.enforce_eager is False  # a run of before stated no eager launch: the engines' default, with graphs
    assert run.points[0].tpot_s == pytest.approx(0.00841) and compare_run(run).points[0].metrics
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        stored = json.loads(db.execute("SELECT body FROM measurements").fetchone()[0])
    assert {k: stored[k] for k in body if k != "points"} == {k: v for k, v in body.items() if k != "points"}
    assert [{k: p[k] for k in old} for p, old in zip(stored["points"], body["points"])] == body["points"]  # every key kept
    assert all(p["failed_requests"] is None for p in stored["points"]) and run.points[0].failed_requests is None
    assert stored["speculative_tokens"] == 0 and all(stored[k] is None for k in BEFORE if k != "speculative_tokens")
    assert stored["enforce_eager"] is False and all(stored[k] is None for k in SETTINGS if k != "enforce_eager") and run.kv_cache_dtype is None and run.max_num_seqs is None
    with pytest.raises(ConflictError, match="stored already as run 1"):  # the same file is still the same run
        store.add_measurements(read_runs(load_catalog(), [(FILE, (DATA / FILE).read_bytes())], GIVEN))
    assert len(Store(path).list_measurements()) == 1  # opened again: nothing to migrate, nothing changed


def test_a_database_of_a_later_release_is_refused(tmp_path):
    path = tmp_path / "later.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(InvalidScenarioError) as refused:
        Store(path)
    assert refused.value.field == "db" and f"version {SCHEMA_VERSION} or earlier" in refused.value.allowed
