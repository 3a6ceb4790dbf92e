"""Judges against humans: where ratings exist, how well does each evaluator agree with them?

Two views (methodology section 7), both over the raters kept after exclusions:

- **story level**: for every (evaluator signal, rated dimension), Spearman ρ and Kendall τ-b
  between the signal's value and the mean human rating over story runs
  (model x condition x story) that have both. Evaluator signals are each evaluator's story
  scores from ``scores.json`` (``global``, ``coherence``, ``adherence``) and the story means
  of every continuous signal in the signals table (``evaluations/signals.parquet``);
- **model ranking**: per condition, Kendall τ-b between the human ranking of models (mean
  rating, macro over stories) and each evaluator's ranking (its global score).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from vsb.errors import RunError
from vsb.fsio import STRICT, load_model
from vsb.scores.inputs import load_signals
from vsb.scores.models import ScoresReport
from vsb.validation.models import RankCorrelation

SCORES_FILE = "scores/scores.json"
STORY_SUMMARIES = ("global", "coherence", "adherence")

Unit = tuple[str, str, str]
"""(model, condition, story_id): one story run."""


class _HumanKey(BaseModel):
    model_config = STRICT
    evaluator: str = Field(description="Evaluator that produced the signal.")
    signal: str = Field(description="'global', 'coherence', 'adherence' or a signal name.")
    dimension: str = Field(description="Rated dimension, or 'overall' (mean of the six).")


class HumanSignalCorrelation(RankCorrelation, _HumanKey):
    """Story-level rank correlation between an evaluator signal and a rated dimension."""


class HumanRankAgreement(BaseModel):
    """One evaluator's model ranking against the human one, in one condition."""

    model_config = STRICT
    evaluator: str
    condition: str
    models: list[str] = Field(description="Models both rank, human order (best first).")
    evaluator_order: list[str] = Field(description="The same models in the evaluator's order.")
    kendall_tau: float | None = Field(description="Kendall τ-b (null: < 2 models or a tie-out).")
    n_models: int = Field(ge=0)


class HumanAgreement(BaseModel):
    """Every evaluator of a release against the human ratings."""

    model_config = STRICT
    correlations: list[HumanSignalCorrelation] = Field(
        description="By evaluator, signal, then dimension ('overall' first)."
    )
    rankings: list[HumanRankAgreement] = Field(description="By condition, then evaluator.")


def load_scores(release_dir: str | Path) -> ScoresReport:
    """``RELEASE/scores/scores.json``; ``RunError`` if absent, ``InputError`` if malformed."""
    path = Path(release_dir) / SCORES_FILE
    try:
        return load_model(path, ScoresReport, "not a scores report")
    except FileNotFoundError:
        raise RunError("no scores (run `vsb score` first)", file=path) from None


def evaluator_signals(
    scores: ScoresReport, release_dir: str | Path
) -> dict[tuple[str, str], dict[Unit, float]]:
    """(evaluator, signal) -> story run -> value: story scores, then continuous signals."""
    out: dict[tuple[str, str], dict[Unit, float]] = defaultdict(dict)
    for s in scores.stories:
        unit = (s.model, s.condition, s.story_id)
        for name in STORY_SUMMARIES:
            v = getattr(s, "global_score" if name == "global" else name)
            if v is not None:
                out[(s.evaluator, name)][unit] = float(v)
    sig = load_signals(release_dir)
    tot: dict[tuple[str, str], dict[Unit, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m, c, st, name, v, ev in zip(
        sig.model, sig.condition, sig.story_id, sig.signal, sig.value, sig.evaluator, strict=True
    ):
        tot[(ev, name)][(m, c, st)].append(v)
    for key, units in tot.items():
        out[key] = {u: sum(vs) / len(vs) for u, vs in units.items()}
    return dict(out)


def story_correlations(
    signals: dict[tuple[str, str], dict[Unit, float]],
    ratings: dict[Unit, dict[str, float]],
    dimensions: list[str],
) -> list[HumanSignalCorrelation]:
    """Spearman and Kendall per (evaluator signal, rated dimension) over shared story runs."""
    rows = []
    for (ev, name), values in sorted(signals.items()):
        for dim in dimensions:
            units = sorted(u for u in values if u in ratings and dim in ratings[u])
            rows.append(
                HumanSignalCorrelation.between(
                    [values[u] for u in units], [ratings[u][dim] for u in units],
                    evaluator=ev, signal=name, dimension=dim,
                )
            )  # fmt: skip
    return rows


def ranking_agreement(
    scores: ScoresReport, human: dict[tuple[str, str], float]
) -> list[HumanRankAgreement]:
    """Per condition humans rated and evaluator: Kendall τ-b of the two model rankings."""
    from scipy.stats import kendalltau

    rows = []
    for cond in sorted({c for _, c in human}):
        for ev in scores.evaluators:
            theirs = {
                r.model: r.global_score.score
                for r in scores.scores
                if r.evaluator == ev and r.condition == cond and r.global_score is not None
            }
            shared = [m for (m, c) in human if c == cond and m in theirs]
            h_order = sorted(shared, key=lambda m: (-human[(m, cond)], m))
            e_order = sorted(shared, key=lambda m: (-theirs[m], m))
            tau = None
            if len(shared) >= 2:
                t = float(
                    kendalltau(
                        [human[(m, cond)] for m in shared], [theirs[m] for m in shared]
                    ).statistic
                )
                tau = None if t != t else t  # NaN when one side is constant
            rows.append(
                HumanRankAgreement(
                    evaluator=ev, condition=cond, models=h_order, evaluator_order=e_order,
                    kendall_tau=tau, n_models=len(shared),
                )
            )  # fmt: skip
    return rows


def human_agreement(
    release_dir: str | Path,
    unit_ratings: dict[Unit, dict[str, float]],
    model_ratings: dict[tuple[str, str], float],
    dimensions: list[str],
    scores: ScoresReport | None = None,
) -> HumanAgreement:
    """Both views for the release at ``release_dir`` (its scores, unless given, and signals)."""
    scores = scores or load_scores(release_dir)
    signals = evaluator_signals(scores, release_dir)
    return HumanAgreement(
        correlations=story_correlations(signals, unit_ratings, dimensions),
        rankings=ranking_agreement(scores, model_ratings),
    )
