"""Corrections from a model's own verified frames (issue 46): double sampling.

A person answered a stratified sample of the model's judged rows (``verified``); the strata
are (label, the judge's outcome: passed, failed, other). In stratum ``h`` the share of rows
whose fact holds, ``q_h``, is estimated from its verified rows, and the true count of a
story's checks is ``Σ_h N_h q_h`` over the judge's outcomes ``N_h`` there (Tenenbein 1970,
*A double sampling scheme for estimating from binomial data with misclassifications*, JASA
65:1350; the stratified estimator of a total). It uses the judge's error on the model's own
pictures and nothing measured on the simulators, and divides by nothing: it holds for any
judge, how much it errs and where. Like Rogan–Gladen it is linear in the counts, so a
story's rate, the macro-average over stories and the global score are formed as the raw
ones are.

Strata with few verified rows borrow from their parents: ``q`` of a label's outcome is
shrunk towards its dimension's, and that towards the outcome's over every label, by
``PRIOR`` pseudo-rows (the beta-binomial's posterior mean; the top level has Jeffreys'
prior). The interval: each bootstrap resample draws the stories with the raw scores' story
weights and every ``q`` from its beta posterior (parents first), so it carries the story
sampling and the verification sample's size together.

The assumption test: from ``q`` and the model's outcome counts the judge's sensitivity and
specificity on the model's frames follow (per label and over all labels); each is compared
with the simulator-measured one (``vsb.validation.correct.errors``) by a z-test on their
bootstrap spreads, Holm-adjusted over the model's tests.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vsb.scores.inputs import RequirementRows
from vsb.scores.stats.bootstrap import FloatArray, Resampling, nan_mean
from vsb.scores.table import N_DIMS
from vsb.story.models import DIMENSIONS
from vsb.validation.correct.errors import Labels, Rates
from vsb.validation.correct.estimate import N_BASE, CellEstimate, Corrector, cell_counts
from vsb.validation.correct.verified import OUTCOMES, Verified, outcome_of, verified_items

#: Pseudo-rows of the parent's share added to a stratum's verified rows.
PRIOR = 2.0
#: Least verified rows of a label for its own sensitivity / specificity to be tested.
MIN_TESTED = 20
#: Family-wise level of the assumption test.
ALPHA = 0.05
N_OUT = len(OUTCOMES)


def outcome_counts(
    rows: RequirementRows,
    models: Sequence[str],
    conditions: Sequence[str],
    stories: Sequence[str],
    labels: Labels,
) -> FloatArray:
    """``(models, conditions, stories, N_BASE, labels, outcomes)`` checks per judge outcome
    (the counts of ``cell_counts``, split by outcome)."""
    outs = [outcome_of(v) for v in rows.verdict]
    parts = [
        cell_counts(rows.view([o == name for o in outs]), models, conditions, stories, labels).total
        for name in OUTCOMES
    ]
    return np.stack(parts, axis=-1)


def _tally(items: Sequence[Verified], labels: Labels) -> tuple[FloatArray, FloatArray]:
    """``(labels, outcomes)`` verified rows and those whose fact holds."""
    index = {n: i for i, n in enumerate(labels.names)}
    m = np.zeros((len(labels.names), N_OUT))
    t = np.zeros_like(m)
    for d, tax, outcome, holds in items:
        k = index.get((d, tax))
        if k is None:
            continue
        o = OUTCOMES.index(outcome)
        m[k, o] += 1
        t[k, o] += holds
    return m, t


def _shares(m: FloatArray, t: FloatArray, labels: Labels, rng: np.random.Generator | None,
            n: int = 1) -> FloatArray:  # fmt: skip
    """``(n, labels, outcomes)`` shares of facts that hold: posterior means (``rng`` None)
    or draws, parents first."""

    def level(tk: FloatArray, mk: FloatArray, parent: FloatArray, prior: FloatArray) -> FloatArray:
        a, b = tk + prior * parent, (mk - tk) + prior * (1.0 - parent)
        if rng is None:
            return a / (a + b)
        return np.clip(rng.beta(np.maximum(a, 1e-9), np.maximum(b, 1e-9)), 1e-9, 1 - 1e-9)

    shape = (n, N_OUT)
    top = level(np.broadcast_to(t.sum(0), shape), np.broadcast_to(m.sum(0), shape),
                np.full(shape, 0.5), np.ones(shape))  # fmt: skip  # Jeffreys: Beta(1/2, 1/2)
    n_d = len(labels.dimensions)
    dm, dt = np.zeros((n_d, N_OUT)), np.zeros((n_d, N_OUT))
    np.add.at(dm, labels.parent, m)
    np.add.at(dt, labels.parent, t)
    dims = level(np.broadcast_to(dt, (n, n_d, N_OUT)), np.broadcast_to(dm, (n, n_d, N_OUT)),
                 top[:, None, :], np.full((n, n_d, N_OUT), PRIOR))  # fmt: skip
    shape3 = (n, len(labels.names), N_OUT)
    return level(np.broadcast_to(t, shape3), np.broadcast_to(m, shape3),
                 dims[:, labels.parent, :], np.full(shape3, PRIOR))  # fmt: skip


@dataclass(frozen=True)
class ModelError:
    """The judge's error on one model's verified frames."""

    n_items: int
    q: FloatArray
    """``(labels, outcomes)`` shares of facts that hold (posterior means)."""
    draws: FloatArray
    """``(resamples, labels, outcomes)``."""


def model_error(
    items: Sequence[Verified], labels: Labels, n_resamples: int, seed: int, model: str
) -> ModelError:
    """``q`` and its draws from one model's verified rows (seeded by ``seed`` and the
    model's name, so each model's draws are its own and reproducible)."""
    m, t = _tally(items, labels)
    rng = np.random.default_rng([seed, 46, zlib.crc32(model.encode())])
    return ModelError(len(items), _shares(m, t, labels, None)[0],
                      _shares(m, t, labels, rng, n_resamples))  # fmt: skip


def measured_estimate(
    counts: FloatArray, err: ModelError, weights: FloatArray, keep: np.ndarray | None = None
) -> CellEstimate:
    """One cell corrected with its model's ``err`` (``counts``: the cell's ``(stories,
    N_BASE, labels, outcomes)``; ``keep`` as ``Corrector.estimate``)."""
    n_s = counts.shape[0]
    n = counts.sum(axis=(-1, -2))  # (stories, metrics)
    has = n > 0
    if keep is not None:
        has &= keep
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(has[..., None, None], counts / n[..., None, None], 0.0)
    stories = np.where(has, (x * err.q).sum(axis=(-1, -2)), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.nansum(stories, axis=0) / has.sum(axis=0)
    score[~has.any(axis=0)] = np.nan
    den = weights @ has.astype(np.float64)  # (resamples, metrics)
    px = (weights @ x.reshape(n_s, -1)).reshape(len(weights), N_BASE, -1)
    draws = err.draws.reshape(len(err.draws), 1, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = (px * draws).sum(axis=-1) / den
    dist[den == 0] = np.nan
    avail = has[:, :N_DIMS].any(axis=0)
    if avail.any():
        g, gd = float(score[:N_DIMS][avail].mean()), dist[:, :N_DIMS][:, avail].mean(axis=1)
    else:
        g, gd = np.nan, np.full(len(weights), np.nan)
    sg = nan_mean(np.where(has[:, :N_DIMS], stories[:, :N_DIMS], np.nan), axis=1)
    return CellEstimate(
        score=np.append(score, g),
        dist=np.concatenate([dist, gd[:, None]], axis=1),
        reason=[None] * (N_BASE + 1),
        stories=np.concatenate([stories, sg[:, None]], axis=1),
    )


def _se_sp(n: FloatArray, q: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Sensitivity and specificity (``(..., labels + 1)``: the last over every label) from
    outcome counts ``n`` ``(labels, outcomes)`` and shares ``q`` ``(..., labels, outcomes)``."""
    true, false = n * q, n * (1.0 - q)
    true = np.concatenate([true, true.sum(axis=-2, keepdims=True)], axis=-2)
    false = np.concatenate([false, false.sum(axis=-2, keepdims=True)], axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = true[..., 0] / true.sum(axis=-1)
        sp = false[..., 1:].sum(axis=-1) / false.sum(axis=-1)
    return se, sp


@dataclass(frozen=True)
class AssumptionTest:
    """Whether a model's measured error differs from the simulator frames' beyond noise."""

    contradicted: bool
    text: str


def check_assumption(
    model_counts: FloatArray, err: ModelError, sim: Rates, sim_draws: Rates, labels: Labels,
    verified: FloatArray,
) -> AssumptionTest:  # fmt: skip
    """``model_counts``: the model's ``(labels, outcomes)`` judged rows; ``verified``: its
    verified rows per label. Tests sensitivity and specificity over every label and per
    label with ``MIN_TESTED`` verified rows, Holm-adjusted."""
    se, sp = _se_sp(model_counts, err.q)
    se_d, sp_d = _se_sp(model_counts, err.draws)
    weight = model_counts.sum(axis=-1)
    w = weight / weight.sum() if weight.sum() else weight

    def with_pooled(x: FloatArray) -> FloatArray:  # the simulators' rates over this mix
        return np.concatenate([x, (x * w).sum(axis=-1, keepdims=True)], axis=-1)

    tests = []
    names = [f"{t} ({d})" for d, t in labels.names] + ["every label"]
    for what, mine, mine_d, theirs, theirs_d in (
        ("sensitivity", se, se_d, with_pooled(sim.se), with_pooled(sim_draws.se)),
        ("specificity", sp, sp_d, with_pooled(sim.sp), with_pooled(sim_draws.sp)),
    ):
        for k, name in enumerate(names):
            if k < len(labels.names) and verified[k] < MIN_TESTED:
                continue
            var = np.nanvar(mine_d[:, k]) + np.nanvar(theirs_d[:, k])
            if not (var > 0 and np.isfinite(mine[k]) and np.isfinite(theirs[k])):
                continue
            z = (mine[k] - theirs[k]) / math.sqrt(var)
            tests.append((math.erfc(abs(z) / math.sqrt(2.0)), what, name, mine[k], theirs[k]))
    if not tests:
        return AssumptionTest(False, f"untested: {err.n_items} verified items test nothing")
    tests.sort()
    adjusted = [min(1.0, p * (len(tests) - i)) for i, (p, *_rest) in enumerate(tests)]
    adjusted = list(np.maximum.accumulate(adjusted))
    _p, what, name, mine_k, theirs_k = tests[0]
    fig = f"{what} on {name} {mine_k:.2f} here, {theirs_k:.2f} on simulator frames"
    if adjusted[0] < ALPHA:
        n_bad = sum(a < ALPHA for a in adjusted)
        return AssumptionTest(True, f"contradicted ({n_bad} of {len(tests)} tests, Holm "
                              f"p {adjusted[0]:.2g}): {fig}")  # fmt: skip
    return AssumptionTest(False, f"consistent ({len(tests)} tests, smallest Holm p "
                          f"{adjusted[0]:.2f}): {fig}")  # fmt: skip


def verified_errors(
    root: Path,
    evaluator: str,
    rows: RequirementRows,
    table: tuple[Sequence[str], Sequence[str], Sequence[str]],
    labels: Labels,
    corrector: Corrector,
    settings: Resampling,
) -> tuple[dict[str, ModelError], FloatArray, dict[str, AssumptionTest]] | None:
    """Per model of ``table`` (models, conditions, stories) with verified items of
    ``evaluator`` under ``root``: the judge's error on its frames, the outcome counts of
    ``rows`` and the test of the assumption (None: no model has verified items)."""
    models, conditions, stories = table
    items = verified_items(root, evaluator, rows, models)
    if not items:
        return None
    outcomes = corrector.outcomes  # split by outcome when the corrector is (apply.py's)
    if outcomes.shape[-1] != N_OUT:
        outcomes = outcome_counts(rows, models, conditions, stories, labels)
    measured, tests = {}, {}
    index = {n: i for i, n in enumerate(labels.names)}
    for model, got in items.items():
        err = model_error(got, labels, settings.n_resamples, settings.seed, model)
        measured[model] = err
        # the model's judged rows per label and outcome, each counted once (its dimension)
        mine = outcomes[list(models).index(model), :, :, : len(DIMENSIONS)].sum(axis=(0, 1, 2))
        verified = np.zeros(len(labels.names))
        for d, t, _o, _h in got:
            verified[index[(d, t)]] += 1
        tests[model] = check_assumption(
            mine, err, corrector.point, corrector.resampled, labels, verified
        )
    return measured, outcomes, tests
