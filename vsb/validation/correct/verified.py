"""A verification sample of a model's own frames, and the answers people gave (issue 46).

``vsb human verify`` draws a sample of one model's judged rows and writes it here,
``RUN/verification/<sample_id>.sample.json`` (``VerificationSample``: which rows, their
stratum, the question a person answers and the picture's hash); ``vsb human verify-import``
writes the answers beside it (``<sample_id>.answers.json``, ``VerifiedAnswers``). Scoring
reads both (``verified_items``): for each answered row, its stratum and whether the fact
holds. The sample records the judge's verdict counts it was drawn from (``population``);
a run judged again since no longer holds them, and the sample is refused.

A *stratum* is a label (dimension, taxonomy) and the judge's *outcome* on the row: it said
the fact holds (``passed``), said it does not (``failed``), or neither (``other``: UNSURE,
an unreadable answer, a subject it could not find). Within a stratum the rows the judge
answered alike are alike to a person's eye too, so how a fact is false (a missing subject,
answered UNSURE, against a wrong attribute, answered NO) is never mixed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from vsb.errors import InputError
from vsb.fsio import STRICT, load_model
from vsb.scores.compute import ScoringInput
from vsb.scores.inputs import NOT_APPLICABLE, RequirementRows
from vsb.validation.truth import PAIR_ATTRIBUTES

#: Where a run keeps its verification samples and answers.
VERIFY_DIR = "verification"
#: The judge's outcomes on a row (see the module docstring).
OUTCOMES = ("passed", "failed", "other")
#: Rows that are no judge's answer (no picture was judged): never sampled.
NOT_JUDGED = frozenset({"generation_failed", "unreadable", NOT_APPLICABLE})


def judged_evaluator(inp: ScoringInput, spec: str | None) -> str:
    """``spec``, else the run's only evaluator whose rows name a judge model."""
    judged = sorted({e for e, j in zip(inp.labels, inp.rows.judge_model, strict=True) if j})
    if spec is not None:
        if spec not in judged:
            raise InputError(
                f"--evaluator {spec!r} is no judged evaluator of this run "
                f"(judged: {', '.join(judged) or 'none'})"
            )
        return spec
    if len(judged) != 1:
        raise InputError(
            f"choose the judged evaluator with --evaluator (judged here: "
            f"{', '.join(judged) or 'none'})"
        )
    return judged[0]


def outcome_of(verdict: str) -> str:
    """The judge's outcome on a row from its verdict."""
    return verdict if verdict in ("passed", "failed") else "other"


def stratum_key(dimension: str, taxonomy: str, outcome: str) -> str:
    """``dimension|taxonomy|outcome``: a stratum as a JSON key."""
    return f"{dimension}|{taxonomy}|{outcome}"


class SampleItem(BaseModel):
    """One sampled row: the question a person answers about one picture."""

    model_config = STRICT
    item_id: str = Field(description="Opaque id (names no model, condition or story).")
    condition: str
    story_id: str
    scene: int
    req_id: str = Field(description="The requirement (row) the question asks.")
    dimension: str
    taxonomy: str
    outcome: Literal["passed", "failed", "other"] = Field(description="The judge's outcome.")
    question: str = Field(description="The judge's own question for the row.")
    expect: Literal["YES", "NO"] = Field(description="The answer under which the fact holds.")
    image: str = Field(description="The picture, relative to the items folder.")
    sha256: str = Field(description="sha256 of that picture's bytes.")
    source_sha256: str = Field(description="sha256 of the run's image the picture shows.")


class VerificationSample(BaseModel):
    """``RUN/verification/<sample_id>.sample.json``: a stratified sample of one model's
    judged rows."""

    model_config = STRICT
    version: str = "1.0"
    sample_id: str
    evaluator: str
    judge_model: str
    model: str = Field(description="The model whose frames are verified.")
    seed: int
    population: dict[str, int] = Field(
        description="Judged single-frame rows of the model per stratum (dimension|taxonomy|"
        "outcome) when the sample was drawn."
    )
    items: list[SampleItem]


class VerifiedAnswer(BaseModel):
    """A person's answer to one item."""

    model_config = STRICT
    item_id: str
    answer: Literal["YES", "NO", "UNSURE"]


class VerifiedAnswers(BaseModel):
    """``RUN/verification/<sample_id>.answers.json``: the answers imported for a sample."""

    model_config = STRICT
    version: str = "1.0"
    sample_id: str
    files: list[str] = Field(description="The answer files they were read from.")
    answers: list[VerifiedAnswer]


def sample_path(root: Path, sample_id: str) -> Path:
    return root / VERIFY_DIR / f"{sample_id}.sample.json"


def answers_path(root: Path, sample_id: str) -> Path:
    return root / VERIFY_DIR / f"{sample_id}.answers.json"


def judged_single_frame(rows: RequirementRows, model: str) -> list[bool]:
    """Per row: whether it is ``model``'s judged answer about one picture (what a sample
    may hold; a cross-frame fact needs two pictures and is never sampled)."""
    return [
        m == model and v not in NOT_JUDGED and f not in NOT_JUDGED and a not in PAIR_ATTRIBUTES
        for m, v, f, a in zip(rows.model, rows.verdict, rows.failure, rows.attribute, strict=True)
    ]


def population(rows: RequirementRows, model: str) -> dict[str, int]:
    """The judged single-frame rows of ``model`` per stratum."""
    keep = judged_single_frame(rows, model)
    cols = zip(keep, rows.dimension, rows.taxonomy, rows.verdict, strict=True)
    counts = Counter(stratum_key(d, t, outcome_of(v)) for ok, d, t, v in cols if ok)
    return dict(sorted(counts.items()))


#: One verified row: (dimension, taxonomy, outcome, whether the fact holds).
Verified = tuple[str, str, str, bool]


def verified_items(
    root: Path, evaluator: str, rows: RequirementRows, models: Sequence[str]
) -> dict[str, list[Verified]]:
    """Per model of ``models`` with answered samples of ``evaluator`` under ``root``: its
    verified rows (``rows``: the evaluator's rows, to check each sample against). A person's
    UNSURE counts as the fact not holding (as the scores count the judge's UNSURE). A sample
    drawn from other verdicts than ``rows`` hold is an ``InputError`` naming it."""
    out: dict[str, list[Verified]] = {}
    folder = root / VERIFY_DIR
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.sample.json")):
        sample = load_model(path, VerificationSample, "verification sample")
        if sample.evaluator != evaluator or sample.model not in models:
            continue
        answered = answers_path(root, sample.sample_id)
        if not answered.is_file():
            continue
        judges = {j for m, j in zip(rows.model, rows.judge_model, strict=True) if m == sample.model}
        if judges != {sample.judge_model} or population(rows, sample.model) != sample.population:
            raise InputError(
                f"verification sample {sample.sample_id} of {sample.model} was drawn from other "
                "verdicts than the run holds now (judged again since?): draw a new sample with "
                "vsb human verify, or remove it",
                file=path,
            )
        items = {i.item_id: i for i in sample.items}
        for a in load_model(answered, VerifiedAnswers, "verified answers").answers:
            i = items[a.item_id]
            out.setdefault(sample.model, []).append(
                (i.dimension, i.taxonomy, i.outcome, a.answer == i.expect)
            )
    return out
