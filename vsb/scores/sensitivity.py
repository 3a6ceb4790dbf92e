"""Prompt sensitivity: one model and condition on the same stories in two runs, compared.

The plain and ``--paraphrase`` suites of one seed hold the same stories (ids, states and
requirements) worded differently, so two runs of them pair up story by story. For every
(model, condition) that both runs evaluated, ``compare_runs`` gives the paired story-level
difference A − B of every metric (the ten dimensions, adherence, coherence, conditional
coherence and global) with its percentile bootstrap CI, the statistic of ``vsb compare``
(``vsb.scores.stats.aggregate.paired_comparisons``; bootstrap counts from
``numpy.random.default_rng(seed)``). A CI that excludes 0 says the wording moved the score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from vsb.errors import InputError, RunError
from vsb.fsio import (
    STRICT,
    canonical_json,
    load_json,
)
from vsb.scores.compare import choose_evaluator
from vsb.scores.compute import ScoringInput, load_scoring_input
from vsb.scores.inputs import RequirementRows, require_run_dir
from vsb.scores.models import PairedDiff, Resampled, RunIdentity
from vsb.scores.stats.aggregate import ALL_METRICS, paired_comparisons
from vsb.scores.stats.bootstrap import Resampling, nan_to_none
from vsb.scores.table import N_DIMS, build_story_table
from vsb.scores.write import write_report_files
from vsb.story.io import load_suite_index

SENSITIVITY_DIR = "sensitivity"
SENSITIVITY_FILE = f"{SENSITIVITY_DIR}/prompt_sensitivity.json"
_SEP = "\x1f"  # joins a run tag and a condition in the merged table (never in a name)


class _SensitivityKey(BaseModel):
    model_config = STRICT
    evaluator: str
    model: str
    condition: str


class SensitivityRow(PairedDiff, _SensitivityKey):
    """One (model, condition, metric): run A − run B over the stories both have (a is run A)."""

    p_less: float | None = Field(description="Share of resamples with Δ < 0.")
    n_stories: int = Field(ge=0)


class SensitivityReport(Resampled):
    """``prompt_sensitivity.json``: two runs of the same stories, compared cell by cell."""

    version: Literal["1.0"] = "1.0"
    run_a: RunIdentity
    run_b: RunIdentity
    evaluator: str
    cells: list[str] = Field(description="MODEL@CONDITION compared (evaluated in both runs).")
    only_a: list[str] = Field(description="MODEL@CONDITION evaluated in run A only.")
    only_b: list[str] = Field(description="MODEL@CONDITION evaluated in run B only.")
    rows: list[SensitivityRow]


def _fingerprints(suite: Path) -> dict[str, list[tuple[object, ...]]]:
    """Per story id: every requirement's (id, dimension, source, subject, attribute,
    expected), read from the story files as JSON (no replay: this only compares)."""
    out: dict[str, list[tuple[object, ...]]] = {}
    for entry in load_suite_index(suite).stories:
        path = suite / entry.file
        doc = load_json(path)
        try:
            out[entry.id] = [
                (r["id"], r["dimension"], r["source"], r["subject"], r["attribute"],
                 canonical_json(r["expected"]))
                for scene in doc["scenes"]
                for r in scene["requirements"]
            ]  # fmt: skip
        except (KeyError, TypeError) as err:
            raise InputError(f"not a story file: no {err}", file=path) from err
    return out


def check_same_stories(root_a: Path, root_b: Path, *, subset: bool = False) -> None:
    """``InputError`` unless the two runs' suites (``RUN/suite``) hold the same story ids with
    the same requirements (the wording may differ); with ``subset``, run B's stories may be
    some of run A's."""
    suites = []
    for root in (root_a, root_b):
        if not (root / "suite").is_dir():
            raise RunError("run has no suite/ directory (the stories it ran)", file=root)
        suites.append(_fingerprints(root / "suite"))
    a, b = suites
    if subset:
        a = {sid: fa for sid, fa in a.items() if sid in b}
    if set(a) != set(b):
        diff = sorted(set(a) ^ set(b))
        raise InputError(
            f"the runs are not of the same stories: {len(diff)} story id(s) in one run only "
            f"(first: {diff[0]!r})"
        )
    for sid in sorted(a):
        fa, fb = a[sid], b[sid]
        if fa != fb:
            first = next((x for x, y in zip(fa, fb, strict=False) if x != y), None)
            where = f"requirement {first[0]}" if first else "the number of requirements"
            raise InputError(
                f"the runs are not of the same stories: story {sid!r} differs in {where}",
                file=root_b / "suite",
            )


def _tagged(rows: RequirementRows, tag: str) -> RequirementRows:
    out = rows.subset([True] * len(rows))
    out.condition = [f"{tag}{_SEP}{c}" for c in rows.condition]
    return out


def _merge(a: RequirementRows, b: RequirementRows) -> RequirementRows:
    out = RequirementRows()
    for name in RequirementRows.__dataclass_fields__:
        setattr(out, name, [*getattr(a, name), *getattr(b, name)])
    return out


def _cells(inp: ScoringInput, evaluator: str) -> dict[tuple[str, str], None]:
    rows = inp.evaluator_rows(evaluator)
    keep = (
        (m, c) for m, c, v in zip(rows.model, rows.condition, rows.verdict, strict=True)
        if v != "not_applicable"
    )  # fmt: skip
    return dict.fromkeys(keep)


def _rank(order: Sequence[str], name: str) -> int:
    """Position of ``name`` in a manifest's order (unlisted names last)."""
    return order.index(name) if name in order else len(order)


def compare_inputs(
    a: ScoringInput,
    b: ScoringInput,
    *,
    evaluator: str | None = None,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    settings: Resampling = Resampling(),
) -> SensitivityReport:
    """``compare_runs`` on two loaded runs (the caller checked that they share stories)."""
    label = choose_evaluator(a, evaluator)
    if label not in b.applicable():
        raise InputError(
            f"evaluator {label!r} has no applicable checks in run B ({b.root}); "
            f"evaluators there: {', '.join(b.applicable()) or 'none'}"
        )
    cells_a, cells_b = _cells(a, label), _cells(b, label)
    for what, names, seen in (
        ("model", models, {m for m, _ in {**cells_a, **cells_b}}),
        ("condition", conditions, {c for _, c in {**cells_a, **cells_b}}),
    ):
        for n in names or ():
            if n not in seen:
                raise InputError(
                    f"no {what} {n!r} in either run; {what}s there: {', '.join(sorted(seen))}"
                )

    def wanted(cell: tuple[str, str]) -> bool:
        return (not models or cell[0] in models) and (not conditions or cell[1] in conditions)

    shared = sorted(
        (c for c in cells_a if c in cells_b and wanted(c)),
        key=lambda c: (_rank(a.model_order, c[0]), _rank(a.condition_order, c[1]), c),
    )
    if not shared:
        raise InputError("the runs have no (model, condition) evaluated in both")
    merged = _merge(_tagged(a.evaluator_rows(label), "a"), _tagged(b.evaluator_rows(label), "b"))
    table = build_story_table(merged, a.model_order)
    pairs = [
        (
            (table.models.index(m), table.conditions.index(f"a{_SEP}{c}")),
            (table.models.index(m), table.conditions.index(f"b{_SEP}{c}")),
        )
        for m, c in shared
    ]
    weights = settings.weights(len(table.stories))
    res = paired_comparisons(table, pairs, weights, settings.confidence)
    rows: list[SensitivityRow] = []
    for p, (m, c) in enumerate(shared):
        for j, metric in enumerate(ALL_METRICS):
            if math.isnan(res.diff[p, j]):
                continue
            rows.append(
                SensitivityRow(
                    evaluator=label, model=m, condition=c,
                    metric_kind="dimension" if j < N_DIMS else "summary", metric=metric,
                    a_score=float(res.a_score[p, j]), b_score=float(res.b_score[p, j]),
                    diff=float(res.diff[p, j]), ci_low=nan_to_none(res.low[p, j]),
                    ci_high=nan_to_none(res.high[p, j]), p_greater=nan_to_none(res.p_greater[p, j]),
                    p_less=nan_to_none(res.p_less[p, j]), n_stories=int(res.n_stories[p, j]),
                )
            )  # fmt: skip
    return SensitivityReport(
        run_a=a.run,
        run_b=b.run,
        evaluator=label,
        **settings.report_fields(),
        cells=[f"{m}@{c}" for m, c in shared],
        only_a=[f"{m}@{c}" for m, c in cells_a if (m, c) not in cells_b and wanted((m, c))],
        only_b=[f"{m}@{c}" for m, c in cells_b if (m, c) not in cells_a and wanted((m, c))],
        rows=rows,
    )


def compare_runs(
    run_a: str | Path,
    run_b: str | Path,
    *,
    evaluator: str | None = None,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    settings: Resampling = Resampling(),
) -> SensitivityReport:
    """Paired A − B per (model, condition) evaluated in both runs, every metric, under one
    evaluator (``vsb.scores.compare.choose_evaluator`` on run A). ``InputError`` when the
    runs are one directory or are not of the same stories."""
    ra, rb = Path(run_a), Path(run_b)
    if ra.resolve() == rb.resolve():
        raise InputError(f"RUN_A and RUN_B are the same directory: {ra}")
    for root in (ra, rb):
        require_run_dir(root)
    check_same_stories(ra, rb)
    a, b = load_scoring_input(ra), load_scoring_input(rb)
    return compare_inputs(
        a,
        b,
        evaluator=evaluator,
        models=models,
        conditions=conditions,
        settings=settings,
    )


SENSITIVITY_HEADER = tuple(SensitivityRow.model_fields)


def write_sensitivity(out_dir: str | Path, report: SensitivityReport) -> list[Path]:
    """Write ``prompt_sensitivity.json`` and ``prompt_sensitivity.csv`` into ``out_dir``."""
    header = SENSITIVITY_HEADER
    return write_report_files(out_dir, "prompt_sensitivity", report, header, report.rows)
