"""The cost ledger: one SQLite row per request, and per-model summaries.

Every image request of a run is recorded with its cache key, model, latency, success, cache
hit and approximate cost. Costs come from the adapter when it reports one, otherwise from
``config/pricing.json`` (per model, with an ``as_of`` date). An unknown price is stored
as NULL and reported as unknown — never as zero; a cache hit costs nothing (no call was
made). Each ``vsb run`` is one *session*; summaries default to the latest session.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vsb.errors import ConfigError, InputError, RunError
from vsb.fsio import load_json

LEDGER_NAME = "ledger.sqlite"
DEFAULT_PRICING = Path(__file__).resolve().parents[1] / "config" / "pricing.json"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (
        session INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS requests (
        session INTEGER NOT NULL, key TEXT NOT NULL, model TEXT NOT NULL,
        condition TEXT, story_id TEXT, scene INTEGER, latency_s REAL NOT NULL,
        success INTEGER NOT NULL, cache_hit INTEGER NOT NULL, cost_usd REAL, error TEXT)""",
)


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
        try:
            obj = load_json(p)
            models = obj["models"]
            prices = {
                str(m): float(e["usd_per_image"])
                for m, e in models.items()
                if e.get("usd_per_image") is not None
            }
        except FileNotFoundError as err:
            raise ConfigError("pricing file not found", file=p) from err
        except InputError as err:
            raise ConfigError(
                f"malformed pricing file: {err.message}", file=p, location=err.location
            ) from None
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ConfigError(f"malformed pricing file: {err}", file=p) from err
        return cls(obj.get("as_of"), prices, str(p))

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
    calls: int
    failures: int
    mean_latency_s: float | None
    total_latency_s: float
    cost_usd: float | None
    unknown_cost: int


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
    """A ledger database (``RUN/ledger.sqlite``); written by one process at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60.0)
        with self._db:
            for stmt in _SCHEMA:
                self._db.execute(stmt)
        self.session: int | None = None

    @classmethod
    def open_existing(cls, path: str | Path) -> Ledger:
        """Open a ledger that must exist (``RunError`` otherwise)."""
        if not Path(path).is_file():
            raise RunError("no ledger here (run `vsb run` first)", file=path)
        return cls(path)

    def start_session(self, label: str) -> int:
        """Begin a new session; later records belong to it."""
        with self._db:
            cur = self._db.execute("INSERT INTO sessions (label) VALUES (?)", (label,))
        self.session = int(cur.lastrowid or 0)
        return self.session

    def record_many(self, entries: Iterable[LedgerEntry]) -> None:
        """Record requests in one transaction."""
        if self.session is None:
            self.start_session("unnamed")
        rows = [
            (
                self.session, e.key, e.model, e.condition, e.story_id, e.scene, e.latency_s,
                int(e.success), int(e.cache_hit), e.cost_usd, e.error,
            )
            for e in entries
        ]  # fmt: skip
        with self._db:
            self._db.executemany(
                "INSERT INTO requests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )

    def latest_session(self) -> int | None:
        row = self._db.execute("SELECT MAX(session) FROM sessions").fetchone()
        return None if row[0] is None else int(row[0])

    def summary(
        self, session: int | None = None, *, all_sessions: bool = False
    ) -> list[ModelSummary]:
        """Per-model totals of ``session`` (default: the latest), or of every session."""
        where = ""
        args: tuple[object, ...] = ()
        if not all_sessions:
            s = session if session is not None else self.latest_session()
            where, args = "WHERE session = ?", (s,)
        rows = self._db.execute(
            f"""SELECT model, COUNT(*), SUM(cache_hit), SUM(1 - cache_hit), SUM(1 - success),
                       AVG(CASE WHEN cache_hit = 0 THEN latency_s END), SUM(latency_s),
                       SUM(cost_usd), SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END)
                FROM requests {where} GROUP BY model ORDER BY model""",
            args,
        ).fetchall()
        out = []
        for m, n, hits, calls, fails, mean_lat, tot_lat, cost, unknown in rows:
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
                )
            )
        return out

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
