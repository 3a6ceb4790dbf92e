"""Everything the site shows, read from a frozen release's files (never typed in).

A release directory holds ``MANIFEST.json`` (name, root hash), ``scores/scores.json``,
``validation/judge.json`` (optional), ``evaluations/requirements.parquet`` (``.jsonl`` in
older releases; ``vsb.tables`` reads either), ``records.jsonl``
(image paths) and ``suite/`` (the stories). The sealed ``oracle/`` is never read here.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from vsb.errors import InputError, ReleaseError
from vsb.fsio import iter_jsonl, load_model
from vsb.release.manifest import Manifest, load_manifest
from vsb.scores.models import ScoresReport
from vsb.story.io import load_suite
from vsb.story.models import Story
from vsb.tables import is_legacy, read_columns, requirements_file, unit, where
from vsb.tables.columns import UniqueKeys
from vsb.validation.models import JudgeReport
from vsb.validation.reference import REFERENCE_FILE, ReferenceReport
from vsb.validation.vina.validity import VALIDITY_JSON, VinaValidityReport

SCORES_FILE = "scores/scores.json"
JUDGE_FILE = "validation/judge.json"
RECORDS_FILE = "records.jsonl"
SUITE_DIR = "suite"


class Check(NamedTuple):
    """One evaluated (image, requirement): did it pass, and what was seen."""

    passed: bool
    observed: str
    failure: str


#: (story_id, condition, scene) -> req_id -> model -> Check
Checks = dict[tuple[str, str, int], dict[str, dict[str, Check]]]


@dataclass
class SiteData:
    """A release as the templates see it."""

    root: Path
    manifest: Manifest
    scores: ScoresReport
    judge: JudgeReport | None
    stories: list[Story]
    #: (model, condition, story_id, scene) -> image path relative to the release (None: failed)
    images: dict[tuple[str, str, str, int], str | None]
    #: (model, condition, story_id, scene) -> adapter error message
    errors: dict[tuple[str, str, str, int], str]
    checks: Checks
    #: (model, condition) -> failure label -> count
    failures: dict[tuple[str, str], Counter[str]]
    slugs: dict[str, str] = field(default_factory=dict)
    #: The whole report (every evaluator); ``scores`` is the primary evaluator's view.
    all_scores: ScoresReport | None = None
    #: model -> the ``cost_usd`` of each of its records (None: unknown), in record order.
    costs: dict[str, list[float | None]] = field(default_factory=dict)
    #: The reference judges' rows (validation/reference_judges.json), when the release has them.
    reference: ReferenceReport | None = None
    #: VinaBench's metrics against the oracle (validation/vinabench_validity.json), if any.
    vinabench: VinaValidityReport | None = None

    @property
    def models(self) -> list[str]:
        return list(self.scores.models)

    @property
    def conditions(self) -> list[str]:
        """Conditions, primary first."""
        primary = self.scores.primary_condition
        return sorted(self.scores.conditions, key=lambda c: c != primary)


def model_slug(name: str) -> str:
    """A file-name-safe, collision-free slug: the name itself when it is already safe, else a
    cleaned name plus 8 hex digits of its SHA-256."""
    if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,80}", name) and ".." not in name:
        return name
    clean = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "model"
    return f"{clean}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _read_model(path: Path, model: type[BaseModel]) -> Any:
    try:
        return load_model(path, model, f"does not match {model.__name__}")
    except FileNotFoundError as err:
        raise ReleaseError("release is missing this file", file=path) from err


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [obj for _, obj in iter_jsonl(path)]


def scores_view(scores: ScoresReport, evaluator: str) -> ScoresReport:
    """The report restricted to one evaluator's rows (what one leaderboard shows)."""
    return scores.model_copy(
        update={
            "scores": [r for r in scores.scores if r.evaluator == evaluator],
            "stories": [r for r in scores.stories if r.evaluator == evaluator],
            "comparisons": [r for r in scores.comparisons if r.evaluator == evaluator],
            "rank_stability": [r for r in scores.rank_stability if r.evaluator == evaluator],
            "not_applicable": [r for r in scores.not_applicable if r.evaluator == evaluator],
            "horizon": [r for r in scores.horizon if r.evaluator == evaluator],
            "primary_evaluator": evaluator,
        }
    )


#: The requirement columns the site reads (no other column is loaded).
_CHECK_COLUMNS = (
    "evaluator", "verdict", "story_id", "condition", "scene", "model", "req_id", "judge_model",
    "passed", "observed", "failure",
)  # fmt: skip


def _load_checks(path: Path, evaluator: str) -> tuple[Checks, dict[tuple[str, str], Counter[str]]]:
    """The checks of one evaluator (not_applicable rows left out) and each (model, condition)'s
    failure labels, from the release's requirements table. Read column by column: from
    Parquet, equal text cells share one string and no row is built as a dict."""
    checks: Checks = defaultdict(lambda: defaultdict(dict))
    failures: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    cols = read_columns(path, _CHECK_COLUMNS)
    for name in ("story_id", "condition", "scene", "model", "req_id"):
        if None in cols[name]:
            n = cols[name].index(None) + 1
            raise InputError(f"bad requirement row: no {name}", file=path, location=where(path, n))
    if is_legacy(path):  # JSON text gives a new str per cell: share the equal ones
        for name in ("story_id", "condition", "model", "req_id", "observed", "failure"):
            cols[name] = [sys.intern(v) if isinstance(v, str) else v for v in cols[name]]
    collided = False  # a (story, condition, scene, requirement, model) seen twice
    for n, (
        ev,
        verdict,
        story,
        cond,
        scene,
        model,
        req_id,
        _judge,
        passed,
        observed,
        fail,
    ) in enumerate(zip(*(cols[c] for c in _CHECK_COLUMNS), strict=True), 1):
        if verdict == "not_applicable" or (ev or "rules") != evaluator:
            continue
        try:
            key = (story, cond, int(scene))
        except (TypeError, ValueError) as err:
            raise InputError(
                f"bad requirement row: {err}", file=path, location=where(path, n)
            ) from err
        by_model = checks[key][req_id]
        collided = collided or model in by_model
        failure = fail or ""
        by_model[model] = Check(bool(passed), observed or "", failure)
        if not passed:
            failures[(model, cond)][failure or "unlabelled"] += 1
    if collided:  # only then is the file walked for a duplicate (the judge model too)
        fields = ("model", "story_id", "condition", "scene", "req_id", "judge_model")
        unique = UniqueKeys(path, fields, unit=unit(path))
        for n, row in enumerate(
            zip(*(cols[c] for c in ("evaluator", "verdict", *fields)), strict=True), 1
        ):
            if row[1] != "not_applicable" and (row[0] or "rules") == evaluator:
                m, s, c, k, r, j = row[2:]
                unique.add((m, s, c, int(k), r, j or ""), n)
    return checks, failures


def read_records(
    root: Path,
) -> tuple[
    dict[tuple[str, str, str, int], str | None],
    dict[tuple[str, str, str, int], str],
    dict[str, list[float | None]],
]:
    """From the release's records: each frame's image path (None: no image), each failed
    frame's error, and each model's per-image costs (None: unknown)."""
    images: dict[tuple[str, str, str, int], str | None] = {}
    errors: dict[tuple[str, str, str, int], str] = {}
    costs: dict[str, list[float | None]] = defaultdict(list)
    for r in _jsonl(root / RECORDS_FILE):
        key = (r["model"], r["condition"], r["story_id"], int(r["scene"]))
        images[key] = r.get("path")
        if r.get("error"):
            errors[key] = str(r["error"])
        cost = r.get("cost_usd")
        ok = isinstance(cost, int | float) and not isinstance(cost, bool)
        costs[str(r["model"])].append(float(cost) if ok and cost is not None else None)
    return images, errors, costs


def load_site_data(release_dir: str | Path) -> SiteData:
    """Read every file the site needs from a frozen release directory."""
    root = Path(release_dir)
    manifest = load_manifest(root)
    scores = _read_model(root / SCORES_FILE, ScoresReport)
    judge_path = root / JUDGE_FILE
    judge = _read_model(judge_path, JudgeReport) if judge_path.is_file() else None
    stories = load_suite(root / SUITE_DIR)
    images, errors, costs = read_records(root)
    req_path = requirements_file(root)
    if not req_path.is_file():
        raise ReleaseError("release is missing this file", file=req_path)
    full = scores
    evaluator = scores.primary_evaluator
    checks, failures = _load_checks(req_path, evaluator.split(":", 1)[0])
    scores = scores_view(full, evaluator)
    data = SiteData(root, manifest, scores, judge, stories, images, errors, checks, failures)
    data.all_scores = full
    ref_path = root / REFERENCE_FILE
    data.reference = _read_model(ref_path, ReferenceReport) if ref_path.is_file() else None
    vina_path = root / VALIDITY_JSON
    data.vinabench = _read_model(vina_path, VinaValidityReport) if vina_path.is_file() else None
    data.costs = dict(costs)
    slugs: dict[str, str] = {}
    for m in data.models:
        s = model_slug(m)
        if s in slugs.values():
            s = f"{s}-{hashlib.sha256(m.encode()).hexdigest()[:8]}"
        slugs[m] = s
    data.slugs = slugs
    return data
