"""The compiled catalogue: the validated ``Catalog`` kept as a pickle in the user's cache folder.

Parsing and validating every YAML file takes most of a command's start-up; unpickling the result
takes a tenth of that. The file is named by a hash of everything the catalogue is built from — every
data file's path and bytes, the code of the ``catalog`` and ``inputs`` packages and of ``errors`` and
``units`` (every class a pickled object may be an instance of), the data folder's location and the Python
and pydantic versions — so an edited data file or a new schema builds a new one and a stale one is never
read. ``INFERPLAN_CACHE_DIR`` names another
folder; ``INFERPLAN_NO_CACHE=1`` builds the catalogue afresh every time and writes nothing.

The cache holds only what inferplan built from its own data, in a folder of the user's; a file that
cannot be read back (truncated, from another build) is built again and replaced.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

T = TypeVar("T")
CATALOG_CODE = Path(__file__).resolve().parent
PACKAGE = CATALOG_CODE.parent
PREFIX = "catalog-"


def cache_dir() -> Path:
    """Where compiled catalogues are kept: $INFERPLAN_CACHE_DIR, else $XDG_CACHE_HOME/inferplan, else ~/.cache/inferplan."""
    if os.environ.get("INFERPLAN_CACHE_DIR"):
        return Path(os.environ["INFERPLAN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inferplan"


def _code_files(catalog_code: Path) -> list[tuple[Path, Path]]:
    """(root, file) of every module a pickled catalogue object may be an instance of."""
    files = [(catalog_code, p) for p in sorted(catalog_code.rglob("*.py"))]
    files += [(PACKAGE, p) for p in sorted((PACKAGE / "inputs").rglob("*.py"))]
    files += [(PACKAGE, PACKAGE / name) for name in ("errors.py", "units.py")]
    return [f for f in files if "__pycache__" not in f[1].parts]


def catalog_key(data_dir: Path) -> str:
    """A hash of every input of the catalogue built from ``data_dir``."""
    from pydantic.version import VERSION as pydantic_version

    h = hashlib.sha256()
    for part in (str(data_dir.resolve()), sys.version, pydantic_version):
        h.update(part.encode() + b"\0")
    data = sorted((data_dir, p) for p in data_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for root, path in [*data, *_code_files(CATALOG_CODE)]:
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def load_compiled(data_dir: Path, build: Callable[[], T]) -> T:
    """The catalogue of ``data_dir``: unpickled when a compiled copy of the same inputs exists, else
    built with ``build()`` and stored for the next start."""
    if os.environ.get("INFERPLAN_NO_CACHE"):
        return build()
    folder = cache_dir()
    path = folder / f"{PREFIX}{catalog_key(data_dir)}.pickle"
    try:
        with path.open("rb") as f:
            return _unpickle(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        pass
    built = build()
    _store(folder, path, built)
    return built


def _unpickle(f: BinaryIO) -> object:
    return loads_paused(f.read())


def loads_paused(data: bytes) -> object:
    """``pickle.loads`` with the cyclic garbage collector paused: a load makes tens of thousands of
    objects, none garbage, and each collection it would set off scans them all (a third of the load)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        if was_enabled:
            gc.enable()


def _store(folder: Path, path: Path, built: object) -> None:
    """Write atomically (another process may read at the same time) and drop older compiled copies
    of the same data folder's catalogue; a folder that cannot be written only costs the next start."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".tmp-", delete=False) as f:
            pickle.dump(built, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, path)
    except OSError:
        return
    for old in folder.glob(f"{PREFIX}*.pickle"):
        try:  # another process may have dropped either copy since the listing
            if old != path and old.stat().st_mtime < path.stat().st_mtime - 3600:
                old.unlink(missing_ok=True)
        except OSError:
            continue
