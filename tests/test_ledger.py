"""The cost ledger and the price list: unknown prices stay unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.errors import ConfigError, RunError
from vsb.ledger import DEFAULT_PRICING, Ledger, LedgerEntry, Pricing, request_cost


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
