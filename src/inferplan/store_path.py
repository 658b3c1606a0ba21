"""Where the SQLite store lives by default, apart from the store itself: a command asks whether the
file exists before it pays for importing the store (its pydantic models and sqlite3)."""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "inferplan" / "inferplan.db"
