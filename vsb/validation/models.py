"""Typed models of ``RUN/validation/judge.json`` (every evaluator and signal vs the oracle).

A *fault unit* is one injected visual fault (image × subject × attribute) from the sealed
oracle; a *detection unit* is one image × subject × failure label among an evaluator's
failed checks (knock-on failures share their root cause's label, so they count once).
Two matchings are reported side by side (``vsb.validation.matching``): **strict** (the
headline: a detection is true only when a fault has the same image, subject and taxonomy
label) and **root cause** (the lenient matcher of format 1.x, kept as a secondary view).

Format 2.0 (was 1.0): one ``EvaluatorValidation`` section per requirement evaluator in
``evaluators``; ``TaxonomyMetrics`` carries strict figures with Wilson intervals plus the
``*_root_cause`` figures; ``SignalAuroc`` and ``SignalCorrelation`` name their evaluator.
The top-level ``taxonomy`` and ``taxonomy_by_model`` of 1.x are now properties (the headline
section's tables), no longer keys of the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from pydantic import BaseModel, Field

from vsb.fsio import STRICT
from vsb.validation.metrics import rank_correlations

JUDGE_FORMAT_VERSION = "2.1"
#: The rule checker's evaluator name (its section comes first).
RULES_EVALUATOR = "rules"
#: The rule checker's per-frame pass rate, scored like any other continuous signal.
RULES_SIGNAL = "rules_pass_rate"
#: The rule checker's per-story memory pass rate (story-level correlations only).
RULES_COHERENCE = "rules_coherence"


def pass_rate_signal(evaluator: str) -> str:
    """Name of an evaluator's per-frame pass rate (``rules`` -> ``rules_pass_rate``)."""
    return f"{evaluator}_pass_rate"


def coherence_signal(evaluator: str) -> str:
    """Name of an evaluator's per-story memory pass rate (``rules`` -> ``rules_coherence``)."""
    return f"{evaluator}_coherence"


class TaxonomyMetrics(BaseModel):
    """Recall and precision of one evaluator for one taxonomy label (or ``all``)."""

    model_config = STRICT
    taxonomy: str = Field(description="Taxonomy label, or 'all' for the micro-average.")
    n_faults: int = Field(ge=0, description="Injected visual faults with this label.")
    n_detected: int = Field(
        ge=0, description="Strict: faults with a detection of the same image, subject, label."
    )
    recall: float | None = Field(description="Strict n_detected / n_faults (null if no faults).")
    recall_ci_low: float | None = Field(description="Wilson 95% interval of recall, low end.")
    recall_ci_high: float | None = Field(description="Wilson 95% interval of recall, high end.")
    n_detections: int = Field(ge=0, description="Strict detection units carrying this label.")
    n_true_detections: int = Field(
        ge=0, description="Strict: units with a fault of the same image, subject and label."
    )
    precision: float | None = Field(description="Strict n_true / n_detections (null if none).")
    precision_ci_low: float | None = Field(description="Wilson 95% interval, low end.")
    precision_ci_high: float | None = Field(description="Wilson 95% interval, high end.")
    n_detected_root_cause: int = Field(ge=0, description="Root cause: faults detected.")
    recall_root_cause: float | None = Field(description="Root cause: n_detected / n_faults.")
    n_detections_root_cause: int = Field(
        ge=0, description="Root cause: detection units (a scene-level knock-on is its own unit)."
    )
    n_true_detections_root_cause: int = Field(
        ge=0, description="Root cause: units matching a fault on any of the matcher's grounds."
    )
    precision_root_cause: float | None = Field(description="Root cause: n_true / n_detections.")
    n_label_agree: int = Field(
        ge=0, description="Root-cause true units whose label equals a matched fault's taxonomy."
    )


class VerdictCounts(BaseModel):
    """How an evaluator's rows split by verdict; rates are over its checks (rows that applied)."""

    model_config = STRICT
    n_rows: int = Field(ge=0, description="Requirement rows of this evaluator.")
    n_checks: int = Field(ge=0, description="Rows whose verdict is not not_applicable.")
    n_passed: int = Field(ge=0)
    n_failed: int = Field(ge=0)
    n_unsure: int = Field(ge=0)
    n_parse_failure: int = Field(ge=0)
    n_not_applicable: int = Field(ge=0, description="Excluded from every other figure.")
    unsure_rate: float | None = Field(description="n_unsure / n_checks (null if no checks).")
    parse_failure_rate: float | None = Field(description="n_parse_failure / n_checks.")


class SignalAuroc(BaseModel):
    """AUROC of a per-frame signal for 'this frame has ≥1 injected visual fault'."""

    model_config = STRICT
    evaluator: str = Field(description="Evaluator that produced the signal.")
    signal: str
    auroc: float | None = Field(
        description="Mann-Whitney AUROC of −signal (ties count ½); null if one class is empty."
    )
    n_frames: int = Field(ge=0, description="Frames that have this signal.")
    n_faulty: int = Field(ge=0, description="Of those, frames with ≥1 injected visual fault.")


class RankCorrelation(BaseModel):
    """Story-level Spearman ρ and Kendall τ-b between two values of the same story runs.

    A row model names its key model after this one, ``class SignalCorrelation(RankCorrelation,
    _SignalKey)``: pydantic orders fields from the last base to the first, so the key comes first.
    """

    model_config = STRICT
    spearman: float | None = Field(description="Spearman ρ (null: < 3 units or constant).")
    spearman_p: float | None
    kendall: float | None = Field(description="Kendall τ-b (null: < 3 units or constant).")
    kendall_p: float | None
    n_units: int = Field(ge=0, description="Story runs (model × condition × story) with both.")

    @classmethod
    def between(cls, x: Sequence[float], y: Sequence[float], **key: str) -> Self:
        """The row of ``key`` for paired values ``x`` and ``y`` (one pair per story run)."""
        rho, rho_p, tau, tau_p = rank_correlations(x, y)
        return cls(
            **key, spearman=rho, spearman_p=rho_p, kendall=tau, kendall_p=tau_p, n_units=len(x)
        )


class _SignalKey(BaseModel):
    model_config = STRICT
    evaluator: str = Field(description="Evaluator that produced the signal.")
    signal: str


class SignalCorrelation(RankCorrelation, _SignalKey):
    """Story-level rank correlation between a signal's story mean and oracle coherence."""


class OracleAgreement(BaseModel):
    """An evaluator's passed/failed answers against the oracle's requirement-level truth
    (vsb/validation/truth.py): the share that are wrong, whatever their labels."""

    model_config = STRICT
    n_answers: int = Field(ge=0, description="Passed or failed verdicts (unsure etc. aside).")
    n_wrong: int = Field(ge=0, description="Verdicts that disagree with the oracle's truth.")
    n_false_pass: int = Field(ge=0, description="Passed where the image breaks the fact.")
    n_false_fail: int = Field(ge=0, description="Failed where the image shows the fact.")
    error_rate: float | None = Field(description="n_wrong / n_answers (null if none).")
    error_rate_ci_low: float | None = Field(description="Wilson 95% interval, low end.")
    error_rate_ci_high: float | None = Field(description="Wilson 95% interval, high end.")


class EvaluatorValidation(BaseModel):
    """One requirement evaluator (rule checker, VLM judge…) against the oracle."""

    model_config = STRICT
    evaluator: str = Field(description="Evaluator name of its requirement rows.")
    judge_model: str = Field(description="Judge model(s) of its rows, comma-joined ('' if none).")
    n_frames: int = Field(ge=0, description="Frames with ≥1 of its checks (not_applicable aside).")
    n_faulty_frames: int = Field(ge=0, description="Of those, frames with ≥1 visual fault.")
    verdicts: VerdictCounts
    verdicts_by_model: dict[str, VerdictCounts] = Field(default_factory=dict)
    taxonomy: list[TaxonomyMetrics] = Field(description="TAXONOMY order, then 'all'.")
    taxonomy_by_model: dict[str, list[TaxonomyMetrics]] = Field(
        default_factory=dict, description="The same table for each model's images alone."
    )
    pass_rate: SignalAuroc = Field(description="AUROC of its per-frame pass rate.")
    coherence: SignalCorrelation = Field(
        description="Its story-level memory pass rate vs oracle coherence."
    )
    agreement: OracleAgreement = Field(
        description="Its answers vs the oracle's requirement-level truth (error rate)."
    )


class JudgeIdentity(BaseModel):
    """Which run the validation was computed from."""

    model_config = STRICT
    run_dir: str = Field(description="Directory name of the run (not the full path).")
    release: str | None = Field(description="Release name from MANIFEST.json, if frozen.")
    requirements_sha256: str
    faults_sha256: str


class JudgeReport(BaseModel):
    """``RUN/validation/judge.json``."""

    model_config = STRICT
    version: str = Field(default=JUDGE_FORMAT_VERSION, description="judge.json format version.")
    run: JudgeIdentity
    n_frames: int = Field(ge=0, description="Evaluated frames (images), every evaluator.")
    n_faulty_frames: int = Field(ge=0, description="Frames with ≥1 injected visual fault.")
    n_faults: int = Field(ge=0, description="Injected faults in the oracle (visual or not).")
    n_visual_faults: int = Field(ge=0)
    n_frames_without_oracle: int = Field(
        default=0,
        ge=0,
        description="Frames left out of every figure: their model has no oracle (stored "
        "images, providers), so their faults are unknown.",
    )
    models_without_oracle: list[str] = Field(
        default_factory=list, description="The models of those frames (2.1; 2.0 files: none)."
    )
    evaluators: list[EvaluatorValidation] = Field(
        description="One section per requirement evaluator: 'rules' first, then by name."
    )
    auroc: list[SignalAuroc] = Field(
        description="Each section's pass rate (section order), then other signals by evaluator."
    )
    correlations: list[SignalCorrelation] = Field(
        description="Each section's coherence, then every signal of ``auroc`` (story means)."
    )

    def section(self, evaluator: str) -> EvaluatorValidation:
        """The section of ``evaluator``; ``KeyError`` if absent."""
        for s in self.evaluators:
            if s.evaluator == evaluator:
                return s
        raise KeyError(evaluator)

    @property
    def headline(self) -> EvaluatorValidation | None:
        """The first section (the rule checker when present)."""
        return self.evaluators[0] if self.evaluators else None

    @property
    def taxonomy(self) -> list[TaxonomyMetrics]:
        """The headline section's per-taxonomy table ([] if no section)."""
        return self.headline.taxonomy if self.headline else []

    @property
    def taxonomy_by_model(self) -> dict[str, list[TaxonomyMetrics]]:
        """The headline section's per-model tables ({} if no section)."""
        return self.headline.taxonomy_by_model if self.headline else {}
