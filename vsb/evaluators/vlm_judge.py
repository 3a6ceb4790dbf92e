"""The VLM question-answering judge (evaluator ``vlm``): one call per scene.

Every requirement of a scene becomes a YES/NO question (vlm_questions.py). The questions of
one image go in one call, numbered ``1. …``, ``2. …``; the judge answers one per line,
``1: YES``, ``2: NO``, ``3: UNSURE`` (``parse_batch``). A missing, duplicated or
unparsable answer is a ``parse_failure`` for that question: counted and shown, never a pass.
``JudgeOptions.batch`` caps the questions per call (``1``: one question per call, answered
with a single word, for judges that cannot batch).

Verdicts: the expected answer -> ``passed``; the other one -> ``failed``; UNSURE ->
``unsure`` (never a pass). Each judged frame also gets the signal ``vlm_pass_rate``.

The judge reads the image's original bytes (the run's file), never a re-encoding. Calls use
the same machinery as generation: the answer cache (judge_store.py), one ledger row per call
with its cost (token prices from ``config/pricing.json``), concurrency, retries with backoff
(vsb.calls), a budget checked before each call, and a dry run (``plan_cost``).
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from vsb.calls import Budget, BudgetExceeded, RetryPolicy, call_with_retries, jitter_rng
from vsb.errors import AdapterError, RunError
from vsb.evaluators.judge_store import JudgeCache, JudgePricing, call_key
from vsb.evaluators.registry import EvaluatorOutput, Frame
from vsb.evaluators.rules import RequirementResult, Verdict
from vsb.evaluators.vlm_questions import Question, order_probe, pair_questions, question_for
from vsb.evaluators.vlm_transports import JudgeReply, JudgeRequest, VlmTransport
from vsb.story.models import Requirement, Scene, Story

Answer = Literal["YES", "NO", "UNSURE"]
EVALUATOR_NAME = "vlm"
PAIRS_EVALUATOR = "vlm_xframe"
SIGNAL_NAME = "vlm_pass_rate"

_RULES = (
    "Look only at the picture. Answer YES only if the picture clearly shows it is true, and NO "
    "only if it clearly shows it is false. Answer UNSURE when the picture does not let you tell "
    "(the thing is too small, hidden or ambiguous, or you cannot tell which person is meant). "
    "Do not guess. Do not explain."
)
SYSTEM_PROMPT = (
    "You are checking one picture from an illustrated story. You get numbered questions about "
    "it. Answer every question on its own line, in order, as its number, a colon and one word: "
    "YES, NO or UNSURE (for example `1: YES`). " + _RULES
)
SYSTEM_PROMPT_PAIRS = (
    "You are comparing two consecutive pictures from an illustrated story: the first picture, "
    "then the second. You get numbered questions about them. Answer every question on its "
    "own line, in order, as its number, a colon and one word: YES, NO or UNSURE (for example "
    "`1: YES`). " + _RULES
)
SYSTEM_PROMPT_SINGLE = (
    "You are checking one picture from an illustrated story against a single question. "
    "Answer with exactly one word: YES, NO or UNSURE. " + _RULES
)

_WORD = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+)?(?:answer|verdict)(?:\s+is)?\s*[:\-]?\s*|[^:\n]{0,40}:\s*)?"
    r"(yes|no|unsure)[\s.!]*$"
)
_NUMBERED = re.compile(r"^\s*(?:q(?:uestion)?\s*)?(\d{1,4})\s*[:.)\-]\s*(.*)$")
_STRIP = str.maketrans("", "", "*_`\"'[]()<>#")
_STRIP_BATCH = str.maketrans("", "", "*_`\"'[]<>#")


def _word(text: str) -> Answer | None:
    m = _WORD.match(text.strip())
    if not m:
        return None
    return "YES" if m.group(1) == "yes" else "NO" if m.group(1) == "no" else "UNSURE"


def parse_answer(text: str) -> Answer | None:
    """YES, NO or UNSURE from a one-question reply: the whole reply (or its last line) must be
    the word, optionally after a short label ("Answer:"); case, markdown and final punctuation
    are ignored. Anything else is None (a parse failure)."""
    cleaned = text.translate(_STRIP).strip().lower()
    lines = [ln.strip() for ln in cleaned.splitlines() if ln.strip()]
    for candidate in (cleaned, lines[-1] if lines else ""):
        answer = _word(candidate)
        if answer is not None:
            return answer
    return None


def parse_batch(text: str, n: int) -> list[Answer | None]:
    """Answers to questions 1..n from ``N: WORD`` lines; None where the answer is missing,
    duplicated (the number appears twice) or unparsable. Never raises."""
    seen: dict[int, list[Answer | None]] = {}
    for line in text.translate(_STRIP_BATCH).lower().splitlines():
        m = _NUMBERED.match(line)
        if m:
            seen.setdefault(int(m.group(1)), []).append(_word(m.group(2).strip("() ")))
    return [v[0] if len(v := seen.get(i, [])) == 1 else None for i in range(1, n + 1)]


def scene_prompt(questions: Sequence[Question]) -> str:
    """The user prompt of a batched call: one numbered question per line."""
    return "\n".join(f"{i}. {q.text}" for i, q in enumerate(questions, start=1))


def verdict_of(answer: Answer | None, expect: str) -> Verdict:
    """A question's verdict from its parsed answer."""
    if answer is None:
        return "parse_failure"
    if answer == "UNSURE":
        return "unsure"
    return "passed" if answer == expect else "failed"


@dataclass(frozen=True)
class JudgeOptions:
    """How the judge calls: batching, concurrency, budget, retries, cache, prices."""

    batch: int = 0
    concurrency: int = 4
    budget_usd: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache_dir: Path | None = Path(".vsb-cache")
    pricing: JudgePricing | None = None
    sleep: Callable[[float], None] = time.sleep


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
    #: Cross-frame calls: the earlier frame's image (``image_path`` is the later one's, and
    #: comes second in the request), and the evaluator their rows belong to.
    prev_image_path: str | None = None
    evaluator: str = EVALUATOR_NAME

    @property
    def max_tokens(self) -> int:
        """Room for ``N: UNSURE`` per question and some slack."""
        return 8 * len(self.questions) + 16


@dataclass
class CallOutcome:
    """What became of one call (``reply`` None: it failed or was not made)."""

    call: JudgeCall
    reply: JudgeReply | None = None
    cache_hit: bool = False
    latency_s: float = 0.0
    cost_usd: float | None = None
    attempts: int = 0
    error: str | None = None


def media_type(data: bytes) -> str:
    """The image's MIME type from its magic bytes (PNG unless recognisably otherwise)."""
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


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


def people_question(n: int) -> Question:
    """The auxiliary question how many people the picture shows."""
    if n == 1:
        return Question("Is there exactly one person in the picture?", "YES")
    return Question(f"Are there exactly {n} people in the picture?", "YES")


def colour_probe_question(kind: str, color: str) -> Question:
    """The auxiliary question whether the story's object, in the story's colour, is seen."""
    words = f"{color} {kind}"
    article = "an" if words[:1] in "aeiou" else "a"
    return Question(f"Is there {article} {words} in the picture?", "YES")


def probe_question(kind: str) -> Question:
    """The auxiliary question of a probe (it has no requirement of its own)."""
    article = "an" if kind[:1] in "aeiou" else "a"
    return Question(f"Is there {article} {kind} of any colour in the picture?", "YES")


def plan_calls(
    frames: Iterable[tuple[str, str, str, int, str, Scene]],
    judge_model: str,
    batch: int = 0,
) -> list[JudgeCall]:
    """The calls for ``(model, condition, story_id, scene, image_path, scene)`` frames: one
    per scene (with the object probes) unless ``batch`` caps the questions per call."""
    calls = []
    for model, condition, story_id, k, path, scene in frames:
        reqs = list(scene.requirements)
        if not reqs:
            continue
        sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        size = batch if batch > 0 else len(reqs)
        for start in range(0, len(reqs), size):
            part = tuple(reqs[start : start + size])
            probes = _probes(scene) if batch == 0 else ()
            colours = held_objects(scene) if batch == 0 else ()
            pairs = order_pairs(scene) if batch == 0 else ()
            st = scene.state
            qs = tuple(question_for(r, st) for r in part)
            qs += tuple(probe_question(kind) for kind in probes)
            qs += tuple(colour_probe_question(k, st.objects[k].color) for k in colours)
            qs += tuple(order_probe(st, a, b) for a, b in pairs)
            people = people_count(scene) if batch == 0 else 0
            qs += (people_question(people),) if people else ()
            single = batch == 1
            system = SYSTEM_PROMPT_SINGLE if single else SYSTEM_PROMPT
            prompt = qs[0].text if single else scene_prompt(qs)
            key = call_key(judge_model, system, prompt, sha)
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
                )
            )
    return calls


def plan_pair_calls(
    sequences: Iterable[tuple[str, str, str, list[tuple[int, str | None]], list[Scene]]],
    judge_model: str,
) -> list[JudgeCall]:
    """One cross-frame call per pair of consecutive frames that both exist:
    ``(model, condition, story_id, [(scene, image_path)], scenes)`` sequences."""
    calls = []
    for model, condition, story_id, images, scenes in sequences:
        paths = dict(images)
        for k in sorted(paths):
            a, b = paths.get(k - 1), paths[k]
            if a is None or b is None:
                continue
            pairs = pair_questions(scenes[k - 2], scenes[k - 1])
            if not pairs:
                continue
            sha = ":".join(hashlib.sha256(Path(x).read_bytes()).hexdigest() for x in (a, b))
            qs = tuple(q for _, q in pairs)
            prompt = scene_prompt(qs)
            calls.append(
                JudgeCall(
                    model,
                    condition,
                    story_id,
                    k,
                    b,
                    sha,
                    tuple(r for r, _ in pairs),
                    qs,
                    SYSTEM_PROMPT_PAIRS,
                    prompt,
                    call_key(judge_model, SYSTEM_PROMPT_PAIRS, prompt, sha),
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
    images = 2 if call.prev_image_path else 1
    tokens_in = images * price.image_tokens + math.ceil((len(call.system) + len(call.prompt)) / 4)
    return price.cost(tokens_in, call.max_tokens)


def _actual_cost(
    reply: JudgeReply, call: JudgeCall, pricing: JudgePricing | None, judge_model: str
) -> float | None:
    price = pricing.price(judge_model) if pricing else None
    if price is None:
        return None
    if reply.input_tokens is None or reply.output_tokens is None:
        return estimate_cost(call, pricing, judge_model)
    return price.cost(reply.input_tokens, reply.output_tokens)


@dataclass(frozen=True)
class CostPlan:
    """What a judge pass would cost: calls in all, already cached, and the estimate."""

    calls: int
    cached: int
    to_make: int
    estimated_usd: float | None
    per_cell: dict[tuple[str, str], int]


def plan_cost(
    calls: Sequence[JudgeCall], transport: VlmTransport, options: JudgeOptions
) -> CostPlan:
    """The dry run: which calls are not cached yet and what they would cost."""
    cache = JudgeCache(options.cache_dir) if options.cache_dir and transport.paid else None
    unique = list({c.key: c for c in calls}.values())
    todo = [c for c in unique if cache is None or cache.lookup(c.key) is None]
    costs = [estimate_cost(c, options.pricing, transport.judge_model) for c in todo]
    total = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    if not transport.paid:
        total = 0.0
    per_cell: dict[tuple[str, str], int] = {}
    for c in todo:
        per_cell[(c.model, c.condition)] = per_cell.get((c.model, c.condition), 0) + 1
    return CostPlan(len(calls), len(calls) - len(todo), len(todo), total, per_cell)


def _request(call: JudgeCall) -> JudgeRequest:
    data = Path(call.image_path).read_bytes()
    first = data
    extra: tuple[bytes, ...] = ()
    if call.prev_image_path is not None:
        first, extra = Path(call.prev_image_path).read_bytes(), (data,)
    return JudgeRequest(
        image=first,
        media_type=media_type(first),
        system=call.system,
        prompt=call.prompt,
        max_tokens=call.max_tokens,
        expected=tuple(q.expect for q in call.questions),
        extra_images=extra,
    )


class CallRecorder(Protocol):
    """Where made calls are recorded: ``begin`` before the request is sent (so a killed run
    still counts a call that may have been billed), ``finish`` after (the ledger)."""

    def begin(self, call: JudgeCall, estimate_usd: float | None) -> int: ...
    def finish(self, row: int, out: CallOutcome) -> None: ...


def execute_calls(
    calls: Sequence[JudgeCall],
    transport: VlmTransport,
    options: JudgeOptions,
    *,
    on_done: Callable[[CallOutcome], None] | None = None,
    recorder: CallRecorder | None = None,
) -> list[CallOutcome]:
    """Make every call (cached ones cost nothing), ``options.concurrency`` at a time.
    ``recorder`` records each call made, before and after it; ``on_done`` runs in the calling
    thread as each call finishes (progress, rows for cache hits). A budget stop lets running
    calls finish, then raises ``BudgetExceeded``."""
    cache = JudgeCache(options.cache_dir) if options.cache_dir and transport.paid else None
    budget = Budget(options.budget_usd if transport.paid else None)
    stop = threading.Event()
    stopped: list[BudgetExceeded] = []
    judge = transport.judge_model

    def one(call: JudgeCall) -> CallOutcome:
        out = CallOutcome(call)
        if cache is not None and (hit := cache.lookup(call.key)) is not None:
            out.reply, out.cache_hit, out.cost_usd = hit, True, 0.0
            return out
        if stop.is_set():
            out.error = "not made: the budget was reached"
            return out
        estimate = estimate_cost(call, options.pricing, judge)
        try:
            held = budget.reserve(estimate)
        except BudgetExceeded as err:
            stop.set()
            stopped.append(err)
            out.error = "not made: the budget was reached"
            return out
        row = recorder.begin(call, estimate) if recorder is not None else None
        t0 = time.perf_counter()
        try:
            reply, out.attempts = call_with_retries(
                lambda: transport.ask(_request(call)), options.retry, sleep=options.sleep,
                rng=jitter_rng(call.key),  # seeded jitter: calls do not retry in lockstep
            )  # fmt: skip
        except AdapterError as err:
            budget.settle(held, 0.0)
            out.error, out.latency_s = err.message, time.perf_counter() - t0
        else:
            out.latency_s = time.perf_counter() - t0
            out.reply = reply
            out.cost_usd = _actual_cost(reply, call, options.pricing, judge)
            budget.settle(held, out.cost_usd)
            if cache is not None:
                cache.put(call.key, judge, reply)
        if recorder is not None and row is not None:
            recorder.finish(row, out)
        return out

    # Identical calls (the same image and questions in two cells) are made once.
    first: dict[str, JudgeCall] = {}
    for c in calls:
        first.setdefault(c.key, c)
    made: dict[str, CallOutcome] = {}
    outcomes: list[CallOutcome] = []
    with ThreadPoolExecutor(max_workers=max(1, options.concurrency)) as pool:
        for out in pool.map(one, first.values()):
            made[out.call.key] = out
            if on_done is not None:
                on_done(out)
    for c in calls:
        base = made[c.key]
        if base.call is c:
            outcomes.append(base)
            continue
        # a repeat: the answer is reused, as a cache hit that costs nothing
        out = CallOutcome(c, base.reply, base.reply is not None, error=base.error)
        out.cost_usd = 0.0 if base.reply is not None else None
        outcomes.append(out)
        if on_done is not None:
            on_done(out)
    if stopped:
        n_made = sum(o.reply is not None and not o.cache_hit for o in outcomes)
        missing = sum(o.reply is None for o in outcomes)
        raise BudgetExceeded(
            f"{stopped[0].message}; {n_made} calls made and cached, {missing} not made "
            "(rerun with a larger --budget: cached calls cost nothing)"
        )
    return outcomes


@dataclass(frozen=True)
class _Probed:
    """What the probes of one call said."""

    missing: set[str]  # characters whose presence check did not pass, fewer people shown
    unrecognised: set[str]  # ... while everyone expected is there (their look drifted)
    seen_any: dict[str, bool]  # object kind -> seen in some colour
    seen_colour: dict[str, bool]  # held object kind -> seen in the story's colour
    left_of: dict[tuple[str, str], bool]  # (a, b) -> a stands left of b


def _knock_on(req: Requirement, p: _Probed) -> str:
    """The failure label of a question that did not pass: its root cause when the judge said
    its subject is not there (as the rule checker labels knock-on failures)."""
    if req.subject in p.missing and req.attribute != "present":
        return "character_missing"
    if req.subject in p.unrecognised:
        return "identity_drift"
    expected = [str(n) for n in req.expected] if isinstance(req.expected, list) else []
    lost = p.missing | p.unrecognised
    if req.attribute == "order" and any(n in lost for n in expected):
        seen = [n for n in expected if n not in lost]
        in_order = all(
            p.left_of.get((a, b), False) for i, a in enumerate(seen) for b in seen[i + 1 :]
        )
        # someone not found is the root cause only when those seen stand in order
        if not in_order:
            return req.taxonomy
        return "character_missing" if any(n in p.missing for n in expected) else "identity_drift"
    if req.subject in p.seen_any and not (req.attribute == "present" and req.expected is False):
        if not p.seen_any[req.subject]:
            return "object_disappeared"
        if req.attribute == "present":  # seen in some colour, not in the story's
            return "object_color_change"
        if req.attribute == "holder" and p.seen_colour.get(req.subject) is False:
            return "object_color_change"
    return req.taxonomy


def outcome_results(out: CallOutcome, judge_model: str) -> list[RequirementResult]:
    """One result per requirement of a finished call (a failed call gives none)."""
    if out.reply is None:
        return []
    call = out.call
    if len(call.questions) == 1 and call.system == SYSTEM_PROMPT_SINGLE:
        answers: list[Answer | None] = [parse_answer(out.reply.text)]
    else:
        answers = parse_batch(out.reply.text, len(call.questions))
    n = len(call.requirements)
    n1 = n + len(call.probes)
    n2 = n1 + len(call.colour_probes)
    seen_any = {kind: a == "YES" for kind, a in zip(call.probes, answers[n:n1], strict=True)}
    verdicts = [verdict_of(a, q.expect) for a, q in zip(answers, call.questions, strict=False)]
    missing = {
        r.subject
        for r, v in zip(call.requirements, verdicts, strict=False)
        if r.attribute == "present" and r.expected is True and r.subject not in seen_any
        and v != "passed"
    }  # fmt: skip
    n3 = n2 + len(call.order_probes)
    everyone = call.people_probe > 0 and answers[n3] == "YES"
    probed = _Probed(
        set() if everyone else missing,
        missing if everyone else set(),
        seen_any,
        {k: a == "YES" for k, a in zip(call.colour_probes, answers[n1:n2], strict=True)},
        {pair: a == "YES" for pair, a in zip(call.order_probes, answers[n2:n3], strict=True)},
    )
    results = []
    for req, answer, v in zip(call.requirements, answers, verdicts, strict=False):
        label = req.taxonomy if v == "passed" else _knock_on(req, probed)
        results.append(
            RequirementResult.of(
                req,
                answer,
                v == "passed",
                label,
                call.evaluator,
                verdict=v,
                judge_model=judge_model,
            )
        )
    return results


def rows_from_outcomes(
    outcomes: Sequence[CallOutcome], judge_model: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Requirement rows and ``vlm_pass_rate`` signal rows of finished calls."""
    req_rows: list[dict[str, Any]] = []
    frames: dict[tuple[str, str, str, str, int], list[bool]] = {}
    for out in outcomes:
        c = out.call
        for r in outcome_results(out, judge_model):
            req_rows.append(
                r.row(model=c.model, condition=c.condition, story_id=c.story_id, scene=c.scene)
            )
            key = (c.evaluator, c.model, c.condition, c.story_id, c.scene)
            frames.setdefault(key, []).append(r.passed)
    sig_rows = [
        {
            "model": m,
            "condition": cond,
            "story_id": s,
            "scene": k,
            "signal": f"{ev}_pass_rate",
            "value": sum(passed) / len(passed),
            "evaluator": ev,
        }
        for (ev, m, cond, s, k), passed in frames.items()
    ]
    return req_rows, sig_rows


def transcript_row(out: CallOutcome, judge_model: str) -> dict[str, Any]:
    """One line of ``judge_calls.jsonl``: what was asked and what came back (replayable;
    the same whether the answer came from the cache, so a release hashes the same; cache
    hits, latency and cost are in the ledger)."""
    c, reply = out.call, out.reply
    return {
        "evaluator": c.evaluator,
        "judge_model": judge_model,
        "model": c.model,
        "condition": c.condition,
        "story_id": c.story_id,
        "scene": c.scene,
        "key": c.key,
        "image_sha256": c.image_sha256,
        "system": c.system,
        "prompt": c.prompt,
        "answer": None if reply is None else reply.text,
        "input_tokens": None if reply is None else reply.input_tokens,
        "output_tokens": None if reply is None else reply.output_tokens,
    }


def failed_calls_error(outcomes: Sequence[CallOutcome]) -> RunError | None:
    """A one-line error when some calls failed (the others are cached), else None."""
    failed = [o for o in outcomes if o.reply is None]
    if not failed:
        return None
    return RunError(
        f"{len(failed)} of {len(outcomes)} judge calls failed (last: {failed[-1].error}); "
        "the answers received are cached: rerun to retry only the failed calls"
    )


class VlmJudge:
    """The ``vlm`` evaluator for library use: ``VlmJudge(transport).evaluate_story(story,
    frames)`` (``vsb evaluate`` runs the same calls for a whole run at once)."""

    name = EVALUATOR_NAME

    def __init__(self, transport: VlmTransport, options: JudgeOptions | None = None) -> None:
        self.transport = transport
        self.options = options or JudgeOptions(cache_dir=None)

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        """Rows for one (model, condition, story); frames whose generation failed get none."""
        todo = [
            (f.model, f.condition, f.story_id, f.scene, f.path, story.scenes[f.scene - 1])
            for f in frames
            if f.path is not None
        ]
        judge = self.transport.judge_model
        calls = plan_calls(todo, judge, self.options.batch)
        outcomes = execute_calls(calls, self.transport, self.options)
        err = failed_calls_error(outcomes)
        if err is not None:
            raise err
        reqs, sigs = rows_from_outcomes(outcomes, judge)
        return EvaluatorOutput(requirements=reqs, signals=sigs)
