"""Typed models of ``RUN/scores/scores.json`` (what ``vsb score`` writes and the site reads).

Metric names: the ten dimensions (``vsb.story.models.DIMENSIONS``) are ``kind="dimension"``;
``adherence`` (pass rate over prompt-source requirements), ``coherence`` (over memory-source
requirements, strict), ``conditional_coherence`` (over memory-source requirements whose
subject was found) and ``global`` (unweighted mean of the ten dimensions, for ranking only)
are ``kind="summary"``. The dimension ``adherence`` (a character being present when the text
says so) and the summary ``adherence`` are different numbers; ``kind`` tells them apart.

Format 2.0: who judged is an axis. Every row names its ``evaluator`` (the rule checker
``rules``, a VLM judge, …; a judge evaluator whose rows carry several judge models is split
into one evaluator per model, ``NAME:JUDGE_MODEL``), and the statistics of two evaluators are
never pooled. ``not_applicable`` verdicts are left out of every rate; ``unsure`` and
``parse_failure`` count as not passed.

Format 2.1 adds (all optional, so 2.0 files still load): each model's bootstrap rank range
(``rank_low``/``rank_high``), each comparison's bootstrap standard error, minimum detectable
difference at 80 % power and the stories needed to detect its Δ (``vsb.scores.stats.power``), and
the long-horizon view (``horizon``: by scene position, difficulty and story length).

Format 2.2 adds ``prompts`` (optional): per model, how its prompts fit its text budget and
how many were cut (``vsb.scores.compute.prompt_cuts``, from the run's records).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from vsb.fsio import STRICT
from vsb.scores.horizon import HorizonPoint
from vsb.scores.signals import SignalScore

SCORES_FORMAT_VERSION = "2.2"
PRIMARY_CONDITION = "structured_memory"

MetricKind = Literal["dimension", "summary"]
#: Summary metrics, in display order.
SUMMARIES: tuple[str, ...] = ("adherence", "coherence", "conditional_coherence", "global")

#: One-line explanations of the two coherence figures (field descriptions, CLI caption).
COHERENCE_HELP = (
    "Pass rate over memory-source requirements, strict: a subject missing from an image "
    "fails every remembered attribute of it."
)
CONDITIONAL_COHERENCE_HELP = (
    "Pass rate over memory-source requirements whose subject was found in the image: a "
    "missing subject fails once (its present/holder check), its other attributes are left out."
)
_EVALUATOR = "Who judged: 'rules' (extractor + rule checker), a VLM judge, …"


class Estimate(BaseModel):
    """A macro-average over stories with its story-clustered percentile bootstrap CI."""

    model_config = STRICT
    score: float = Field(description="Macro-average over the stories that have this metric.")
    ci_low: float | None = Field(
        description="Lower bound of the percentile bootstrap CI (null: no resample had data)."
    )
    ci_high: float | None = Field(description="Upper bound of the percentile bootstrap CI.")
    n_stories: int = Field(ge=0, description="Stories that contribute (have ≥1 requirement).")


class CorrectedEstimate(BaseModel):
    """A pass rate corrected for the judge's own error (``vsb.validation.correct``), or
    ``score: null`` with the ``reason`` it is not correctable."""

    model_config = STRICT
    score: float | None = Field(
        description="Corrected macro-average, clipped to [0, 1]; null: not correctable."
    )
    ci_low: float | None = Field(
        description="Lower bound of the joint bootstrap CI (stories and the validation "
        "frames they hold) in [0, 1]; one wholly past a bound keeps its width, ending there."
    )
    ci_high: float | None = Field(description="Upper bound of that CI, in [0, 1].")
    reason: str | None = Field(default=None, description="Why there is no number (else null).")


class CorrectedScore(BaseModel):
    """A judged evaluator's row corrected for the judge's sensitivity and specificity as
    measured on the run's oracle frames (issue 39; the same fields as the raw row)."""

    model_config = STRICT
    dimensions: dict[str, CorrectedEstimate | None] = Field(
        description="Per dimension (all ten keys); null where the raw row has none."
    )
    adherence: CorrectedEstimate | None
    coherence: CorrectedEstimate | None
    conditional_coherence: CorrectedEstimate | None
    global_score: CorrectedEstimate | None
    rank: int | None = Field(
        default=None, description="Rank by corrected global score (null: not correctable)."
    )
    rank_low: int | None = Field(default=None, description="Best rank in the bootstrap range.")
    rank_high: int | None = Field(default=None, description="Worst rank in the bootstrap range.")
    basis: str | None = Field(
        default=None,
        description="What the judge's error rests on (issue 46): 'assumed: the judge errs as "
        "on simulator frames', 'measured: N verified items' or 'measured: oracle frames'.",
    )
    assumption_test: str | None = Field(
        default=None,
        description="With verified items: whether the judge's error on them differs from the "
        "simulator frames' ('consistent …' / 'contradicted …'); null without.",
    )


class ModelScore(BaseModel):
    """One (model, condition): every metric with its CI."""

    model_config = STRICT
    evaluator: str = Field(description=_EVALUATOR)
    model: str = Field(description="Model (adapter) name.")
    condition: str = Field(description="Prompting condition.")
    dimensions: dict[str, Estimate | None] = Field(
        description="Per dimension (all ten keys, display order); null if no story has it."
    )
    adherence: Estimate | None = Field(description="Pass rate over prompt-source requirements.")
    coherence: Estimate | None = Field(description=COHERENCE_HELP)
    conditional_coherence: Estimate | None = Field(description=CONDITIONAL_COHERENCE_HELP)
    global_score: Estimate | None = Field(
        description="Unweighted mean of the ten dimensions (ranking only)."
    )
    rank: int = Field(
        ge=1, description="Rank by global score within (evaluator, condition) (1 = best)."
    )
    rank_low: int | None = Field(
        default=None,
        description=(
            "Best rank in the central bootstrap interval of ranks (vsb.scores.stats.power)."
        ),
    )
    rank_high: int | None = Field(
        default=None, description="Worst rank in the central bootstrap interval of ranks."
    )
    n_stories: int = Field(ge=0, description="Stories with at least one evaluated image.")
    n_images: int = Field(ge=0, description="Images with at least one applicable check.")
    n_requirements: int = Field(
        ge=0, description="Applicable (image, requirement) checks (not_applicable left out)."
    )
    n_unsure: int = Field(ge=0, description="Checks the evaluator answered 'unsure' (not passed).")
    n_parse_failure: int = Field(
        ge=0, description="Checks whose answer could not be parsed (not passed)."
    )
    n_not_applicable: int = Field(
        ge=0, description="Checks the evaluator could not apply (left out of every rate)."
    )
    coverage: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the cell's images that were generated and readable (a failed "
        "or refused image fails every check, label generation_failed; an unreadable one, "
        "label unreadable); null if unknown.",
    )
    corrected: CorrectedScore | None = Field(
        default=None,
        description="Judged evaluators, when scored with --corrected (or a release built with "
        "--judge): every metric corrected for the judge's measured error. Left out of the "
        "file when absent.",
    )

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``corrected`` is written only when present: rows of an unjudged evaluator (and
        every earlier file) keep their bytes."""
        out = handler(self)
        if isinstance(out, dict) and out.get("corrected", 0) is None:
            del out["corrected"]
        return out


class StoryScore(BaseModel):
    """One run (story × model × condition): pass rates (null where there is no requirement)."""

    model_config = STRICT
    evaluator: str = Field(description=_EVALUATOR)
    model: str
    condition: str
    story_id: str
    dimensions: dict[str, float | None] = Field(description="Pass rate per dimension.")
    adherence: float | None = Field(description="Pass rate over prompt-source requirements.")
    coherence: float | None = Field(description=COHERENCE_HELP)
    conditional_coherence: float | None = Field(description=CONDITIONAL_COHERENCE_HELP)
    global_score: float | None = Field(description="Mean of the dimensions this story has.")
    n_images: int = Field(ge=0)
    n_requirements: int = Field(ge=0)


class PairedDiff(BaseModel):
    """A paired story-level bootstrap difference a − b on one metric, with its percentile CI.

    Comparisons, effects and the prompt-sensitivity rows are these fields behind their own key.
    A row model names its key model after this one, ``class Effect(PairedDiff, _EffectKey)``:
    pydantic orders fields from the last base to the first, so the key's columns come first.
    """

    model_config = STRICT
    metric_kind: MetricKind
    metric: str
    a_score: float = Field(description="Macro-average of a over the shared stories.")
    b_score: float = Field(description="Macro-average of b over the shared stories.")
    diff: float = Field(description="a − b over the stories both have.")
    ci_low: float | None = Field(description="Paired percentile bootstrap CI of the difference.")
    ci_high: float | None
    p_greater: float | None = Field(description="Share of bootstrap resamples with Δ > 0.")


class _ComparisonKey(BaseModel):
    model_config = STRICT
    evaluator: str = Field(description=_EVALUATOR)
    kind: Literal["model", "condition"] = Field(
        description="model: two models in one condition; condition: one model in two conditions."
    )
    a_model: str
    a_condition: str
    b_model: str
    b_condition: str


class Comparison(PairedDiff, _ComparisonKey):
    """A paired story-level bootstrap comparison of a − b on one metric (one evaluator)."""

    p_equal: float | None = Field(
        description="Share of bootstrap resamples with Δ = 0 (|Δ| ≤ 1e-12: a tie)."
    )
    p_less: float | None = Field(description="Share of bootstrap resamples with Δ < 0.")
    win_rate: float = Field(description="Share of shared stories where a > b (ties count ½).")
    n_stories: int = Field(ge=0, description="Stories both a and b have this metric for.")
    se: float | None = Field(
        default=None, description="Bootstrap standard error of Δ (std of the resampled Δ)."
    )
    mdd: float | None = Field(
        default=None,
        description="Minimum detectable difference at 80% power and the report's confidence "
        "(z_{1-α/2} + z_0.8) × se: a true |Δ| below it is likely missed with these stories.",
    )
    stories_needed: int | None = Field(
        default=None,
        description="Stories needed to detect the observed |Δ| at 80% power (se ∝ 1/√n); "
        "null when Δ = 0.",
    )


class RankStabilityModel(BaseModel):
    """How one model's rank moves under Dirichlet-perturbed dimension weights."""

    model_config = STRICT
    model: str
    rank: int = Field(ge=1, description="Rank under equal weights (1 = best).")
    keep_rank: float = Field(description="Share of draws in which the model keeps that rank.")
    mean_rank: float
    rank_p05: float = Field(description="5th percentile of its rank over draws.")
    rank_p95: float = Field(description="95th percentile of its rank over draws.")


class RankStability(BaseModel):
    """Dirichlet weight-perturbation analysis within one (evaluator, condition)."""

    model_config = STRICT
    evaluator: str = Field(description=_EVALUATOR)
    condition: str
    primary: bool = Field(description="Whether this is the primary condition.")
    n_draws: int = Field(ge=0)
    alpha: float = Field(description="Symmetric Dirichlet concentration.")
    tau_mean: float | None = Field(description="Mean Kendall τ-b to the equal-weight ranking.")
    tau_p05: float | None
    tau_p95: float | None
    models: list[RankStabilityModel]


class NotApplicable(BaseModel):
    """A model an evaluator could not judge at all: left out of that evaluator's leaderboard."""

    model_config = STRICT
    evaluator: str = Field(description=_EVALUATOR)
    model: str
    conditions: list[str] = Field(description="Conditions the model was evaluated in.")
    n_images: int = Field(ge=0, description="Images of the model, every check not_applicable.")
    reason: str = Field(description="Why the evaluator did not apply (from its rows).")
    instead: list[str] = Field(
        description="Evaluators of this run that did apply to the model (score with those)."
    )


class JudgeSwapPair(BaseModel):
    """Two models as ranked by two evaluators (global score, with its CI) in one condition."""

    model_config = STRICT
    model_x: str
    model_y: str
    a_x: float = Field(description="Global score of model_x under evaluator_a.")
    a_y: float
    b_x: float = Field(description="Global score of model_x under evaluator_b.")
    b_y: float
    flipped: bool = Field(description="The two evaluators order the pair oppositely.")
    separated: bool = Field(
        description="Flipped, and under each evaluator the two global CIs do not overlap."
    )


class JudgeSwap(BaseModel):
    """Judge-swap rank stability: two evaluators' rankings of the same models, one condition."""

    model_config = STRICT
    condition: str
    evaluator_a: str
    evaluator_b: str
    models: list[str] = Field(description="Models both evaluators scored in this condition.")
    kendall_tau: float | None = Field(
        description="Kendall τ-b between the two rankings by global score (null: < 2 models)."
    )
    n_flips: int = Field(ge=0, description="Model pairs the two evaluators order oppositely.")
    n_separated_flips: int = Field(
        ge=0, description="Flips with non-overlapping global CIs under both evaluators."
    )
    pairs: list[JudgeSwapPair] = Field(description="Every pair of shared models.")


class RunIdentity(BaseModel):
    """Which run (and release, if frozen) the scores were computed from."""

    model_config = STRICT
    run_dir: str = Field(description="Directory name of the run (not the full path).")
    release: str | None = Field(description="Release name from MANIFEST.json, if frozen.")
    suite: str | None = None
    suite_sha256: str | None = None
    run_seed: int | None = None
    prompt_style: str | None = None
    requirements_sha256: str = Field(
        description="SHA-256 of the run's requirements table (evaluations/requirements.parquet; "
        "requirements.jsonl in older runs)."
    )


class Resampled(BaseModel):
    """The story bootstrap a report was computed with (scores, analysis, prompt sensitivity)."""

    model_config = STRICT
    seed: int = Field(description="Seed of the bootstrap (and weight-perturbation) generators.")
    n_resamples: int = Field(ge=1, description="Bootstrap resamples.")
    confidence: float = Field(description="Confidence level of every interval.")


class ConditionCut(BaseModel):
    """A model's prompts under one condition: in all, and cut."""

    model_config = STRICT
    condition: str
    n_prompts: int = Field(ge=0, description="Requests of the model under this condition.")
    n_cut: int = Field(ge=0, description="Of them, prompts some of which the model never read.")


class PromptCut(BaseModel):
    """How one model's prompts fit its text budget over the run."""

    model_config = STRICT
    model: str
    unit: str = Field(
        description="The budget's unit: 'clip tokens', 'tokens', 'characters' or 'unknown'."
    )
    budget: int | None = Field(description="The model's budget in that unit (null: none known).")
    n_prompts: int = Field(ge=0, description="Requests whose records say how their prompt fit.")
    n_cut: int = Field(ge=0, description="Prompts some of which the model never read (cut).")
    cut_share: float = Field(description="n_cut / n_prompts (0 when no prompt is counted).")
    n_chunked: int = Field(
        ge=0, description="Prompts over the budget encoded whole, in chunks (not cut)."
    )
    conditions: list[ConditionCut] = Field(description="The same counts per condition.")

    def share(self, condition: str) -> float | None:
        """The share of this model's prompts cut under ``condition`` (None: none counted)."""
        for c in self.conditions:
            if c.condition == condition and c.n_prompts:
                return c.n_cut / c.n_prompts
        return None


class ScoresReport(Resampled):
    """``RUN/scores/scores.json``."""

    version: str = Field(default=SCORES_FORMAT_VERSION, description="scores.json format version.")
    run: RunIdentity
    primary_condition: str = PRIMARY_CONDITION
    evaluators: list[str] = Field(
        description="Evaluators with scores, display order ('rules' first when present)."
    )
    primary_evaluator: str = Field(description="The evaluator shown first ('rules' if present).")
    judge_models: dict[str, str] = Field(
        description="Judge model of each evaluator ('' for the rule checker)."
    )
    dimensions: list[str] = Field(description="The ten dimensions, display order.")
    models: list[str]
    conditions: list[str]
    scores: list[ModelScore] = Field(description="Sorted by evaluator, condition, then rank.")
    stories: list[StoryScore] = Field(description="Sorted by evaluator, model, condition, story.")
    comparisons: list[Comparison]
    rank_stability: list[RankStability]
    not_applicable: list[NotApplicable] = Field(
        description="Models an evaluator could not judge at all (not ranked by it)."
    )
    judge_swap: list[JudgeSwap] = Field(
        description="Per condition and evaluator pair: ranking agreement of the shared models."
    )
    horizon: list[HorizonPoint] = Field(
        default_factory=list,
        description="The long-horizon view: pass rates by scene position, difficulty and story "
        "length with story-bootstrap CIs (vsb.scores.horizon).",
    )
    signals: list[SignalScore] = Field(
        default_factory=list,
        description="Mean of each continuous signal per (model, condition) with its story "
        "bootstrap CI (clip_rr: text-side MRR; clip_image_rr: image-side MRR as VinaBench "
        "ranks); see vsb.scores.signals.",
    )
    prompts: list[PromptCut] = Field(
        default_factory=list,
        description="Per model: its prompts' budget, and how many were cut by its text encoder "
        "(in all and per condition; vsb.scores.compute.prompt_cuts). A model absent here has "
        "records that do not say.",
    )
