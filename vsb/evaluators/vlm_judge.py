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
(vsb.calls), a budget checked before each call, and a dry run (``plan_cost``). The cache
key covers the judge's endpoint (its normalised base URL), and only replies whose every answer
parses are cached. ``UNREACHABLE_AFTER`` connection failures in a row (no server answered)
stop the pass with ``JudgeUnreachable``; error answers of a live server are retried.
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

from vsb.calls import (
    Budget,
    BudgetExceeded,
    RetryPolicy,
    call_with_retries,
    jitter_rng,
)
from vsb.errors import AdapterError, RunError
from vsb.evaluators.judge_store import JudgeCache, JudgePricing, call_key
from vsb.evaluators.registry import EvaluatorOutput, Frame
from vsb.evaluators.rules import RequirementResult, Verdict
from vsb.evaluators.vlm_questions import Question, order_probe, pair_questions, question_for
from vsb.evaluators.vlm_transports import (
    JudgeReply,
    JudgeRequest,
    Unreachable,
    VlmTransport,
    endpoint_of,
)
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

#: Connection failures in a row that make the judge's endpoint count as down.
UNREACHABLE_AFTER = 5

_WORD = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+)?(?:answer|verdict)(?:\s+is)?\s*[:\-]?\s*|[^:\n]{0,40}:\s*)?"
    r"(yes|no|unsure)[\s.!]*$"
)
#: A line that starts with an answer word (``Yes, the cup is…``): an answer, parsable or not.
_LEAD = re.compile(r"^(?:\d{1,4}\s*[:.)\-]\s*)?(yes|no|unsure)\b")
_NUMBERED = re.compile(r"^\s*(?:q(?:uestion)?\s*)?(\d{1,4})\s*[:.)\-]\s*(.*)$")
_STRIP = str.maketrans("", "", "*_`\"'[]()<>#")
_STRIP_BATCH = str.maketrans("", "", "*_`\"'[]<>#")


def _word(text: str) -> Answer | None:
    m = _WORD.match(text.strip())
    if not m:
        return None
    return "YES" if m.group(1) == "yes" else "NO" if m.group(1) == "no" else "UNSURE"


def parse_answer(text: str) -> Answer | None:
    """YES, NO or UNSURE from a one-question reply: the reply must answer the question once.
    Its last line is the word, optionally after a short label ("Answer:", or the number 1);
    lines before it may explain, but none may answer too (``2: NO``, ``Yes, …``). Case,
    markdown and final punctuation are ignored. Anything else is None (a parse failure):
    a reply with several answers, or a numbered answer to another question, answers
    nothing."""
    cleaned = text.translate(_STRIP).strip().lower()
    lines = [ln.strip() for ln in cleaned.splitlines() if ln.strip()]
    if not lines:
        return None
    answers = [_word(ln) for ln in lines]
    mentions = sum(
        a is not None or bool(_LEAD.match(ln)) for ln, a in zip(lines, answers, strict=True)
    )
    if answers[-1] is None or mentions != 1:
        return None
    numbered = _NUMBERED.match(lines[-1])
    if numbered and int(numbered.group(1)) != 1:
        return None  # labelled as the answer to a question that was not asked
    return answers[-1]


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
    #: Connection failures in a row (no server accepted a connection, no answer came in
    #: between) after which the pass stops with ``JudgeUnreachable``.
    unreachable_after: int = UNREACHABLE_AFTER


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
    endpoint: str | None = None,
) -> list[JudgeCall]:
    """The calls for ``(model, condition, story_id, scene, image_path, scene)`` frames: one
    per scene (with the object probes) unless ``batch`` caps the questions per call;
    ``endpoint`` (the transport's) is part of every key."""
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
                )
            )
    return calls


def plan_pair_calls(
    sequences: Iterable[tuple[str, str, str, list[tuple[int, str | None]], list[Scene]]],
    judge_model: str,
    endpoint: str | None = None,
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
    """What a judge pass would cost: calls in all, already cached, repeats of another call
    of the same pass (the same image and questions in two cells: sent once), to make, and
    the estimate. ``calls == cached + duplicates + to_make``."""

    calls: int
    cached: int
    to_make: int
    estimated_usd: float | None
    per_cell: dict[tuple[str, str], int]
    duplicates: int = 0


def _cached(cache: JudgeCache | None, call: JudgeCall) -> JudgeReply | None:
    """The cached reply of a call, if one parses (an unparsable one is asked again)."""
    if cache is None:
        return None
    hit = cache.lookup(call.key)
    return hit if hit is not None and unparsed(call, hit) == 0 else None


def plan_cost(
    calls: Sequence[JudgeCall], transport: VlmTransport, options: JudgeOptions
) -> CostPlan:
    """The dry run: which calls are not cached yet and what they would cost."""
    cache = JudgeCache(options.cache_dir) if options.cache_dir and transport.paid else None
    unique = list({c.key: c for c in calls}.values())
    todo = [c for c in unique if _cached(cache, c) is None]
    costs = [estimate_cost(c, options.pricing, transport.judge_model) for c in todo]
    total = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    if not transport.paid:
        total = 0.0
    per_cell: dict[tuple[str, str], int] = {}
    for c in todo:
        per_cell[(c.model, c.condition)] = per_cell.get((c.model, c.condition), 0) + 1
    dupes = len(calls) - len(unique)
    return CostPlan(len(calls), len(unique) - len(todo), len(todo), total, per_cell, dupes)


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


class JudgeUnreachable(AdapterError):
    """No server answered at the judge's endpoint: several connections in a row failed."""


class _Breaker:
    """Counts connection failures in a row across the calls of a pass (any answer from the
    server resets it); at ``limit`` the endpoint counts as down."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.in_a_row = 0
        self.tripped: Unreachable | None = None
        self._lock = threading.Lock()

    def guard(self, ask: Callable[[], JudgeReply]) -> Callable[[], JudgeReply]:
        def guarded() -> JudgeReply:
            if self.tripped is not None:
                raise JudgeUnreachable(self.tripped.message)
            try:
                reply = ask()
            except Unreachable as err:
                with self._lock:
                    self.in_a_row += 1
                    if self.in_a_row >= self.limit and self.tripped is None:
                        self.tripped = err
                if self.tripped is not None:
                    raise JudgeUnreachable(err.message) from None
                raise
            except AdapterError:  # the server answered (429, 5xx…): it is there
                with self._lock:
                    self.in_a_row = 0
                raise
            with self._lock:
                self.in_a_row = 0
            return reply

        return guarded


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
    thread as each call finishes (progress, rows for cache hits). Only replies that parse are
    cached (a cached reply that does not parse is asked again). A budget stop lets running
    calls finish, then raises ``BudgetExceeded`` counting what they spent; connection
    failures in a row (``options.unreachable_after``, no answer in between) stop the pass
    the same way with ``JudgeUnreachable`` naming the endpoint."""
    cache = JudgeCache(options.cache_dir) if options.cache_dir and transport.paid else None
    budget = Budget(options.budget_usd if transport.paid else None)
    breaker = _Breaker(options.unreachable_after)
    stop = threading.Event()
    stopped: list[BudgetExceeded] = []
    judge = transport.judge_model
    price = options.pricing.price(judge) if options.pricing else None

    def one(call: JudgeCall) -> CallOutcome:
        out = CallOutcome(call)
        if (hit := _cached(cache, call)) is not None:
            out.reply, out.cache_hit, out.cost_usd = hit, True, 0.0
            return out
        if stop.is_set():
            out.error = "not made: the pass was stopped"
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
                breaker.guard(lambda: transport.ask(_request(call))), options.retry,
                sleep=options.sleep,
                rng=jitter_rng(call.key),  # seeded jitter: calls do not retry in lockstep
            )  # fmt: skip
        except AdapterError as err:
            if isinstance(err, JudgeUnreachable):
                stop.set()
            # An error answer or a request never accepted is not billed: a known price
            # makes it cost 0; one that may have been billed (a timeout) its estimate.
            billed = bool(getattr(err.__cause__, "billed", False))
            out.cost_usd = estimate if billed else (0.0 if price is not None else None)
            budget.settle(held, out.cost_usd)
            out.error, out.latency_s = err.message, time.perf_counter() - t0
        else:
            out.latency_s = time.perf_counter() - t0
            out.reply = reply
            out.cost_usd = _actual_cost(reply, call, options.pricing, judge)
            budget.settle(held, out.cost_usd)
            if cache is not None and unparsed(call, reply) == 0:
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
    n_made = sum(o.reply is not None and not o.cache_hit for o in outcomes)
    missing = sum(o.reply is None for o in outcomes)
    if breaker.tripped is not None:
        raise JudgeUnreachable(
            f"no judge server answered at {breaker.tripped.endpoint} "
            f"({breaker.in_a_row} connections in a row failed: {_cause(breaker.tripped)}); "
            f"is it running, and is --base-url right? {n_made} answers received are cached"
        )
    if stopped:
        # Counted once the calls in flight at the stop have finished and settled.
        first_stop = stopped[0].message
        head = (
            first_stop
            if budget.limit is None or "unknown price" in first_stop
            else f"stopped before a call that could exceed --budget {budget.limit:g} USD"
        )
        raise BudgetExceeded(
            f"{head}; spent {budget.spent:.4f} USD on {n_made} calls made and cached, "
            f"{missing} not made (rerun with a larger --budget: cached calls cost nothing)"
        )
    return outcomes


def _cause(err: Unreachable) -> str:
    """The transport's reason, without the URL already named (``…failed: REASON``)."""
    return err.message.rsplit(" failed: ", 1)[-1]


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


def call_answers(call: JudgeCall, reply: JudgeReply) -> list[Answer | None]:
    """The parsed answer to each question of a call (None: a parse failure)."""
    if len(call.questions) == 1 and call.system == SYSTEM_PROMPT_SINGLE:
        return [parse_answer(reply.text)]
    return parse_batch(reply.text, len(call.questions))


def unparsed(call: JudgeCall, reply: JudgeReply) -> int:
    """How many of a call's questions the reply leaves without a parsable answer."""
    return sum(a is None for a in call_answers(call, reply))


def outcome_results(out: CallOutcome, judge_model: str) -> list[RequirementResult]:
    """One result per requirement of a finished call (a failed call gives none)."""
    if out.reply is None:
        return []
    call = out.call
    answers = call_answers(call, out.reply)
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


def transcript_row(
    out: CallOutcome, judge_model: str, endpoint: str | None = None
) -> dict[str, Any]:
    """One line of ``judge_calls.jsonl``: what was asked and what came back (replayable;
    the same whether the answer came from the cache, so a release hashes the same; cache
    hits, latency and cost are in the ledger). ``endpoint``: the judge's normalised base
    URL, written when it has one."""
    c, reply = out.call, out.reply
    return {
        "evaluator": c.evaluator,
        "judge_model": judge_model,
        **({"endpoint": endpoint} if endpoint is not None else {}),
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
        endpoint = endpoint_of(self.transport)
        calls = plan_calls(todo, judge, self.options.batch, endpoint)
        outcomes = execute_calls(calls, self.transport, self.options)
        err = failed_calls_error(outcomes)
        if err is not None:
            raise err
        reqs, sigs = rows_from_outcomes(outcomes, judge)
        return EvaluatorOutput(requirements=reqs, signals=sigs)
