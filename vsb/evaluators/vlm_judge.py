"""The VLM question-answering judge (evaluator ``vlm``): one call per scene.

Every requirement of a scene becomes a YES/NO question (vlm_questions.py). The questions of
one image go in one call, numbered ``1. …``, ``2. …``; the judge answers one per line,
``1: YES``, ``2: NO``, ``3: UNSURE``; ``parse_batch`` matches each answer to its question by
its number in any layout (one line, markdown, JSON). A missing, contradicted or unparsable
answer is a ``parse_failure`` for that question: counted and shown, never a pass.
``JudgeOptions.batch`` caps the questions per call (``1``: one question per call, answered
with a single word, for judges that cannot batch).

Verdicts: the expected answer -> ``passed``; the other one -> ``failed``; UNSURE ->
``unsure`` (never a pass). Each judged frame also gets the signal ``vlm_pass_rate``.

The internals follow the data, under ``vsb/evaluators/vlm/``: ``answers`` (prompts, reply
parsing), ``plan`` (calls, keys, cost estimates), ``execute`` (the call machinery) and
``rows`` (verdicts, knock-on labels, transcript); this module is their face and holds the
two evaluator classes.

The judge reads the image's original bytes (the run's file), never a re-encoding. Calls use
the same machinery as generation: the answer cache (judge_store.py), one ledger row per call
with its cost (token prices from ``config/pricing.json``), concurrency, retries with backoff
(vsb.store.calls), a budget checked before each call, and a dry run (``plan_cost``). The cache
key covers the judge's endpoint (its normalised base URL), and only replies whose every answer
parses are cached. ``UNREACHABLE_AFTER`` connection failures in a row (no server answered)
stop the pass with ``JudgeUnreachable``; error answers of a live server are retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vsb.errors import InputError
from vsb.evaluators.interface import (
    EvaluateOptions,
    EvaluatorBase,
    EvaluatorOutput,
    Frame,
    FrameSequence,
    RunView,
    WorkItem,
)
from vsb.evaluators.vlm.answers import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_PAIRS,
    SYSTEM_PROMPT_SINGLE,
    Answer,
    parse_answer,
    parse_batch,
    scene_prompt,
    verdict_of,
)
from vsb.evaluators.vlm.execute import (
    UNREACHABLE_AFTER,
    CallOutcome,
    CallRecorder,
    CostPlan,
    JudgeOptions,
    JudgeUnreachable,
    call_answers,
    execute_calls,
    failed_calls_error,
    media_type,
    plan_cost,
    unparsed,
)
from vsb.evaluators.vlm.plan import (
    EVALUATOR_NAME,
    PAIRS_EVALUATOR,
    SIGNAL_NAME,
    JudgeCall,
    colour_probe_question,
    estimate_cost,
    held_objects,
    order_pairs,
    people_count,
    people_question,
    plan_calls,
    plan_pair_calls,
    probe_question,
)
from vsb.evaluators.vlm.questions import pair_questions
from vsb.evaluators.vlm.rows import outcome_results, rows_from_outcomes, transcript_row
from vsb.evaluators.vlm.transports import (
    VlmTransport,
    endpoint_of,
)
from vsb.story.models import Requirement, Story

__all__ = [
    "EVALUATOR_NAME", "PAIRS_EVALUATOR", "SIGNAL_NAME", "SYSTEM_PROMPT", "SYSTEM_PROMPT_PAIRS",
    "SYSTEM_PROMPT_SINGLE", "UNREACHABLE_AFTER", "Answer", "CallOutcome", "CallRecorder",
    "CostPlan", "JudgeCall", "JudgeOptions", "JudgeUnreachable", "VlmJudge", "VlmPairJudge",
    "call_answers", "colour_probe_question", "estimate_cost", "execute_calls",
    "failed_calls_error", "held_objects", "media_type", "order_pairs", "outcome_results",
    "parse_answer", "parse_batch", "people_count", "people_question", "plan_calls",
    "plan_cost", "plan_pair_calls", "probe_question", "rows_from_outcomes", "scene_prompt",
    "transcript_row", "unparsed", "verdict_of",
]  # fmt: skip


class VlmJudge(EvaluatorBase):
    """The ``vlm`` evaluator: one judge call per scene (its questions batched), through the
    call machinery; its rows carry the judge model."""

    name = EVALUATOR_NAME
    kind = "verdicts"
    paid = True
    stage = "calls"
    needs = "--judge"
    description = "VLM question-answering judge, one call per scene (any image)"
    Options = JudgeOptions

    def __init__(
        self, transport: VlmTransport | None = None, options: JudgeOptions | None = None
    ) -> None:
        super().__init__(options or JudgeOptions(cache_dir=None))
        self.transport = transport  # for evaluate_story (library use)

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        """Rows for one (model, condition, story) with the judge given at construction
        (library use: ``VlmJudge(transport).evaluate_story(story, frames)``, uncached);
        frames whose generation failed get none."""
        assert self.transport is not None, "VlmJudge(transport) to judge one story"
        images = tuple((f.scene, f.path) for f in frames)
        first = frames[0] if frames else Frame("", "", story.id, 1, None)
        seq = FrameSequence(first.model, first.condition, story.id, images)
        run = RunView(Path("."), {story.id: story}, (seq,))
        calls = self.calls(run, self.transport, self.options)
        outcomes = execute_calls(calls, self.transport, self.options)
        err = failed_calls_error(outcomes)
        if err is not None:
            raise err
        return self.rows(outcomes, self.transport.judge_model)

    def check(self, options: EvaluateOptions) -> None:
        """A judge is given, and its credentials are there."""
        if options.judge is None:
            raise InputError(
                f"--evaluator {self.name} needs a judge: --judge openai-compatible:MODEL "
                "[--base-url URL], anthropic:MODEL, replay:DIR or mock[:ERROR_RATE]"
            )
        check = getattr(options.judge, "check_credentials", None)
        if check is not None:
            check()

    def calls(self, run: RunView, judge: VlmTransport, options: JudgeOptions) -> list[JudgeCall]:
        """The judge calls of the run's frames."""
        frames = [
            (s.model, s.condition, s.story_id, k, p, run.stories[s.story_id].scenes[k - 1])
            for s, k, p in run.frames
        ]
        return plan_calls(frames, judge.judge_model, options.batch, endpoint_of(judge))

    def plan(self, run: RunView, options: EvaluateOptions) -> list[WorkItem]:
        """One item per call: keyed by the call's content, priced from config/pricing.json."""
        judge = options.judge
        assert judge is not None, "check() first"
        return [
            WorkItem(self.name, c.key, estimate_cost(c, self.options.pricing, judge.judge_model), c)
            for c in self.calls(run, judge, self.options)
        ]

    def rows(self, outcomes: Sequence[CallOutcome], judge_model: str) -> EvaluatorOutput:
        """Requirement rows and pass-rate signal rows of its finished calls."""
        reqs, sigs = rows_from_outcomes(outcomes, judge_model)
        return EvaluatorOutput(requirements=reqs, signals=sigs)


class VlmPairJudge(VlmJudge):
    """The ``vlm_xframe`` evaluator: the judge's cross-frame questions, one call per pair of
    consecutive frames that both have a picture; located at the later frame."""

    name = PAIRS_EVALUATOR
    description = "VLM cross-frame questions on consecutive frames: same person, clothes, place"

    def calls(self, run: RunView, judge: VlmTransport, options: JudgeOptions) -> list[JudgeCall]:
        """The cross-frame calls of the run's sequences."""
        seqs = [
            (s.model, s.condition, s.story_id, list(s.images), run.stories[s.story_id].scenes)
            for s in run.sequences
        ]
        return plan_pair_calls(seqs, judge.judge_model, endpoint_of(judge))

    def requirements_at(self, story: Story, scene: int) -> list[Requirement]:
        """The cross-frame questions of the pair the image ends (none at scene 1)."""
        if scene < 2:
            return []
        return [r for r, _q in pair_questions(story.scenes[scene - 2], story.scenes[scene - 1])]
