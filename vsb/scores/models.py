"""Typed models of ``RUN/scores/scores.json`` (what ``vsb score`` writes and the site reads).

Metric names: the ten dimensions (``vsb.story.models.DIMENSIONS``) are ``kind="dimension"``;
``adherence`` (pass rate over prompt-source requirements), ``coherence`` (over memory-source
requirements) and ``global`` (unweighted mean of the ten dimensions, for ranking only) are
``kind="summary"``. The dimension ``adherence`` (a character being present when the text
says so) and the summary ``adherence`` are different numbers; ``kind`` tells them apart.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCORES_FORMAT_VERSION = "1.0"
PRIMARY_CONDITION = "structured_memory"

MetricKind = Literal["dimension", "summary"]
#: Summary metrics, in display order.
SUMMARIES: tuple[str, ...] = ("adherence", "coherence", "global")

_STRICT = ConfigDict(extra="forbid", frozen=True)


class Estimate(BaseModel):
    """A macro-average over stories with its story-clustered percentile bootstrap CI."""

    model_config = _STRICT
    score: float = Field(description="Macro-average over the stories that have this metric.")
    ci_low: float | None = Field(
        description="Lower bound of the percentile bootstrap CI (null: no resample had data)."
    )
    ci_high: float | None = Field(description="Upper bound of the percentile bootstrap CI.")
    n_stories: int = Field(ge=0, description="Stories that contribute (have ≥1 requirement).")


class ModelScore(BaseModel):
    """One (model, condition): every metric with its CI."""

    model_config = _STRICT
    model: str = Field(description="Model (adapter) name.")
    condition: str = Field(description="Prompting condition.")
    dimensions: dict[str, Estimate | None] = Field(
        description="Per dimension (all ten keys, display order); null if no story has it."
    )
    adherence: Estimate | None = Field(description="Pass rate over prompt-source requirements.")
    coherence: Estimate | None = Field(description="Pass rate over memory-source requirements.")
    global_score: Estimate | None = Field(
        description="Unweighted mean of the ten dimensions (ranking only)."
    )
    rank: int = Field(ge=1, description="Rank by global score within the condition (1 = best).")
    n_stories: int = Field(ge=0, description="Stories with at least one evaluated image.")
    n_images: int = Field(ge=0, description="Evaluated images.")
    n_requirements: int = Field(ge=0, description="Evaluated (image, requirement) checks.")


class StoryScore(BaseModel):
    """One run (story × model × condition): pass rates (null where there is no requirement)."""

    model_config = _STRICT
    model: str
    condition: str
    story_id: str
    dimensions: dict[str, float | None] = Field(description="Pass rate per dimension.")
    adherence: float | None = Field(description="Pass rate over prompt-source requirements.")
    coherence: float | None = Field(description="Pass rate over memory-source requirements.")
    global_score: float | None = Field(description="Mean of the dimensions this story has.")
    n_images: int = Field(ge=0)
    n_requirements: int = Field(ge=0)


class Comparison(BaseModel):
    """A paired story-level bootstrap comparison of a − b on one metric."""

    model_config = _STRICT
    kind: Literal["model", "condition"] = Field(
        description="model: two models in one condition; condition: one model in two conditions."
    )
    a_model: str
    a_condition: str
    b_model: str
    b_condition: str
    metric_kind: MetricKind
    metric: str
    a_score: float = Field(description="Macro-average of a over the shared stories.")
    b_score: float = Field(description="Macro-average of b over the shared stories.")
    diff: float = Field(description="a − b over the stories both have.")
    ci_low: float | None = Field(description="Percentile CI of the difference.")
    ci_high: float | None
    p_greater: float | None = Field(description="Share of bootstrap resamples with Δ > 0.")
    win_rate: float = Field(description="Share of shared stories where a > b (ties count ½).")
    n_stories: int = Field(ge=0, description="Stories both a and b have this metric for.")


class RankStabilityModel(BaseModel):
    """How one model's rank moves under Dirichlet-perturbed dimension weights."""

    model_config = _STRICT
    model: str
    rank: int = Field(ge=1, description="Rank under equal weights (1 = best).")
    keep_rank: float = Field(description="Share of draws in which the model keeps that rank.")
    mean_rank: float
    rank_p05: float = Field(description="5th percentile of its rank over draws.")
    rank_p95: float = Field(description="95th percentile of its rank over draws.")


class RankStability(BaseModel):
    """Dirichlet weight-perturbation analysis within one condition."""

    model_config = _STRICT
    condition: str
    primary: bool = Field(description="Whether this is the primary condition.")
    n_draws: int = Field(ge=0)
    alpha: float = Field(description="Symmetric Dirichlet concentration.")
    tau_mean: float | None = Field(description="Mean Kendall τ-b to the equal-weight ranking.")
    tau_p05: float | None
    tau_p95: float | None
    models: list[RankStabilityModel]


class RunIdentity(BaseModel):
    """Which run (and release, if frozen) the scores were computed from."""

    model_config = _STRICT
    run_dir: str = Field(description="Directory name of the run (not the full path).")
    release: str | None = Field(description="Release name from MANIFEST.json, if frozen.")
    suite: str | None = None
    suite_sha256: str | None = None
    run_seed: int | None = None
    prompt_style: str | None = None
    requirements_sha256: str = Field(description="SHA-256 of evaluations/requirements.jsonl.")


class ScoresReport(BaseModel):
    """``RUN/scores/scores.json``."""

    model_config = _STRICT
    version: str = Field(default=SCORES_FORMAT_VERSION, description="scores.json format version.")
    run: RunIdentity
    seed: int = Field(description="Seed of the bootstrap and weight-perturbation generators.")
    n_resamples: int = Field(ge=1, description="Bootstrap resamples.")
    confidence: float = Field(description="Confidence level of every interval.")
    primary_condition: str = PRIMARY_CONDITION
    dimensions: list[str] = Field(description="The ten dimensions, display order.")
    models: list[str]
    conditions: list[str]
    scores: list[ModelScore] = Field(description="Sorted by condition, then rank.")
    stories: list[StoryScore] = Field(description="Sorted by model, condition, story.")
    comparisons: list[Comparison]
    rank_stability: list[RankStability]
