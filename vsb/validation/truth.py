"""Requirement-level truth from the sealed oracle, and how often an evaluator agrees with it.

A requirement of an image is true unless the oracle holds a visual fault on its subject and
attribute, or its subject is missing (a ``present`` fault: every other fact of a missing
character or object fails with it), or — for a holder — the holder is missing, or — for the
left-to-right order — anyone in it is missing.

A recoloured object (oracle attribute ``color``) is *there, in another colour*: its
``present`` (expected True) and ``holder`` facts are false (the story's object, in the
story's colour, is not seen / not held), while its ``state`` and ``count`` are read from the
object as drawn and stay true unless faulted themselves. This is the rule checker's reading
(``vsb.evaluators.rules``: an object of the kind in another colour fails presence and
holder as ``object_color_change`` and gives its state and count) and the VLM questions'
(state and count are asked without the colour); docs/CONTRACTS.md states it too.

This is what a perfect reader of the picture would answer, so an evaluator's *error rate
against the oracle* (the share of its passed / failed verdicts that disagree with the
truth) estimates how often its answers are wrong,
whatever labels it gives: a judge that flips each answer with probability p shows p.
``unsure`` and ``parse_failure`` verdicts are not answers; they have rates of their own.

Cross-frame facts (``same_person``, ``same_clothes``, ``same_place`` of a frame and the one
before it) compare what was *rendered* in the two frames (``PairTruth``: the story's state
with the oracle's rendered values laid over it): the fact holds when the two renderings
are alike exactly when the story says they should be.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from vsb.scores.inputs import RequirementRows
from vsb.story.models import Story
from vsb.validation.matching import Fault, Frame
from vsb.validation.metrics import wilson_interval
from vsb.validation.models import OracleAgreement

FaultSet = set[tuple[str, str]]
"""(subject, normalised attribute) of the visual faults of one image; a recoloured object
is ``(kind, "color")``."""

RECOLOUR = "color"
"""The fault-set attribute of a recoloured object."""


def fault_sets(faults: Iterable[Fault]) -> dict[Frame, FaultSet]:
    """Visual faults grouped by image."""
    out: dict[Frame, FaultSet] = defaultdict(set)
    for f in faults:
        if f.visual:
            out[f.frame].add((f.subject, RECOLOUR if f.recolour else f.attribute))
    return out


def requirement_true(subject: str, attribute: str, expected: Any, faults: FaultSet) -> bool:
    """Whether the rendered image satisfies the requirement (see the module docstring)."""
    if (subject, attribute) in faults:
        return False
    if (subject, RECOLOUR) in faults and (
        attribute == "holder" or (attribute == "present" and expected is not False)
    ):
        return False
    if subject == "scene":
        names = expected if attribute == "order" and isinstance(expected, list) else []
        return not any((str(n), "present") in faults for n in names)
    if attribute != "present" and (subject, "present") in faults:
        return False
    return not (attribute == "holder" and (str(expected), "present") in faults)


PAIR_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "same_person": ("skin", "hair_color", "hair_style"),
    "same_clothes": ("top", "trousers", "accessory"),
    "same_place": ("location",),
}


class PairTruth:
    """What each frame rendered: the story's expected state, overridden by the oracle's
    rendered values (``faults`` are raw oracle rows: subject, attribute, rendered_value)."""

    def __init__(self, stories: Iterable[Story], faults: Iterable[dict[str, Any]]) -> None:
        self.stories = {s.id: s for s in stories}
        self.over: dict[Frame, dict[tuple[str, str], Any]] = defaultdict(dict)
        for f in faults:
            frame = (str(f["model"]), str(f["condition"]), str(f["story_id"]), int(f["scene"]))
            if not f.get("visual", True):
                continue
            value = f.get("rendered_value")
            over = self.over[frame]
            if f["attribute"] == "hair" and isinstance(value, list) and len(value) == 2:
                # one fact, two rendered attributes (what PAIR_ATTRIBUTES compares)
                over[(str(f["subject"]), "hair_color")] = value[0]
                over[(str(f["subject"]), "hair_style")] = value[1]
            over[(str(f["subject"]), str(f["attribute"]))] = value

    def rendered(self, frame: Frame, subject: str, attribute: str) -> Any:
        """The value frame rendered for (subject, attribute)."""
        over = self.over.get(frame, {})
        if (subject, attribute) in over:
            return over[(subject, attribute)]
        state = self.stories[frame[2]].scenes[frame[3] - 1].state
        if subject == "scene":
            return getattr(state, attribute)
        return getattr(state.characters[subject], attribute)

    def alike(self, frame: Frame, subject: str, attribute: str) -> bool:
        """Whether ``frame`` and the frame before it rendered the pair fact alike (a
        character missing from either is never alike)."""
        prev = (*frame[:3], frame[3] - 1)
        if subject != "scene" and not all(
            self.rendered(f, subject, "present") for f in (prev, frame)
        ):
            return False
        return all(
            self.rendered(prev, subject, a) == self.rendered(frame, subject, a)
            for a in PAIR_ATTRIBUTES[attribute]
        )


def oracle_agreement(
    rows: RequirementRows, faults: Iterable[Fault], pairs: PairTruth | None = None
) -> OracleAgreement:
    """How often ``rows``' passed/failed verdicts agree with the oracle's truth (cross-frame
    rows need ``pairs``; without it they are left out)."""
    sets = fault_sets(faults)
    parsed: dict[str, Any] = {}  # each distinct expected value decoded once
    n = wrong = false_pass = false_fail = 0
    for i, verdict in enumerate(rows.verdict):
        if verdict not in ("passed", "failed"):
            continue
        frame = (rows.model[i], rows.condition[i], rows.story_id[i], rows.scene[i])
        text = rows.expected[i]
        if text in parsed:
            expected = parsed[text]
        else:
            try:
                expected = json.loads(text)
            except ValueError:
                expected = text
            parsed[text] = expected
        if rows.attribute[i] in PAIR_ATTRIBUTES:
            if pairs is None:
                continue
            alike = pairs.alike(frame, rows.subject[i], rows.attribute[i])
            truth = alike == bool(expected)
        else:
            truth = requirement_true(
                rows.subject[i], rows.attribute[i], expected, sets.get(frame, set())
            )
        n += 1
        if truth != (verdict == "passed"):
            wrong += 1
            false_pass += verdict == "passed"
            false_fail += verdict == "failed"
    lo, hi = wilson_interval(wrong, n)
    return OracleAgreement(
        n_answers=n,
        n_wrong=wrong,
        n_false_pass=false_pass,
        n_false_fail=false_fail,
        error_rate=wrong / n if n else None,
        error_rate_ci_low=lo,
        error_rate_ci_high=hi,
    )
