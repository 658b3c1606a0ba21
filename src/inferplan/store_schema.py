"""The store's SQLite tables and the migrations that bring a database an earlier release wrote up to date:
``MIGRATIONS[v]`` turns a store of version ``v`` (``PRAGMA user_version``) into one of ``v + 1``, each step
writing what a record stored before its fields existed states (``store.Store`` runs them when it opens one)."""

from __future__ import annotations

import json
import sqlite3

from inferplan.performance.run_record import RUN_DRAFTS, RUN_OFFLOAD, RUN_SETTINGS

SCHEMA = """
CREATE TABLE IF NOT EXISTS scenarios (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS quotes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    system TEXT NOT NULL,
    price_usd REAL NOT NULL,
    quoted_on TEXT NOT NULL,
    vendor TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model TEXT NOT NULL,
    accelerator TEXT NOT NULL,
    body TEXT NOT NULL,
    created TEXT NOT NULL
);
"""



def _runs_stating(added: dict, *, drafted_only: bool = False):
    """A migration step: every stored run (``drafted_only``: every one with draft tokens) states the fields ``added`` as a
    run stored before them recorded them (their values there); every key the run held stays as it was."""
    def step(db: sqlite3.Connection) -> None:
        for row in db.execute("SELECT id, body FROM measurements").fetchall():
            body = json.loads(row["body"])
            stated = {**added, **body}
            if stated != body and (body.get("speculative_tokens") or not drafted_only):
                db.execute("UPDATE measurements SET body = ? WHERE id = ?", (json.dumps(stated), row["id"]))
    return step


def _points_stating(added: dict):
    """A migration step: every point of every stored run states the fields ``added`` as one stored before them
    recorded them; every key a point held stays as it was."""
    def step(db: sqlite3.Connection) -> None:
        for row in db.execute("SELECT id, body FROM measurements").fetchall():
            body = json.loads(row["body"])
            points = [{**added, **p} for p in body.get("points", [])]
            if points != body.get("points", []):
                db.execute("UPDATE measurements SET body = ? WHERE id = ?", (json.dumps({**body, "points": points}), row["id"]))
    return step


# version 1: a run states its speculative decoding, host KV tier, KTransformers release and host (one stored
# before recorded none: no draft tokens, every other field null)
RUN_NONE = {**{f: None for f in RUN_OFFLOAD}, **{f: None for f in RUN_DRAFTS}, "speculative_tokens": 0}
# version 2: a run states the engine settings it was started with (one stored before: the engine's defaults, null)
# and whether it ran without CUDA graphs (one stored before: with them, the engines' default)
RUN_DEFAULT_SETTINGS = {**{f: None for f in RUN_SETTINGS}, "enforce_eager": False}
# version 3: a point states the requests that failed (one stored before: null, not counted), and a run with draft
# tokens where its acceptance rate came from (one stored before: unknown)
POINT_UNCOUNTED_FAILURES = {"failed_requests": None}
RUN_UNKNOWN_ACCEPTANCE = {"acceptance_origin": "unknown"}


def _to_version_3(db: sqlite3.Connection) -> None:
    """Version 2 to 3, one step for both records version 3 adds: every point counts its failed requests as one stored
    before did (``POINT_UNCOUNTED_FAILURES``), and every run with draft tokens says where its acceptance rate came from
    as one stored before can (``RUN_UNKNOWN_ACCEPTANCE``: its rate may have been stated, measured, published or the
    default an import assumed, which ngram drafting no longer takes: ``measurements/draft_origin.py``). A release of
    version 2 would refuse either key, so the version tells it the store is a later one's."""
    _points_stating(POINT_UNCOUNTED_FAILURES)(db)
    _runs_stating(RUN_UNKNOWN_ACCEPTANCE, drafted_only=True)(db)


MIGRATIONS = (_runs_stating(RUN_NONE), _runs_stating(RUN_DEFAULT_SETTINGS),
              _to_version_3)  # MIGRATIONS[v]: a store of version v to v + 1
SCHEMA_VERSION = len(MIGRATIONS)
