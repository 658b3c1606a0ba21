"""Where the SQLite store lives by default, apart from the store itself: a command asks whether the
file exists before it pays for importing the store (its pydantic models and sqlite3)."""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "inferplan" / "inferplan.db"


def holds_measurements(path: str | Path) -> bool:
    """Whether the SQLite file at ``path`` holds at least one measured run, read without the store's
    models; an unreadable or foreign file says yes, so the store itself opens it and names the problem."""
    import sqlite3

    if not Path(path).is_file():
        return False
    try:
        # as_uri escapes '#', '?' and '%', which would otherwise end or alter the file name in the URI
        db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            return db.execute("SELECT 1 FROM measurements LIMIT 1").fetchone() is not None
        finally:
            db.close()
    except sqlite3.Error:
        return True
