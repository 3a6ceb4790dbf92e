"""Pass rates corrected for the judge's error: Rogan–Gladen per label, story by story.

A story's pass rate of a metric over rows of labels ``l`` is ``Σ_l k_l / Σ_l n_l`` (``k``
passed of ``n``). If the judge passes a true fact of label ``l`` with probability ``Se_l``
and a false one with ``1 − Sp_l``, the expected ``k_l`` is ``n_l (1 − Sp_l) + t_l J_l`` where
``t_l`` is the true facts and ``J_l = Se_l + Sp_l − 1``, so the true count is estimated by
``(k_l − n_l (1 − Sp_l)) / J_l`` (Rogan & Gladen 1978, applied per label) and the corrected
pass rate is ``Σ_l (k_l − n_l (1 − Sp_l)) / J_l / Σ_l n_l``. It is linear in the counts, so a
model's corrected score is the macro-average over stories of the corrected story rates, and
the global score the mean of the corrected dimensions, as for the raw scores. Only the
reported figures are clipped to [0, 1] (clipping a story, or a dimension before the mean,
would bias the mean); a clipped figure is the constrained maximum-likelihood estimate.

The interval: each bootstrap resample draws the stories with the story-bootstrap counts of
the raw scores (``Resampling.weights``: ``numpy.random.default_rng(seed)``), and with them
the oracle frames those stories hold, re-measures ``Se`` and ``Sp`` on those frames and
corrects the resampled pass rates with them; the percentile interval therefore carries both
the story sampling and the uncertainty of the judge's error rates. A resample in which a
label's ``J`` falls to ``RESAMPLE_FLOOR`` or below has no finite correction and is left out.

A metric is *not correctable* (``score: null`` with the reason) when a label it holds has
``J`` below ``BOUND``: the correction would divide by almost nothing. The global score is not
correctable when one of its dimensions is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vsb.scores.inputs import RequirementRows, codes, equals
from vsb.scores.knockon import knock_on_mask
from vsb.scores.stats.bootstrap import FloatArray, nan_mean
from vsb.scores.table import ADHERENCE, BASE_METRICS, COHERENCE, CONDITIONAL_COHERENCE, N_DIMS
from vsb.story.models import DIMENSIONS
from vsb.validation.correct.errors import N_TRUE, TRUE_PASSED, Labels, Rates, rates

#: Least ``Se + Sp − 1`` of a label for the metrics holding it to be corrected.
BOUND = 0.2
#: A resample whose ``J`` of a label used falls to this or below is left out.
RESAMPLE_FLOOR = 0.05
#: Metric columns: the base metrics, then global (as ``vsb.scores.stats.aggregate``).
N_BASE = len(BASE_METRICS)
GLOBAL = N_BASE


def bounded_interval(low: float, high: float) -> tuple[float, float]:
    """The percentile interval ``[low, high]`` of an unclipped estimate, inside [0, 1]. Its
    part inside is kept (the truth lies in [0, 1], so cutting off the rest loses no
    coverage); an interval lying wholly past a bound, which clipping would make the
    zero-width ``[1, 1]``, becomes the interval of its width that ends at the bound
    (issue 46)."""
    width = min(1.0, high - low)
    if low >= 1.0:
        return max(0.0, 1.0 - width), 1.0
    if high <= 0.0:
        return 0.0, min(1.0, width)
    return max(low, 0.0), min(high, 1.0)


@dataclass(frozen=True)
class CellCounts:
    """Per (model, condition, story, base metric, label): checks passed and checks."""

    passed: FloatArray
    total: FloatArray


def cell_counts(
    rows: RequirementRows,
    models: Sequence[str],
    conditions: Sequence[str],
    stories: Sequence[str],
    labels: Labels,
) -> CellCounts:
    """The counts behind a ``StoryTable`` (same rows, same metric rules), split by label;
    ``rows`` hold no ``not_applicable`` row."""
    mi = {x: i for i, x in enumerate(models)}
    ci = {x: i for i, x in enumerate(conditions)}
    si = {x: i for i, x in enumerate(stories)}
    di = {x: i for i, x in enumerate(DIMENSIONS)}
    n_l = len(labels.names)
    run = (codes(rows.model, mi) * len(ci) + codes(rows.condition, ci)) * len(si)
    run = run + codes(rows.story_id, si)
    lab = labels.codes(rows)
    dim = codes(rows.dimension, di)
    src = np.where(equals(rows.source, "prompt"), ADHERENCE, COHERENCE)
    passed = np.fromiter(rows.passed, dtype=np.float64, count=len(rows))
    knock = np.fromiter(knock_on_mask(rows), dtype=bool, count=len(rows))
    found = equals(rows.source, "memory") & ~knock
    keys = np.concatenate(
        [
            (run * N_BASE + dim) * n_l + lab,
            (run * N_BASE + src) * n_l + lab,
            (run[found] * N_BASE + CONDITIONAL_COHERENCE) * n_l + lab[found],
        ]
    )
    w = np.concatenate([passed, passed, passed[found]])
    shape = (len(models), len(conditions), len(stories), N_BASE, n_l)
    size = int(np.prod(shape))
    total = np.bincount(keys, minlength=size).astype(np.float64).reshape(shape)
    npass = np.bincount(keys, weights=w, minlength=size).astype(np.float64).reshape(shape)
    return CellCounts(npass, total)


@dataclass(frozen=True)
class CellEstimate:
    """One (model, condition)'s corrected metrics: ``score`` ``(N_BASE + 1,)`` (NaN: no
    data or not correctable), ``dist`` ``(resamples, N_BASE + 1)``, ``reason`` per column
    (None where there is a number or no data)."""

    score: FloatArray
    dist: FloatArray
    reason: list[str | None]
    stories: FloatArray
    """``(stories, N_BASE + 1)`` corrected story rates at the point estimate (NaN: none)."""


class Corrector:
    """Corrected estimates of one evaluator's cells from its counts and the oracle frames'
    counts (``validation``: ``(stories, labels, 4)``), resampled with ``weights``.

    With ``outcomes`` (the cells' counts per judge outcome, ``(models, conditions, stories,
    N_BASE, labels, outcomes)``: passed, failed, other) the correction is stratified by the
    judge's outcome, as the measured one is (issue 46): rows answered YES or NO are corrected
    by Rogan–Gladen with the sensitivity and specificity measured on the oracle frames' rows
    answered YES or NO (``answered``, ``(stories, labels, 4)``), and a row the judge answered
    neither (UNSURE, unreadable, a subject it could not find) holds its fact with the share
    measured on the oracle frames' such rows (``other``: ``(stories, labels, 2)``, rows and
    rows whose fact holds). How a fact is false (a missing subject, answered UNSURE; a wrong
    attribute, answered NO) is then never pooled into one specificity. Without, the
    correction is Rogan–Gladen on passed / not passed (``validation``'s rates).
    """

    def __init__(
        self,
        counts: CellCounts,
        validation: FloatArray,
        labels: Labels,
        weights: FloatArray,
        bound: float = BOUND,
        *,
        outcomes: FloatArray | None = None,
        answered: FloatArray | None = None,
        other: FloatArray | None = None,
    ) -> None:
        self.counts = counts
        self.labels = labels
        self.bound = bound
        self.point: Rates = rates(validation.sum(axis=0), labels)
        self.resampled: Rates = _resampled(validation, weights, labels)
        self.weights = weights
        if outcomes is None or answered is None or other is None:
            self.outcomes = np.stack([counts.passed, counts.total - counts.passed], axis=-1)
            self.used_rates, self.used_resampled = self.point, self.resampled
            self.coef = _coef(self.point, None)
            self.coef_draws = _coef(self.resampled, None)
        else:
            self.outcomes = outcomes
            self.used_rates = rates(answered.sum(axis=0), labels)
            self.used_resampled = _resampled(answered, weights, labels)
            held = np.zeros((*other.shape[:-1], 4))
            held[..., N_TRUE], held[..., TRUE_PASSED] = other[..., 0], other[..., 1]
            q, q_draws = rates(held.sum(axis=0), labels), _resampled(held, weights, labels)
            self.coef = _coef(self.used_rates, q.se)
            self.coef_draws = _coef(self.used_resampled, q_draws.se)

    def _why(self, used: np.ndarray) -> str | None:
        """Why metrics over the labels ``used`` cannot be corrected (None: they can)."""
        p = self.point
        if np.isnan(p.pooled_sp) and np.isnan(p.pooled_se):
            return ("not correctable: no frame of this run has an oracle, so the judge's "
                    "error cannot be measured")  # fmt: skip
        if np.isnan(p.pooled_sp):
            return ("not correctable: the oracle frames hold no false fact of this judge's, so "
                    "its specificity is unknown")  # fmt: skip
        if np.isnan(p.pooled_se):
            return "not correctable: the oracle frames hold no true fact of this judge's"
        j = self.used_rates.youden
        weak = [k for k in np.flatnonzero(used) if not j[k] >= self.bound]
        if not weak:
            return None
        k = min(weak, key=lambda i: j[i])
        d, t = self.labels.names[k]
        return (f"not correctable: on {t} ({d}) the judge's sensitivity + specificity − 1 is "
                f"{j[k]:.2f}, below {self.bound:g}")  # fmt: skip

    def estimate(self, m: int, c: int, keep: np.ndarray | None = None) -> CellEstimate:
        """Cell (m, c) over its stories (``keep``: ``(stories, N_BASE)``, the stories each
        metric may use; default every story with data)."""
        y = self.outcomes[m, c]  # (stories, metrics, labels, outcomes)
        n = y.sum(axis=(-1, -2))
        has = n > 0  # (stories, metrics)
        if keep is not None:
            has &= keep
        used = (y.sum(axis=-1) * has[..., None]).sum(axis=0) > 0  # (metrics, labels)
        reasons: list[str | None] = [self._why(used[j]) if has[:, j].any() else None
                                     for j in range(N_BASE)]  # fmt: skip
        with np.errstate(invalid="ignore", divide="ignore"):
            x = np.where(has[..., None, None], y / n[..., None, None], 0.0)
        w = self.weights
        den = w @ has.astype(np.float64)  # (resamples, metrics)
        px = (w @ x.reshape(len(x), -1)).reshape(len(w), *x.shape[1:])
        jr = self.used_resampled.youden  # (resamples, labels)
        bad = ((jr[:, None, :] <= RESAMPLE_FLOOR) & used[None]).any(axis=-1)
        draws = np.where((jr > RESAMPLE_FLOOR)[..., None], self.coef_draws, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            dist = (px * draws[:, None]).sum(axis=(-1, -2)) / den
        dist[bad | (den == 0)] = np.nan
        point = np.nan_to_num(self.coef, nan=0.0, posinf=0.0, neginf=0.0)
        stories = np.where(has, (x * point).sum(axis=(-1, -2)), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.nansum(stories, axis=0) / has.sum(axis=0)
        score[~has.any(axis=0)] = np.nan
        ok = np.array([r is None for r in reasons])
        score[~ok] = np.nan
        dist[:, ~ok] = np.nan
        avail = has[:, :N_DIMS].any(axis=0)
        g_reason = next((reasons[j] for j in range(N_DIMS) if avail[j] and reasons[j]), None)
        if not avail.any() or g_reason is not None:
            g, gd = np.nan, np.full(len(w), np.nan)
        else:
            g = float(score[:N_DIMS][avail].mean())
            gd = dist[:, :N_DIMS][:, avail].mean(axis=1)
        sg = nan_mean(np.where(has[:, :N_DIMS], stories[:, :N_DIMS], np.nan), axis=1)
        return CellEstimate(
            score=np.append(score, g),
            dist=np.concatenate([dist, gd[:, None]], axis=1),
            reason=[*reasons, g_reason],
            stories=np.concatenate([stories, sg[:, None]], axis=1),
        )


def _resampled(validation: FloatArray, weights: FloatArray, labels: Labels) -> Rates:
    """Rates of ``validation`` (``(stories, labels, 4)``) under each story resample."""
    flat = weights @ validation.reshape(len(validation), -1)
    return rates(flat.reshape(len(weights), *validation.shape[1:]), labels)


def _coef(r: Rates, held: FloatArray | None) -> FloatArray:
    """``(..., labels, outcomes)``: the true facts a row of each judge outcome stands for.
    Rogan–Gladen: ``Sp / J`` for passed and ``−(1 − Sp) / J`` for not passed; with ``held``
    (the share of the oracle frames' rows answered neither whose fact holds; NaN: none, so
    taken as 0, as scoring counts UNSURE) a third outcome of ``held``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        parts = [r.sp / r.youden, -(1.0 - r.sp) / r.youden]
    if held is not None:
        parts.append(np.broadcast_to(np.nan_to_num(held, nan=0.0), r.sp.shape))
    return np.stack(parts, axis=-1)
