"""Typed models of ``RUN/validation/judge.json`` (the rule checker and signals vs the oracle).

A *fault unit* is one injected visual fault (image × subject × attribute) from the sealed
oracle; a *detection unit* is one image × subject × failure label among the rule checker's
failed checks (knock-on failures share their root cause's label, so they count once).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

JUDGE_FORMAT_VERSION = "1.0"
#: The rule checker's per-frame pass rate, scored like any other continuous signal.
RULES_SIGNAL = "rules_pass_rate"
#: The rule checker's per-story memory pass rate (story-level correlations only).
RULES_COHERENCE = "rules_coherence"

_STRICT = ConfigDict(extra="forbid", frozen=True)


class TaxonomyMetrics(BaseModel):
    """Recall and precision of the rule checker for one taxonomy label (or ``all``)."""

    model_config = _STRICT
    taxonomy: str = Field(description="Taxonomy label, or 'all' for the micro-average.")
    n_faults: int = Field(ge=0, description="Injected visual faults with this label.")
    n_detected: int = Field(ge=0, description="Of those, detected by the rule checker.")
    recall: float | None = Field(description="n_detected / n_faults (null if no faults).")
    n_detections: int = Field(ge=0, description="Detection units carrying this label.")
    n_true_detections: int = Field(ge=0, description="Of those, matching an injected fault.")
    precision: float | None = Field(description="n_true / n_detections (null if none).")
    n_label_agree: int = Field(
        ge=0, description="True detections whose label equals a matched fault's taxonomy."
    )


class SignalAuroc(BaseModel):
    """AUROC of a per-frame signal for 'this frame has ≥1 injected visual fault'."""

    model_config = _STRICT
    signal: str
    auroc: float | None = Field(
        description="Mann-Whitney AUROC of −signal (ties count ½); null if one class is empty."
    )
    n_frames: int = Field(ge=0, description="Frames that have this signal.")
    n_faulty: int = Field(ge=0, description="Of those, frames with ≥1 injected visual fault.")


class SignalCorrelation(BaseModel):
    """Story-level rank correlation between a signal's story mean and oracle coherence."""

    model_config = _STRICT
    signal: str
    spearman: float | None = Field(description="Spearman ρ (null if either side is constant).")
    spearman_p: float | None
    kendall: float | None = Field(description="Kendall τ-b (null if either side is constant).")
    kendall_p: float | None
    n_units: int = Field(ge=0, description="story × model × condition units with both values.")


class JudgeIdentity(BaseModel):
    """Which run the validation was computed from."""

    model_config = _STRICT
    run_dir: str = Field(description="Directory name of the run (not the full path).")
    release: str | None = Field(description="Release name from MANIFEST.json, if frozen.")
    requirements_sha256: str
    faults_sha256: str


class JudgeReport(BaseModel):
    """``RUN/validation/judge.json``."""

    model_config = _STRICT
    version: str = Field(default=JUDGE_FORMAT_VERSION, description="judge.json format version.")
    run: JudgeIdentity
    n_frames: int = Field(ge=0, description="Evaluated frames (images).")
    n_faulty_frames: int = Field(ge=0, description="Frames with ≥1 injected visual fault.")
    n_faults: int = Field(ge=0, description="Injected faults in the oracle (visual or not).")
    n_visual_faults: int = Field(ge=0)
    taxonomy: list[TaxonomyMetrics] = Field(description="TAXONOMY order, then 'all'.")
    taxonomy_by_model: dict[str, list[TaxonomyMetrics]] = Field(
        default_factory=dict, description="The same table for each model's images alone."
    )
    auroc: list[SignalAuroc] = Field(description="rules_pass_rate first, then signals by name.")
    correlations: list[SignalCorrelation]
