"""The store keeps one connection per thread and closes it when the thread ends, so a server whose worker
threads come and go leaves no connection (and no file descriptor on the database) behind."""

from __future__ import annotations

import os
import sqlite3
import threading

import pytest

from inferplan import store as store_module
from inferplan.store import Store


def _db_fds(path) -> int:
    fds = "/proc/self/fd"
    return sum(1 for f in os.listdir(fds) if os.path.realpath(os.path.join(fds, f)).startswith(str(path)))


def _round(store: Store, threads: int = 6) -> None:
    workers = [threading.Thread(target=store.list_scenarios) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


def test_a_thread_closes_its_connection_when_it_ends(tmp_path, monkeypatch):
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def recording(*args, **kwargs):
        opened.append(connect(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(store_module.sqlite3, "connect", recording)
    store = Store(tmp_path / "inferplan.db")
    _round(store)
    assert len(opened) == 7  # this thread's and the six workers'
    opened[0].execute("SELECT 1")  # this thread's, still in use
    for db in opened[1:]:
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            db.execute("SELECT 1")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors under /proc")
def test_descriptors_on_the_database_do_not_grow_with_threads(tmp_path):
    """SQLite may keep a closed connection's descriptor on the database for the next connection to reuse (its
    POSIX locks are per process), so a round of threads can leave a few; rounds after it add none."""
    store = Store(tmp_path / "inferplan.db")
    base = _db_fds(tmp_path)
    for _ in range(4):
        _round(store, threads=6)
    assert _db_fds(tmp_path) <= base + 6
