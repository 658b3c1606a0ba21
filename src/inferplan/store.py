"""Saved scenarios and vendor quotes in an embedded SQLite database (WAL mode).

Each thread has its own connection, so the API can serve concurrent requests; writes take
``BEGIN IMMEDIATE`` and wait (``busy_timeout``) instead of failing, so concurrent saves lose
nothing. A vendor quote overrides the catalogue's price band wherever its system is used. The
database records its version (``PRAGMA user_version``); one an earlier release wrote is migrated when
opened (``MIGRATIONS``, with the tables in ``store_schema``), one a later release wrote is refused. A run
stored again is refused by its identity (``store_runs``).

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
from inferplan.performance.run_record import UserRun
from inferplan.store_path import default_db_path
from inferplan.store_runs import _measurement, _no_stored_point, _run_identity
from inferplan.store_schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION

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
