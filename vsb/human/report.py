"""From validated rating files to ``HumanReport``: rater exclusions, then every statistic
over the raters kept.

Exclusion is decided per session (one rating file): a session is excluded when its control
accuracy is below ``MIN_CONTROL_ACCURACY`` (only if it had a control) or its median time
per item is under ``MIN_MEDIAN_TIME_S``, so one careless session of a rater does not exclude
the rater's other sessions. The statistics then count a *rater* (``rater_id``) once, over
their kept sessions: a target a rater rated in two kept sessions counts once (first), and
alpha/ICC never pair a rater with themself. Repeated likert items measure test-retest
agreement and are left out of everything else.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vsb.human.load import (
    LoadedFile,
    RatingImportError,
    ReleaseContents,
    release_problems,
    root_hash_problems,
)
from vsb.human.mixed import Observation, fit_mixed
from vsb.human.models import DIMENSION_KEYS, ControlItem, LikertItem, PairwiseItem
from vsb.human.preference import Comparison, preference_stats
from vsb.human.results import (
    SYNTHETIC_NOTICE,
    AlphaRow,
    BradleyTerryRow,
    HumanReport,
    IccRow,
    MixedModel,
    ModelMean,
    PreferenceRow,
    RaterSummary,
    SourceFile,
)
from vsb.human.stats import (
    LEVELS,
    Target,
    clustered_means,
    complete_block,
    icc2,
    krippendorff_alpha,
)
from vsb.release.manifest import load_manifest
from vsb.scores.stats.bootstrap import Resampling
from vsb.validation.humans import human_agreement, load_scores

MIN_CONTROL_ACCURACY = 0.75
MIN_MEDIAN_TIME_S = 4.0
OVERALL = "overall"
#: Rated dimensions plus their mean, the order of every per-dimension table.
ALL_DIMENSIONS: tuple[str, ...] = (OVERALL, *DIMENSION_KEYS)
MIXED_FORMULA = "rating ~ model + (1|story) + (1|rater)"
LIKERT_SCALE = (1.0, 2.0, 3.0, 4.0, 5.0)


@dataclass
class _Rater:
    file: str = ""
    likert: list[LikertItem] = field(default_factory=list)
    pairwise: list[PairwiseItem] = field(default_factory=list)
    control: list[ControlItem] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    repeat_diffs: list[float] = field(default_factory=list)


def _vector(it: LikertItem) -> np.ndarray:
    v = np.array([getattr(it.ratings, d) for d in DIMENSION_KEYS], dtype=np.float64)
    return np.concatenate([[v.mean()], v])  # overall first, as ALL_DIMENSIONS


def _collect(files: Sequence[LoadedFile]) -> dict[tuple[str, str], _Rater]:
    """(rater_id, session_id) -> that session's items (the unit of exclusion)."""
    raters: dict[tuple[str, str], _Rater] = {}
    for f in files:
        r = raters[(f.rating.rater_id, f.rating.session_id)] = _Rater(file=f.path.name)
        likert = {it.item_id: it for it in f.rating.items if isinstance(it, LikertItem)}
        for it in f.rating.items:
            r.times.append(it.time_s)
            if isinstance(it, LikertItem):
                r.likert.append(it)
                if it.repeat_of is not None:
                    diff = np.abs(_vector(it)[1:] - _vector(likert[it.repeat_of])[1:]).mean()
                    r.repeat_diffs.append(float(diff))
            elif isinstance(it, ControlItem):
                r.control.append(it)
            else:
                r.pairwise.append(it)
    return dict(sorted(raters.items()))


def _merge(sessions: list[_Rater]) -> _Rater:
    """A rater's kept sessions as one rater (in session_id order: the first rating wins)."""
    out = _Rater(file=";".join(s.file for s in sessions))
    for s in sessions:
        out.likert += s.likert
        out.pairwise += s.pairwise
        out.control += s.control
        out.times += s.times
        out.repeat_diffs += s.repeat_diffs
    return out


def _summaries(raters: dict[tuple[str, str], _Rater]) -> list[RaterSummary]:
    out = []
    for (rid, sid), r in raters.items():
        correct = sum(c.correct for c in r.control)
        acc = correct / len(r.control) if r.control else None
        med = float(np.median(r.times)) if r.times else None
        reasons = []
        if acc is not None and acc < MIN_CONTROL_ACCURACY:
            reasons.append(
                f"control accuracy {acc:.0%} ({correct}/{len(r.control)}) is below "
                f"{MIN_CONTROL_ACCURACY:.0%}"
            )
        if med is not None and med < MIN_MEDIAN_TIME_S:
            reasons.append(f"median item time {med:.1f} s is under {MIN_MEDIAN_TIME_S:g} s")
        out.append(
            RaterSummary(
                rater_id=rid, session_id=sid, file=r.file, n_items=len(r.times),
                n_likert=len(r.likert), n_pairwise=len(r.pairwise), n_control=len(r.control),
                n_control_correct=correct, control_accuracy=acc, median_time_s=med,
                repeat_abs_diff=float(np.mean(r.repeat_diffs)) if r.repeat_diffs else None,
                excluded=bool(reasons), reasons=reasons,
            )
        )  # fmt: skip
    return out


def _targets(kept: dict[str, _Rater]) -> dict[Target, dict[str, np.ndarray]]:
    """target -> rater -> rating vector (overall + six), first non-repeat rating only."""
    out: dict[Target, dict[str, np.ndarray]] = defaultdict(dict)
    for rid, r in kept.items():
        for it in r.likert:
            if it.repeat_of is None:
                out[(it.story_id, it.condition, it.model)].setdefault(rid, _vector(it))
    return dict(sorted(out.items()))


def _alpha(targets: dict[Target, dict[str, np.ndarray]], raters: list[str]) -> list[AlphaRow]:
    ri = {r: i for i, r in enumerate(raters)}
    cube = np.full((len(raters), len(targets), len(DIMENSION_KEYS)), np.nan)
    for j, by in enumerate(targets.values()):
        for rid, v in by.items():
            cube[ri[rid], j, :] = v[1:]
    rows = []
    for k, dim in enumerate(("all", *DIMENSION_KEYS)):
        flat = cube.reshape(len(raters), len(targets) * len(DIMENSION_KEYS))
        data = flat if k == 0 else cube[:, :, k - 1]
        n_units = int(((~np.isnan(data)).sum(axis=0) >= 2).sum()) if data.size else 0
        nominal, ordinal, interval = (
            krippendorff_alpha(data, lv, LIKERT_SCALE) if data.size else None for lv in LEVELS
        )
        rows.append(
            AlphaRow(dimension=dim, nominal=nominal, ordinal=ordinal, interval=interval,
                     n_units=n_units, n_raters=len(raters))
        )  # fmt: skip
    return rows


def _icc(targets: dict[Target, dict[str, np.ndarray]]) -> list[IccRow]:
    block, raters = complete_block({t: set(by) for t, by in targets.items()})
    rows = []
    for k, dim in enumerate(ALL_DIMENSIONS):
        y = np.array([[targets[t][r][k] for r in raters] for t in block], dtype=np.float64)
        icc = icc2(y) if block else None
        rows.append(
            IccRow(
                dimension=dim, icc2_1=icc.icc2_1 if icc else None,
                icc2_k=icc.icc2_k if icc else None, k=len(raters), n_targets=len(block),
                raters=raters,
            )
        )  # fmt: skip
    return rows


def _unit_means(targets: dict[Target, dict[str, np.ndarray]]) -> dict[Target, np.ndarray]:
    return {t: np.mean(list(by.values()), axis=0) for t, by in targets.items()}


def _model_means(
    units: dict[Target, np.ndarray], counts: dict[tuple[str, str], int],
    rng: np.random.Generator, n_resamples: int, confidence: float,
) -> list[ModelMean]:  # fmt: skip
    stories = sorted({t[0] for t in units})
    cells = sorted({(t[2], t[1]) for t in units})  # (model, condition)
    si = {s: i for i, s in enumerate(stories)}
    ci = {c: i for i, c in enumerate(cells)}
    nd = len(ALL_DIMENSIONS)
    values = np.full((len(stories), len(cells) * nd), np.nan)
    for (story, cond, model), v in units.items():
        j = ci[(model, cond)]
        values[si[story], j * nd : (j + 1) * nd] = v
    means = clustered_means(values, rng, n_resamples, confidence)
    out = []
    for (model, cond), j in ci.items():
        for k, dim in enumerate(ALL_DIMENSIONS):
            m = means[j * nd + k]
            if m is not None:
                out.append(
                    ModelMean(model=model, condition=cond, dimension=dim, mean=m.mean,
                              ci_low=m.ci_low, ci_high=m.ci_high, n_stories=m.n_stories,
                              n_ratings=counts[(model, cond)])
                )  # fmt: skip
    return out


def _preferences(
    kept: dict[str, _Rater], rng: np.random.Generator, n_resamples: int, confidence: float
) -> tuple[list[PreferenceRow], list[BradleyTerryRow]]:
    outcome = {"a": 1.0, "b": 0.0, "tie": 0.5}
    cmp = [
        Comparison(it.model_a, it.model_b, outcome[it.choice])
        for r in kept.values()
        for it in r.pairwise
    ]
    tables, strengths = preference_stats(cmp, rng, n_resamples, confidence)
    prefs = [
        PreferenceRow(model_a=t.x, model_b=t.y, n=t.n, wins_a=t.wins_x, wins_b=t.wins_y,
                      ties=t.ties, win_rate_a=t.win_rate_x, ci_low=t.ci_low, ci_high=t.ci_high)
        for t in tables
    ]  # fmt: skip
    bt = [BradleyTerryRow(**s.__dict__) for s in strengths]
    return prefs, bt


def _mixed(
    kept: dict[str, _Rater], truth: dict[str, float] | None, confidence: float
) -> MixedModel | None:
    obs = [
        Observation(float(_vector(it)[0]), it.model, it.story_id, rid, it.condition)
        for rid, r in kept.items()
        for it in r.likert
        if it.repeat_of is None
    ]
    if not obs:
        return None
    fit = fit_mixed(obs, confidence=confidence)
    effects = [
        e.model_copy(update={"true_effect": truth[e.model] - truth[fit.reference]})
        if truth and e.model in truth and fit.reference in truth
        else e
        for e in fit.effects
    ]
    return MixedModel(
        formula=MIXED_FORMULA, reference=fit.reference, intercept=fit.intercept, effects=effects,
        var_story=fit.var_story, var_rater=fit.var_rater, var_residual=fit.var_residual,
        n_obs=fit.n_obs, n_stories=fit.n_stories, n_raters=fit.n_raters,
        converged=fit.converged, notes=fit.notes,
    )  # fmt: skip


def build_report(
    files: Sequence[LoadedFile],
    *,
    release_dir: str | Path | None = None,
    settings: Resampling = Resampling(n_resamples=1000),
) -> HumanReport:
    """Every statistic of the kept raters; ``release_dir`` adds judge-human agreement
    (``RatingImportError`` if a file rates a model or story the release does not have)."""
    scores = load_scores(release_dir) if release_dir is not None else None
    if scores is not None and release_dir is not None:
        manifest = load_manifest(release_dir)
        strips = frozenset((s.story_id, s.condition, s.model) for s in scores.stories)
        contents = ReleaseContents(Path(release_dir), manifest.release, strips)
        problems = root_hash_problems(files, manifest.root_hash, Path(release_dir))
        problems += release_problems(files, contents)
        if problems:
            raise RatingImportError(problems)
    sessions = _collect(files)
    summaries = _summaries(sessions)
    by_rater: dict[str, list[_Rater]] = defaultdict(list)
    for s in summaries:
        if not s.excluded:
            by_rater[s.rater_id].append(sessions[(s.rater_id, s.session_id)])
    kept = {rid: _merge(by_rater[rid]) for rid in sorted(by_rater)}
    targets = _targets(kept)
    units = _unit_means(targets)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for r in kept.values():
        for it in r.likert:
            counts[(it.model, it.condition)] += it.repeat_of is None
    rng_means, rng_prefs = np.random.default_rng(settings.seed).spawn(2)
    n_resamples, confidence = settings.n_resamples, settings.confidence
    means = _model_means(units, counts, rng_means, n_resamples, confidence)
    prefs, bt = _preferences(kept, rng_prefs, n_resamples, confidence)
    synthetic = any(f.rating.synthetic for f in files)
    truth = next((f.rating.truth.model_means for f in files if f.rating.truth), None)
    agreement = None
    if release_dir is not None:
        unit_ratings = {
            (t[2], t[1], t[0]): dict(zip(ALL_DIMENSIONS, map(float, v), strict=True))
            for t, v in units.items()
        }
        model_ratings = {(m.model, m.condition): m.mean for m in means if m.dimension == OVERALL}
        agreement = human_agreement(
            release_dir, unit_ratings, model_ratings, list(ALL_DIMENSIONS), scores
        )
    repeat = [d for r in kept.values() for d in r.repeat_diffs]
    return HumanReport(
        synthetic=synthetic,
        notice=SYNTHETIC_NOTICE if synthetic else "",
        releases=sorted({f.rating.release for f in files}),
        **settings.report_fields(),
        min_control_accuracy=MIN_CONTROL_ACCURACY, min_median_time_s=MIN_MEDIAN_TIME_S,
        sources=[
            SourceFile(
                file=f.path.name, sha256=f.sha256, rater_id=f.rating.rater_id,
                session_id=f.rating.session_id, release=f.rating.release,
                root_hash=f.rating.root_hash, synthetic=f.rating.synthetic,
                n_items=len(f.rating.items),
            )
            for f in files
        ],
        raters=summaries,
        n_raters_kept=len(kept),
        test_retest_abs_diff=float(np.mean(repeat)) if repeat else None,
        alpha=_alpha(targets, sorted(kept)),
        icc=_icc(targets),
        model_means=means,
        preferences=prefs,
        bradley_terry=bt,
        mixed_model=_mixed(kept, truth, confidence),
        agreement=agreement,
    )  # fmt: skip
