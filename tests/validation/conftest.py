"""A small synthetic simulator run with a known oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def _req(story: str, scene: int, subject: str, attribute: str, source: str, passed: bool,
         taxonomy: str, failure: str = "", model: str = "m") -> dict[str, Any]:  # fmt: skip
    return {
        "model": model, "condition": "structured_memory", "story_id": story, "scene": scene,
        "req_id": f"s{scene}.{subject}.{attribute}", "dimension": "clothing",
        "taxonomy": taxonomy, "source": source, "subject": subject, "attribute": attribute,
        "expected": "1", "observed": "1", "passed": passed,
        "failure": failure or ("" if passed else taxonomy), "evaluator": "rules",
    }  # fmt: skip


def _fault(story: str, scene: int, subject: str, attribute: str, taxonomy: str,
           visual: bool = True, model: str = "m") -> dict[str, Any]:  # fmt: skip
    return {
        "model": model, "condition": "structured_memory", "story_id": story, "scene": scene,
        "subject": subject, "attribute": attribute, "true_value": "a", "rendered_value": "b",
        "taxonomy": taxonomy, "dimension": "clothing", "visual": visual, "origin": "new",
    }  # fmt: skip


def _frame(story: str, scene: int, fails: dict[tuple[str, str], str] | None = None,
           model: str = "m") -> list[dict[str, Any]]:  # fmt: skip
    """Five checks of one frame; ``fails`` maps (subject, attribute) -> failure label."""
    checks = [
        ("Ana", "present", "prompt", "character_missing"),
        ("Ana", "top", "memory", "clothing_change"),
        ("Ana", "hair", "memory", "identity_drift"),
        ("scene", "order", "memory", "order_swap"),
        ("lamp", "state", "memory", "wrong_state"),
    ]
    fails = fails or {}
    return [
        _req(story, scene, s, a, src, (s, a) not in fails, tax, fails.get((s, a), ""), model)
        for s, a, src, tax in checks
    ]


@pytest.fixture
def judge_run(tmp_path: Path) -> Path:
    """Frames (story, scene) of model m:

    * s1/1 clean; s1/2 Ana missing: present fails plus knock-ons top, hair (label
      character_missing) and the order check (label character_missing); s1/3 hair fault,
      detected;
    * s2/1 top fault NOT detected; s2/2 a false alarm on lamp state (no fault);
      s2/3 object colour fault on the lamp (oracle attribute ``color``): its state check
      fails with label object_color_change, which matches by taxonomy;
    * a non-visual fault on s1/1 that must be ignored.
    """
    rows = [
        *_frame("s1", 1),
        *_frame("s1", 2, {("Ana", "present"): "character_missing",
                          ("Ana", "top"): "character_missing",
                          ("Ana", "hair"): "character_missing",
                          ("scene", "order"): "character_missing"}),
        *_frame("s1", 3, {("Ana", "hair"): "identity_drift"}),
        *_frame("s2", 1),
        *_frame("s2", 2, {("lamp", "state"): "wrong_state"}),
        *_frame("s2", 3, {("lamp", "state"): "object_color_change"}),
    ]  # fmt: skip
    faults = [
        _fault("s1", 2, "Ana", "present", "character_missing"),
        _fault("s1", 3, "Ana", "hair_color", "identity_drift"),
        _fault("s2", 1, "Ana", "top", "clothing_change"),
        _fault("s2", 3, "lamp", "color", "object_color_change"),
        _fault("s1", 1, "lamp", "holder", "wrong_holder", visual=False),
    ]
    signals = []
    for story, scene, v in [("s1", 1, 0.9), ("s1", 2, 0.2), ("s1", 3, 0.5),
                            ("s2", 1, 0.5), ("s2", 2, 0.8), ("s2", 3, 0.9)]:  # fmt: skip
        signals.append({"model": "m", "condition": "structured_memory", "story_id": story,
                        "scene": scene, "signal": "pairwise_global", "value": v})  # fmt: skip
    root = tmp_path / "run"
    (root / "evaluations").mkdir(parents=True)
    (root / "oracle").mkdir()
    for name, items in (
        ("evaluations/requirements.jsonl", rows),
        ("evaluations/signals.jsonl", signals),
        ("oracle/faults.jsonl", faults),
    ):
        (root / name).write_text("".join(json.dumps(x) + "\n" for x in items))
    return root
