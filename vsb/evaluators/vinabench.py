"""VinaBench's own evaluation (evaluator ``vinabench``): its eight VQA metrics, asked of any
judge through vsb's judge machinery.

VinaBench (CVPR 2025; Silin159/VinaBench ``evaluation/minicpm_vqa_*.py``) asks a VLM yes/no
questions (and one count) about each generated image, from a sample's annotations: entity,
character-number, character-attribute, time and location alignment per scene; style,
character and location consistency per sample, the consistency questions showing every image
concerned in one request. ``vsb.evaluators.vina.questions`` words, selects and reads them as
its scripts do; this module asks them of a run's images and writes one signal row per unit:

- ``vinabench.<portion>.<metric>`` at the scene (the five alignment metrics: the scene's
  value, for entities the share answered yes) or at scene 0 (the three consistency metrics:
  the sample's value); the portion (vwp, sb20k, salon_short…) is the sample's.
  ``vsb.scores.vinabench`` averages them as VinaBench does (``vsb score --evaluator
  vinabench`` -> ``scores/vinabench.csv``).

A story's annotations come in VinaBench's form (``vsb.story.vinabench.VinaSample``): read
from VinaBench's annotation files (``--vinabench-file``, the files the suite was imported
from), or handed in (``VinaBenchOptions.annotations``: story id -> sample, e.g. vsb's own
stories expressed in that form). A story of the run with no annotations is not asked about.

Calls go through the judge's machinery like ``vlm``'s (cache keyed by the judge, its endpoint,
the prompt and every image's sha256; a ledger row per attempt; retries; budget; concurrency;
``--dry-run``), with no system prompt: the question is the whole user message, as VinaBench
sends it. An image whose generation failed (or that cannot be read) is not asked about: its
questions count 0 (not aligned, not consistent), as a missing picture shows nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from vsb.errors import InputError
from vsb.evaluators.interface import EvaluateOptions, EvaluatorOutput, RunView, WorkItem
from vsb.evaluators.vina.questions import (
    METRICS,
    Ask,
    asks_of,
    readable,
    signal_name,
    unit_values,
    value,
)
from vsb.evaluators.vina.reference import VINABENCH_FILE, samples_given
from vsb.evaluators.vlm.execute import CallOutcome, JudgeOptions
from vsb.evaluators.vlm.plan import JudgeCall, estimate_cost
from vsb.evaluators.vlm.questions import Question
from vsb.evaluators.vlm.store import call_key
from vsb.evaluators.vlm.transports import endpoint_of
from vsb.evaluators.vlm_judge import VlmJudge
from vsb.story.models import Requirement, Story
from vsb.story.vinabench import VinaSample

EVALUATOR = "vinabench"
#: No system prompt: VinaBench's question is the whole message.
SYSTEM = ""


@dataclass(frozen=True)
class VinaBenchOptions(JudgeOptions):
    """The judge's options (set by ``vsb evaluate``'s judge flags) and where the stories'
    annotations come from."""

    #: VinaBench annotation files (``annotations/{vwp,sb20k,salon_short}_test.json``…).
    vinabench_file: tuple[Path, ...] = ()
    #: Story id -> its annotations, beside (and before) those read from the files.
    annotations: Mapping[str, VinaSample] | None = None


@dataclass(frozen=True)
class Planned:
    """What a call (or a question answered without one) is about."""

    ask: Ask
    model: str
    condition: str
    story_id: str
    portion: str


def _always(text: str) -> bool:
    """Every yes/no answer reads (VinaBench: yes, or not)."""
    return True


def _count_reads(text: str) -> bool:
    return readable(Ask("char_num_align", 1, (1,), "", count=0), text)


def _sha(path: str, memo: dict[str, str]) -> str:
    if path not in memo:
        memo[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return memo[path]


class VinaBenchEvaluator(VlmJudge):
    """The ``vinabench`` evaluator: VinaBench's questions, one call each."""

    name = EVALUATOR
    kind = "signals"  # type: ignore[assignment]  # a judge whose rows are signals
    description = "VinaBench's eight VQA metrics (its questions, selection and aggregation)"
    Options = VinaBenchOptions
    cli_options = (VINABENCH_FILE,)

    def __init__(self, transport: Any = None, options: VinaBenchOptions | None = None) -> None:
        super().__init__(transport, options or VinaBenchOptions(cache_dir=None))
        #: call id -> what it asks; and the questions answered without a call (value 0).
        self.planned: dict[int, Planned] = {}
        self.known: list[Planned] = []

    def annotations(self) -> dict[str, VinaSample]:
        """Story id -> annotations: those handed in, then those of the files."""
        return samples_given(self.options.vinabench_file, self.options.annotations)

    def check(self, options: EvaluateOptions) -> None:
        """A judge, and annotations to ask from."""
        super().check(options)
        if not self.options.vinabench_file and not self.options.annotations:
            raise InputError(
                "--evaluator vinabench needs the stories' VinaBench annotations: "
                "--vinabench-file FILE (the file the suite was imported from)"
            )

    def requirements_at(self, story: Story, scene: int) -> list[Requirement]:
        """None: it writes signals."""
        return []

    def calls(self, run: RunView, judge: Any, options: JudgeOptions) -> list[JudgeCall]:
        """One call per question whose images all have a picture; the others are known."""
        samples = self.annotations()
        found = [s for s in run.sequences if s.story_id in samples]
        if run.sequences and not found:
            raise InputError(
                "no story of the run is in the VinaBench annotations given (story ids are "
                "VinaBench's indexes as `vsb suite import` names them)"
            )
        self.planned, self.known = {}, []
        shas: dict[str, str] = {}
        where = endpoint_of(judge)
        out = []
        for seq in found:
            sample = samples[seq.story_id]
            story = run.stories[seq.story_id]
            if len(sample.scenes) != len(story.scenes):
                raise InputError(
                    f"story {seq.story_id} has {len(story.scenes)} scenes, its VinaBench "
                    f"sample {sample.index} {len(sample.scenes)}"
                )
            paths = dict(seq.images)
            for ask in asks_of(sample):
                about = Planned(ask, seq.model, seq.condition, seq.story_id, sample.portion)
                images = [paths.get(k) for k in ask.scenes]
                if any(p is None for p in images):
                    self.known.append(about)
                    continue
                files = [str(p) for p in images]
                sha = ":".join(_sha(p, shas) for p in files)
                expect = "YES" if ask.count is None else str(ask.count)
                call = JudgeCall(
                    seq.model, seq.condition, seq.story_id, ask.unit, files[0], sha, (),
                    (Question(ask.prompt, cast(Any, expect)),), SYSTEM, ask.prompt,
                    call_key(judge.judge_model, SYSTEM, ask.prompt, sha, where),
                    evaluator=self.name, more_image_paths=tuple(files[1:]),
                    accepts=_always if ask.count is None else _count_reads,
                )  # fmt: skip
                self.planned[id(call)] = about
                out.append(call)
        return out

    def plan(self, run: RunView, options: EvaluateOptions) -> list[WorkItem]:
        """One item per call, keyed by its content and priced from config/pricing.json."""
        judge = options.judge
        assert judge is not None, "check() first"
        price = self.options.pricing
        return [
            WorkItem(self.name, c.key, estimate_cost(c, price, judge.judge_model), c)
            for c in self.calls(run, judge, self.options)
        ]

    def rows(self, outcomes: Sequence[CallOutcome], judge_model: str) -> EvaluatorOutput:
        """One signal row per (story run, metric, unit): the unit's value."""
        answered = [(self.planned[id(o.call)], value(self.planned[id(o.call)].ask, o.reply.text))
                    for o in outcomes if o.reply is not None]  # fmt: skip
        answered += [(p, 0.0) for p in self.known]
        by_run: dict[tuple[str, str, str, str], list[tuple[Ask, float]]] = {}
        for p, v in answered:
            by_run.setdefault((p.model, p.condition, p.story_id, p.portion), []).append((p.ask, v))
        out = EvaluatorOutput()
        for (model, condition, story_id, portion), pairs in by_run.items():
            for (metric, unit), v in sorted(unit_values(pairs).items(), key=_order):
                out.signals.append({
                    "model": model, "condition": condition, "story_id": story_id,
                    "scene": unit, "signal": signal_name(portion, metric), "value": v,
                    "evaluator": self.name,
                })  # fmt: skip
        return out

    def unreadable(self, outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
        """The count answers VinaBench's reading leaves undefined (counted not aligned)."""
        return [o for o in outcomes if o.reply is not None and id(o.call) in self.planned
                and not readable(self.planned[id(o.call)].ask, o.reply.text)]  # fmt: skip


def _order(item: tuple[tuple[str, int], float]) -> tuple[int, int]:
    (metric, unit), _v = item
    return unit, METRICS.index(metric)


def answers(evaluator: VinaBenchEvaluator, outcomes: Sequence[CallOutcome]) -> list[dict[str, Any]]:
    """Every question asked (and answered without a call) with its answer and value: the
    finest grain, for measuring the metrics against the oracle."""
    out = []
    for o in outcomes:
        p = evaluator.planned.get(id(o.call))
        if p is None or o.reply is None:
            continue
        out.append(_answer(p, o.reply.text, value(p.ask, o.reply.text)))
    return out + [_answer(p, None, 0.0) for p in evaluator.known]


def _answer(p: Planned, text: str | None, v: float) -> dict[str, Any]:
    return {
        "model": p.model, "condition": p.condition, "story_id": p.story_id,
        "portion": p.portion, "metric": p.ask.metric, "unit": p.ask.unit,
        "scenes": list(p.ask.scenes), "subject": p.ask.subject, "prompt": p.ask.prompt,
        "answer": text, "value": v,
    }  # fmt: skip
