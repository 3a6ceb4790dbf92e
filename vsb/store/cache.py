"""The generation cache: identical requests are never regenerated.

``GenerationCache.get(key, compute) -> (result, hit)``: ``key`` is the request key
(``GenerationRequest.key()``: sha256 over the canonical JSON of model id, version, prompt,
context, seed, sorted parameters and reference-image hashes; simulators add story, scene and
condition). On a miss ``compute()`` runs and its result is stored.

Storage (the embedded default)::

    CACHE/objects/<aa>/<sha256>.png   content-addressed PNG bytes (atomic temp file + rename)
    CACHE/index.sqlite                WAL-mode index: key -> sha256, metadata JSON, cost,
                                      origin (the ledger attempt id that generated it);
                                      in-flight claims: key -> owner pid, start token, time

A key is generated once even by several processes sharing the cache (runs on different run
directories, fork workers, threads): before ``compute()`` a miss *claims* its key — a row in
``claims`` inserted in an immediate transaction that also checks ``entries`` — and the entry
is committed together with the claim's release, right after ``compute()``. Another process
wanting a claimed key waits (polling) until the claim is gone, then reads the entry (or, if
the owner failed, claims the key itself). A claim whose owner process is dead (SIGKILLed;
``vsb.store.locks.process_alive``) is taken over. Claims are held only while ``compute()`` runs,
never while waiting for another key, so two processes can never wait on each other.

An object whose bytes no longer match its hash is detected on read, deleted and
regenerated — never served. An entry is *sealed*: ``seal`` is sha256 over the canonical JSON of
its key, image hash, metadata and cost (``entry_seal``), so a well-formed entry whose values
belong to another key (hashes shuffled between rows, metadata edited) fails its check on read:
it is dropped, logged in ``failed_checks`` (``failed_checks()`` counts them, so a command can
report how many it recomputed) and regenerated. Entries written before seals (``seal`` NULL)
are sealed once, when the index is first opened, and that is recorded in its ``meta`` table
(``vsb.store.seals``); after it an entry without a seal is damaged: never served, dropped and
regenerated like one that fails its check, with one line naming the index and the key. Each process
and thread opens its own SQLite connection (after a fork the child opens a fresh one).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Protocol

from vsb.adapters.base import GenerationResult
from vsb.errors import CacheError
from vsb.fsio import atomic_write_bytes, loads_json, sha256_hex
from vsb.store.conns import ThreadConnections, what_to_do
from vsb.store.locks import process_alive, process_token
from vsb.store.seals import migrate_seals, report_damaged

log = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = ".vsb-cache"
INDEX_NAME = "index.sqlite"
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS entries (
        key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, metadata TEXT NOT NULL, cost_usd REAL,
        origin TEXT, seal TEXT)""",
    """CREATE TABLE IF NOT EXISTS claims (
        key TEXT PRIMARY KEY, pid INTEGER NOT NULL, token TEXT NOT NULL, since REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS failed_checks (
        key TEXT NOT NULL, sha256 TEXT NOT NULL, at REAL NOT NULL)""",
)
#: Indexes written before entries named their origin (or were sealed) lack the column (NULL).
_MIGRATE = {
    "origin": "ALTER TABLE entries ADD COLUMN origin TEXT",
    "seal": "ALTER TABLE entries ADD COLUMN seal TEXT",
}
_Row = tuple[str, str, str, float | None]
#: Polling while another process generates a key: first and longest pause, in seconds.
_POLL_FIRST, _POLL_MAX = 0.002, 0.1


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, begun IMMEDIATE (it waits for the write lock, never upgrades)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _migrate(conn: sqlite3.Connection) -> None:
    """Add ``entries.origin`` and ``entries.seal`` to an index written before them (another
    process may be adding them at the same moment: a duplicate column is that)."""
    cols = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
    for name, stmt in _MIGRATE.items():
        if name in cols:
            continue
        try:
            conn.execute(stmt)
        except sqlite3.OperationalError as err:
            if "duplicate column" not in str(err):
                raise


def failed_checks_note(n: int, sep: str = "; ") -> str:
    """What a summary line adds for ``n`` cache entries that failed their check ("" for 0)."""
    if not n:
        return ""
    if n == 1:
        return f"{sep}1 cache entry failed its check and was recomputed"
    return f"{sep}{n} cache entries failed their check and were recomputed"


def failed_checks_under(cache_dir: str | Path) -> int:
    """Entries dropped for failing their check so far by every cache in ``cache_dir`` (each
    SQLite file there with a ``failed_checks`` table: the generation index, the judge's
    answers, the extractions); 0 for one that cannot be read."""
    total = 0
    for path in sorted(Path(cache_dir).glob("*.sqlite")):
        try:
            with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
                total += int(db.execute("SELECT COUNT(*) FROM failed_checks").fetchone()[0])
        except sqlite3.Error:
            continue
    return total


def entry_seal(row: _Row) -> str:
    """The seal of an entry ``(key, sha256, metadata, cost_usd)``: what binds its values to
    its key (checked on every read): sha256 over them joined by NUL (the key and hash are hex,
    the metadata JSON holds no raw NUL), the cost as ``repr``."""
    key, sha, meta, cost = row
    return sha256_hex(f"{key}\x00{sha}\x00{meta}\x00{cost!r}".encode())


#: What to do with a damaged cache index (one line; nothing is removed for the user).
CORRUPT_INDEX = (
    "it is damaged: move it aside (mv {name} {name}.broken) and rerun, which starts a new "
    "index (the images it listed are made, and paid for, again), or give another --cache"
)


#: What makes a result on a miss; what names its origin (the ledger's attempt id).
Compute = Callable[[], GenerationResult]
Origin = Callable[[], str | None] | None


class ResultCache(Protocol):
    """What a run asks of a generation cache: the run's own (``GenerationCache``) and the
    stand-ins a Ray worker uses (``vsb.run.ray_worker``)."""

    def get(
        self, key: str, compute: Compute, origin: Origin = None
    ) -> tuple[GenerationResult, bool]: ...


class GenerationCache:
    """A content-addressed PNG store with a SQLite index (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._token: tuple[int, str] | None = None
        self._conns = ThreadConnections(self._connect)

    # --- storage -----------------------------------------------------------------------

    def object_path(self, sha256: str) -> Path:
        """Where the PNG with this hash lives."""
        return self.root / "objects" / sha256[:2] / f"{sha256}.png"

    def _db(self) -> sqlite3.Connection:
        return self._conns.get()

    def _connect(self) -> sqlite3.Connection:
        # Switching a new database to WAL needs a moment alone; workers starting together
        # may see "database is locked" (no busy handler there), so retry briefly.
        for attempt in range(50):
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self.root / INDEX_NAME,
                    timeout=60.0,
                    isolation_level=None,
                    check_same_thread=False,
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                for stmt in _SCHEMA:
                    conn.execute(stmt)
                _migrate(conn)
                migrate_seals(conn, "entries", ("key", "sha256", "metadata", "cost_usd"),
                              lambda *row: entry_seal(row))  # fmt: skip
                return conn
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == 49:
                    raise CacheError(f"cannot open the cache index: {err}", file=self.root) from err
                time.sleep(0.02 * (attempt + 1))
            except sqlite3.Error as err:
                index = self.root / INDEX_NAME
                advice = what_to_do(err, CORRUPT_INDEX.format(name=INDEX_NAME))
                raise CacheError(
                    f"cannot open the cache index: {err}{advice}", file=index
                ) from None
            except OSError as err:
                raise CacheError(f"cannot open the cache index: {err}", file=self.root) from err
        raise AssertionError("unreachable")  # pragma: no cover

    def open(self) -> None:
        """Create/open the index now (before forking workers, so they find it ready)."""
        self._db()

    def _owner(self) -> tuple[int, str]:
        """This process's pid and start token (recomputed after a fork)."""
        pid = os.getpid()
        if self._token is None or self._token[0] != pid:
            self._token = (pid, process_token(pid))
        return self._token

    def _lookup(self, key: str) -> _Row | None:
        """The entry of ``key``; one that fails its seal is dropped (and logged) instead."""
        row = (
            self._db()
            .execute(
                "SELECT key, sha256, metadata, cost_usd, seal FROM entries WHERE key = ?", (key,)
            )
            .fetchone()
        )
        if row is None:
            return None
        entry: _Row = (row[0], row[1], row[2], row[3])
        if row[4] is None or row[4] != entry_seal(entry):  # no seal (after the migration),
            self._drop(entry, row[4])  # or another key's values: damaged, never served
            return None
        return entry

    def _drop(self, entry: _Row, seal: str | None) -> None:
        """Delete an entry that failed its check (unless another process already replaced
        it) and log it in ``failed_checks``."""
        report_damaged(self.root / INDEX_NAME, entry[0], seal)
        with _immediate(self._db()) as db:
            gone = db.execute(
                "DELETE FROM entries WHERE key = ? AND sha256 = ? AND seal IS ?",
                (entry[0], entry[1], seal),
            ).rowcount
            if gone:
                db.execute(
                    "INSERT INTO failed_checks VALUES (?, ?, ?)", (entry[0], entry[1], time.time())
                )

    def failed_checks(self) -> int:
        """Entries dropped so far because they failed their check (every process's)."""
        return int(self._db().execute("SELECT COUNT(*) FROM failed_checks").fetchone()[0])

    def _read_object(self, sha256: str) -> bytes | None:
        path = self.object_path(sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if sha256_hex(data) != sha256:
            log.warning("corrupt cache object %s: regenerating", path)
            path.unlink(missing_ok=True)
            return None
        return data

    def _write_object(self, data: bytes) -> str:
        sha = sha256_hex(data)
        path = self.object_path(sha)
        if not path.is_file() or self._read_object(sha) is None:
            atomic_write_bytes(path, data)
        return sha

    # --- in-flight claims --------------------------------------------------------------

    def _claim(self, key: str) -> bool:
        """Claim ``key`` for this process; False when an entry appeared or a live owner has it."""
        pid, token = self._owner()
        with _immediate(self._db()) as db:
            entry = db.execute("SELECT sha256 FROM entries WHERE key = ?", (key,)).fetchone()
            if entry is not None and self.object_path(entry[0]).is_file():
                return False  # generated meanwhile: read it
            held = db.execute("SELECT pid, token FROM claims WHERE key = ?", (key,)).fetchone()
            if held is not None and process_alive(int(held[0]), str(held[1])):
                return False  # in flight elsewhere (or in another thread here): wait
            if held is not None:
                log.warning("taking over the claim on %s of dead process %s", key, held[0])
            db.execute(
                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?)", (key, pid, token, time.time())
            )
        return True

    def _claimed_by_other(self, key: str) -> bool:
        row = self._db().execute("SELECT pid, token FROM claims WHERE key = ?", (key,)).fetchone()
        return row is not None and process_alive(int(row[0]), str(row[1]))

    def _release(self, key: str) -> None:
        pid, token = self._owner()
        with _immediate(self._db()) as db:
            db.execute(
                "DELETE FROM claims WHERE key = ? AND pid = ? AND token = ?", (key, pid, token)
            )

    def _commit(self, row: _Row, origin: str | None = None) -> None:
        """Store the entry and drop this process's claim on it, in one transaction."""
        pid, token = self._owner()
        with _immediate(self._db()) as db:
            db.execute(
                "INSERT OR REPLACE INTO entries (key, sha256, metadata, cost_usd, origin, seal) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*row, origin, entry_seal(row)),
            )
            db.execute(
                "DELETE FROM claims WHERE key = ? AND pid = ? AND token = ?", (row[0], pid, token)
            )

    def origins(self, keys: Iterable[str]) -> dict[str, tuple[str, float | None]]:
        """``key -> (origin, cost_usd)`` for the given keys stored with an origin (the id of
        the attempt that generated them) whose image is present."""
        out: dict[str, tuple[str, float | None]] = {}
        db = self._db()
        for key in dict.fromkeys(keys):
            row = db.execute(
                "SELECT sha256, origin, cost_usd FROM entries WHERE key = ? AND origin IS NOT NULL",
                (key,),
            ).fetchone()
            if row is not None and self.object_path(row[0]).is_file():
                out[key] = (str(row[1]), None if row[2] is None else float(row[2]))
        return out

    def in_flight(self) -> list[tuple[str, int]]:
        """The claimed keys and their owners' pids (live or not), sorted by key."""
        rows = self._db().execute("SELECT key, pid FROM claims ORDER BY key").fetchall()
        return [(str(k), int(p)) for k, p in rows]

    # --- API ---------------------------------------------------------------------------

    def get(
        self, key: str, compute: Compute, origin: Origin = None
    ) -> tuple[GenerationResult, bool]:
        """The cached result for ``key``, or ``compute()``'s, stored; plus whether it was a hit.

        ``compute()`` runs at most once at a time per key across every process sharing the
        cache; a caller that finds the key in flight waits for it and returns the hit.
        ``origin()``, asked after ``compute()``, names what generated the entry (the ledger's
        attempt id), stored with it: the return of ``get`` is after the commit, so the caller
        may then record the call as finished."""
        pause = _POLL_FIRST
        while True:
            row = self._lookup(key)
            if row is not None:
                data = self._read_object(row[1])
                if data is not None:
                    meta: dict[str, Any] = loads_json(row[2], file=self.root / INDEX_NAME)
                    return GenerationResult(png=data, metadata=meta, cost_usd=row[3]), True
            if self._claim(key):
                break
            if self._claimed_by_other(key):
                time.sleep(pause)
                pause = min(pause * 2, _POLL_MAX)
        try:
            result = compute()
            sha = self._write_object(result.png)
            meta_text = json.dumps(dict(result.metadata), sort_keys=True, ensure_ascii=False)
            self._commit((key, sha, meta_text, result.cost_usd), origin() if origin else None)
        except BaseException:
            self._release(key)
            raise
        return result, False

    def peek(self, key: str) -> GenerationResult | None:
        """The cached result for ``key``, or None (never waits, never claims)."""
        row = self._lookup(key)
        data = None if row is None else self._read_object(row[1])
        if row is None or data is None:
            return None
        meta: dict[str, Any] = loads_json(row[2], file=self.root / INDEX_NAME)
        return GenerationResult(png=data, metadata=meta, cost_usd=row[3])

    def __contains__(self, key: str) -> bool:
        row = self._lookup(key)
        return row is not None and self.object_path(row[1]).is_file()

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def close(self) -> None:
        """Close the connections this process opened, every thread's (safe to call twice)."""
        self._conns.close()
