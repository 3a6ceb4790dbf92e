"""The cost ledger: one SQLite row per attempt, written before the call, and summaries.

Every image request of a run is recorded with its cache key, model, latency, success, cache
hit and approximate cost. Costs come from the adapter when it reports one, otherwise from
``config/pricing.json`` (per model, with an ``as_of`` date). An unknown price is stored
as NULL and reported as unknown — never as zero; a cache hit costs nothing (no call was
made). Each ``vsb run`` is one *session*; summaries default to the latest session.

Crash safety (docs/CRASH_SAFETY.md): an adapter call is recorded by the process that makes
it, *before* the call (``begin``: a row with status ``started``, cost = the list price, an
attempt id, committed); the runner stores its image in the generation cache (with the
attempt id) and only then completes the row (``finish``). So a call whose image reached the
cache is always in the ledger, and a finished call always has its image in the cache (it is
never made, and paid, twice), whenever the run is killed. A row still ``started`` afterwards
is an *interrupted* call (the process died during it; a paid provider may have charged it),
unless the cache holds its image under its attempt id: the next run marks those
``reconciled`` (``reconcile``). The database is in WAL mode and every process and thread
writes through its own connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from vsb.errors import ConfigError, InputError, RunError
from vsb.fsio import load_json
from vsb.store.conns import ThreadConnections, what_to_do

T = TypeVar("T")

LEDGER_NAME = "ledger.sqlite"
DEFAULT_PRICING = Path(__file__).resolve().parents[2] / "config" / "pricing.json"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (
        session INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS requests (
        session INTEGER NOT NULL, key TEXT NOT NULL, model TEXT NOT NULL,
        condition TEXT, story_id TEXT, scene INTEGER, latency_s REAL NOT NULL,
        success INTEGER NOT NULL, cache_hit INTEGER NOT NULL, cost_usd REAL, error TEXT,
        status TEXT NOT NULL DEFAULT 'done', input_tokens INTEGER, output_tokens INTEGER,
        attempt TEXT)""",
)
#: Ledgers written before attempts were recorded lack the status column (every row is done).
_MIGRATE = "ALTER TABLE requests ADD COLUMN status TEXT NOT NULL DEFAULT 'done'"
#: Ledgers written before token counts were recorded lack their columns (NULL: not reported).
_MIGRATE_TOKENS = (
    "ALTER TABLE requests ADD COLUMN input_tokens INTEGER",
    "ALTER TABLE requests ADD COLUMN output_tokens INTEGER",
)
#: ...and those written before attempts had ids lack ``attempt`` (NULL: never reconciled).
_MIGRATE_ATTEMPT = "ALTER TABLE requests ADD COLUMN attempt TEXT"
_COLUMNS = (
    "session, key, model, condition, story_id, scene, latency_s, success, cache_hit, "
    "cost_usd, error, status, attempt"
)
#: What to do with a damaged ledger (one line; nothing is removed for the user).
CORRUPT_LEDGER = (
    "it is damaged: move it aside (mv {name} {name}.broken) and rerun, which starts a new "
    "ledger (the calls it recorded are then missing from `vsb ledger`; the cache still "
    "holds their results, so nothing is paid again)"
)
#: A row's status: begun, not finished (an interrupted call once its process is gone);
#: finished; or found finished by a later run (the process died after the cache stored the
#: call's image and before the row was finished: ``Ledger.reconcile``).
STARTED, DONE, RECONCILED = "started", "done", "reconciled"


def read_pricing(path: Path, section: Callable[[Any], T], malformed: str) -> tuple[str | None, T]:
    """The pricing file's ``as_of`` and ``section(document)``; ``ConfigError`` when the file
    is missing or unreadable, or ``section`` finds it malformed (``malformed: detail``)."""
    try:
        obj = load_json(path)
        parsed = section(obj)
    except FileNotFoundError as err:
        raise ConfigError("pricing file not found", file=path) from err
    except InputError as err:
        raise ConfigError(
            f"malformed pricing file: {err.message}", file=path, location=err.location
        ) from None
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ConfigError(f"{malformed}: {err}", file=path) from err
    return obj.get("as_of"), parsed


@dataclass(frozen=True)
class Pricing:
    """Per-image prices by model name; ``price`` is None when unknown."""

    as_of: str | None
    prices: dict[str, float]
    source: str | None = None

    @classmethod
    def load(cls, path: str | Path | None = None) -> Pricing:
        """Read a pricing file (default ``config/pricing.json``; absent default = all unknown)."""
        if path is None and not DEFAULT_PRICING.is_file():
            return cls(None, {})
        p = Path(path) if path is not None else DEFAULT_PRICING
        as_of, prices = read_pricing(
            p,
            lambda obj: {
                str(m): float(e["usd_per_image"])
                for m, e in obj["models"].items()
                if e.get("usd_per_image") is not None
            },
            "malformed pricing file",
        )
        return cls(as_of, prices, str(p))

    def price(self, model: str) -> float | None:
        """USD per image, or None when the price is unknown."""
        return self.prices.get(model)


@dataclass(frozen=True)
class LedgerEntry:
    """One request as recorded."""

    key: str
    model: str
    latency_s: float
    success: bool
    cache_hit: bool
    cost_usd: float | None
    condition: str | None = None
    story_id: str | None = None
    scene: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class ModelSummary:
    """Per-model totals of one session (or of all sessions)."""

    model: str
    requests: int
    hits: int
    #: adapter calls, interrupted ones included
    calls: int
    #: finished calls that failed
    failures: int
    mean_latency_s: float | None
    total_latency_s: float
    cost_usd: float | None
    unknown_cost: int
    #: calls begun but never finished (the process died during the call)
    interrupted: int = 0
    #: input and output tokens the service reported (None: no call reported any)
    input_tokens: int | None = None
    output_tokens: int | None = None


def request_cost(
    pricing: Pricing, model: str, *, hit: bool, success: bool, reported: float | None
) -> float | None:
    """The cost of one request: 0 for a hit, the adapter's figure, else the price list."""
    if hit:
        return 0.0
    if reported is not None:
        return reported
    return pricing.price(model) if success else None


class Ledger:
    """A ledger database (``RUN/ledger.sqlite``); any number of processes and threads may
    write to it (each through its own connection)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Only a missing file is a new ledger: one that is there with no ledger in it (0
        # bytes, or no ledger tables: its write-ahead log lost) lost its calls.
        existed = self.path.exists()
        if existed and self.path.is_file() and self.path.stat().st_size == 0:
            self._damaged("it is empty (0 bytes)")
        self._conns = ThreadConnections(self._connect)
        try:
            db = self._conn()
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if existed and not names & {"sessions", "requests"}:
                self._conns.close()
                self._damaged("it holds no ledger (no sessions or requests table)")
            with db:
                db.execute("PRAGMA journal_mode=WAL")
                for stmt in _SCHEMA:
                    db.execute(stmt)
                cols = {row[1] for row in db.execute("PRAGMA table_info(requests)")}
                if "status" not in cols:
                    db.execute(_MIGRATE)
                if "input_tokens" not in cols:
                    for stmt in _MIGRATE_TOKENS:
                        db.execute(stmt)
                if "attempt" not in cols:
                    db.execute(_MIGRATE_ATTEMPT)
        except sqlite3.Error as err:
            self._conns.close()
            raise RunError(
                f"cannot open the ledger: {err}"
                + what_to_do(err, CORRUPT_LEDGER.format(name=self.path.name)),
                file=self.path,
            ) from None
        self.session: int | None = None

    def _damaged(self, why: str) -> NoReturn:
        raise RunError(
            f"the ledger was there but {why}: {CORRUPT_LEDGER.format(name=self.path.name)}",
            file=self.path,
        )

    def _conn(self) -> sqlite3.Connection:
        """This process's and thread's connection (a forked child opens its own)."""
        return self._conns.get()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def open(self) -> None:
        """Connect now (a no-op when this process and thread already are)."""
        self._conn()

    @classmethod
    def open_existing(cls, path: str | Path) -> Ledger:
        """Open a ledger that must exist (``RunError`` otherwise)."""
        if not Path(path).is_file():
            raise RunError("no ledger here (run `vsb run` first)", file=path)
        return cls(path)

    def start_session(self, label: str) -> int:
        """Begin a new session; later records belong to it."""
        db = self._conn()
        with db:
            cur = db.execute("INSERT INTO sessions (label) VALUES (?)", (label,))
        self.session = int(cur.lastrowid or 0)
        return self.session

    def _session(self) -> int:
        if self.session is None:
            self.start_session("unnamed")
        assert self.session is not None
        return self.session

    def record_many(self, entries: Iterable[LedgerEntry]) -> None:
        """Record finished requests (cache hits, or calls recorded after the fact) at once."""
        s = self._session()
        rows = [
            (
                s, e.key, e.model, e.condition, e.story_id, e.scene, e.latency_s,
                int(e.success), int(e.cache_hit), e.cost_usd, e.error, DONE, None,
            )
            for e in entries
        ]  # fmt: skip
        if not rows:
            return
        db = self._conn()
        with db:
            db.executemany(f"INSERT INTO requests ({_COLUMNS}) VALUES ({_marks(13)})", rows)

    def begin(
        self,
        key: str,
        model: str,
        *,
        condition: str | None = None,
        story_id: str | None = None,
        scene: int | None = None,
        cost_usd: float | None = None,
        attempt: str | None = None,
    ) -> int:
        """Record an adapter call about to be made (committed before it returns); the row id.

        ``cost_usd`` is what the call is assumed to cost until it finishes (the list price):
        an interrupted call keeps it. ``attempt``: the id the cache stores with the image
        this call produces (``reconcile``)."""
        row = (
            self._session(), key, model, condition, story_id, scene, 0.0, 0, 0, cost_usd,
            None, STARTED, attempt,
        )  # fmt: skip
        db = self._conn()
        with db:
            cur = db.execute(f"INSERT INTO requests ({_COLUMNS}) VALUES ({_marks(13)})", row)
        return int(cur.lastrowid or 0)

    def finish(
        self,
        row_id: int,
        *,
        latency_s: float,
        success: bool,
        cost_usd: float | None,
        error: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """Complete a call recorded by ``begin`` (committed before it returns); token counts
        as the service reported them (a judge's), None when it did not."""
        db = self._conn()
        with db:
            db.execute(
                "UPDATE requests SET latency_s = ?, success = ?, cost_usd = ?, error = ?, "
                "status = ?, input_tokens = ?, output_tokens = ? WHERE rowid = ?",
                (latency_s, int(success), cost_usd, error, DONE, input_tokens, output_tokens,
                 row_id),
            )  # fmt: skip

    def unfinished(self) -> list[tuple[int, str, str]]:
        """``(row id, key, attempt id)`` of every call begun and never finished that has an
        attempt id, any session."""
        rows = self._conn().execute(
            "SELECT rowid, key, attempt FROM requests WHERE status = ? AND attempt IS NOT NULL "
            "ORDER BY rowid",
            (STARTED,),
        )
        return [(int(r), str(k), str(a)) for r, k, a in rows]

    def reconcile(self, stored: dict[str, tuple[str, float | None]]) -> int:
        """Finish the unfinished calls whose image the cache stored: ``stored`` maps a key to
        the attempt id the cache holds with it and the cost the adapter reported (None: the
        row keeps its list price). A row whose attempt id matches becomes ``reconciled``
        (a success, latency unknown: 0); the others stay interrupted. The number reconciled."""
        done = [
            (row, stored[key][1])
            for row, key, attempt in self.unfinished()
            if key in stored and stored[key][0] == attempt
        ]
        db = self._conn()
        with db:
            db.executemany(
                "UPDATE requests SET success = 1, error = NULL, status = ?, "
                "cost_usd = COALESCE(?, cost_usd) WHERE rowid = ? AND status = ?",
                [(RECONCILED, cost, row, STARTED) for row, cost in done],
            )
        return len(done)

    def latest_session(self) -> int | None:
        row = self._conn().execute("SELECT MAX(session) FROM sessions").fetchone()
        return None if row[0] is None else int(row[0])

    def called_keys(self) -> set[str]:
        """Every key with an adapter call recorded (begun or finished), in any session."""
        rows = self._conn().execute("SELECT DISTINCT key FROM requests WHERE cache_hit = 0")
        return {str(k) for (k,) in rows}

    def errors(self, prefix: str) -> list[tuple[str, str]]:
        """(key, error) of finished calls whose error starts with ``prefix``, any session
        (the runner reuses recorded refusals instead of sending them again)."""
        rows = self._conn().execute(
            "SELECT key, error FROM requests WHERE status = ? AND cache_hit = 0 "
            "AND substr(error, 1, ?) = ? ORDER BY rowid",
            (DONE, len(prefix), prefix),
        )
        return [(str(k), str(e)) for k, e in rows]

    def summary(
        self, session: int | None = None, *, all_sessions: bool = False
    ) -> list[ModelSummary]:
        """Per-model totals of ``session`` (default: the latest), or of every session."""
        where = ""
        args: tuple[object, ...] = ()
        if not all_sessions:
            s = session if session is not None else self.latest_session()
            where, args = "WHERE session = ?", (s,)
        rows = (
            self._conn()
            .execute(
                f"""SELECT model, COUNT(*), SUM(cache_hit), SUM(1 - cache_hit),
                       SUM(CASE WHEN success = 0 AND status = 'done' THEN 1 ELSE 0 END),
                       AVG(CASE WHEN cache_hit = 0 AND status = 'done' THEN latency_s END),
                       SUM(latency_s), SUM(cost_usd),
                       SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END),
                       SUM(CASE WHEN status = 'started' THEN 1 ELSE 0 END),
                       SUM(input_tokens), SUM(output_tokens)
                FROM requests {where} GROUP BY model ORDER BY model""",
                args,
            )
            .fetchall()
        )
        out = []
        for (
            m,
            n,
            hits,
            calls,
            fails,
            mean_lat,
            tot_lat,
            cost,
            unknown,
            interrupted,
            t_in,
            t_out,
        ) in rows:
            out.append(
                ModelSummary(
                    model=m,
                    requests=int(n),
                    hits=int(hits),
                    calls=int(calls),
                    failures=int(fails),
                    mean_latency_s=None if mean_lat is None else float(mean_lat),
                    total_latency_s=float(tot_lat or 0.0),
                    cost_usd=None if unknown else float(cost or 0.0),
                    unknown_cost=int(unknown),
                    interrupted=int(interrupted),
                    input_tokens=None if t_in is None else int(t_in),
                    output_tokens=None if t_out is None else int(t_out),
                )
            )
        return out

    def close(self) -> None:
        """Close the connections this process opened, every thread's (safe to call twice)."""
        self._conns.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _marks(n: int) -> str:
    return ", ".join("?" * n)
