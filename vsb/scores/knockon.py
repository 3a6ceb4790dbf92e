"""Knock-on failures of a missing subject (the input of conditional coherence).

A subject (character or object) is *missing* from an image when that image has a failed
check on it whose failure label says it was not found (``MISSING_LABELS``: the rule checker
labels every check of a person it could not match ``character_missing``, and every check of
an object it could not find ``object_disappeared``, the root-cause label of a knock-on).

Strict coherence counts every remembered attribute of a missing subject as a failure, so one
omitted person fails their skin, hair, clothes and pose at once. Conditional coherence leaves
those knock-ons out: a requirement whose subject is missing is excluded, except the subject's
own ``present``/``holder`` check (``ROOT_ATTRIBUTES``), which stays as the one failure of
the omission. A scene-level check (subject ``"scene"``, e.g. the left-to-right ``order``)
that failed with a missing label is a knock-on of a missing person and is excluded too.
"""

from __future__ import annotations

from vsb.scores.inputs import RequirementRows

#: Failure labels meaning "the subject was not found in the image".
MISSING_LABELS: frozenset[str] = frozenset({"character_missing", "object_disappeared"})
#: Attributes that are the missing subject's own check (kept: the omission fails once).
ROOT_ATTRIBUTES: frozenset[str] = frozenset({"present", "holder"})
#: The subject of scene-level requirements (location, weather, time, order).
SCENE_SUBJECT = "scene"

_Image = tuple[str, str, str, str, int]


def missing_subjects(rows: RequirementRows) -> set[tuple[_Image, str]]:
    """(image, subject) pairs where the subject was not found (scene subjects never are)."""
    cols = (rows.evaluator, rows.model, rows.condition, rows.story_id, rows.scene)
    return {
        ((e, m, c, st, k), s)
        for e, m, c, st, k, s, v, f in zip(
            *cols, rows.subject, rows.verdict, rows.failure, strict=True
        )
        if v == "failed" and f in MISSING_LABELS and s != SCENE_SUBJECT
    }


def knock_on_mask(rows: RequirementRows) -> list[bool]:
    """Per row: True when conditional coherence leaves it out (a knock-on of an omission)."""
    gone = [
        v == "failed" and f in MISSING_LABELS
        for v, f in zip(rows.verdict, rows.failure, strict=True)
    ]
    missing = missing_subjects(rows) if any(gone) else set()
    if not missing:  # only scene-level checks can be knock-ons
        return [g and s == SCENE_SUBJECT for g, s in zip(gone, rows.subject, strict=True)]
    images = zip(rows.evaluator, rows.model, rows.condition, rows.story_id, rows.scene, strict=True)
    return [
        g if s == SCENE_SUBJECT else ((img, s) in missing and a not in ROOT_ATTRIBUTES)
        for img, s, a, g in zip(images, rows.subject, rows.attribute, gone, strict=True)
    ]
