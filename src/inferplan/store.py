"""Saved scenarios and vendor quotes in an embedded SQLite database (WAL mode).

Each thread has its own connection, so the API can serve concurrent requests; writes take
``BEGIN IMMEDIATE`` and wait (``busy_timeout``) instead of failing, so concurrent saves lose
nothing. A vendor quote overrides the catalogue's price band wherever its system is used. The
database records its version (``PRAGMA user_version``); one an earlier release wrote is migrated when
opened (``MIGRATIONS``), one a later release wrote is refused.

Each kind holds at most ``MAX_SAVED`` items: a save past the bound is refused (``StoreFullError``, naming
the kind, the bound and how to delete one), never made room for by dropping an older item.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from inferplan.economics.scenario import Scenario
from inferplan.errors import ConflictError, InferplanError, InvalidScenarioError
from inferplan.inputs import (MAX_NAME_CHARS, NEW_ROWS_AT_LEAST, Input, SafeName, number_wanted, plain_text_problem,
                              stored)
from inferplan.measurements.records import MeasuredRun
from inferplan.performance.run_record import RUN_DRAFTS, RUN_OFFLOAD, RUN_SETTINGS, MeasuredPoint, UserRun
from inferplan.store_path import default_db_path

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

# items of each kind (its table) one store holds: many times what a person keeps, and a bound on what clients of
# the HTTP API can write to its disk (a scenario is at most a 64 KiB body, a quote 2.4 KB, a run its parsed points)
MAX_SAVED = {"scenarios": 1_000, "quotes": 1_000, "measurements": 1_000}
# each kind as a message names it, and how to delete one of it
SAVED_KINDS = {"scenarios": ("saved scenarios", "DELETE /api/scenarios/{id}"),
               "quotes": ("vendor quotes", "DELETE /api/quotes/{id}"),
               "measurements": ("stored runs", "DELETE /api/measurements/{id}, or inferplan measurements delete ID")}


class NotFoundError(InferplanError):
    """No saved scenario or quote with that id."""


class StoreFullError(ConflictError):
    """A kind holds its most items already (``MAX_SAVED``): one has to be deleted before another is saved."""


class SavedScenario(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: int
    name: str
    scenario: Scenario
    created: str
    updated: str


class VendorQuote(Input):
    system: str = Field(min_length=1, max_length=200, description="catalogue system id")
    price_usd: float = Field(gt=0, le=1e10, description="price of one system, USD ex VAT (at least $1)",
                             json_schema_extra={NEW_ROWS_AT_LEAST: 1})
    quoted_on: dt.date = Field(ge=dt.date(2000, 1, 1), description="when the vendor quoted; not in the future")
    vendor: SafeName = Field(min_length=1)
    note: str = Field("", max_length=2000)


    @field_validator("quoted_on")
    @classmethod
    def _not_in_the_future(cls, value: dt.date, info: ValidationInfo) -> dt.date:
        # the newest quote wins, so a future date would win for ever
        if value > dt.date.today() + dt.timedelta(days=1) and not stored(info):
            raise ValueError(f"{value} is in the future: give the date the vendor quoted")
        return value

    @field_validator("price_usd", mode="before")
    @classmethod
    def _a_real_price(cls, value: object, info: ValidationInfo) -> object:
        # before the field's own bound (above 0, kept for quotes stored earlier) says "greater than 0"
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 1 and not stored(info):
            raise PydanticCustomError("greater_than_equal", "a system costs at least $1",
                                      {"allowed": number_wanted(cls.model_fields["price_usd"])})
        return value

    @field_validator("vendor")
    @classmethod
    def _named_vendor(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip() and not stored(info):
            raise ValueError("name the vendor")
        return value


class SavedQuote(VendorQuote):
    id: int


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class _Connection:
    """A thread's connection; the thread's locals hold it, and the connection closes when it is dropped."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db


class Store:
    def __init__(self, path: str | Path | None = None, *, max_saved: Mapping[str, int] | None = None):
        self.path = Path(path) if path else default_db_path()
        self.max_saved = {**MAX_SAVED, **(max_saved or {})}  # a test lowers a bound
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Bring a database written by an earlier release to ``SCHEMA_VERSION`` (``PRAGMA user_version``), in
        one transaction; a database of a later release is refused rather than misread. A current one is only read."""
        with self._connect() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise InvalidScenarioError(f"{self.path} was written by a later inferplan (store version {version})",
                                       field="db", allowed=f"a store of version {SCHEMA_VERSION} or earlier, or a later inferplan")
        if version == SCHEMA_VERSION:
            return
        with self._write() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]  # another process may have migrated it meanwhile
            if version < SCHEMA_VERSION:
                for step in MIGRATIONS[version:]:
                    step(db)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _connect(self):
        # one connection per thread, kept: opening one (and reading the schema) cost more than a plan's queries;
        # closed when its thread ends (the thread's holder is dropped with the thread's locals), so the threads
        # a server starts and retires leave no connection open
        holder = getattr(self._local, "holder", None)
        if holder is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA busy_timeout=30000")
            holder = self._local.holder = _Connection(db)
            weakref.finalize(holder, db.close)
        yield holder.db

    @contextmanager
    def _write(self):
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _room(self, db: sqlite3.Connection, kind: str, adding: int = 1) -> None:
        """Refuse, inside the write's transaction, a save of ``adding`` more ``kind`` past its bound."""
        held = db.execute(f"SELECT COUNT(*) FROM {kind}").fetchone()[0]
        bound = self.max_saved[kind]
        if held + adding > bound:
            what, delete = SAVED_KINDS[kind]
            more = f"{adding:,} more" if adding > 1 else "another"
            raise StoreFullError(f"{held:,} {what} are stored, and the store holds at most {bound:,}: {more} is not saved",
                                 allowed=f"delete {what} not needed any more first ({delete}); nothing is deleted unasked")

    # --- scenarios
    def save_scenario(self, name: str, scenario: Scenario, *, replace: bool = False) -> SavedScenario:
        """Save under ``name``; an existing name is refused unless ``replace`` (nothing is lost unasked)."""
        name = _clean_name(name)
        now, body = _now(), scenario.model_dump_json()
        with self._write() as db:
            saved = db.execute("SELECT 1 FROM scenarios WHERE name = ?", (name,)).fetchone() is not None
            if saved and not replace:
                raise ConflictError(f"a scenario called {name!r} is saved already", field="name",
                                    allowed="another name, or replace: true to replace it")
            if not saved:
                self._room(db, "scenarios")  # replacing one takes no room
            db.execute(
                "INSERT INTO scenarios (name, body, created, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET body = excluded.body, updated = excluded.updated",
                (name, body, now, now),
            )
            row = db.execute("SELECT * FROM scenarios WHERE name = ?", (name,)).fetchone()
        return _scenario(row)

    def list_scenarios(self) -> list[SavedScenario]:
        with self._connect() as db:
            return [_scenario(r) for r in db.execute("SELECT * FROM scenarios ORDER BY updated DESC, id DESC")]

    def get_scenario(self, scenario_id: int) -> SavedScenario:
        with self._connect() as db:
            row = db.execute("SELECT * FROM scenarios WHERE id = ?", (scenario_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no saved scenario {scenario_id}", field="id")
        return _scenario(row)

    def rename_scenario(self, scenario_id: int, name: str) -> SavedScenario:
        name = _clean_name(name)
        with self._write() as db:
            if db.execute("SELECT 1 FROM scenarios WHERE id = ?", (scenario_id,)).fetchone() is None:
                raise NotFoundError(f"no saved scenario {scenario_id}", field="id")  # before any clash: 404, not 409
            if db.execute("SELECT 1 FROM scenarios WHERE name = ? AND id != ?", (name, scenario_id)).fetchone():
                raise ConflictError(f"a scenario called {name!r} exists already", field="name",
                                    allowed="a name no other saved scenario has")
            updated = db.execute("UPDATE scenarios SET name = ?, updated = ? WHERE id = ?", (name, _now(), scenario_id))
            if updated.rowcount == 0:
                raise NotFoundError(f"no saved scenario {scenario_id}", field="id")
        return self.get_scenario(scenario_id)

    def delete_scenario(self, scenario_id: int) -> None:
        with self._write() as db:
            if db.execute("DELETE FROM scenarios WHERE id = ?", (scenario_id,)).rowcount == 0:
                raise NotFoundError(f"no saved scenario {scenario_id}", field="id")

    # --- vendor quotes
    def add_quote(self, quote: VendorQuote) -> SavedQuote:
        with self._write() as db:
            self._room(db, "quotes")
            cur = db.execute(
                "INSERT INTO quotes (system, price_usd, quoted_on, vendor, note, created) VALUES (?, ?, ?, ?, ?, ?)",
                (quote.system, quote.price_usd, quote.quoted_on.isoformat(), quote.vendor, quote.note, _now()),
            )
            return SavedQuote(id=cur.lastrowid, **quote.model_dump())

    def list_quotes(self) -> list[SavedQuote]:
        with self._connect() as db:
            return [_quote(r) for r in db.execute("SELECT * FROM quotes ORDER BY quoted_on DESC, id DESC")]

    def delete_quote(self, quote_id: int) -> None:
        with self._write() as db:
            if db.execute("DELETE FROM quotes WHERE id = ?", (quote_id,)).rowcount == 0:
                raise NotFoundError(f"no vendor quote {quote_id}", field="id")

    def quote_for(self, system: str) -> SavedQuote | None:
        """The newest quote for a system, if any."""
        with self._connect() as db:
            row = db.execute("SELECT * FROM quotes WHERE system = ? ORDER BY quoted_on DESC, id DESC LIMIT 1",
                             (system,)).fetchone()
        return _quote(row) if row else None

    def apply_quotes(self, scenario: Scenario, system_id: str | None = None) -> tuple[Scenario, SavedQuote | None]:
        """The scenario with the newest vendor quote for its system (``system_id``: the catalogue id
        its platform's name resolves to; quotes are stored under catalogue ids), unless it carries its own."""
        p = scenario.platform
        if not p.system or p.quote_usd_per_system:
            return scenario, None
        # quotes are stored under catalogue ids; older ones may carry the name as typed
        quote = (self.quote_for(system_id) if system_id else None) or self.quote_for(p.system)
        if quote is None:
            return scenario, None
        platform = p.model_copy(update={"quote_usd_per_system": quote.price_usd})
        return scenario.model_copy(update={"platform": platform}), quote

    # --- the user's own measured runs (measurements/)
    def add_measurements(self, runs: list[MeasuredRun]) -> list[MeasuredRun]:
        """Store every run in one transaction: all of them, or none. A run stored already (the same
        provenance and points, whatever its file is named) is refused (ConflictError) rather than stored twice, where it
        would count twice wherever stored runs are used; so is one holding a stored run's point beside new ones
        (``_no_stored_point``)."""
        saved = []
        given: dict[str, str] = {}  # identity -> the file that gave it earlier in this import
        with self._write() as db:
            self._room(db, "measurements", len(runs))
            for run in runs:
                key = _run_identity(run)
                if key in given:  # rolled back with the rest: no stored run to name
                    raise ConflictError(f"{run.file}: the same run as {given[key]} earlier in this import",
                                        field="file", located=True, allowed="each run once")
                given[key] = run.file
                rows = db.execute("SELECT * FROM measurements WHERE model = ? AND accelerator = ?",
                                  (run.model, run.accelerator)).fetchall()
                same = next((r for r in rows if _run_identity(_measurement(r)) == key), None)
                if same is not None:
                    raise ConflictError(f"{run.file}: the same run is stored already as run {same['id']}",
                                        field="file", located=True,  # the message starts with the file
                                        allowed=f"a run not stored yet, or delete run {same['id']} first to "
                                                "import it again")
                _no_stored_point(run, rows)
                cur = db.execute("INSERT INTO measurements (model, accelerator, body, created) VALUES (?, ?, ?, ?)",
                                 (run.model, run.accelerator, run.model_dump_json(exclude={"id"}), _now()))
                saved.append(run.model_copy(update={"id": cur.lastrowid}))
        return saved

    def list_measurements(self) -> list[MeasuredRun]:
        with self._connect() as db:
            return [_measurement(r) for r in db.execute("SELECT * FROM measurements ORDER BY id DESC")]

    def user_runs(self) -> tuple[UserRun, ...]:
        """The stored runs as the performance layer plans on them (``estimate(…, user_runs=…)``)."""
        return tuple(r.as_user_run() for r in self.list_measurements())

    def get_measurement(self, measurement_id: int) -> MeasuredRun:
        with self._connect() as db:
            row = db.execute("SELECT * FROM measurements WHERE id = ?", (measurement_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no stored measurement {measurement_id}", field="id")
        return _measurement(row)

    def delete_measurement(self, measurement_id: int) -> None:
        with self._write() as db:
            if db.execute("DELETE FROM measurements WHERE id = ?", (measurement_id,)).rowcount == 0:
                raise NotFoundError(f"no stored measurement {measurement_id}", field="id")


# the point figures every importer has read: a run's identity (percentiles and the offered load,
# read later, do not make a re-import of the same file a different run)
IDENTITY_POINT_FIELDS = {"concurrency", "input_tokens", "output_tokens", "ttft_s", "tpot_s",
                         "output_tokens_per_s_total", "requests_per_s", "prefill_tokens_per_s"}


# what a result file the client appended more runs to states otherwise, beside its points: the date (vLLM's latest
# run's; an SGLang file states none, so the day of the import) and the acceptance the server measured (since it started)
APPENDED_FIELDS = {"id", "file", "points", "measured_on", "measured_acceptance", "acceptance_rate", "acceptance_origin"}


def _run_identity(run: MeasuredRun) -> str:
    """What makes two imports the same run: its provenance and the points' means, not the file's name (a copy of the
    file under another name measured nothing new) nor where its acceptance rate came from (a run stored before that
    was recorded, imported again, is the same run)."""
    return json.dumps({**run.model_dump(mode="json", exclude={"id", "file", "points", "acceptance_origin"}, exclude_none=True),
                       "points": [p.model_dump(mode="json", include=IDENTITY_POINT_FIELDS) for p in run.points]},
                      sort_keys=True)


def _no_stored_point(run: MeasuredRun, rows: list[sqlite3.Row]) -> None:
    """A run one of whose points a stored run of the same provenance holds already (every figure alike: the same
    measurement) is refused naming both: a result file the client appended to after it was imported (SGLang's
    bench_serving always appends) would count the stored point twice. What appending more runs changes is no new
    provenance (``APPENDED_FIELDS``)."""
    setup = run.model_dump(mode="json", exclude=APPENDED_FIELDS)
    for row in rows:
        stored = _measurement(row)
        if stored.model_dump(mode="json", exclude=APPENDED_FIELDS) != setup:
            continue
        held = {_point_identity(p) for p in stored.points}
        i, point = next(((i, p) for i, p in enumerate(run.points) if _point_identity(p) in held), (None, None))
        if point is not None:
            raise ConflictError(f"{run.file}: point {i + 1} (concurrency {point.concurrency}, {point.input_tokens}/"
                                f"{point.output_tokens} tokens) is stored already in run {row['id']}",
                                field="file", located=True, allowed=f"a file of points not stored yet (its new lines "
                                f"alone), or delete run {row['id']} first to import the whole file")


def _point_identity(point: MeasuredPoint) -> str:
    return json.dumps(point.model_dump(mode="json", include=IDENTITY_POINT_FIELDS), sort_keys=True)


def _measurement(row: sqlite3.Row) -> MeasuredRun:
    return MeasuredRun.model_validate({**json.loads(row["body"]), "id": row["id"]})


def _clean_name(name: str) -> str:
    name = name.strip()
    problem = "is blank" if not name else plain_text_problem(name)
    if problem:
        raise InvalidScenarioError(f"the scenario name {problem}", field="name",
                                   allowed=f"1 to {MAX_NAME_CHARS} characters, no control or bidi-override characters")
    return name


def _scenario(row: sqlite3.Row) -> SavedScenario:
    return SavedScenario(id=row["id"], name=row["name"], scenario=Scenario.model_validate(json.loads(row["body"]), context={"stored": True}),
                         created=row["created"], updated=row["updated"])


def _quote(row: sqlite3.Row) -> SavedQuote:
    return SavedQuote.model_validate({"id": row["id"], "system": row["system"], "price_usd": row["price_usd"],
                                      "quoted_on": dt.date.fromisoformat(row["quoted_on"]), "vendor": row["vendor"],
                                      "note": row["note"]}, context={"stored": True})
