"""One SQLite connection per process and thread, shared by the cache index and the ledger.

``ThreadConnections(connect).get()`` opens a connection with ``connect`` the first time a
thread of a process asks, and hands that thread the same one afterwards; a connection
inherited through fork belongs to the parent and is left alone (the child opens its own).
``close()`` closes every connection this process opened, every thread's; a thread whose
connection was closed that way opens a fresh one on its next ``get()``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable


class ThreadConnections:
    """The connections of one database, one per (process, thread), opened on first use."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._local = threading.local()
        self._conns: list[tuple[int, sqlite3.Connection]] = []
        self._conns_lock = threading.Lock()
        self._generation = 0

    def get(self) -> sqlite3.Connection:
        """This process's and thread's connection (a forked child opens its own)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "key", None) != (os.getpid(), self._generation):
            conn = self._connect()
            self._local.conn, self._local.key = conn, (os.getpid(), self._generation)
            with self._conns_lock:
                self._conns.append((os.getpid(), conn))
        return conn

    def close(self) -> None:
        """Close the connections this process opened, every thread's (safe to call twice)."""
        pid = os.getpid()
        with self._conns_lock:
            mine = [c for p, c in self._conns if p == pid]
            self._conns = [(p, c) for p, c in self._conns if p != pid]
            self._generation += 1  # other threads' connections are closed: reopen on use
        for conn in mine:
            conn.close()
        self._local.conn = None


def corrupt(err: sqlite3.Error) -> bool:
    """Whether ``err`` says the database file is damaged (not a database, malformed), rather
    than busy or unreachable."""
    text = str(err).lower()
    return "not a database" in text or "malformed" in text or "disk image" in text


def what_to_do(err: sqlite3.Error, advice: str) -> str:
    """``advice`` when ``err`` says the file is damaged, else nothing (for one error line)."""
    return f"; {advice}" if corrupt(err) else ""
