"""Sealed SQLite caches: the one migration of rows written before seals, and what a row
without a seal is after it.

The generation index (``entries``), the judge's answers (``answers``) and the embeddings
(``vectors``) carry a ``seal`` per row: sha256 over the row's key and values, checked on
every read. Rows written before seals existed have none (``seal`` NULL). They are sealed
once, when a vsb that knows seals first opens the cache (``migrate_seals``), and that is
recorded in the cache's ``meta`` table (``seals:<table>`` -> how many rows it sealed). From
then on a row without a seal is a damaged row, like one whose seal does not match (a value
edited or swapped, its seal cleared): never served, dropped, logged in ``failed_checks`` and
computed again, with one line naming the cache and the key (``report_damaged``; a process
warns once, the command's summary line counts them all).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

META = "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
#: Whether this process has warned of a damaged row (later ones: debug).
_warned = False


def migrate_seals(
    db: sqlite3.Connection, table: str, columns: Sequence[str], seal: Callable[..., str]
) -> int:
    """Seal, once per cache, every row of ``table`` written before seals (``seal(*columns)``
    of the row) and record it in ``meta``; how many rows it sealed now (0 once recorded).
    Several processes may open the cache at once: one write transaction does it all (called
    outside any transaction of ``db``)."""
    name = f"seals:{table}"
    db.execute(META)
    if db.execute("SELECT 1 FROM meta WHERE name = ?", (name,)).fetchone():
        return 0
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute("SELECT 1 FROM meta WHERE name = ?", (name,)).fetchone():
            db.execute("COMMIT")
            return 0
        cols = ", ".join(columns)
        rows = db.execute(f"SELECT rowid, {cols} FROM {table} WHERE seal IS NULL").fetchall()
        db.executemany(
            f"UPDATE {table} SET seal = ? WHERE rowid = ?", [(seal(*r[1:]), r[0]) for r in rows]
        )
        db.execute("INSERT INTO meta VALUES (?, ?)", (name, f"{len(rows)} rows sealed"))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return len(rows)


def report_damaged(cache: Path, key: str, seal: str | None, what: str = "regenerating") -> None:
    """The one line for a row that is not served: ``cache`` (its file), the key, and why."""
    global _warned
    why = "has no seal" if seal is None else "fails its check (its values are not its key's)"
    log.log(logging.DEBUG if _warned else logging.WARNING,
            "%s: cache entry %s %s: %s", cache, key, why, what)  # fmt: skip
    _warned = True
