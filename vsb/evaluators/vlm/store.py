"""What the VLM judge keeps between runs: its answer cache and its price list.

``JudgeCache`` (``CACHE/judge.sqlite``, WAL mode, beside the generation cache's index) maps a
call key to the reply: ``get(key, compute) -> (reply, hit)``, like the generation cache.
The key (``call_key``) is sha256 over the canonical JSON of the judge model, its endpoint (the
normalised base URL of an HTTP judge: the same model name served elsewhere is another judge),
the system prompt, the user prompt (the questions) and the image's sha256, so a rerun pays
nothing. Only answers that parse are stored (``vlm_judge`` decides; an unparsable reply is
asked again on the next run). A stored answer is sealed (``answer_seal``: sha256 over its key,
judge model, raw text and token counts), so an answer edited or moved to another key (YES and
NO swapped) fails its check on lookup: it is dropped, logged in ``failed_checks`` (counted by
``failed_checks()``) and asked again. Answers stored before seals (``seal`` NULL) are sealed
once, when the cache is first opened (``vsb.store.seals``, recorded in its ``meta`` table);
after it an answer without a seal is damaged: never served, dropped and asked again.

``JudgePricing`` reads the ``judges`` section of ``config/pricing.json``: USD per million
input and output tokens and the tokens an image costs, per judge model. A judge that is
not listed has an unknown price, reported as unknown, never as zero.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vsb.errors import CacheError
from vsb.evaluators.vlm.transports import JudgeReply
from vsb.fsio import canonical_json, sha256_hex
from vsb.store.conns import ThreadConnections, what_to_do
from vsb.store.ledger import read_pricing
from vsb.store.seals import migrate_seals, report_damaged

DEFAULT_PRICING = Path(__file__).resolve().parents[3] / "config" / "pricing.json"
CACHE_NAME = "judge.sqlite"
_SCHEMA = """CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY, judge_model TEXT NOT NULL, text TEXT NOT NULL,
    input_tokens INTEGER, output_tokens INTEGER, attempt TEXT, seal TEXT)"""
_FAILED = "CREATE TABLE IF NOT EXISTS failed_checks (key TEXT NOT NULL, at REAL NOT NULL)"
#: What to do with a damaged answer cache (one line; nothing is removed for the user).
_CORRUPT = (
    f"it is damaged: move it aside (mv {CACHE_NAME} {CACHE_NAME}.broken) and rerun, which "
    "starts a new one (the answers it held are asked, and paid for, again)"
)
#: Caches written before answers carried the attempt that paid for them lack ``attempt``.
_MIGRATE_ATTEMPT = "ALTER TABLE answers ADD COLUMN attempt TEXT"
_MIGRATE_SEAL = "ALTER TABLE answers ADD COLUMN seal TEXT"
#: The columns a seal covers, in ``answer_seal``'s order.
_SEALED = ("key", "judge_model", "text", "input_tokens", "output_tokens")


def answer_seal(
    key: str, judge_model: str, text: str, input_tokens: int | None, output_tokens: int | None
) -> str:
    """What binds a stored answer to its call key (checked on every lookup)."""
    return sha256_hex(canonical_json([key, judge_model, text, input_tokens, output_tokens]))


def call_key(
    judge_model: str, system: str, prompt: str, image_sha256: str, endpoint: str | None = None
) -> str:
    """The cache key of one judge call (``endpoint``: the transport's normalised base URL;
    None for a judge without a server, whose keys then leave it out)."""
    doc = {"judge_model": judge_model, "system": system, "prompt": prompt, "image": image_sha256}
    if endpoint is not None:
        doc["endpoint"] = endpoint
    return sha256_hex(canonical_json(doc))


class JudgeCache:
    """Replies by call key, in SQLite; one connection per process and thread (a forked pool
    worker opens its own rather than sharing its parent's)."""

    def __init__(self, root: str | Path) -> None:
        self.path = Path(root) / CACHE_NAME
        self._conns = ThreadConnections(self._connect)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._db() as db:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
                cols = {r[1] for r in db.execute("PRAGMA table_info(answers)")}
                if "attempt" not in cols:
                    db.execute(_MIGRATE_ATTEMPT)
                if "seal" not in cols:
                    db.execute(_MIGRATE_SEAL)
                db.execute(_FAILED)
            migrate_seals(self._db(), "answers", _SEALED, answer_seal)
        except (OSError, sqlite3.Error) as err:
            advice = what_to_do(err, _CORRUPT) if isinstance(err, sqlite3.Error) else ""
            raise CacheError(
                f"cannot open the judge cache: {err}{advice}", file=self.path
            ) from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60.0)
        # WAL + NORMAL: a commit survives a crash of vsb (not a power cut) without an fsync
        # per answer, which would cap concurrent judging.
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _db(self) -> sqlite3.Connection:
        return self._conns.get()

    def close(self) -> None:
        """Close this process's connections (a later call reopens one)."""
        self._conns.close()

    def lookup(self, key: str) -> JudgeReply | None:
        """The cached reply, or None (also for one that fails its check: it is dropped)."""
        row = (
            self._db()
            .execute(
                "SELECT text, input_tokens, output_tokens, judge_model, seal FROM answers "
                "WHERE key = ?",
                (key,),
            )
            .fetchone()
        )
        if row is None:
            return None
        if row[4] is None or row[4] != answer_seal(key, row[3], row[0], row[1], row[2]):
            report_damaged(self.path, key, row[4], "asking again")
            with self._db() as db:
                if db.execute("DELETE FROM answers WHERE key = ? AND seal IS ?",
                              (key, row[4])).rowcount:  # fmt: skip
                    db.execute("INSERT INTO failed_checks VALUES (?, ?)", (key, time.time()))
            return None
        return JudgeReply(str(row[0]), row[1], row[2])

    def failed_checks(self) -> int:
        """Answers dropped so far because they failed their check."""
        return int(self._db().execute("SELECT COUNT(*) FROM failed_checks").fetchone()[0])

    def put(
        self, key: str, judge_model: str, reply: JudgeReply, attempt: str | None = None
    ) -> None:
        """Store a reply (committed before returning), with the ledger attempt that paid
        for it (``vsb.store.paid``: a rerun reconciles that attempt's unfinished row)."""
        with self._db() as db:
            seal = answer_seal(
                key, judge_model, reply.text, reply.input_tokens, reply.output_tokens
            )
            db.execute(
                "INSERT OR REPLACE INTO answers (key, judge_model, text, input_tokens, "
                "output_tokens, attempt, seal) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, judge_model, reply.text, reply.input_tokens, reply.output_tokens, attempt,
                 seal),
            )  # fmt: skip

    def attempts(self, keys: list[str]) -> dict[str, str]:
        """``{key: attempt id}`` of the stored replies of ``keys`` that name their attempt."""
        out: dict[str, str] = {}
        db = self._db()
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            marks = ", ".join("?" * len(part))
            for k, a in db.execute(
                f"SELECT key, attempt FROM answers WHERE attempt IS NOT NULL AND key IN ({marks})",
                part,
            ):
                out[str(k)] = str(a)
        return out

    def get(
        self, key: str, judge_model: str, compute: Callable[[], JudgeReply]
    ) -> tuple[JudgeReply, bool]:
        """``(reply, hit)``: the cached reply, or ``compute()`` stored under ``key``."""
        cached = self.lookup(key)
        if cached is not None:
            return cached, True
        reply = compute()
        self.put(key, judge_model, reply)
        return reply, False


def failed_checks_in(cache_dir: str | Path | None) -> int:
    """How many answers the judge cache in ``cache_dir`` has dropped for failing their check
    (0 without a cache)."""
    if cache_dir is None:
        return 0
    cache = JudgeCache(cache_dir)
    try:
        return cache.failed_checks()
    finally:
        cache.close()


@dataclass(frozen=True)
class JudgePrice:
    """Token prices of one judge model."""

    usd_per_mtok_input: float
    usd_per_mtok_output: float
    image_tokens: int

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """USD for a call with these token counts."""
        return (
            input_tokens * self.usd_per_mtok_input + output_tokens * self.usd_per_mtok_output
        ) / 1e6


@dataclass(frozen=True)
class JudgePricing:
    """Prices by judge model (``judges`` section of the pricing file)."""

    as_of: str | None
    prices: dict[str, JudgePrice]

    @classmethod
    def load(cls, path: str | Path | None = None) -> JudgePricing:
        """Read the pricing file (default ``config/pricing.json``; absent default = unknown)."""
        p = Path(path) if path is not None else DEFAULT_PRICING
        if path is None and not p.is_file():
            return cls(None, {})
        as_of, prices = read_pricing(
            p,
            lambda obj: {
                str(name): JudgePrice(
                    float(e["usd_per_mtok_input"]),
                    float(e["usd_per_mtok_output"]),
                    int(e["image_tokens"]),
                )
                for name, e in obj.get("judges", {}).items()
            },
            "malformed judges section",
        )
        return cls(as_of, prices)

    def price(self, judge_model: str) -> JudgePrice | None:
        """The judge's prices, or None when unknown."""
        return self.prices.get(judge_model)
