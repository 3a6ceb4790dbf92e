"""Verdict and signal rows from the judge's answers, with knock-on failure labels read from
the probes, and the transcript rows of ``judge_calls.jsonl``. A verdict that hangs on an
answer the reply leaves unread (a presence answer, a probe) is ``parse_failure``, never
another question's failure (issue #45).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from vsb.evaluators.rules import RequirementResult, Verdict
from vsb.evaluators.vlm.answers import Answer, verdict_of
from vsb.evaluators.vlm.execute import CallOutcome, call_answers
from vsb.evaluators.vlm.plan import JudgeCall
from vsb.story.models import Requirement


@dataclass(frozen=True)
class _Probed:
    """What the probes of one call said."""

    missing: set[str]  # characters whose presence check did not pass, fewer people shown
    unrecognised: set[str]  # ... while everyone expected is there (their look drifted)
    seen_any: dict[str, bool]  # object kind -> seen in some colour
    seen_colour: dict[str, bool]  # held object kind -> seen in the story's colour
    left_of: dict[tuple[str, str], bool]  # (a, b) -> a stands left of b
    lost_label: dict[str, str]  # root cause of an unrecognised person (every cue drifted)
    located: set[str]  # unrecognised people a question about them was answered of


def _knock_on(req: Requirement, p: _Probed, verdict: str, unsure: str = "") -> str:
    """The failure label of a question that did not pass: its root cause when the judge said
    its subject is not there (as the rule checker labels knock-on failures). A person not
    found by their presence cues while everyone is there is *unrecognised*: their presence
    fails as the drift of those cues (``lost_label``), and so does a question about them
    the judge could not answer (UNSURE: it could not tell who is meant); a question it did
    answer was answered about the person their other cues found, and keeps its label. A
    question about a person that the judge could not tell whom it means (UNSURE) fails as
    the drift of its locator's cues (``unsure``: ``questions.unsure_label``)."""
    if req.subject in p.missing and req.attribute != "present":
        return "character_missing"
    if req.subject in p.unrecognised and req.attribute == "present":
        return p.lost_label.get(req.subject, "identity_drift")
    holder = str(req.expected) if req.attribute == "holder" else ""
    if holder in p.unrecognised and verdict == "unsure":  # cannot tell whom the holder is
        return p.lost_label.get(holder, "identity_drift")
    expected = [str(n) for n in req.expected] if isinstance(req.expected, list) else []
    lost = p.missing | (p.unrecognised - p.located)
    # an order or holder check the judge could not place (UNSURE) fails as the drift of its
    # locators, unless someone it names was not found (then as below)
    if verdict == "unsure" and unsure and not lost & {holder, *expected}:
        return unsure
    if req.subject in p.unrecognised:
        return req.taxonomy
    if req.attribute == "order" and any(n in lost for n in expected):
        seen = [n for n in expected if n not in lost]
        in_order = all(
            p.left_of.get((a, b), False) for i, a in enumerate(seen) for b in seen[i + 1 :]
        )
        # someone not found is the root cause only when those seen stand in order
        if not in_order:
            return req.taxonomy
        if any(n in p.missing for n in expected):
            return "character_missing"
        return next(p.lost_label.get(n, "identity_drift") for n in expected if n in lost)
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
    return [
        RequirementResult.of(
            req,
            answer,
            v == "passed",
            label,
            out.call.evaluator,
            verdict=v,
            judge_model=judge_model,
        )
        for req, answer, v, label in _judged(out)
    ]


Judged = tuple[Requirement, Any, Verdict, str]
#: Unread answers of the people probes (presence, counts) whose readings are all tried; a
#: reply that leaves more unread has every verdict of its call unreadable.
_MAX_UNREAD = 6
#: What an unread answer may have said, as the other verdicts read it (UNSURE reads as NO).
_READINGS: tuple[Answer, ...] = ("YES", "NO")


def _judged(out: CallOutcome) -> list[Judged]:
    """(requirement, answer, verdict, failure label) per requirement of a finished call. A
    verdict or label that an unread answer decides (a presence answer or a probe: whether
    someone is there, how many people, an object of any colour, who stands left) is
    ``parse_failure`` with its own label: every reading of the unread answers is tried,
    and a row that is not the same under all of them cannot be read."""
    if out.reply is None:
        return []
    call = out.call
    answers = call_answers(call, out.reply)
    verdicts = [verdict_of(a, q.expect) for a, q in zip(answers, call.questions, strict=False)]
    people, groups = _unread_feeds(call, answers)
    if not people and not groups:
        return _reading(call, answers, verdicts, answers)
    if len(people) > _MAX_UNREAD:
        return [
            (req, answer, "parse_failure", req.taxonomy)
            for req, answer in zip(call.requirements, answers, strict=False)
        ]
    readings = []
    for said in product(_READINGS, repeat=len(people) + len(groups)):
        fed = list(answers)
        for i, a in zip(people, said, strict=False):
            fed[i] = a
        for group, a in zip(groups, said[len(people) :], strict=True):
            # a check reads one object's probes, or every order probe in an all(): one
            # word for the whole group reaches every outcome a check can have
            for i in group:
                fed[i] = a
        readings.append(_reading(call, answers, verdicts, fed))
    return [
        first
        if all(r[k][2:] == first[2:] for r in readings[1:])
        else (first[0], first[1], "parse_failure", first[0].taxonomy)
        for k, first in enumerate(readings[0])
    ]


def _unread_feeds(
    call: JudgeCall, answers: Sequence[Answer | None]
) -> tuple[list[int], list[list[int]]]:
    """The unread answers other verdicts are read from: those about people (presence,
    counts), and those of the object, colour and order probes in one group each."""
    n = len(call.requirements)
    n1 = n + len(call.probes)
    n2 = n1 + len(call.colour_probes)
    n3 = n2 + len(call.order_probes)
    people = [
        i
        for i, r in enumerate(call.requirements)
        if answers[i] is None and r.attribute == "present"
        and ((r.expected is True and r.subject not in call.probes) or r.subject in call.absent)
    ]  # fmt: skip
    people += [i for i in range(n3, len(answers)) if answers[i] is None]
    spans = ((n, n1), (n1, n2), (n2, n3))
    groups = [[i for i in range(a, b) if answers[i] is None] for a, b in spans]
    return people, [g for g in groups if g]


def _reading(
    call: JudgeCall,
    answers: Sequence[Answer | None],
    verdicts: Sequence[Verdict],
    fed: Sequence[Answer | None],
) -> list[Judged]:
    """The rows of a call's own ``answers`` and ``verdicts``, their knock-on labels read
    from the probes and presence answers in ``fed``."""
    n = len(call.requirements)
    n1 = n + len(call.probes)
    n2 = n1 + len(call.colour_probes)
    fed_v = [verdict_of(a, q.expect) for a, q in zip(fed, call.questions, strict=False)]
    seen_any = {kind: a == "YES" for kind, a in zip(call.probes, fed[n:n1], strict=True)}
    missing = {
        r.subject
        for r, v in zip(call.requirements, fed_v, strict=False)
        if r.attribute == "present" and r.expected is True and r.subject not in seen_any
        and v != "passed"
    }  # fmt: skip
    n3 = n2 + len(call.order_probes)
    seen_absent = sum(  # people seen who should not be there
        r.attribute == "present" and r.subject in call.absent and v == "failed"
        for r, v in zip(call.requirements, fed_v, strict=False)
    )
    # everyone expected is there when the picture shows as many people as expected, plus
    # those seen who should not be there (the count asked last: N, N+1, …)
    counts = fed[n3 : n3 + 1 + len(call.absent)] if call.people_probe > 0 else []
    everyone = seen_absent < len(counts) and counts[seen_absent] == "YES"
    located = {  # unrecognised, yet a question about them was answered
        r.subject
        for r, v in zip(call.requirements, verdicts, strict=False)
        if everyone and r.subject in missing and r.attribute != "present"
        and v in ("passed", "failed")
    }  # fmt: skip
    probed = _Probed(
        set() if everyone else missing,
        missing if everyone else set(),
        seen_any,
        {k: a == "YES" for k, a in zip(call.colour_probes, fed[n1:n2], strict=True)},
        {pair: a == "YES" for pair, a in zip(call.order_probes, fed[n2:n3], strict=True)},
        dict(call.lost_labels),
        located,
    )
    judged: list[Judged] = []
    unsure = call.unsure_labels or ("",) * n
    for req, answer, v, why in zip(call.requirements, answers, verdicts, unsure, strict=False):
        if v == "passed" and req.subject in probed.missing and req.attribute != "present":
            v = "failed"  # every fact of a missing person fails with them (truth.py)
        label = req.taxonomy if v == "passed" else _knock_on(req, probed, v, why)
        judged.append((req, answer, v, label))
    return judged


def rows_from_outcomes(
    outcomes: Sequence[CallOutcome], judge_model: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Requirement rows and ``vlm_pass_rate`` signal rows of finished calls: each row is
    ``outcome_results``' ``RequirementResult.row``, written out directly (its JSON texts
    made once per requirement and per answer)."""
    req_rows: list[dict[str, Any]] = []
    frames: dict[tuple[str, str, str, str, int], list[bool]] = {}
    expected: dict[int, str] = {}  # id(requirement) -> its expected value as JSON text
    observed: dict[Any, str] = {}  # answer -> JSON text
    for out in outcomes:
        c = out.call
        key = (c.evaluator, c.model, c.condition, c.story_id, c.scene)
        for req, answer, v, label in _judged(out):
            if (want := expected.get(id(req))) is None:
                want = expected[id(req)] = json.dumps(req.expected, sort_keys=True)
            if (seen := observed.get(answer)) is None:
                seen = observed[answer] = json.dumps(answer, sort_keys=True)
            passed = v == "passed"
            req_rows.append({
                "model": c.model, "condition": c.condition, "story_id": c.story_id,
                "scene": c.scene, "req_id": req.id, "dimension": req.dimension,
                "taxonomy": req.taxonomy, "source": req.source, "subject": req.subject,
                "attribute": req.attribute, "expected": want, "observed": seen,
                "passed": passed, "failure": "" if passed else label,
                "evaluator": c.evaluator, "verdict": v, "judge_model": judge_model,
            })  # fmt: skip
            frames.setdefault(key, []).append(passed)
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
