"""The cost ledger and the price list: unknown prices stay unknown."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from vsb.errors import ConfigError, RunError
from vsb.store.ledger import DEFAULT_PRICING, Ledger, LedgerEntry, Pricing, request_cost


def test_pricing_file_covers_the_providers() -> None:
    obj = json.loads(DEFAULT_PRICING.read_text())
    assert obj["as_of"] and obj["version"] == "1.0"
    p = Pricing.load()
    assert p.as_of == obj["as_of"]
    for model in (
        "openai/gpt-image-1", "openai/dall-e-3", "replicate/flux-schnell",
        "replicate/flux-kontext-pro", "stability/sd3-large", "stability/core", "google/imagen-3",
    ):  # fmt: skip
        price = p.price(model)
        assert price is not None and 0 < price < 1, model
        assert obj["models"][model]["as_of"]
    for sim in ("procedural-oracle", "procedural-drift-mid", "procedural-sloppy"):
        assert p.price(sim) == 0.0
    assert p.price("someone/unknown-model") is None


def test_request_cost() -> None:
    p = Pricing("2025-01-01", {"a": 0.04, "free": 0.0})
    assert request_cost(p, "a", hit=False, success=True, reported=None) == 0.04
    assert request_cost(p, "a", hit=False, success=True, reported=0.05) == 0.05
    assert request_cost(p, "a", hit=True, success=True, reported=None) == 0.0
    assert request_cost(p, "free", hit=False, success=True, reported=None) == 0.0
    assert request_cost(p, "b", hit=False, success=True, reported=None) is None
    assert request_cost(p, "a", hit=False, success=False, reported=None) is None


def test_malformed_pricing(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="malformed"):
        Pricing.load(bad)
    bad.write_text('{"models": {"a": {"usd_per_image": "x"}}}')
    with pytest.raises(ConfigError):
        Pricing.load(bad)
    with pytest.raises(ConfigError, match="not found"):
        Pricing.load(tmp_path / "missing.json")


def _e(model: str, hit: bool, cost: float | None, ok: bool = True, lat: float = 0.5) -> LedgerEntry:
    return LedgerEntry("k", model, lat, ok, hit, cost, "independent", "s", 1, None if ok else "x")


def test_summary_per_model_and_session(tmp_path: Path) -> None:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        led.start_session("first")
        led.record_many([_e("a", False, 0.04), _e("a", False, 0.04), _e("u", False, None)])
        led.record_many([_e("a", False, None, ok=False, lat=1.5)])
        first = {r.model: r for r in led.summary()}
        assert first["a"].requests == 3 and first["a"].calls == 3 and first["a"].hits == 0
        assert first["a"].failures == 1
        assert first["a"].cost_usd is None and first["a"].unknown_cost == 1
        assert first["a"].mean_latency_s == pytest.approx((0.5 + 0.5 + 1.5) / 3)
        assert first["u"].cost_usd is None  # unknown, never zero
        led.start_session("second")
        led.record_many([_e("a", True, 0.0), _e("a", True, 0.0)])
        second = {r.model: r for r in led.summary()}
        assert set(second) == {"a"}
        assert (second["a"].hits, second["a"].calls, second["a"].cost_usd) == (2, 0, 0.0)
        assert second["a"].mean_latency_s is None
        every = {r.model: r for r in led.summary(all_sessions=True)}
        assert every["a"].requests == 5


def test_open_existing(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="no ledger"):
        Ledger.open_existing(tmp_path / "ledger.sqlite")


def test_attempt_rows_begin_before_and_finish_after(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.start_session("run")
        ok = led.begin("k1", "a", condition="independent", story_id="s", scene=1, cost_usd=0.04)
        # committed before the call: another connection (another process) sees it
        with sqlite3.connect(path) as other:
            assert other.execute("SELECT status, cost_usd FROM requests").fetchall() == [
                ("started", 0.04)
            ]
        led.finish(ok, latency_s=2.0, success=True, cost_usd=0.05)
        bad = led.begin("k2", "a", cost_usd=0.04)
        led.finish(bad, latency_s=1.0, success=False, cost_usd=None, error="HTTP 500")
        led.begin("k3", "a", cost_usd=0.04)  # the process dies during this call
        led.record_many([_e("a", True, 0.0)])
        (row,) = led.summary()
        assert (row.requests, row.hits, row.calls, row.failures, row.interrupted) == (4, 1, 3, 1, 1)
        assert row.mean_latency_s == pytest.approx(1.5)  # finished calls only
        assert row.cost_usd is None and row.unknown_cost == 1  # the failure's cost is unknown
        assert led.called_keys() == {"k1", "k2", "k3"}


def test_interrupted_call_keeps_its_list_price(tmp_path: Path) -> None:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        led.begin("k", "free", cost_usd=0.0)
        led.begin("k", "paid", cost_usd=0.04)
        rows = {r.model: r for r in led.summary()}
        assert (rows["free"].interrupted, rows["free"].cost_usd) == (1, 0.0)
        assert rows["paid"].cost_usd == pytest.approx(0.04)  # assumed charged, not zero


def test_ledger_written_before_attempts_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sessions (session INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT)")
        db.execute(
            "CREATE TABLE requests (session INTEGER NOT NULL, key TEXT NOT NULL, model TEXT NOT "
            "NULL, condition TEXT, story_id TEXT, scene INTEGER, latency_s REAL NOT NULL, success "
            "INTEGER NOT NULL, cache_hit INTEGER NOT NULL, cost_usd REAL, error TEXT)"
        )
        db.execute("INSERT INTO sessions (label) VALUES ('old')")
        db.execute(
            "INSERT INTO requests VALUES (1, 'k', 'a', NULL, NULL, NULL, 0.5, 0, 0, NULL, 'x')"
        )
    db.close()
    with Ledger.open_existing(path) as led:
        (row,) = led.summary()
        assert (row.calls, row.failures, row.interrupted) == (1, 1, 0)


def _write_rows(path: str, n: int) -> None:
    led = Ledger(path)
    led.session = 1
    for i in range(n):
        led.finish(led.begin(f"k{i}", "a", cost_usd=0.0), latency_s=0.1, success=True, cost_usd=0.0)
    led.close()


def test_several_processes_write_one_ledger(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.start_session("run")
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(3) as pool:
            pool.starmap(_write_rows, [(str(path), 40)] * 3)
        (row,) = led.summary()
        assert (row.requests, row.calls, row.interrupted, row.failures) == (120, 120, 0, 0)
