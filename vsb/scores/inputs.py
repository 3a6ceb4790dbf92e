"""Reading a run's evaluation tables (``RUN/evaluations/``, through ``vsb.tables``) into
column lists.

Only the columns scoring and validation need are kept; every row is checked for them and a
bad row raises ``InputError`` naming the file and line. So does a second row with the key of
an earlier one (issue #23: a verdict counted twice, or under another condition, would move
every score): a requirement row's key is (model, condition, story, scene, requirement,
evaluator, judge model), a signal row's (model, condition, story, scene, signal, evaluator).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.errors import InputError, RunError
from vsb.fsio import UniqueKeys, load_json
from vsb.story.models import DIMENSIONS
from vsb.tables import iter_rows, requirements_file, signals_file, unit, where


@dataclass
class RequirementRows:
    """The requirements table as parallel column lists (one entry per image × requirement)."""

    model: list[str] = field(default_factory=list)
    condition: list[str] = field(default_factory=list)
    story_id: list[str] = field(default_factory=list)
    scene: list[int] = field(default_factory=list)
    dimension: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    subject: list[str] = field(default_factory=list)
    attribute: list[str] = field(default_factory=list)
    taxonomy: list[str] = field(default_factory=list)
    passed: list[bool] = field(default_factory=list)
    failure: list[str] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)
    evaluator: list[str] = field(default_factory=list)
    judge_model: list[str] = field(default_factory=list)
    reason: list[str] = field(default_factory=list)
    """Why the evaluator did not apply ('' unless the verdict is not_applicable)."""
    expected: list[str] = field(default_factory=list)
    """The requirement's expected value as JSON text (validation's oracle truth needs it)."""

    def __len__(self) -> int:
        return len(self.passed)

    def append(self, row: dict[str, Any]) -> None:
        """Add one row (already checked)."""
        self.model.append(row["model"])
        self.condition.append(row["condition"])
        self.story_id.append(row["story_id"])
        self.scene.append(int(row["scene"]))
        self.dimension.append(row["dimension"])
        self.source.append(row["source"])
        self.subject.append(str(row.get("subject", "")))
        self.attribute.append(str(row.get("attribute", "")))
        self.taxonomy.append(str(row.get("taxonomy", "")))
        self.passed.append(bool(row["passed"]))
        self.failure.append(str(row.get("failure") or ""))
        self.verdict.append(row_verdict(row))
        self.evaluator.append(str(row.get("evaluator") or DEFAULT_EVALUATOR))
        self.judge_model.append(str(row.get("judge_model") or ""))
        self.reason.append(not_applicable_reason(row) if self.verdict[-1] == NOT_APPLICABLE else "")
        self.expected.append(str(row.get("expected", "null")))

    def subset(self, keep: list[bool]) -> RequirementRows:
        """The rows where ``keep`` is true (same columns)."""
        out = RequirementRows()
        for name in self.__dataclass_fields__:
            col = getattr(self, name)
            if len(col) != len(keep):
                raise ValueError(f"subset: {len(keep)} flags for {len(col)} rows")
            setattr(out, name, list(itertools.compress(col, keep)))  # 2x a comprehension
        return out

    def evaluators(self) -> list[str]:
        """The evaluators present, in order of first appearance."""
        return list(dict.fromkeys(self.evaluator))


@dataclass
class SignalRows:
    """The signals table as parallel column lists (one entry per frame × signal)."""

    model: list[str] = field(default_factory=list)
    condition: list[str] = field(default_factory=list)
    story_id: list[str] = field(default_factory=list)
    scene: list[int] = field(default_factory=list)
    signal: list[str] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    evaluator: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.value)


#: Verdicts of a requirement row (docs/CONTRACTS.md); ``passed`` is true iff verdict == "passed".
VERDICTS: tuple[str, ...] = (
    "passed", "failed", "unsure", "not_applicable", "parse_failure", "unreadable",
)  # fmt: skip
#: The evaluator of rows written before the evaluator axis existed.
DEFAULT_EVALUATOR = "rules"
NOT_APPLICABLE = "not_applicable"


def not_applicable_reason(row: dict[str, Any]) -> str:
    """Why a not_applicable row was not judged: its ``failure`` text, else its ``observed``
    value when that is a string or holds a ``reason`` ('' if neither says)."""
    failure = row.get("failure")
    if isinstance(failure, str) and failure:
        return failure
    observed = row.get("observed")
    if isinstance(observed, str):
        with contextlib.suppress(ValueError, RecursionError):
            observed = json.loads(observed)
    if isinstance(observed, dict):
        observed = observed.get("reason")
    return observed if isinstance(observed, str) else ""


def row_verdict(row: dict[str, Any]) -> str:
    """A row's verdict; rows written before verdicts existed read it from ``passed``."""
    v = row.get("verdict")
    if v is None:
        return "passed" if row.get("passed") else "failed"
    return str(v)


def _signal_evaluator(signal: str) -> str:
    """The evaluator of a signal row written before signal rows named it."""
    return signal.split("_", 1)[0] if "_" in signal else signal


_REQ_KEYS = ("model", "condition", "story_id", "scene", "dimension", "source", "passed")
#: The fields that identify a requirement row / a signal row (each key appears once).
REQUIREMENT_KEY = (
    "model", "condition", "story_id", "scene", "req_id", "evaluator", "judge_model",
)  # fmt: skip
SIGNAL_KEY = ("model", "condition", "story_id", "scene", "signal", "evaluator")
_SIG_KEYS = ("model", "condition", "story_id", "scene", "signal", "value")


def signal_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """The key of a signal row (``SIGNAL_KEY``)."""
    signal = str(row["signal"])
    return (
        row["model"], row["condition"], row["story_id"], row["scene"], signal,
        str(row.get("evaluator") or _signal_evaluator(signal)),
    )  # fmt: skip


def require_run_dir(run_dir: str | Path) -> Path:
    """The run directory as a Path; ``RunError`` if it does not exist."""
    p = Path(run_dir)
    if not p.is_dir():
        raise RunError("run directory not found", file=p)
    return p


def _check_keys(obj: dict[str, Any], keys: tuple[str, ...], path: Path, n: int) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        raise InputError(
            f"missing field(s) {', '.join(missing)}", file=path, location=where(path, n)
        )


def load_requirements(run_dir: str | Path) -> RequirementRows:
    """Read ``RUN/evaluations/requirements.parquet`` (or an older run's ``.jsonl``);
    ``RunError`` if absent or empty."""
    root = require_run_dir(run_dir)
    path = requirements_file(root)
    if not path.is_file():
        raise RunError("run has no evaluations (run `vsb evaluate` first)", file=path)
    rows = RequirementRows()
    dims = set(DIMENSIONS)
    req_ids: list[Any] = []
    lines: list[int] = []
    for n, obj in iter_rows(path):
        _check_keys(obj, _REQ_KEYS, path, n)
        req_ids.append(obj.get("req_id"))
        lines.append(n)
        if obj["dimension"] not in dims:
            raise InputError(
                f"unknown dimension {obj['dimension']!r}", file=path, location=where(path, n)
            )
        if obj["source"] not in ("prompt", "memory"):
            raise InputError(
                f"unknown source {obj['source']!r}", file=path, location=where(path, n)
            )
        if not isinstance(obj["passed"], bool):
            raise InputError("'passed' must be true or false", file=path, location=where(path, n))
        verdict = row_verdict(obj)
        if verdict not in VERDICTS:
            raise InputError(
                f"unknown verdict {verdict!r} (expected one of {', '.join(VERDICTS)})",
                file=path,
                location=where(path, n),
            )
        if obj["passed"] != (verdict == "passed"):
            raise InputError(
                f"'passed' must be true exactly when verdict is 'passed' (verdict {verdict!r})",
                file=path,
                location=where(path, n),
            )
        rows.append(obj)
    if not len(rows):
        raise RunError(f"run has no evaluations ({path.name} is empty)", file=path)
    _refuse_duplicates(rows, req_ids, lines, path)
    return rows


def _refuse_duplicates(
    rows: RequirementRows, req_ids: list[Any], lines: list[int], path: Path
) -> None:
    """``InputError`` at the first row whose key (``REQUIREMENT_KEY``) an earlier row has.
    Checked on the loaded columns at C speed; only a file with a duplicate is walked."""
    cols = (rows.model, rows.condition, rows.story_id, rows.scene, req_ids, rows.evaluator,
            rows.judge_model)  # fmt: skip
    if len(set(map(hash, zip(*cols, strict=True)))) == len(rows):
        return  # (equal hashes of unequal keys only send the check the slow way)
    unique = UniqueKeys(path, REQUIREMENT_KEY, "requirement row", unit(path))
    for i, key in enumerate(zip(*cols, strict=True)):
        if key[4] is None:  # no req_id (older rows): told apart by what it checks
            key = (*key[:4], f"{rows.subject[i]}.{rows.attribute[i]}.{rows.dimension[i]}",
                   *key[5:])  # fmt: skip
        unique.add(key, lines[i])


def load_signals(run_dir: str | Path) -> SignalRows:
    """Read ``RUN/evaluations/signals.parquet`` (or an older run's ``.jsonl``; empty columns
    if there is neither)."""
    path = signals_file(require_run_dir(run_dir))
    rows = SignalRows()
    if not path.is_file():
        return rows
    unique = UniqueKeys(path, SIGNAL_KEY, "signal row", unit(path))
    first = unique.first
    for n, obj in iter_rows(path):
        _check_keys(obj, _SIG_KEYS, path, n)
        key = signal_key(obj)
        if first.setdefault(key, n) != n:
            unique.add(key, n)  # raises, naming both lines
        value = obj["value"]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError("'value' must be a number", file=path, location=where(path, n))
        rows.model.append(obj["model"])
        rows.condition.append(obj["condition"])
        rows.story_id.append(obj["story_id"])
        rows.scene.append(int(obj["scene"]))
        rows.signal.append(str(obj["signal"]))
        rows.value.append(float(value))
        rows.evaluator.append(str(obj.get("evaluator") or _signal_evaluator(str(obj["signal"]))))
    return rows


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """``RUN/manifest.json`` as a dict ({} if absent); ``InputError`` if unreadable."""
    path = run_dir / "manifest.json"
    if not path.is_file():
        return {}
    obj = load_json(path)
    return obj if isinstance(obj, dict) else {}


def release_name(run_dir: Path) -> str | None:
    """The release name from a ``MANIFEST.json`` in the run directory or its parent."""
    for d in (run_dir, run_dir.parent):
        path = d / "MANIFEST.json"
        if path.is_file():
            try:
                obj = load_json(path)
            except InputError:
                return None
            name = obj.get("release") if isinstance(obj, dict) else None
            return str(name) if name is not None else None
    return None
