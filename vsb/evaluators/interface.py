"""The evaluator interface: what every evaluator (built-in or plug-in) implements.

An evaluator declares what it is, reads and costs (class attributes, gathered into its
``EvaluatorInfo``), and turns a run's frames into work items (``plan``); each item has a
content-addressed ``key`` and an estimated cost in USD (0 for local work). ``vsb evaluate``
hands every selected evaluator's items to one machinery (``vsb.evaluators.machinery``),
which runs them by the evaluator's ``stage`` and returns verdict and signal rows:

- ``"frames"`` (local CPU work): the items are (model, condition, story) sequences; each
  sequence is decoded once and every frames evaluator's ``evaluate_story(story, frames)``
  runs on it, in a fork process pool (``--workers``) or on Ray (``--executor ray``);
- ``"calls"`` (paid or slow VLM calls): the items' payloads are ``JudgeCall``s asked of the
  run's ``--judge`` through the call machinery: answer cache, a ledger row written before
  each call, concurrency, retries, budget and dry run; ``rows(outcomes)`` turns the answers
  into rows, which carry the judge model;
- ``"models"`` (batched models: CLIP, DINOv2): the items are whole-run embedding passes,
  cached per image and text by content.

An image with no picture (its generation failed) or that cannot be read is an item whose
outcome is known without work: the machinery gives it one ``failed`` (or ``unreadable``) row
per requirement for every ``verdicts`` evaluator, its requirements at that image being
``requirements_at(story, scene)``.

A plug-in evaluator is a class; the simplest one subclasses ``StoryEvaluator`` (frames
stage) and writes ``evaluate_story``::

    import numpy as np
    from PIL import Image

    from vsb.evaluators.interface import EvaluatorOutput, StoryEvaluator, signal_row

    class Brightness(StoryEvaluator):
        name = "brightness"      # unique; the rows' ``evaluator`` field
        kind = "signals"         # or "verdicts": one row per (image, requirement)
        reads = "any"            # or "renders": only vsb's palette renders
        description = "mean grey level of each frame"

        def evaluate_story(self, story, frames):
            out = EvaluatorOutput()
            for f in frames:     # scene order; f.path is None: no picture
                if f.path is not None:
                    with Image.open(f.path) as im:
                        grey = float(np.asarray(im.convert("L")).mean()) / 255
                    out.signals.append(signal_row(f, "brightness_mean", grey, self.name))
            return out

Its distribution declares it under the entry-point group ``vsb.evaluators``
(``[project.entry-points."vsb.evaluators"]`` ``brightness = "mypkg.evals:Brightness"``);
``vsb evaluate RUN --evaluator brightness`` then finds and runs it with no edit to vsb. A
``verdicts`` evaluator writes ``RequirementResult.of(req, observed, passed, label,
self.name).row(model=…, condition=…, story_id=…, scene=…)`` per requirement
(``vsb.evaluators.rules``) and may override ``requirements_at``. The class must be
importable in worker processes and constructible without arguments (and with ``options=``
when it declares an ``Options`` type: an instance of it, filled by ``vsb evaluate`` from its
``cli_options``, click parameters named after the fields). A paid evaluator
subclasses ``EvaluatorBase`` (the attributes' defaults, ``check``, ``requirements_at``), sets
``stage = "calls"`` and ``paid = True``, plans ``WorkItem``s whose payloads are
``JudgeCall``s (``vsb.evaluators.vlm_judge.plan_calls``) and turns their answers into rows
in ``rows(outcomes, judge_model)``; see ``VlmJudge``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from vsb.errors import InputError, RunError, select_present
from vsb.fsio import iter_jsonl
from vsb.story.io import load_suite
from vsb.story.models import Requirement, Story

if TYPE_CHECKING:
    from vsb.evaluators.render.memo import ExtractionMemo
    from vsb.evaluators.vlm.transports import VlmTransport

Kind = Literal["verdicts", "signals"]
Reads = Literal["renders", "any"]
Stage = Literal["frames", "calls", "models"]
ProgressFn = Callable[[int, int], None]
#: One image of a run: (model, condition, story id, scene).
Image = tuple[str, str, str, int]


@dataclass(frozen=True)
class Frame:
    """One image of a run. ``path`` is None when generation failed; ``image`` holds the
    canonical palette indices when the image is a render (``is_render``), else None and
    ``reason`` says why it is not one."""

    model: str
    condition: str
    story_id: str
    scene: int
    image: NDArray[np.uint8] | None
    path: str | None = None
    is_render: bool = True
    reason: str = ""
    counts: NDArray[np.intp] | None = None
    """Pixels per palette index of ``image`` when the decoder counted them (else None)."""
    band_counts: NDArray[np.intp] | None = None
    """The same, of the figure band's rows (``style.BAND``) only."""
    unreadable: str = ""
    """Why the image file could not be read ('' when it could); such a frame has no
    ``path`` (evaluators skip it, as a failed generation) and ``vsb evaluate`` gives it
    ``unreadable`` rows (``vsb.evaluators.failed``)."""
    sha256: str = ""
    """sha256 of the image file's bytes when the machinery read them ('' otherwise)."""
    memo: ExtractionMemo | None = field(default=None, compare=False, repr=False)
    """Decodings and extractions by content, shared by the frames of one work unit."""


@dataclass
class EvaluatorOutput:
    """Rows an evaluator produced (requirement rows and signal rows)."""

    requirements: list[dict[str, Any]] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class EvaluatorInfo:
    """The declaration of an evaluator."""

    name: str
    kind: Kind
    reads: Reads
    paid: bool
    target: str  # "module:Class"
    needs: str = ""  # what it needs beyond the run ("--judge", model weights …)
    description: str = ""
    stage: Stage = "frames"  # how its work items run

    def load(self) -> type[Any]:
        """The evaluator class (imported now)."""
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)


@dataclass(frozen=True)
class FrameSequence:
    """The frames of one (model, condition, story): ``images`` = ((scene, path or None), …)
    in scene order (path None: no picture)."""

    model: str
    condition: str
    story_id: str
    images: tuple[tuple[int, str | None], ...]


@dataclass(frozen=True)
class WorkItem:
    """One unit of an evaluator's work. ``key``: sha256 over what determines its outcome
    (for cached items: the image bytes, model, prompt and endpoint); ``cost_usd``: the
    estimate before it runs (0.0 for local work, None when the price is unknown);
    ``payload``: what the stage runs (a ``FrameSequence``, a ``JudgeCall``, …)."""

    evaluator: str
    key: str
    cost_usd: float | None
    payload: Any


def content_key(*parts: Any) -> str:
    """sha256 of the canonical JSON of ``parts`` (sorted keys, no whitespace)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RunView:
    """What an evaluator plans from: the selected frames of a run and its suite, read once
    (``read_run``). ``frames``: (sequence, scene, path) of every frame that has a picture, in
    order; ``all_sequences``: the run's frames of any model, selected or not (e.g. reference
    renders); ``unreadable``: image -> why, for the images ``read_run(check_images=True)``
    found cannot be read (frames without a picture in ``sequences``)."""

    root: Path
    stories: dict[str, Story]
    sequences: tuple[FrameSequence, ...]
    all_sequences: tuple[FrameSequence, ...] = ()
    unreadable: Mapping[Image, str] = field(default_factory=dict)
    frames: tuple[tuple[FrameSequence, int, str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        frames = tuple((s, k, p) for s in self.sequences for k, p in s.images if p is not None)
        object.__setattr__(self, "frames", frames)


def _read_records(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "records.jsonl"
    if not path.is_file():
        raise RunError("run has no records (run `vsb run` first)", file=path)
    records = []
    for n, rec in iter_jsonl(path):
        missing = [k for k in ("model", "condition", "story_id", "scene") if k not in rec]
        if missing:
            raise InputError(
                f"missing field(s) {', '.join(missing)}", file=path, location=f"line {n}"
            )
        records.append(rec)
    if not records:
        raise RunError("run has no records (records.jsonl is empty)", file=path)
    return records


def _select(records: list[dict[str, Any]], key: str, wanted: Sequence[str] | None) -> set[str]:
    present = list(dict.fromkeys(str(r[key]) for r in records))
    return select_present(
        wanted,
        present,
        lambda unknown, hint: (
            f"{key} {', '.join(map(repr, unknown))} is not in this run{hint} "
            f"(it has: {', '.join(present)})"
        ),
    )


def _tasks(
    run_dir: Path,
    records: list[dict[str, Any]],
    stories: dict[str, Story],
    selected: Callable[[dict[str, Any]], bool],
) -> list[FrameSequence]:
    """The records' sequences; a selected record's image must exist."""
    groups: dict[tuple[str, str, str], list[tuple[int, str | None]]] = {}
    for rec in records:
        sid = rec["story_id"]
        if sid not in stories:
            raise RunError(
                f"record names story {sid!r}, which is not in the run's suite",
                file=run_dir / "suite",
            )
        path: str | None = None
        if rec.get("error") is None:
            p = run_dir / str(rec.get("path", ""))
            if selected(rec) and (not rec.get("path") or not p.is_file()):
                raise RunError("image listed in records.jsonl is missing", file=p)
            path = str(p)
        groups.setdefault((rec["model"], rec["condition"], sid), []).append(
            (int(rec["scene"]), path)
        )
    return [
        FrameSequence(m, c, s, tuple(sorted(images)))
        for (m, c, s), images in sorted(groups.items())
    ]


def read_run(
    run_dir: str | Path,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    *,
    check_images: bool = False,
) -> RunView:
    """The run's frames (of the given models and conditions) and its suite: RUN/manifest.json,
    records.jsonl and suite/ (docs/CONTRACTS.md), checked. ``check_images``: decode every
    selected image now; one that cannot be read becomes a frame without a picture and its
    reason goes to ``unreadable`` (evaluators that run after the frames stage, and dry runs,
    need this before planning; the frames stage finds them while it decodes)."""
    root = Path(run_dir)
    if not root.is_dir():
        raise RunError("run directory not found", file=root)
    if not (root / "manifest.json").is_file():
        raise RunError("run is incomplete (no manifest.json)", file=root / "manifest.json")
    suite_dir = root / "suite"
    if not suite_dir.is_dir():
        raise RunError("run has no copy of its suite", file=suite_dir)
    stories = {s.id: s for s in load_suite(suite_dir)}
    records = _read_records(root)
    keep_m = _select(records, "model", models)
    keep_c = _select(records, "condition", conditions)
    cells = {(m, c) for m in keep_m for c in keep_c}
    every = _tasks(root, records, stories, lambda r: (r["model"], r["condition"]) in cells)
    tasks = tuple(s for s in every if (s.model, s.condition) in cells)
    if not check_images:
        return RunView(root, stories, tasks, tuple(every))
    from vsb.evaluators.render.decode import image_problem

    why = {(s.model, s.condition, s.story_id, k): image_problem(p) for s in tasks
           for k, p in s.images if p is not None}  # fmt: skip
    bad = {image: w for image, w in why.items() if w}
    tasks = tuple(replace(s, images=tuple(
        (k, None if (s.model, s.condition, s.story_id, k) in bad else p) for k, p in s.images
    )) for s in tasks)  # fmt: skip
    return RunView(root, stories, tasks, tuple(every), bad)


@dataclass(frozen=True)
class EvaluateOptions:
    """What ``vsb evaluate`` was given beyond the evaluators: each evaluator's own options
    (``of``: name -> an instance of its ``Options``), the judge the calls stage asks, the
    ledger, where local work runs, and progress callbacks by stage."""

    of: Mapping[str, Any] = field(default_factory=dict)
    judge: VlmTransport | None = None
    ledger_path: Path | None = None
    workers: int = 1
    ray: Any = None
    #: An on-disk extraction cache shared across evaluations (None: memo per story only).
    extraction_cache: Path | None = None
    progress: Mapping[str, ProgressFn] = field(default_factory=dict)  # stage -> callback


class Evaluator(Protocol):
    """What every evaluator offers (see the module docstring). Besides these, a ``frames``
    evaluator has ``evaluate_story(story, frames) -> EvaluatorOutput``, a ``calls`` one
    ``rows(outcomes, judge_model) -> EvaluatorOutput``."""

    name: ClassVar[str]
    kind: ClassVar[Kind]
    reads: ClassVar[Reads]
    paid: ClassVar[bool]
    stage: ClassVar[Stage]
    needs: ClassVar[str]
    description: ClassVar[str]

    def check(self, options: EvaluateOptions) -> None:
        """Fail before any work when something it needs is missing (weights, a judge)."""
        ...

    def plan(self, run: RunView, options: EvaluateOptions) -> list[WorkItem]:
        """The work items of the run's frames."""
        ...

    def requirements_at(self, story: Story, scene: int) -> list[Requirement]:
        """The requirements it judges at the image of ``scene`` (``verdicts`` evaluators)."""
        ...


class EvaluatorBase:
    """The class attributes of an ``Evaluator`` with their defaults (a free local
    ``signals`` evaluator of any image), a ``check`` that needs nothing and the scene's own
    requirements; the built-in evaluators derive from it and set what differs."""

    name: ClassVar[str] = ""
    kind: ClassVar[Kind] = "signals"
    reads: ClassVar[Reads] = "any"
    paid: ClassVar[bool] = False
    stage: ClassVar[Stage] = "frames"
    needs: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: Its options type, made without arguments for its defaults (None: it takes none), and
    #: the command-line options (click parameters) that set the fields they are named after.
    Options: ClassVar[type[Any] | None] = None
    cli_options: ClassVar[Sequence[Any]] = ()

    def __init__(self, options: Any = None) -> None:
        """``options``: its own (``EvaluateOptions.of[name]``; None: its type's defaults)."""
        self.options = options if options is not None or self.Options is None else self.Options()

    def check(self, options: EvaluateOptions) -> None:
        """Nothing to check: it needs only the run."""

    def requirements_at(self, story: Story, scene: int) -> list[Requirement]:
        """The scene's requirements."""
        return list(story.scenes[scene - 1].requirements)


class StoryEvaluator(EvaluatorBase):
    """Base of the local evaluators: one item per (model, condition, story) sequence, run in
    the process pool; subclasses set the class attributes and write ``evaluate_story``."""

    def plan(self, run: RunView, options: EvaluateOptions) -> list[WorkItem]:
        """One item per sequence, costing nothing."""
        return [WorkItem(self.name, sequence_key(self.name, s), 0.0, s) for s in run.sequences]

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        """Rows for the frames of one (model, condition, story), in scene order."""
        raise NotImplementedError


def sequence_key(evaluator: str, seq: FrameSequence) -> str:
    """The key of a local item: the evaluator and the sequence's frames (local items are
    not cached: this names the work, it does not reuse it)."""
    return content_key(evaluator, seq.model, seq.condition, seq.story_id, list(seq.images))


def signal_row(f: Frame, signal: str, value: float | None, evaluator: str) -> dict[str, Any]:
    """One signal row about frame ``f``."""
    return {
        "model": f.model,
        "condition": f.condition,
        "story_id": f.story_id,
        "scene": f.scene,
        "signal": signal,
        "value": value,
        "evaluator": evaluator,
    }


def info_of(cls: type[Any], target: str, name: str = "") -> EvaluatorInfo:
    """The declaration of evaluator class ``cls`` found at ``target`` (registered as
    ``name``, default its ``name`` attribute)."""
    return EvaluatorInfo(
        name or cls.name, cls.kind, cls.reads, bool(cls.paid), target,
        getattr(cls, "needs", ""), getattr(cls, "description", ""),
        getattr(cls, "stage", "frames"),
    )  # fmt: skip


def by_stage(evaluators: Sequence[Evaluator], stage: Stage) -> list[Evaluator]:
    """The evaluators of one stage, in the given order."""
    return [e for e in evaluators if getattr(e, "stage", "frames") == stage]
