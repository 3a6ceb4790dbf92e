"""How often a judge errs, per label, measured on the run's oracle frames.

Each applicable row of a model with an oracle (``vsb.validation.judge.models_with_oracle``)
has a truth (``vsb.validation.truth``: what a perfect reader of the picture answers) and a
verdict; ``passed`` is the judge saying the fact holds, every other verdict (``failed``,
``unsure``, ``parse_failure``) is the judge not saying so, as scoring counts it. Per label:

* sensitivity ``Se = P(passed | true)``, specificity ``Sp = P(not passed | false)``.

A *label* is a requirement's (dimension, taxonomy): what kind of fact is asked (the questions
of one label are worded alike, so a judge errs on them alike). Labels with few oracle facts
of one truth are estimated poorly, so each label's rates are shrunk towards its dimension's,
and each dimension's towards the judge's over all labels, by ``PRIOR`` pseudo-facts (additive
smoothing, the empirical-Bayes form of the beta-binomial: ``(k + PRIOR·parent) / (n +
PRIOR)``). A label with hundreds of oracle facts keeps its own rates; one with none takes its
dimension's. Rows of an image that was never made (``generation_failed``, ``unreadable``)
are no judge's answer and are left out.

Resampling: the counts are kept per story, so a story-bootstrap count matrix ``W``
(``(resamples, stories)``) resamples the validation frames with the stories that hold them
(``rates(W @ counts)``), jointly with the scored stories (``vsb.validation.correct.estimate``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vsb.scores.inputs import RequirementRows
from vsb.scores.stats.bootstrap import FloatArray
from vsb.validation.matching import Fault
from vsb.validation.truth import PAIR_ATTRIBUTES, PairTruth, fault_sets, requirement_true

#: Pseudo-facts of the parent's rate added to each label's counts (see the module docstring).
PRIOR = 20.0
#: Rows that are no judge's answer (no image was judged).
NOT_JUDGED = frozenset({"generation_failed", "unreadable"})
#: Count columns: true facts, true facts passed, false facts, false facts not passed.
N_TRUE, TRUE_PASSED, N_FALSE, FALSE_FAILED = range(4)


def row_truth(
    rows: RequirementRows, faults: Iterable[Fault], pairs: PairTruth | None
) -> list[bool | None]:
    """Per row: whether its fact holds in the image as rendered (None: not known here, a
    cross-frame fact without ``pairs``)."""
    sets = fault_sets(faults)
    parsed: dict[str, Any] = {}
    out: list[bool | None] = []
    for i, text in enumerate(rows.expected):
        frame = (rows.model[i], rows.condition[i], rows.story_id[i], rows.scene[i])
        if text not in parsed:
            try:
                parsed[text] = json.loads(text)
            except (TypeError, ValueError):
                parsed[text] = text
        expected = parsed[text]
        attribute = rows.attribute[i]
        if attribute in PAIR_ATTRIBUTES:
            if pairs is None:
                out.append(None)
                continue
            out.append(pairs.alike(frame, rows.subject[i], attribute) == bool(expected))
        else:
            out.append(
                requirement_true(rows.subject[i], attribute, expected, sets.get(frame, set()))
            )
    return out


@dataclass(frozen=True)
class Labels:
    """The labels of one evaluator's rows and the dimension each belongs to."""

    names: tuple[tuple[str, str], ...]
    """(dimension, taxonomy) per label, sorted."""
    parent: np.ndarray
    """Per label: the index of its dimension in ``dimensions``."""
    dimensions: tuple[str, ...]

    @classmethod
    def of(cls, rows: RequirementRows) -> Labels:
        names = tuple(sorted(set(zip(rows.dimension, rows.taxonomy, strict=True))))
        dims = tuple(sorted({d for d, _ in names}))
        parent = np.array([dims.index(d) for d, _ in names], dtype=np.int64)
        return cls(names, parent, dims)

    def codes(self, rows: RequirementRows) -> np.ndarray:
        """Per row: its label's index."""
        index = {n: i for i, n in enumerate(self.names)}
        pairs = zip(rows.dimension, rows.taxonomy, strict=True)
        return np.fromiter((index[p] for p in pairs), dtype=np.int64, count=len(rows))


def validation_counts(
    rows: RequirementRows,
    truth: Sequence[bool | None],
    validated: Sequence[bool],
    stories: Sequence[str],
    labels: Labels,
) -> FloatArray:
    """``(stories, labels, 4)`` counts (``N_TRUE``, ``TRUE_PASSED``, ``N_FALSE``,
    ``FALSE_FAILED``) over the rows with ``validated`` set and a known truth."""
    si = {s: i for i, s in enumerate(stories)}
    n_l = len(labels.names)
    keep = np.array(
        [ok and t is not None and f not in NOT_JUDGED
         for ok, t, f in zip(validated, truth, rows.failure, strict=True)],
        dtype=bool,
    )  # fmt: skip
    true = np.array([bool(t) for t in truth], dtype=bool)
    passed = np.array([v == "passed" for v in rows.verdict], dtype=bool)
    cell = np.array([si[s] for s in rows.story_id], dtype=np.int64) * n_l + labels.codes(rows)
    out = np.zeros((len(stories) * n_l, 4))
    size = len(stories) * n_l
    for col, mask in ((N_TRUE, keep & true), (TRUE_PASSED, keep & true & passed),
                      (N_FALSE, keep & ~true), (FALSE_FAILED, keep & ~true & ~passed)):  # fmt: skip
        out[:, col] = np.bincount(cell[mask], minlength=size)
    return out.reshape(len(stories), n_l, 4)


def by_answer(
    rows: RequirementRows, truth: Sequence[bool | None], stories: Sequence[str], labels: Labels
) -> tuple[FloatArray, FloatArray]:
    """The oracle rows split by the judge's answer (issue 46): ``validation_counts`` of the
    rows it answered YES or NO (verdict passed or failed), and ``(stories, labels, 2)`` rows
    it answered neither (UNSURE, unreadable, a subject not found) and those whose fact holds."""
    answered = [v in ("passed", "failed") for v in rows.verdict]
    held = validation_counts(rows, truth, [not a for a in answered], stories, labels)
    other = np.stack([held[..., N_TRUE] + held[..., N_FALSE], held[..., N_TRUE]], axis=-1)
    return validation_counts(rows, truth, answered, stories, labels), other


@dataclass(frozen=True)
class Rates:
    """Sensitivity and specificity per label (``(..., labels)``; leading axes: resamples)."""

    se: FloatArray
    sp: FloatArray
    pooled_se: FloatArray
    """The judge's over every label (``(...)``); NaN when it has no true fact."""
    pooled_sp: FloatArray
    """NaN when the oracle frames hold no false fact of this judge's."""

    @property
    def youden(self) -> FloatArray:
        """``Se + Sp − 1`` per label: 1 for a perfect judge, 0 for one that does not look."""
        return self.se + self.sp - 1.0


def _shrunk(k: FloatArray, n: FloatArray, parent: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (k + PRIOR * parent) / (n + PRIOR)


def rates(counts: FloatArray, labels: Labels) -> Rates:
    """Shrunk per-label rates from ``(..., labels, 4)`` summed counts."""
    total = counts.sum(axis=-2)  # (..., 4)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled_se = total[..., TRUE_PASSED] / total[..., N_TRUE]
        pooled_sp = total[..., FALSE_FAILED] / total[..., N_FALSE]
    n_dims = len(labels.dimensions)
    dims = np.zeros((*counts.shape[:-2], n_dims, 4))
    for k, d in enumerate(labels.parent):
        dims[..., d, :] += counts[..., k, :]
    dim_se = _shrunk(dims[..., TRUE_PASSED], dims[..., N_TRUE], pooled_se[..., None])
    dim_sp = _shrunk(dims[..., FALSE_FAILED], dims[..., N_FALSE], pooled_sp[..., None])
    se = _shrunk(counts[..., TRUE_PASSED], counts[..., N_TRUE], dim_se[..., labels.parent])
    sp = _shrunk(counts[..., FALSE_FAILED], counts[..., N_FALSE], dim_sp[..., labels.parent])
    return Rates(se, sp, pooled_se, pooled_sp)
