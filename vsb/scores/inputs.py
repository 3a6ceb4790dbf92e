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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vsb.errors import InputError, RunError
from vsb.fsio import load_json
from vsb.story.models import DIMENSIONS
from vsb.tables import iter_rows, read_columns, requirements_file, signals_file, unit, where
from vsb.tables.columns import REQUIREMENT_KEY, SIGNAL_KEY, UniqueKeys


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

    def view(self, keep: list[bool]) -> RequirementRows:
        """``subset`` for reading only: this very object when every flag is true (no copy of
        the columns), else the subset."""
        if len(keep) == len(self) and all(keep):
            return self
        return self.subset(keep)

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


def codes(column: Sequence[Any], index: Mapping[Any, int]) -> np.ndarray:
    """``index[value]`` of every entry of a column, as an int64 array (a C-speed map, for
    the bincounts of scoring; a value ``index`` lacks raises ``KeyError``)."""
    return np.fromiter(map(index.__getitem__, column), dtype=np.int64, count=len(column))


def equals(column: Sequence[Any], value: Any) -> np.ndarray:
    """Per entry: whether it equals ``value`` (a bool array, C speed)."""
    return np.fromiter(map(value.__eq__, column), dtype=bool, count=len(column))


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


def _first_problem(path: Path, suspects: set[int]) -> None:
    """``InputError`` naming the first of the ``suspects`` (0-based rows) that breaks a rule
    of ``_requirement_problem``: one pass over the file."""
    for i, (n, obj) in enumerate(iter_rows(path)):
        if i in suspects and (problem := _requirement_problem(obj)) is not None:
            raise InputError(problem, file=path, location=where(path, n))


def _requirement_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with one requirement row (None: nothing)."""
    missing = [k for k in _REQ_KEYS if k not in obj]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    if obj["dimension"] not in DIMENSIONS:
        return f"unknown dimension {obj['dimension']!r}"
    if obj["source"] not in ("prompt", "memory"):
        return f"unknown source {obj['source']!r}"
    if type(obj["scene"]) is not int and not str(obj["scene"]).isdigit():
        return "'scene' must be a whole number"
    if not isinstance(obj["passed"], bool):
        return "'passed' must be true or false"
    verdict = row_verdict(obj)
    if verdict not in VERDICTS:
        return f"unknown verdict {verdict!r} (expected one of {', '.join(VERDICTS)})"
    if obj["passed"] != (verdict == "passed"):
        return f"'passed' must be true exactly when verdict is 'passed' (verdict {verdict!r})"
    return None


def _suspects(cols: dict[str, list[Any]], verdicts: list[str]) -> set[int]:
    """Rows that may break a rule of ``_requirement_problem`` (a superset, found at C speed
    column by column; each is then checked as a row)."""
    bad: set[int] = set()

    def where(col: list[Any], ok: Callable[[Any], bool]) -> None:
        try:
            values = set(col)
        except TypeError:  # a list or an object in the column: compare by repr
            col = [x if isinstance(x, str | int | float | None) else repr(x) for x in col]
            values = set(col)
        wrong = {x for x in values if not ok(x)}
        if wrong:
            bad.update(i for i, x in enumerate(col) if x in wrong)

    for k in ("model", "condition", "story_id"):
        where(cols[k], lambda x: x is not None)
    where(cols["scene"], lambda x: type(x) is int)
    where(cols["dimension"], lambda x: x in DIMENSIONS)  # None is in neither
    where(cols["source"], lambda x: x in ("prompt", "memory"))
    where(cols["passed"], lambda x: x is True or x is False)
    where(verdicts, lambda x: x in VERDICTS)
    bad.update(
        i
        for i, (p, v) in enumerate(zip(cols["passed"], verdicts, strict=True))
        if p is not (v == "passed")
    )
    return bad


_REQ_COLUMNS = (
    *_REQ_KEYS, "req_id", "subject", "attribute", "taxonomy", "failure", "verdict",
    "evaluator", "judge_model", "expected", "observed",
)  # fmt: skip


def load_requirements(run_dir: str | Path) -> RequirementRows:
    """Read ``RUN/evaluations/requirements.parquet`` (an older run's ``.jsonl``); ``RunError``
    if absent or empty.

    Column by column: every rule is checked on whole columns, and only a row a check flags is
    read again as a row, to name the first bad one (file and line)."""
    root = require_run_dir(run_dir)
    path = requirements_file(root)
    if not path.is_file():
        raise RunError("run has no evaluations (run `vsb evaluate` first)", file=path)
    cols = read_columns(path, _REQ_COLUMNS)
    passed = cols["passed"]
    verdicts = [
        ("passed" if p else "failed") if v is None else str(v)
        for v, p in zip(cols["verdict"], passed, strict=True)
    ]
    if suspects := _suspects(cols, verdicts):
        _first_problem(path, suspects)
    if not passed:
        raise RunError(f"run has no evaluations ({path.name} is empty)", file=path)
    failure = [str(x or "") for x in cols["failure"]]
    reason = [
        not_applicable_reason({"failure": f, "observed": o}) if v == NOT_APPLICABLE else ""
        for v, f, o in zip(verdicts, failure, cols["observed"], strict=True)
    ]
    rows = RequirementRows(
        model=cols["model"],
        condition=cols["condition"],
        story_id=cols["story_id"],
        scene=list(map(int, cols["scene"])),
        dimension=cols["dimension"],
        source=cols["source"],
        subject=_text(cols["subject"], ""),
        attribute=_text(cols["attribute"], ""),
        taxonomy=_text(cols["taxonomy"], ""),
        passed=passed,
        failure=failure,
        verdict=verdicts,
        evaluator=[str(x or DEFAULT_EVALUATOR) for x in cols["evaluator"]],
        judge_model=[str(x or "") for x in cols["judge_model"]],
        reason=reason,
        expected=_text(cols["expected"], "null"),
    )
    _refuse_duplicates(rows, cols["req_id"], path)
    return rows


def _text(col: list[Any], absent: str) -> list[str]:
    """A text column: None (a field the row lacks) as ``absent``, anything else as str."""
    if set(map(type, col)) <= {str}:
        return col
    return [absent if x is None else str(x) for x in col]


def _refuse_duplicates(rows: RequirementRows, req_ids: list[Any], path: Path) -> None:
    """``InputError`` at the first row whose key (``REQUIREMENT_KEY``) an earlier row has.
    Checked on the loaded columns at C speed; only a file with a duplicate is walked."""
    cols = (rows.model, rows.condition, rows.story_id, rows.scene, req_ids, rows.evaluator,
            rows.judge_model)  # fmt: skip
    if len(set(map(hash, zip(*cols, strict=True)))) == len(rows):
        return  # (equal hashes of unequal keys only send the check the slow way)
    unique = UniqueKeys(path, REQUIREMENT_KEY, "requirement row", unit(path))
    lines = [n for n, _ in iter_rows(path)]
    for i, key in enumerate(zip(*cols, strict=True)):
        if key[4] is None:  # no req_id (older rows): told apart by what it checks
            key = (*key[:4], f"{rows.subject[i]}.{rows.attribute[i]}.{rows.dimension[i]}",
                   *key[5:])  # fmt: skip
        unique.add(key, lines[i])


_SIG_COLUMNS = (*_SIG_KEYS, "evaluator")


def load_signals(run_dir: str | Path) -> SignalRows:
    """Read ``RUN/evaluations/signals.parquet`` (an older run's ``.jsonl``; empty columns if
    there is neither); a row
    without a value (null) is left out."""
    path = signals_file(require_run_dir(run_dir))
    rows = SignalRows()
    if not path.is_file():
        return rows
    cols = read_columns(path, _SIG_COLUMNS)
    values = cols["value"]
    suspects = {i for k in _SIG_KEYS if k != "value" for i, x in enumerate(cols[k]) if x is None}
    suspects.update(
        i
        for i, v in enumerate(values)
        if type(v) is not float and (v is None or type(v) is not int)
    )
    names = [str(x) for x in cols["signal"]]
    evaluators = [
        str(e or _signal_evaluator(s)) for e, s in zip(cols["evaluator"], names, strict=True)
    ]
    keys = list(zip(cols["model"], cols["condition"], cols["story_id"], cols["scene"], names,
                    evaluators, strict=True))  # fmt: skip
    if len(set(keys)) != len(keys):
        suspects.add(len(keys))  # a duplicate: walk the file to name it
    if suspects:
        _check_signal_rows(path)
    keep = [v is not None for v in values]
    rows.model = list(itertools.compress(cols["model"], keep))
    rows.condition = list(itertools.compress(cols["condition"], keep))
    rows.story_id = list(itertools.compress(cols["story_id"], keep))
    rows.scene = [int(k) for k in itertools.compress(cols["scene"], keep)]
    rows.signal = list(itertools.compress(names, keep))
    rows.value = [float(v) for v in itertools.compress(values, keep)]
    rows.evaluator = list(itertools.compress(evaluators, keep))
    return rows


def _check_signal_rows(path: Path) -> None:
    """The row-by-row checks of the signals table (fields, value, unique keys): the slow path,
    taken when a column check flagged a row."""
    unique = UniqueKeys(path, SIGNAL_KEY, "signal row", unit(path))
    first = unique.first
    for n, obj in iter_rows(path):
        if missing := [k for k in _SIG_KEYS if k not in obj]:
            raise InputError(
                f"missing field(s) {', '.join(missing)}", file=path, location=where(path, n)
            )
        key = signal_key(obj)
        if first.setdefault(key, n) != n:
            unique.add(key, n)  # raises, naming both lines
        value = obj["value"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError("'value' must be a number", file=path, location=where(path, n))


@dataclass(frozen=True)
class EvaluationTables:
    """A run's evaluation tables, loaded once (``load_tables``) and handed to every stage of
    ``vsb release build`` that reads them (score, validate) instead of each re-reading them."""

    root: Path
    requirements: RequirementRows
    signals: SignalRows


def load_tables(run_dir: str | Path) -> EvaluationTables:
    """Read and check ``RUN/evaluations/``'s requirement and signal rows (see
    ``load_requirements``, ``load_signals``)."""
    root = require_run_dir(run_dir)
    return EvaluationTables(root, load_requirements(root), load_signals(root))


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
