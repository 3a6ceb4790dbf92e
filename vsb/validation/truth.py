"""Requirement-level truth from the sealed oracle, and how often an evaluator agrees with it.

A requirement of an image is true unless the oracle holds a visual fault on its subject and
attribute, or its subject is missing (a ``present`` fault: every other fact of a missing
character or object fails with it), or — for a holder — the holder is missing, or — for the
left-to-right order — anyone in it is missing. This is what a perfect reader of the picture
would answer, so an evaluator's *error rate against the oracle* (the share of its passed /
failed verdicts that disagree with the truth) estimates how often its answers are wrong,
whatever labels it gives: a judge that flips each answer with probability p shows p.
``unsure`` and ``parse_failure`` verdicts are not answers; they have rates of their own.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from vsb.scores.inputs import RequirementRows
from vsb.validation.matching import Fault, Frame
from vsb.validation.metrics import wilson_interval
from vsb.validation.models import OracleAgreement

FaultSet = set[tuple[str, str]]
"""(subject, normalised attribute) of the visual faults of one image."""


def fault_sets(faults: Iterable[Fault]) -> dict[Frame, FaultSet]:
    """Visual faults grouped by image."""
    out: dict[Frame, FaultSet] = defaultdict(set)
    for f in faults:
        if f.visual:
            out[f.frame].add((f.subject, f.attribute))
    return out


def requirement_true(subject: str, attribute: str, expected: Any, faults: FaultSet) -> bool:
    """Whether the rendered image satisfies the requirement (see the module docstring)."""
    if (subject, attribute) in faults:
        return False
    if subject == "scene":
        names = expected if attribute == "order" and isinstance(expected, list) else []
        return not any((str(n), "present") in faults for n in names)
    if attribute != "present" and (subject, "present") in faults:
        return False
    return not (attribute == "holder" and (str(expected), "present") in faults)


def oracle_agreement(rows: RequirementRows, faults: Iterable[Fault]) -> OracleAgreement:
    """How often ``rows``' passed/failed verdicts agree with the oracle's truth."""
    sets = fault_sets(faults)
    n = wrong = false_pass = false_fail = 0
    for i, verdict in enumerate(rows.verdict):
        if verdict not in ("passed", "failed"):
            continue
        frame = (rows.model[i], rows.condition[i], rows.story_id[i], rows.scene[i])
        try:
            expected = json.loads(rows.expected[i])
        except ValueError:
            expected = rows.expected[i]
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
