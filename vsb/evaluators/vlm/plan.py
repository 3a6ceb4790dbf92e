"""The judge's work items: which calls a run's frames need (``plan_calls``: one per scene
with its probes; ``plan_pair_calls``: one per pair of consecutive frames), their content
keys (judge model, endpoint, prompts, image sha256) and cost estimates (``estimate_cost``).

Within ``shared_questions()`` both keep what they build from the story alone (a scene's
questions, prompts and probes; a pair's questions) for every later plan of the same scenes:
the reference judges plan the same frames once per judge, and only the judge model (so the
keys) differs between their plans.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.evaluators.vlm.answers import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_PAIRS,
    SYSTEM_PROMPT_SINGLE,
    scene_prompt,
)
from vsb.evaluators.vlm.questions import (
    Question,
    judge_view,
    order_probe,
    pair_questions,
    question_for,
    unrecognised_label,
    unsure_label,
)
from vsb.evaluators.vlm.store import JudgePricing, call_key
from vsb.story.models import Requirement, Scene

EVALUATOR_NAME = "vlm"
PAIRS_EVALUATOR = "vlm_xframe"
SIGNAL_NAME = "vlm_pass_rate"


@dataclass(frozen=True)
class JudgeCall:
    """One call: the questions of (part of) one image."""

    model: str
    condition: str
    story_id: str
    scene: int
    image_path: str
    image_sha256: str
    requirements: tuple[Requirement, ...]
    questions: tuple[Question, ...]  # one per requirement, then one per probe
    system: str
    prompt: str
    key: str
    probes: tuple[str, ...] = ()  # object kinds asked about "of any colour" (after the rest)
    #: Held objects asked about in the story's colour (after ``probes``): a failed holder
    #: check is a colour change when the object is seen only in another colour.
    colour_probes: tuple[str, ...] = ()
    #: (left, right) names asked whether left stands left of right (last): a failed order
    #: check while someone is missing is a swap when those seen stand out of order.
    order_probes: tuple[tuple[str, str], ...] = ()
    #: How many people the scene shows, asked last ("Are there exactly N people…?"): a
    #: person not found by their cues while everyone is there is unrecognised (their look
    #: drifted), not missing. 0: not asked.
    people_probe: int = 0
    #: (name, label) per person asked about present: the root cause when they are not found
    #: by their cues while everyone is there (``questions.unrecognised_label``).
    lost_labels: tuple[tuple[str, str], ...] = ()
    #: Characters asked about as not there (after the people probe, "Are there exactly
    #: N+1, N+2… people?" is asked, one per name): with U of them seen, everyone expected
    #: is there when the picture shows N+U people.
    absent: tuple[str, ...] = ()
    #: Per requirement: its failure label when the judge cannot tell which person it means
    #: (``questions.unsure_label``; empty: the question is not about a person).
    unsure_labels: tuple[str, ...] = ()
    #: Cross-frame calls: the earlier frame's image (``image_path`` is the later one's, and
    #: comes second in the request), and the evaluator their rows belong to.
    prev_image_path: str | None = None
    evaluator: str = EVALUATOR_NAME
    #: Text-only calls (``image_path`` empty: the narrative importer's extractions) set the
    #: room for their answer and what makes a reply worth caching (``accepts(text)``).
    answer_tokens: int = 0
    accepts: Callable[[str], bool] | None = None
    #: Further images after ``image_path``, in order (a question about several frames at
    #: once: VinaBench's consistency questions); ``image_sha256`` joins every image's.
    more_image_paths: tuple[str, ...] = ()

    @property
    def max_tokens(self) -> int:
        """Room for ``N: UNSURE`` per question and some slack (or ``answer_tokens``)."""
        return self.answer_tokens or 8 * len(self.questions) + 16


def _probes(scene: Scene) -> tuple[str, ...]:
    """Objects the scene expects in view: asked about "of any colour" so that a failure can
    be told apart as a disappearance or a colour change (as the rule checker does)."""
    kinds = [
        r.subject
        for r in scene.requirements
        if r.subject in scene.state.objects
        and (r.attribute == "holder" or (r.attribute == "present" and r.expected is True))
    ]
    return tuple(dict.fromkeys(kinds))


def held_objects(scene: Scene) -> tuple[str, ...]:
    """Held objects (no presence check of their own): asked about in the story's colour."""
    kinds = [
        r.subject
        for r in scene.requirements
        if r.subject in scene.state.objects and r.attribute == "holder"
    ]
    return tuple(dict.fromkeys(kinds))


def order_pairs(scene: Scene) -> tuple[tuple[str, str], ...]:
    """Every pair of the scene's left-to-right order, in that order."""
    for r in scene.requirements:
        if r.subject == "scene" and r.attribute == "order" and isinstance(r.expected, list):
            names = [str(n) for n in r.expected]
            return tuple((a, b) for i, a in enumerate(names) for b in names[i + 1 :])
    return ()


def people_count(scene: Scene) -> int:
    """The people a scene shows when it asks whether someone is there (else 0: no probe)."""
    asks = any(
        r.attribute == "present" and r.expected is True and r.subject in scene.state.characters
        for r in scene.requirements
    )
    return len(scene.state.order) if asks else 0


def absent_people(scene: Scene) -> tuple[str, ...]:
    """The characters a scene that asks whether someone is there asks about as not there."""
    if not people_count(scene):
        return ()
    return tuple(
        r.subject
        for r in scene.requirements
        if r.attribute == "present" and r.expected is False and r.subject in scene.state.characters
    )


def people_question(n: int) -> Question:
    """The auxiliary question how many people the picture shows."""
    if n == 1:
        return Question("Is there exactly one person in the picture?", "YES")
    return Question(f"Are there exactly {n} people in the picture?", "YES")


def colour_probe_question(kind: str, color: str) -> Question:
    """The auxiliary question whether the story's object, in the story's colour, is seen."""
    words = f"{color} {kind}".strip()  # no colour: the narrative gives none (``judge_view``)
    article = "an" if words[:1] in "aeiou" else "a"
    return Question(f"Is there {article} {words} in the picture?", "YES")


def probe_question(kind: str) -> Question:
    """The auxiliary question of a probe (it has no requirement of its own)."""
    article = "an" if kind[:1] in "aeiou" else "a"
    return Question(f"Is there {article} {kind} of any colour in the picture?", "YES")


@dataclass
class QuestionMemo:
    """What ``plan_calls`` and ``plan_pair_calls`` built from scenes alone, by the scenes'
    identity (stories are frozen models, loaded once per file content: ``vsb.story.io``);
    each entry holds its scenes, so an id is never reused while it is kept."""

    #: (id(scene), first requirement, batch) -> (scene, ``_scene_questions``'s tuple)
    scenes: dict[tuple[int, int, int], tuple[Scene, tuple[Any, ...]]] = field(default_factory=dict)
    #: (id(earlier scene), id(later scene)) -> (scenes, ``pair_questions``, their prompt)
    pairs: dict[tuple[int, int], tuple[Scene, Scene, tuple[Any, ...]]] = field(default_factory=dict)


_SHARED: ContextVar[QuestionMemo | None] = ContextVar("vsb_vlm_question_memo", default=None)


@contextmanager
def shared_questions() -> Iterator[QuestionMemo]:
    """Within: every ``plan_calls`` and ``plan_pair_calls`` of this thread keeps and reuses
    the questions it builds from a scene (the calls it plans are the same as without)."""
    memo = _SHARED.get()
    if memo is not None:  # nested: the outer memo serves
        yield memo
        return
    memo = QuestionMemo()
    token = _SHARED.set(memo)
    try:
        yield memo
    finally:
        _SHARED.reset(token)


def plan_calls(
    frames: Iterable[tuple[str, str, str, int, str, Scene]],
    judge_model: str,
    batch: int = 0,
    endpoint: str | None = None,
) -> list[JudgeCall]:
    """The calls for ``(model, condition, story_id, scene, image_path, scene)`` frames: one
    per scene (with the object probes) unless ``batch`` caps the questions per call;
    ``endpoint`` (the transport's) is part of every key."""
    calls = []
    memo = _SHARED.get() or QuestionMemo()  # the same for every model's frame of a scene
    for model, condition, story_id, k, path, scene in frames:
        reqs = list(scene.requirements)
        if not reqs:
            continue
        sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        size = batch if batch > 0 else len(reqs)
        for start in range(0, len(reqs), size):
            hit = memo.scenes.get((id(scene), start, batch))
            if hit is None:
                hit = scene, _scene_questions(scene, tuple(reqs[start : start + size]), batch)
                memo.scenes[id(scene), start, batch] = hit
            part, qs, system, prompt, probes, colours, pairs, people, lost, extra, unsure = hit[1]
            key = call_key(judge_model, system, prompt, sha, endpoint)
            calls.append(
                JudgeCall(
                    model,
                    condition,
                    story_id,
                    k,
                    str(path),
                    sha,
                    part,
                    qs,
                    system,
                    prompt,
                    key,
                    probes,
                    colours,
                    pairs,
                    people,
                    lost,
                    extra,
                    unsure,
                )
            )
    return calls


def _scene_questions(scene: Scene, part: tuple[Requirement, ...], batch: int) -> tuple[Any, ...]:
    """What ``plan_calls`` asks of any image of ``scene`` about ``part``: (part, questions,
    system prompt, prompt, probes, colours, pairs, people, lost, extra, unsure labels)."""
    probes = _probes(scene) if batch == 0 else ()
    colours = held_objects(scene) if batch == 0 else ()
    pairs = order_pairs(scene) if batch == 0 else ()
    st = judge_view(scene)
    qs = tuple(question_for(r, st) for r in part)
    qs += tuple(probe_question(kind) for kind in probes)
    qs += tuple(colour_probe_question(k, st.objects[k].color) for k in colours)
    qs += tuple(order_probe(st, a, b) for a, b in pairs)
    people = people_count(scene) if batch == 0 else 0
    lost = tuple(
        (r.subject, unrecognised_label(st, r.subject))
        for r in part
        if r.attribute == "present" and r.expected is True and r.subject in st.characters
    )
    qs += (people_question(people),) if people else ()
    extra = absent_people(scene) if people else ()
    qs += tuple(people_question(people + j) for j in range(1, len(extra) + 1))
    system = SYSTEM_PROMPT_SINGLE if batch == 1 else SYSTEM_PROMPT
    prompt = qs[0].text if batch == 1 else scene_prompt(qs)
    unsure = tuple(unsure_label(r, st) for r in part)
    return part, qs, system, prompt, probes, colours, pairs, people, lost, extra, unsure


def plan_pair_calls(
    sequences: Iterable[tuple[str, str, str, list[tuple[int, str | None]], list[Scene]]],
    judge_model: str,
    endpoint: str | None = None,
) -> list[JudgeCall]:
    """One cross-frame call per pair of consecutive frames that both exist:
    ``(model, condition, story_id, [(scene, image_path)], scenes)`` sequences."""
    calls = []
    memo = _SHARED.get() or QuestionMemo()
    for model, condition, story_id, images, scenes in sequences:
        paths = dict(images)
        for k in sorted(paths):
            a, b = paths.get(k - 1), paths[k]
            if a is None or b is None:
                continue
            before, after = scenes[k - 2], scenes[k - 1]
            hit = memo.pairs.get((id(before), id(after)))
            if hit is None:
                asked = pair_questions(before, after)
                reqs = tuple(r for r, _ in asked)
                qs = tuple(q for _, q in asked)
                hit = before, after, (reqs, qs, scene_prompt(qs) if asked else "")
                memo.pairs[id(before), id(after)] = hit
            reqs, qs, prompt = hit[2]
            if not reqs:
                continue
            sha = ":".join(hashlib.sha256(Path(x).read_bytes()).hexdigest() for x in (a, b))
            calls.append(
                JudgeCall(
                    model,
                    condition,
                    story_id,
                    k,
                    b,
                    sha,
                    reqs,
                    qs,
                    SYSTEM_PROMPT_PAIRS,
                    prompt,
                    call_key(judge_model, SYSTEM_PROMPT_PAIRS, prompt, sha, endpoint),
                    prev_image_path=a,
                    evaluator=PAIRS_EVALUATOR,
                )
            )
    return calls


def estimate_cost(call: JudgeCall, pricing: JudgePricing | None, judge_model: str) -> float | None:
    """An upper estimate of a call's cost (text at ~4 characters a token, the image at the
    listed tokens, every output token used); None when the price is unknown."""
    price = pricing.price(judge_model) if pricing else None
    if price is None:
        return None
    images = 2 if call.prev_image_path else (1 if call.image_path else 0)
    images += len(call.more_image_paths)
    tokens_in = images * price.image_tokens + math.ceil((len(call.system) + len(call.prompt)) / 4)
    return price.cost(tokens_in, call.max_tokens)
