"""Reference rows for the judge page: what the literal judge and the useless judges score.

Each reference judge (``vsb.validation.reference_judges``) is served over HTTP on 127.0.0.1
and asked through the real pipeline (plan -> calls -> parse -> rows, ``evaluate_run`` with
``vlm`` and ``vlm_xframe``) about one slice of a run (the four drifting simulators under
one condition), in a scratch copy of that slice; then ``validate_run`` scores it against
the sealed oracle like any judge, per simulator too (``worst_label``). Local simulations:
no key, no paid call. The release build writes the result as
``validation/reference_judges.json`` (``ReferenceReport``) and the site shows it beside the
real judges, so a reader sees what a useless judge scores.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field

from vsb.fsio import atomic_write_json, iter_jsonl, link_or_copy
from vsb.validation.models import EvaluatorValidation

if TYPE_CHECKING:
    from vsb.validation.sim_judge import Answerer

REFERENCE_FILE = "validation/reference_judges.json"
REFERENCE_FORMAT_VERSION = "2.0"
#: The slice judged by default: the four drifting simulators without memory (independent:
#: where drift shows, so that every simulator has labels with enough faults to judge by).
DEFAULT_MODELS = (
    "procedural-drift-low",
    "procedural-drift-mid",
    "procedural-amnesiac",
    "procedural-sloppy",
)
DEFAULT_MODEL = "procedural-drift-mid"
DEFAULT_CONDITION = "independent"
#: A label is held to a judge's worst figure per simulator with at least this many faults.
WORST_MIN_FAULTS = 20

DESCRIPTIONS: dict[str, str] = {
    "literal": "reads each question as worded and the picture as drawn (vsb's blind "
    "extractor); no story, no oracle",
    "literal-drawn": "reads each question as worded and the picture as the simulator drew "
    "it (perfect vision: the rendered values, never a fault's label)",
    "always-yes": "answers YES to everything",
    "always-no": "answers NO to everything",
    "always-unsure": "answers UNSURE to everything",
    "garbage": "answers with a sentence that is no answer",
}


class ReferenceJudge(BaseModel):
    """One reference judge's validation section."""

    model_config = ConfigDict(extra="forbid")
    judge: str = Field(description="Reference judge name (literal, always-yes, …).")
    description: str = Field(description="What it answers.")
    section: EvaluatorValidation = Field(description="Its 'vlm' section, as validate-judge.")
    xframe_error_rate: float | None = Field(
        default=None, description="Error rate of its cross-frame answers against the oracle."
    )


class ReferenceReport(BaseModel):
    """``validation/reference_judges.json``."""

    model_config = ConfigDict(extra="forbid")
    version: str = Field(default=REFERENCE_FORMAT_VERSION, description="Format version.")
    models: list[str] = Field(description="The simulators whose frames were judged.")
    condition: str = Field(description="The condition whose frames were judged.")
    n_frames: int = Field(ge=0, description="Frames judged (every judge the same).")
    judges: list[ReferenceJudge] = Field(description="One row per reference judge.")


def _slice(run_dir: Path, dest: Path, models: Sequence[str], condition: str) -> int:
    """Copy the run's suite, manifest, oracle and the frames of ``models`` under
    ``condition`` to ``dest``; the number of frames copied."""
    dest.mkdir(parents=True)
    shutil.copytree(run_dir / "suite", dest / "suite")
    shutil.copy2(run_dir / "manifest.json", dest / "manifest.json")
    keep = []
    for _, r in iter_jsonl(run_dir / "records.jsonl"):
        if r["model"] in models and r["condition"] == condition:
            keep.append(r)
            if r.get("path"):
                (dest / r["path"]).parent.mkdir(parents=True, exist_ok=True)
                link_or_copy(run_dir / r["path"], dest / r["path"])
    (dest / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    (dest / "oracle").mkdir()
    faults = [
        f
        for _, f in iter_jsonl(run_dir / "oracle" / "faults.jsonl")
        if f["model"] in models and f["condition"] == condition
    ]
    (dest / "oracle" / "faults.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faults))
    return sum(r.get("path") is not None for r in keep)


class SliceOptions(TypedDict, total=False):
    """``judge_slices``' keywords, as ``validate_reference_judges`` passes them on."""

    models: Sequence[str]
    condition: str
    names: Sequence[str] | None
    progress: Callable[[str], None] | None
    served: bool


def validate_reference_judges(
    run_dir: str | Path, work_dir: str | Path, **options: Unpack[SliceOptions]
) -> ReferenceReport:
    """Judge the frames of ``models`` under ``condition`` in ``run_dir`` with every reference
    judge (in scratch copies under ``work_dir``, removed after) and validate each against
    the oracle: ``judge_slices`` (whose keywords it takes), then ``reference_report``.

    Each judge answers through the OpenAI wire format: in this process (an httpx transport
    that calls the server's own handler: the same bytes, no socket, no thread) or, with
    ``served``, over HTTP on 127.0.0.1. Both give the same verdicts."""
    sub = Path(work_dir) / "reference"
    try:
        return reference_report(judge_slices(run_dir, sub, **options))
    finally:
        shutil.rmtree(sub, ignore_errors=True)


class JudgedSlices(BaseModel):
    """What ``judge_slices`` made: one judged copy of the slice per reference judge."""

    model_config = ConfigDict(extra="forbid")
    models: list[str]
    condition: str
    n_frames: int
    folders: dict[str, Path]  # judge name -> its copy of the slice, evaluated


def judge_slices(
    run_dir: str | Path,
    sub: Path,
    *,
    models: Sequence[str] = DEFAULT_MODELS,
    condition: str = DEFAULT_CONDITION,
    names: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    served: bool = False,
) -> JudgedSlices:
    """The first step: copy the (models, condition) slice of ``run_dir`` to ``sub`` (replaced)
    and evaluate one copy of it per reference judge, each asked through the wire format.
    The judging needs no statistics library (the main job runs it beside score)."""
    from vsb.evaluators.vlm.plan import shared_questions
    from vsb.validation.reference_judges import REFERENCE_JUDGES

    note = progress or (lambda _msg: None)
    shutil.rmtree(sub, ignore_errors=True)
    models = present_models(run_dir, models, condition)
    n_frames = _slice(Path(run_dir), sub / "slice", models, condition)
    names = list(names or REFERENCE_JUDGES)
    folders = {name: sub / "judged" / name for name in names}
    # One after another in this process: what they share is built once (the questions of
    # each scene: ``shared_questions``), and a second process would hold its own copy of
    # every import and table (the main job's memory bound counts each process's pages).
    with shared_questions():
        for name, folder in folders.items():
            note(f"reference judge {name}")
            _judged_copy(sub / "slice", folder)
            judge_folder(folder, name, REFERENCE_JUDGES[name](folder), served)
    return JudgedSlices(models=models, condition=condition, n_frames=n_frames, folders=folders)


def _judged_copy(slice_dir: Path, folder: Path) -> None:
    """A judge's own copy of the slice: its files linked, its folders (images, suite, oracle:
    only read) linked to the slice's, so making and removing a copy costs a few entries
    however many frames it has (a copy of each file where links cannot be made)."""
    folder.mkdir(parents=True)
    for entry in sorted(slice_dir.iterdir()):
        dest = folder / entry.name
        if not entry.is_dir():
            link_or_copy(entry, dest)
            continue
        try:
            dest.symlink_to(os.path.relpath(entry, folder), target_is_directory=True)
        except OSError:
            shutil.copytree(entry, dest, copy_function=link_or_copy)


def reference_report(judged: JudgedSlices) -> ReferenceReport:
    """The second step: validate each judged copy against the oracle, as ``validate-judge``
    validates any judge."""
    from vsb.validation.judge import validate_run

    rows = []
    for name, folder in judged.folders.items():
        report = validate_run(folder, evaluators=JUDGED)
        xframe = [s for s in report.evaluators if s.evaluator == "vlm_xframe"]
        rows.append(
            ReferenceJudge(
                judge=name,
                description=DESCRIPTIONS.get(name, ""),
                section=report.section("vlm"),
                xframe_error_rate=xframe[0].agreement.error_rate if xframe else None,
            )
        )
    return ReferenceReport(
        models=judged.models, condition=judged.condition, n_frames=judged.n_frames, judges=rows
    )


def present_models(run_dir: str | Path, models: Sequence[str], condition: str) -> list[str]:
    """Those of ``models`` the run has frames of under ``condition``, in ``models``' order."""
    have = {
        r["model"]
        for _, r in iter_jsonl(Path(run_dir) / "records.jsonl")
        if r["condition"] == condition
    }
    return [m for m in models if m in have]


class WorstLabel(BaseModel):
    """A judge's worst label on one simulator: the lowest of strict recall and precision."""

    model_config = ConfigDict(extra="forbid")
    taxonomy: str
    n_faults: int
    recall: float | None
    precision: float | None


def worst_label(
    judge: ReferenceJudge, model: str, min_faults: int = WORST_MIN_FAULTS
) -> WorstLabel | None:
    """The label of ``judge`` on ``model``'s frames (of those with ``min_faults`` faults or
    more) whose lower figure, strict recall or precision, is lowest; None when none has."""
    rows = [
        t
        for t in judge.section.taxonomy_by_model.get(model, [])
        if t.taxonomy != "all" and t.n_faults >= min_faults
    ]
    if not rows:
        return None
    t = min(rows, key=lambda t: (min(t.recall or 0.0, t.precision or 0.0), t.taxonomy))
    return WorstLabel(
        taxonomy=t.taxonomy, n_faults=t.n_faults, recall=t.recall, precision=t.precision
    )


#: The evaluators a reference judge answers for.
JUDGED = ("vlm", "vlm_xframe")


def judge_folder(sub: Path, name: str, judge: Answerer, served: bool) -> None:
    """``evaluate_run`` of the slice with ``JUDGED`` asked of ``judge`` (as the OpenAI-
    compatible model ``name``); the evaluations and ledger of an earlier judge go first."""
    from vsb.evaluators.evaluate import evaluate_run
    from vsb.evaluators.vlm.transports import build_transport, default_client
    from vsb.evaluators.vlm_judge import JudgeOptions
    from vsb.validation.sim_judge import JudgeEndpoint, JudgeServer

    shutil.rmtree(sub / "evaluations", ignore_errors=True)
    (sub / "ledger.sqlite").unlink(missing_ok=True)
    with (JudgeServer if served else JudgeEndpoint)(judge, keep_bodies=False) as endpoint:
        client = default_client() if served else endpoint.direct_client()
        with client:
            evaluate_run(
                sub,
                evaluators=list(JUDGED),
                judge=build_transport(
                    f"openai-compatible:{name}", base_url=endpoint.url, client=client
                ),
                judge_options=JudgeOptions(cache_dir=None, concurrency=4 if served else 1),
            )


def write_reference(run_dir: str | Path, report: ReferenceReport) -> Path:
    """Write ``RUN/validation/reference_judges.json`` atomically."""
    path = Path(run_dir) / REFERENCE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, report.model_dump(mode="json"))
    return path
