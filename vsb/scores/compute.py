"""``vsb score``: from a run's evaluations to a typed ``ScoresReport`` (no scipy needed).

Randomness: the bootstrap counts come from ``numpy.random.default_rng(seed)`` (one batch of
``rng.integers(0, n_stories, (n_resamples, n_stories))``, shared by every model-level
interval and every paired comparison, so all of them are paired by construction); the rank
stability weights come from ``numpy.random.default_rng([seed, 1])``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from vsb.errors import InputError
from vsb.fsio import sha256_file
from vsb.scores.aggregate import ALL_METRICS, GLOBAL, Cell, Estimates, model_estimates
from vsb.scores.aggregate import paired_comparisons as _paired
from vsb.scores.bootstrap import resample_counts
from vsb.scores.inputs import (
    REQUIREMENTS_FILE,
    load_requirements,
    read_manifest,
    release_name,
    require_run_dir,
)
from vsb.scores.models import (
    PRIMARY_CONDITION,
    SUMMARIES,
    Comparison,
    Estimate,
    ModelScore,
    RankStability,
    RankStabilityModel,
    RunIdentity,
    ScoresReport,
    StoryScore,
)
from vsb.scores.rank import rank_stability
from vsb.scores.table import N_DIMS, StoryTable, build_story_table
from vsb.story.models import DIMENSIONS

DEFAULT_RESAMPLES = 2000
DEFAULT_DRAWS = 1000


def _f(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _metric_kind(j: int) -> tuple[str, str]:
    """(metric_kind, metric) of result column j."""
    if j < N_DIMS:
        return "dimension", ALL_METRICS[j]
    return "summary", SUMMARIES[j - N_DIMS]


def load_table(run_dir: str | Path) -> StoryTable:
    """Read a run's requirement rows into a StoryTable (models/conditions in manifest order)."""
    root = require_run_dir(run_dir)
    manifest = read_manifest(root)
    rows = load_requirements(root)
    return build_story_table(
        rows,
        model_order=[str(m) for m in manifest.get("models", [])],
        condition_order=[str(c) for c in manifest.get("conditions", [])],
    )


def _estimate(est: Estimates, m: int, c: int, j: int) -> Estimate | None:
    score = float(est.score[m, c, j])
    if math.isnan(score):
        return None
    return Estimate(
        score=score,
        ci_low=_f(est.low[m, c, j]),
        ci_high=_f(est.high[m, c, j]),
        n_stories=int(est.n_stories[m, c, j]),
    )


def _model_scores(table: StoryTable, est: Estimates) -> list[ModelScore]:
    out: list[ModelScore] = []
    for c, cond in enumerate(table.conditions):
        cells = [m for m in range(len(table.models)) if table.has_row(m, c)]
        g = np.array([est.score[m, c, GLOBAL] for m in cells])
        g = np.where(np.isnan(g), -np.inf, g)
        ranks = 1 + (g[None, :] > g[:, None]).sum(axis=1)
        order = sorted(range(len(cells)), key=lambda i: (ranks[i], table.models[cells[i]]))
        for i in order:
            m = cells[i]
            out.append(
                ModelScore(
                    model=table.models[m],
                    condition=cond,
                    dimensions={d: _estimate(est, m, c, j) for j, d in enumerate(DIMENSIONS)},
                    adherence=_estimate(est, m, c, N_DIMS),
                    coherence=_estimate(est, m, c, N_DIMS + 1),
                    global_score=_estimate(est, m, c, GLOBAL),
                    rank=int(ranks[i]),
                    n_stories=int((table.n_images[m, c] > 0).sum()),
                    n_images=int(table.n_images[m, c].sum()),
                    n_requirements=int(table.n_requirements[m, c].sum()),
                )
            )
    return out


def _story_scores(table: StoryTable) -> list[StoryScore]:
    g = table.story_global()
    out: list[StoryScore] = []
    for m, model in enumerate(table.models):
        for c, cond in enumerate(table.conditions):
            for s, story in enumerate(table.stories):
                if table.n_images[m, c, s] == 0:
                    continue
                v = table.values[m, c, s]
                out.append(
                    StoryScore(
                        model=model,
                        condition=cond,
                        story_id=story,
                        dimensions={d: _f(v[j]) for j, d in enumerate(DIMENSIONS)},
                        adherence=_f(v[N_DIMS]),
                        coherence=_f(v[N_DIMS + 1]),
                        global_score=_f(g[m, c, s]),
                        n_images=int(table.n_images[m, c, s]),
                        n_requirements=int(table.n_requirements[m, c, s]),
                    )
                )
    return out


def all_pairs(table: StoryTable) -> list[tuple[str, Cell, Cell]]:
    """Every model pair within each condition (manifest order), then every condition pair for
    each model (canonical order, except that the primary condition is always side a)."""
    out: list[tuple[str, Cell, Cell]] = []
    nm, nc = len(table.models), len(table.conditions)
    for c in range(nc):
        ms = [m for m in range(nm) if table.has_row(m, c)]
        out += [("model", (a, c), (b, c)) for i, a in enumerate(ms) for b in ms[i + 1 :]]
    primary = (
        table.conditions.index(PRIMARY_CONDITION) if PRIMARY_CONDITION in table.conditions else -1
    )
    for m in range(nm):
        cs = [c for c in range(nc) if table.has_row(m, c)]
        for i, a in enumerate(cs):
            for b in cs[i + 1 :]:
                first, second = (b, a) if b == primary else (a, b)
                out.append(("condition", (m, first), (m, second)))
    return out


def compare_cells(
    table: StoryTable,
    pairs: Sequence[tuple[str, Cell, Cell]],
    weights: np.ndarray,
    confidence: float = 0.95,
) -> list[Comparison]:
    """Paired comparisons of each (kind, a, b), one ``Comparison`` per metric with data."""
    res = _paired(table, [(a, b) for _, a, b in pairs], weights, confidence)
    out: list[Comparison] = []
    for p, (kind, a, b) in enumerate(pairs):
        for j in range(len(ALL_METRICS)):
            if math.isnan(res.diff[p, j]):
                continue
            metric_kind, metric = _metric_kind(j)
            out.append(
                Comparison(
                    kind=kind,
                    a_model=table.models[a[0]],
                    a_condition=table.conditions[a[1]],
                    b_model=table.models[b[0]],
                    b_condition=table.conditions[b[1]],
                    metric_kind=metric_kind,
                    metric=metric,
                    a_score=float(res.a_score[p, j]),
                    b_score=float(res.b_score[p, j]),
                    diff=float(res.diff[p, j]),
                    ci_low=_f(res.low[p, j]),
                    ci_high=_f(res.high[p, j]),
                    p_greater=_f(res.p_greater[p, j]),
                    win_rate=float(res.win_rate[p, j]),
                    n_stories=int(res.n_stories[p, j]),
                )
            )
    return out


def _rank_stability(
    table: StoryTable, est: Estimates, rng: np.random.Generator, n_draws: int, alpha: float
) -> list[RankStability]:
    out: list[RankStability] = []
    for c, cond in enumerate(table.conditions):
        ms = [m for m in range(len(table.models)) if table.has_row(m, c)]
        if not ms:
            continue
        r = rank_stability(est.score[ms, c, :N_DIMS], rng, n_draws=n_draws, alpha=alpha)
        tau = r["tau"][~np.isnan(r["tau"])]
        models = [
            RankStabilityModel(
                model=table.models[m],
                rank=int(r["rank"][i]),
                keep_rank=float(r["keep_rank"][i]),
                mean_rank=float(r["mean_rank"][i]),
                rank_p05=float(r["rank_p05"][i]),
                rank_p95=float(r["rank_p95"][i]),
            )
            for i, m in enumerate(ms)
        ]
        models.sort(key=lambda x: (x.rank, x.model))
        out.append(
            RankStability(
                condition=cond,
                primary=cond == PRIMARY_CONDITION,
                n_draws=n_draws,
                alpha=alpha,
                tau_mean=float(tau.mean()) if tau.size else None,
                tau_p05=float(np.percentile(tau, 5)) if tau.size else None,
                tau_p95=float(np.percentile(tau, 95)) if tau.size else None,
                models=models,
            )
        )
    return out


def score_table(
    table: StoryTable,
    run: RunIdentity,
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    n_draws: int = DEFAULT_DRAWS,
    alpha: float = 1.0,
    progress: Callable[[str], None] | None = None,
) -> ScoresReport:
    """Every statistic of ``vsb score`` for an in-memory StoryTable."""
    if n_resamples < 1:
        raise InputError(f"--resamples must be ≥ 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    note = progress or (lambda _msg: None)
    weights = resample_counts(np.random.default_rng(seed), len(table.stories), n_resamples)
    note("model-level estimates")
    est = model_estimates(table, weights, confidence)
    note("paired comparisons")
    comparisons = compare_cells(table, all_pairs(table), weights, confidence)
    note("rank stability")
    stability = _rank_stability(table, est, np.random.default_rng([seed, 1]), n_draws, alpha)
    return ScoresReport(
        run=run,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        dimensions=list(DIMENSIONS),
        models=list(table.models),
        conditions=list(table.conditions),
        scores=_model_scores(table, est),
        stories=_story_scores(table),
        comparisons=comparisons,
        rank_stability=stability,
    )


def run_identity(run_dir: Path, release: str | None = None) -> RunIdentity:
    """Identity of a run directory (manifest fields, release name, evaluation hash); the
    release name is ``release`` if given, else read from a MANIFEST.json."""
    manifest = read_manifest(run_dir)
    seed = manifest.get("seed")
    return RunIdentity(
        run_dir=run_dir.resolve().name,
        release=release if release is not None else release_name(run_dir),
        suite=str(manifest["suite"]) if manifest.get("suite") is not None else None,
        suite_sha256=manifest.get("suite_sha256"),
        run_seed=int(seed) if isinstance(seed, int) else None,
        prompt_style=manifest.get("prompt_style"),
        requirements_sha256=sha256_file(run_dir / REQUIREMENTS_FILE),
    )


def score_run(
    run_dir: str | Path,
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    n_draws: int = DEFAULT_DRAWS,
    alpha: float = 1.0,
    progress: Callable[[str], None] | None = None,
    release: str | None = None,
) -> ScoresReport:
    """Score a run directory (reads ``evaluations/requirements.jsonl``); writes nothing."""
    root = require_run_dir(run_dir)
    table = load_table(root)
    return score_table(
        table,
        run_identity(root, release),
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        n_draws=n_draws,
        alpha=alpha,
        progress=progress,
    )


def parse_cell(table: StoryTable, spec: str, default_condition: str | None) -> Cell:
    """``MODEL[:CONDITION]`` -> (model index, condition index); unknown names raise."""
    from vsb.errors import UnknownNameError

    model, _, cond = spec.partition(":")
    cond = cond or default_condition or ""
    if model not in table.models:
        raise UnknownNameError("model", model, table.models)
    if cond not in table.conditions:
        raise UnknownNameError("condition", cond, table.conditions)
    cell = (table.models.index(model), table.conditions.index(cond))
    if not table.has_row(*cell):
        raise InputError(f"model {model!r} has no evaluations in condition {cond!r}")
    return cell


def compare_run(
    run_dir: str | Path,
    a: str,
    b: str,
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> list[Comparison]:
    """Paired comparison of ``a`` − ``b`` (each ``MODEL[:CONDITION]``) on every metric.

    A side without a condition takes the other side's; with neither, the primary condition
    (or the run's first condition if the primary was not run). Uses the same bootstrap
    counts as ``score_run`` with the same seed, so the numbers match ``scores.json``.
    """
    table = load_table(run_dir)
    given = a.partition(":")[2] or b.partition(":")[2]
    default = given or (
        PRIMARY_CONDITION if PRIMARY_CONDITION in table.conditions else table.conditions[0]
    )
    ca = parse_cell(table, a, default)
    cb = parse_cell(table, b, default)
    if ca == cb:
        raise InputError(f"--a and --b are the same: {a!r}")
    kind = "model" if ca[1] == cb[1] else "condition"
    weights = resample_counts(np.random.default_rng(seed), len(table.stories), n_resamples)
    return compare_cells(table, [(kind, ca, cb)], weights, confidence)
