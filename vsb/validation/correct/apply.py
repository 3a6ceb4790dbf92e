"""Corrected scores in a ``ScoresReport``: ``vsb score --corrected``, the release built
with ``--judge``, ``vsb compare --corrected``.

Every judged evaluator's model rows (a VLM judge; not the rule checker) get a ``corrected``
object (``vsb.scores.models.CorrectedScore``): the same metrics corrected for the judge's
error measured on the run's oracle frames (``vsb.validation.correct.estimate``; by label
and the judge's answer), with a corrected rank and rank range; what it rests on is written
beside it (``CorrectionReport``, ``scores/judge_error.json`` / ``.csv``).

The assumption (``ASSUMPTION``, shown wherever the numbers are): the judge errs on a model's
images as it errs on the simulators' images of the same kind of fact. A model with verified
items (``vsb human verify``; ``vsb.validation.correct.measured``) is corrected with the
judge's error measured on its own frames instead, and the assumption is tested on them; each
row's ``basis`` says which (issue 46)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from vsb.errors import InputError
from vsb.fsio import atomic_write_json, atomic_write_text, csv_text
from vsb.scores.compute import ScoringInput
from vsb.scores.inputs import NOT_APPLICABLE, RequirementRows
from vsb.scores.models import CorrectedEstimate, CorrectedScore, ModelScore, ScoresReport
from vsb.scores.stats.bootstrap import Resampling, nan_to_none, percentile_interval
from vsb.scores.stats.rank import competition_ranks
from vsb.scores.table import (
    ADHERENCE,
    COHERENCE,
    CONDITION_ORDER,
    CONDITIONAL_COHERENCE,
    ordered_names,
)
from vsb.story.models import DIMENSIONS
from vsb.validation.correct.errors import (
    FALSE_FAILED,
    N_FALSE,
    N_TRUE,
    PRIOR,
    TRUE_PASSED,
    Labels,
    by_answer,
    row_truth,
    validation_counts,
)
from vsb.validation.correct.estimate import (
    BOUND,
    GLOBAL,
    CellEstimate,
    Corrector,
    bounded_interval,
    cell_counts,
)
from vsb.validation.correct.measured import (
    AssumptionTest,
    ModelError,
    outcome_counts,
    verified_errors,
)
from vsb.validation.matching import Fault
from vsb.validation.truth import PAIR_ATTRIBUTES, PairTruth

ASSUMPTION = (
    "The judge errs on a model's images as it errs on the simulators' images (its "
    "sensitivity and specificity per kind of fact are measured on the simulators' frames "
    "against their sealed truth). This fails when the model's images look unlike the "
    "simulators' flat renders (photographs, painted styles): check it with human ratings of "
    "the same frames (vsb human) or by scoring the same images with a second judge "
    "(judge_swap)."
)
ERROR_FILE = "judge_error"
#: ``basis`` of a row corrected with the simulator-measured error.
ASSUMED = "assumed: the judge errs as on simulator frames"
#: ``basis`` of a simulator's row: its own oracle frames measured the judge.
ORACLE_BASIS = "measured: oracle frames"


class LabelError(BaseModel):
    """A judge's error on one label (dimension, taxonomy), measured on oracle frames."""

    model_config = ConfigDict(extra="forbid")
    evaluator: str
    dimension: str
    taxonomy: str
    n_true: int = Field(ge=0, description="Oracle facts of this label that hold.")
    n_false: int = Field(ge=0, description="Oracle facts of this label that do not hold.")
    sensitivity: float | None = Field(description="P(passed | true), shrunk (see docs).")
    specificity: float | None = Field(description="P(not passed | false), shrunk.")
    youden: float | None = Field(description="sensitivity + specificity − 1.")
    youden_ci_low: float | None
    youden_ci_high: float | None
    correctable: bool = Field(description="youden ≥ the bound.")


class EvaluatorError(BaseModel):
    """One judged evaluator's measured error, over every label."""

    model_config = ConfigDict(extra="forbid")
    evaluator: str
    judge_model: str
    oracle_models: list[str] = Field(description="Models whose frames measured the error.")
    n_frames: int = Field(ge=0, description="Oracle frames with at least one fact.")
    n_frames_without_oracle: int = Field(ge=0, description="Frames never used to measure it.")
    n_true: int = Field(ge=0)
    n_false: int = Field(ge=0)
    sensitivity: float | None = Field(description="Over every label (not shrunk).")
    specificity: float | None
    labels: list[LabelError]


class CorrectionReport(BaseModel):
    """``scores/judge_error.json``: what the corrected scores rest on."""

    model_config = ConfigDict(extra="forbid")
    version: str = "1.0"
    bound: float = Field(description="Least sensitivity + specificity − 1 that is corrected.")
    prior: float = Field(description="Pseudo-facts shrinking a label towards its dimension.")
    seed: int = Field(description="Seed of the joint story and validation-frame bootstrap.")
    n_resamples: int
    assumption: str
    evaluators: list[EvaluatorError]


@dataclass(frozen=True)
class Oracle:
    """What the run's oracle says, read once: its faults, the cross-frame truth and the
    models it covers."""

    faults: list[Fault]
    pairs: PairTruth | None
    models: set[str]

    @classmethod
    def read(cls, root: Path, models: set[str], pairs: bool = True) -> Oracle:
        """``pairs``: read the cross-frame truth too (only cross-frame questions need it)."""
        from vsb.validation.judge import _pair_truth, models_with_oracle
        from vsb.validation.matching import FAULTS_FILE, load_faults

        covered = models_with_oracle(root, models)
        if not (root / FAULTS_FILE).is_file():
            return cls([], None, set())
        return cls(load_faults(root), _pair_truth(root) if covered and pairs else None, covered)


def needs_pairs(rows: RequirementRows) -> bool:
    """Whether ``rows`` hold a cross-frame fact (whose truth needs ``PairTruth``)."""
    return any(a in PAIR_ATTRIBUTES for a in set(rows.attribute))


def judged_evaluators(inp: ScoringInput, chosen: list[str]) -> list[str]:
    """Of ``chosen``, the evaluators whose rows name a judge model."""
    judged = {e for e, j in zip(inp.labels, inp.rows.judge_model, strict=True) if j}
    return [e for e in chosen if e in judged]


@dataclass
class Corrected:
    """One evaluator's corrector with what it was built from."""

    evaluator: str
    corrector: Corrector
    models: tuple[str, ...]
    conditions: tuple[str, ...]
    stories: tuple[str, ...]
    error: EvaluatorError
    oracle_models: frozenset[str] = frozenset()
    measured: dict[str, ModelError] | None = None
    """Per model with verified items: the judge's error on its own frames."""
    outcomes: np.ndarray | None = None
    """``outcome_counts`` of the evaluator's rows."""
    tests: dict[str, AssumptionTest] | None = None

    def basis(self, model: str) -> str:
        """What ``model``'s correction rests on."""
        if self.measured and model in self.measured:
            return f"measured: {self.measured[model].n_items} verified items"
        return ORACLE_BASIS if model in self.oracle_models else ASSUMED

    def contradicted(self) -> list[str]:
        """The models whose verified items contradict the assumption."""
        return sorted(m for m, t in (self.tests or {}).items() if t.contradicted)

    def estimate(self, m: int, c: int, keep: np.ndarray | None = None) -> CellEstimate:
        """Cell (m, c) corrected on its model's basis."""
        err = (self.measured or {}).get(self.models[m])
        if err is None or self.outcomes is None:
            return self.corrector.estimate(m, c, keep)
        from vsb.validation.correct.measured import measured_estimate

        return measured_estimate(self.outcomes[m, c], err, self.corrector.weights, keep)


def corrector_for(
    inp: ScoringInput, evaluator: str, oracle: Oracle, settings: Resampling, bound: float = BOUND,
    by_outcome: bool = True,
) -> Corrected:  # fmt: skip
    """The corrector of one evaluator (its table's models, conditions and stories), with the
    judge's error measured on the verified items of the models that have them."""
    rows = inp.evaluator_rows(evaluator)
    rows = rows.view([v != NOT_APPLICABLE for v in rows.verdict])
    models = ordered_names(rows.model, inp.model_order)
    conditions = ordered_names(rows.condition, (*inp.condition_order, *CONDITION_ORDER))
    stories = tuple(sorted(set(rows.story_id)))  # the order of build_story_table's
    labels = Labels.of(rows)
    validated = [m in oracle.models for m in rows.model]
    sub = rows.view(validated)
    truth = row_truth(sub, oracle.faults, oracle.pairs) if len(sub) else []
    val = validation_counts(sub, truth, [True] * len(sub), stories, labels)
    weights = settings.weights(len(stories))
    counts = cell_counts(rows, models, conditions, stories, labels)
    answered, other = by_answer(sub, truth, stories, labels)
    outcomes = outcome_counts(rows, models, conditions, stories, labels)
    corrector = Corrector(counts, val, labels, weights, bound, answered=answered, other=other,
                          outcomes=outcomes if by_outcome else None)  # fmt: skip
    error = _error(evaluator, rows, sub, val, corrector, labels, oracle, settings)
    cor = Corrected(evaluator, corrector, models, conditions, stories, error,
                    frozenset(oracle.models), outcomes=outcomes)  # fmt: skip
    got = verified_errors(inp.root, evaluator, rows, (models, conditions, stories), labels,
                          corrector, settings)  # fmt: skip
    if got is not None:
        cor.measured, _same, cor.tests = got
    return cor


def _error(
    evaluator: str,
    rows: RequirementRows,
    sub: RequirementRows,
    val: np.ndarray,
    cor: Corrector,
    labels: Labels,
    oracle: Oracle,
    settings: Resampling,
) -> EvaluatorError:
    total = val.sum(axis=0)
    lo, hi = percentile_interval(cor.resampled.youden, settings.confidence)
    p = cor.point
    frames = {(m, c, s, k) for m, c, s, k in zip(*_frame_cols(sub), strict=True)}
    blind = {(m, c, s, k) for m, c, s, k in zip(*_frame_cols(rows), strict=True)} - frames
    return EvaluatorError(
        evaluator=evaluator,
        judge_model=next((j for j in rows.judge_model if j), ""),
        oracle_models=sorted(set(sub.model)),
        n_frames=len(frames),
        n_frames_without_oracle=len(blind),
        n_true=int(total[:, N_TRUE].sum()),
        n_false=int(total[:, N_FALSE].sum()),
        sensitivity=nan_to_none(float(p.pooled_se)),
        specificity=nan_to_none(float(p.pooled_sp)),
        labels=[
            LabelError(
                evaluator=evaluator,
                dimension=d,
                taxonomy=t,
                n_true=int(total[k, N_TRUE]),
                n_false=int(total[k, N_FALSE]),
                sensitivity=nan_to_none(p.se[k]),
                specificity=nan_to_none(p.sp[k]),
                youden=nan_to_none(p.youden[k]),
                youden_ci_low=nan_to_none(lo[k]),
                youden_ci_high=nan_to_none(hi[k]),
                correctable=bool(p.youden[k] >= cor.bound),
            )
            for k, (d, t) in enumerate(labels.names)
        ],
    )


def _frame_cols(rows: RequirementRows) -> tuple[list[str], list[str], list[str], list[int]]:
    return rows.model, rows.condition, rows.story_id, rows.scene


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def _estimate(
    est: CellEstimate, j: int, lo: np.ndarray, hi: np.ndarray
) -> CorrectedEstimate | None:
    if est.reason[j] is not None:
        return CorrectedEstimate(score=None, ci_low=None, ci_high=None, reason=est.reason[j])
    if np.isnan(est.score[j]):
        return None
    low, high = nan_to_none(lo[j]), nan_to_none(hi[j])
    if low is not None and high is not None:
        low, high = bounded_interval(low, high)
    return CorrectedEstimate(score=_clip(float(est.score[j])), ci_low=low, ci_high=high)


def corrected_rows(cor: Corrected, rows: list[ModelScore], confidence: float) -> list[ModelScore]:
    """``rows`` (one evaluator's) each with its ``corrected`` object."""
    cells = {(r.model, r.condition) for r in rows}
    est: dict[tuple[str, str], CellEstimate] = {}
    for m, model in enumerate(cor.models):
        for c, cond in enumerate(cor.conditions):
            if (model, cond) in cells:
                est[(model, cond)] = cor.estimate(m, c)
    ranks = _ranks(est, confidence)
    out = []
    for r in rows:
        e = est[(r.model, r.condition)]
        lo, hi = percentile_interval(e.dist, confidence)
        rank = ranks.get((r.model, r.condition), (None, None, None))
        corrected = CorrectedScore(
            dimensions={d: _estimate(e, j, lo, hi) for j, d in enumerate(DIMENSIONS)},
            adherence=_estimate(e, ADHERENCE, lo, hi),
            coherence=_estimate(e, COHERENCE, lo, hi),
            conditional_coherence=_estimate(e, CONDITIONAL_COHERENCE, lo, hi),
            global_score=_estimate(e, GLOBAL, lo, hi),
            rank=rank[0],
            rank_low=rank[1],
            rank_high=rank[2],
            basis=cor.basis(r.model),
            assumption_test=None
            if cor.tests is None or r.model not in cor.tests
            else cor.tests[r.model].text,
        )
        out.append(r.model_copy(update={"corrected": corrected}))
    return out


def _ranks(
    est: dict[tuple[str, str], CellEstimate], confidence: float
) -> dict[tuple[str, str], tuple[int, int, int]]:
    """Per cell with a corrected global score: its rank within its condition and its
    bootstrap rank range (as ``vsb.scores.stats.power.rank_ranges``)."""
    out: dict[tuple[str, str], tuple[int, int, int]] = {}
    alpha = (1.0 - confidence) / 2.0
    for cond in sorted({c for _, c in est}):
        keys = [k for k in est if k[1] == cond and not np.isnan(est[k].score[GLOBAL])]
        if not keys:
            continue
        point = np.array([est[k].score[GLOBAL] for k in keys])
        rank = competition_ranks(point[None, :])[0]
        dist = np.stack([est[k].dist[:, GLOBAL] for k in keys], axis=1)
        ranks = competition_ranks(np.where(np.isnan(dist), -np.inf, dist)).astype(np.float64)
        lo = np.floor(np.quantile(ranks, alpha, axis=0, method="lower"))
        hi = np.ceil(np.quantile(ranks, 1.0 - alpha, axis=0, method="higher"))
        for i, k in enumerate(keys):
            r = int(rank[i])
            out[k] = (r, min(int(lo[i]), r), max(int(hi[i]), r))
    return out


def correct_report(
    inp: ScoringInput,
    report: ScoresReport,
    settings: Resampling,
    *,
    bound: float = BOUND,
    required: bool = False,
    progress: Callable[[str], None] | None = None,
) -> tuple[ScoresReport, CorrectionReport | None]:
    """``report`` with every judged evaluator's rows corrected, and what the correction
    rests on (None: no judged evaluator; ``required``: that is an ``InputError``)."""
    note = progress or (lambda _msg: None)
    judged = judged_evaluators(inp, report.evaluators)
    if not judged:
        if required:
            raise InputError(
                "--corrected: no evaluator scored here has a judge model (the rule checker is "
                f"not corrected); scored: {', '.join(report.evaluators)}"
            )
        return report, None
    judged_rows = inp.rows.view([e in judged for e in inp.labels])
    oracle = Oracle.read(inp.root, set(inp.rows.model), needs_pairs(judged_rows))
    scores = list(report.scores)
    errors = []
    for e in judged:
        note(f"{e}: correcting for the judge's error")
        cor = corrector_for(inp, e, oracle, settings, bound)
        mine = [r for r in scores if r.evaluator == e]
        fixed = iter(corrected_rows(cor, mine, settings.confidence))
        scores = [next(fixed) if r.evaluator == e else r for r in scores]
        errors.append(cor.error)
    out = CorrectionReport(
        bound=bound, prior=PRIOR, seed=settings.seed, n_resamples=settings.n_resamples,
        assumption=ASSUMPTION, evaluators=errors,
    )  # fmt: skip
    return report.model_copy(update={"scores": scores}), out


ERROR_HEADER = tuple(LabelError.model_fields)
CORRECTED_HEADER = ("evaluator", "model", "condition", "metric_kind", "metric", "raw_score",
                    "raw_ci_low", "raw_ci_high", "score", "ci_low", "ci_high", "reason",
                    "corrected_rank", "corrected_rank_low", "corrected_rank_high")  # fmt: skip


def _corrected_lines(report: ScoresReport) -> list[list[object]]:
    out: list[list[object]] = []
    for r in report.scores:
        c = r.corrected
        if c is None:
            continue
        pairs = [("dimension", d, r.dimensions.get(d), c.dimensions.get(d)) for d in DIMENSIONS]
        pairs += [("summary", s, getattr(r, s), getattr(c, s))
                  for s in ("adherence", "coherence", "conditional_coherence")]  # fmt: skip
        pairs.append(("summary", "global", r.global_score, c.global_score))
        for kind, metric, raw, cor in pairs:
            if raw is None or cor is None:
                continue
            out.append([r.evaluator, r.model, r.condition, kind, metric, raw.score, raw.ci_low,
                        raw.ci_high, cor.score, cor.ci_low, cor.ci_high, cor.reason, c.rank,
                        c.rank_low, c.rank_high])  # fmt: skip
    return out


def correction_files(scores_dir: Path) -> list[Path]:
    """The files ``write_correction`` writes into ``scores_dir``."""
    names = (f"{ERROR_FILE}.json", f"{ERROR_FILE}.csv", "corrected_scores.csv")
    return [scores_dir / n for n in names]


def remove_correction(scores_dir: Path) -> None:
    """Remove an earlier correction's files (scores written without one must not sit beside
    a stale judge_error.json)."""
    for path in correction_files(scores_dir):
        path.unlink(missing_ok=True)


def write_correction(
    scores_dir: Path, report: ScoresReport, errors: CorrectionReport
) -> list[Path]:
    """``judge_error.json`` / ``.csv`` and ``corrected_scores.csv`` beside ``scores.json``."""
    paths = correction_files(scores_dir)
    atomic_write_json(paths[0], errors.model_dump(mode="json"))
    lines = ([getattr(x, f) for f in ERROR_HEADER] for e in errors.evaluators for x in e.labels)
    atomic_write_text(paths[1], csv_text(ERROR_HEADER, lines))
    atomic_write_text(paths[2], csv_text(CORRECTED_HEADER, _corrected_lines(report)))
    return paths


__all__ = [
    "ASSUMED",
    "ASSUMPTION",
    "BOUND",
    "FALSE_FAILED",
    "TRUE_PASSED",
    "CorrectionReport",
    "Oracle",
    "correct_report",
    "corrector_for",
    "write_correction",
]
