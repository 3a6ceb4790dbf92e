"""Synthetic requirement rows and run directories with known answers (scores tests)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from vsb.story.models import DIMENSIONS

Row = dict[str, Any]


def req_row(
    model: str,
    condition: str,
    story: str,
    scene: int,
    dimension: str,
    source: str,
    passed: bool,
    *,
    subject: str = "Ana",
    attribute: str = "top",
    taxonomy: str = "clothing_change",
    failure: str | None = None,
    evaluator: str = "rules",
    verdict: str | None = None,
    judge_model: str | None = None,
) -> Row:
    """One requirements.jsonl row (failure defaults to the taxonomy when the check fails).

    ``verdict`` (when given) overrides ``passed`` (passed iff verdict == "passed");
    ``verdict``/``judge_model`` are left out when None, like rows of the first format.
    """
    if verdict is not None:
        passed = verdict == "passed"
    row: Row = {
        "model": model,
        "condition": condition,
        "story_id": story,
        "scene": scene,
        "req_id": f"s{scene}.{subject}.{attribute}.{dimension}.{source}",
        "dimension": dimension,
        "taxonomy": taxonomy,
        "source": source,
        "subject": subject,
        "attribute": attribute,
        "expected": json.dumps("x"),
        "observed": json.dumps("x" if passed else "y"),
        "passed": passed,
        "failure": "" if passed else (failure if failure is not None else taxonomy),
        "evaluator": evaluator,
    }
    if verdict is not None:
        row["verdict"] = verdict
    if judge_model is not None:
        row["judge_model"] = judge_model
    return row


def write_run(
    root: Path,
    rows: Iterable[Row],
    *,
    models: list[str] | None = None,
    conditions: list[str] | None = None,
) -> Path:
    """A run directory holding manifest.json and evaluations/requirements.jsonl."""
    rows = list(rows)
    (root / "evaluations").mkdir(parents=True, exist_ok=True)
    with open(root / "evaluations" / "requirements.jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    manifest = {
        "version": "1.0",
        "suite": "suite",
        "suite_sha256": "0" * 64,
        "models": models or sorted({r["model"] for r in rows}),
        "conditions": conditions or sorted({r["condition"] for r in rows}),
        "seed": 0,
        "prompt_style": "plain",
        "images": 0,
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def simulated_rows(
    rng: np.random.Generator,
    p_fail: dict[tuple[str, str], float],
    n_stories: int = 12,
    n_scenes: int = 3,
) -> list[Row]:
    """Rows for every (model, condition) in ``p_fail``: each story has every dimension except
    ``causal`` (only even stories); memory checks fail with the given probability."""
    out: list[Row] = []
    for (model, cond), p in p_fail.items():
        for s in range(n_stories):
            story = f"st{s:02d}"
            for k in range(1, n_scenes + 1):
                for d in DIMENSIONS:
                    if d == "causal" and s % 2:
                        continue
                    source = "prompt" if k == 1 else "memory"
                    q = p if source == "memory" else p / 4
                    out.append(req_row(model, cond, story, k, d, source, bool(rng.random() >= q)))
    return out
