"""``vsb evaluate``: run the registered evaluators over a run directory.

Reads ``RUN/manifest.json``, ``RUN/records.jsonl``, ``RUN/images/…`` and ``RUN/suite/``
(docs/CONTRACTS.md) and writes ``RUN/evaluations/requirements.{jsonl,csv}``,
``RUN/evaluations/signals.{jsonl,csv}`` and ``RUN/evaluations/manifest.json`` atomically.
Work is split into (model, condition, story) sequences, run in a fork process pool when
``workers > 1``. Progress goes to ``progress(done_images, total_images)``; nothing prints.
"""

from __future__ import annotations

import csv
import io
import json
import multiprocessing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsb.errors import InputError, RunError
from vsb.evaluators.decode import load_indices
from vsb.evaluators.registry import DEFAULT_EVALUATORS, EvaluatorOutput, Frame, get_evaluator
from vsb.fsio import atomic_write_json, atomic_write_text, iter_jsonl
from vsb.story.io import load_suite
from vsb.story.models import Story

EVALUATIONS_FORMAT_VERSION = "1.0"
ProgressFn = Callable[[int, int], None]

REQUIREMENT_COLUMNS: tuple[str, ...] = (
    "model", "condition", "story_id", "scene", "req_id", "dimension", "taxonomy", "source",
    "subject", "attribute", "expected", "observed", "passed", "failure", "evaluator",
)  # fmt: skip
SIGNAL_COLUMNS: tuple[str, ...] = ("model", "condition", "story_id", "scene", "signal", "value")


@dataclass(frozen=True)
class _Task:
    model: str
    condition: str
    story_id: str
    images: tuple[tuple[int, str | None], ...]  # (scene, absolute path or None if failed)


@dataclass(frozen=True)
class EvaluationResult:
    """What an evaluation wrote."""

    out_dir: Path
    images: int
    requirements: int
    passed: int
    signals: int


def _read_records(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "records.jsonl"
    if not path.is_file():
        raise RunError("run has no records (run `vsb run` first)", file=path)
    records = []
    for n, rec in iter_jsonl(path):
        missing = [k for k in ("model", "condition", "story_id", "scene") if k not in rec]
        if missing:
            raise InputError(
                f"missing field(s) {', '.join(missing)}", file=path, location=f"line {n}"
            )
        records.append(rec)
    if not records:
        raise RunError("run has no records (records.jsonl is empty)", file=path)
    return records


def _tasks(run_dir: Path, records: list[dict[str, Any]], stories: dict[str, Story]) -> list[_Task]:
    groups: dict[tuple[str, str, str], list[tuple[int, str | None]]] = {}
    for rec in records:
        sid = rec["story_id"]
        if sid not in stories:
            raise RunError(
                f"record names story {sid!r}, which is not in the run's suite",
                file=run_dir / "suite",
            )
        path: str | None = None
        if rec.get("error") is None:
            p = run_dir / str(rec.get("path", ""))
            if not rec.get("path") or not p.is_file():
                raise RunError("image listed in records.jsonl is missing", file=p)
            path = str(p)
        groups.setdefault((rec["model"], rec["condition"], sid), []).append(
            (int(rec["scene"]), path)
        )
    return [_Task(m, c, s, tuple(sorted(images))) for (m, c, s), images in sorted(groups.items())]


# Shared with forked workers (set before the pool starts; never pickled).
_SHARED: tuple[dict[str, Story], tuple[str, ...]] | None = None


def _run_task(task: _Task) -> EvaluatorOutput:
    assert _SHARED is not None
    stories, names = _SHARED
    story = stories[task.story_id]
    frames = [
        Frame(task.model, task.condition, task.story_id, k, None if p is None else load_indices(p))
        for k, p in task.images
    ]
    out = EvaluatorOutput()
    for name in names:
        part = get_evaluator(name).evaluate_story(story, frames)
        out.requirements += part.requirements
        out.signals += part.signals
    return out


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)


def _csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def evaluate_run(
    run_dir: str | Path,
    *,
    progress: ProgressFn | None = None,
    workers: int = 1,
    evaluators: Sequence[str] = DEFAULT_EVALUATORS,
) -> EvaluationResult:
    """Evaluate every image of a run directory and write ``RUN/evaluations/``."""
    global _SHARED
    root = Path(run_dir)
    if not root.is_dir():
        raise RunError("run directory not found", file=root)
    if not (root / "manifest.json").is_file():
        raise RunError("run is incomplete (no manifest.json)", file=root / "manifest.json")
    names = tuple(evaluators)
    for name in names:
        get_evaluator(name)  # unknown names fail before any work
    suite_dir = root / "suite"
    if not suite_dir.is_dir():
        raise RunError("run has no copy of its suite", file=suite_dir)
    stories = {s.id: s for s in load_suite(suite_dir)}
    records = _read_records(root)
    tasks = _tasks(root, records, stories)
    total = sum(len(t.images) for t in tasks)
    done = 0
    req_rows: list[dict[str, Any]] = []
    sig_rows: list[dict[str, Any]] = []
    _SHARED = (stories, names)
    try:
        if workers > 1 and len(tasks) > 1:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(workers) as pool:
                for task, out in zip(tasks, pool.imap(_run_task, tasks), strict=True):
                    req_rows += out.requirements
                    sig_rows += out.signals
                    done += len(task.images)
                    if progress:
                        progress(done, total)
        else:
            for task in tasks:
                out = _run_task(task)
                req_rows += out.requirements
                sig_rows += out.signals
                done += len(task.images)
                if progress:
                    progress(done, total)
    finally:
        _SHARED = None
    out_dir = root / "evaluations"
    atomic_write_text(out_dir / "requirements.jsonl", _jsonl(req_rows))
    atomic_write_text(out_dir / "requirements.csv", _csv(req_rows, REQUIREMENT_COLUMNS))
    atomic_write_text(out_dir / "signals.jsonl", _jsonl(sig_rows))
    atomic_write_text(out_dir / "signals.csv", _csv(sig_rows, SIGNAL_COLUMNS))
    result = EvaluationResult(
        out_dir=out_dir,
        images=sum(p is not None for t in tasks for _, p in t.images),
        requirements=len(req_rows),
        passed=sum(bool(r["passed"]) for r in req_rows),
        signals=len(sig_rows),
    )
    atomic_write_json(
        out_dir / "manifest.json",
        {
            "version": EVALUATIONS_FORMAT_VERSION,
            "evaluators": list(names),
            "images": result.images,
            "requirements": result.requirements,
            "passed": result.passed,
            "signals": result.signals,
        },
    )
    return result
