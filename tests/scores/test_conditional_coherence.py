"""Conditional coherence (issue #10 item 13): knock-ons of a missing subject are left out,
the missing subject's own present/holder check still fails once."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from score_synth import req_row

from vsb.scores.compute import score_run
from vsb.scores.inputs import RequirementRows
from vsb.scores.knockon import knock_on_mask
from vsb.scores.stats.bootstrap import Resampling
from vsb.scores.table import COHERENCE, CONDITIONAL_COHERENCE, build_story_table


def _r(
    subject: str,
    attribute: str,
    dimension: str,
    passed: bool,
    failure: str = "",
    *,
    source: str = "memory",
    scene: int = 2,
    **kw: Any,
) -> dict[str, Any]:
    return req_row(
        "m", "c", "s1", scene, dimension, source, passed,
        subject=subject, attribute=attribute, failure=failure or None, **kw,
    )  # fmt: skip


def _image() -> list[dict[str, Any]]:
    """One image: Ana omitted, the ball gone, the cup in another colour, Bo found."""
    return [
        _r("Ana", "present", "adherence", False, "character_missing", source="prompt"),
        _r("Ana", "skin", "identity", False, "character_missing"),  # knock-on
        _r("Ana", "hair", "identity", False, "character_missing"),  # knock-on
        _r("Ana", "top", "clothing", False, "character_missing"),  # knock-on
        _r("Bo", "top", "clothing", True),
        _r("Bo", "pose", "action", False, "pose_mismatch"),
        _r("scene", "order", "spatial", False, "character_missing"),  # knock-on (Ana)
        _r("scene", "location", "environment", True),
        _r("ball", "holder", "spatial", False, "object_disappeared"),  # root: stays
        _r("ball", "state", "object_state", False, "object_disappeared"),  # knock-on
        _r("cup", "present", "object_persistence", False, "object_color_change"),
        _r("cup", "state", "object_state", True),  # the cup was found (another colour)
    ]


def _rows(rows: list[dict[str, Any]]) -> RequirementRows:
    out = RequirementRows()
    for r in rows:
        out.append(r)
    return out


def test_knock_on_mask_marks_only_knock_ons() -> None:
    mask = knock_on_mask(_rows(_image()))
    names = [f"{r['subject']}.{r['attribute']}" for r, k in zip(_image(), mask, strict=True) if k]
    assert names == ["Ana.skin", "Ana.hair", "Ana.top", "scene.order", "ball.state"]


def test_strict_and_conditional_coherence_known_answers() -> None:
    t = build_story_table(_rows(_image()))
    v = t.values[0, 0, 0]
    assert v[COHERENCE] == 3 / 11  # every memory check
    # left out: Ana's skin/hair/top, the order, the ball's state -> Bo top P, Bo pose F,
    # location P, ball holder F (the omission fails once), cup present F, cup state P
    assert v[CONDITIONAL_COHERENCE] == 3 / 6


UNSURE_PROMPT_4: dict[str, Any] = {"source": "prompt", "scene": 4, "verdict": "unsure"}


def test_missing_is_per_image_and_needs_a_failed_verdict() -> None:
    rows = [
        # scene 2: Ana missing -> her top is a knock-on
        _r("Ana", "present", "adherence", False, "character_missing", source="prompt"),
        _r("Ana", "top", "clothing", False, "character_missing"),
        # scene 3: Ana found, her top wrong -> a real memory failure
        _r("Ana", "present", "adherence", True, source="prompt", scene=3),
        _r("Ana", "top", "clothing", False, "clothing_change", scene=3),
        _r("Ana", "hair", "identity", True, scene=3),
        # scene 4: a judge unsure whether Bo is there: not "not found"
        _r("Bo", "present", "adherence", False, "character_missing", **UNSURE_PROMPT_4),
        _r("Bo", "top", "clothing", True, scene=4, verdict="passed"),
    ]
    assert knock_on_mask(_rows(rows)) == [False, True, False, False, False, False, False]
    v = build_story_table(_rows(rows)).values[0, 0, 0]
    assert v[COHERENCE] == 2 / 4 and v[CONDITIONAL_COHERENCE] == 2 / 3


def test_not_applicable_rows_never_mark_a_subject_missing() -> None:
    rows = [
        _r("Ana", "present", "adherence", False, "character_missing", verdict="not_applicable"),
        _r("Ana", "top", "clothing", True),
    ]
    v = build_story_table(_rows(rows)).values[0, 0, 0]
    assert v[COHERENCE] == 1.0 and v[CONDITIONAL_COHERENCE] == 1.0


def test_conditional_coherence_in_the_report(make_run: Callable[..., Path]) -> None:
    rep = score_run(make_run(_image()), settings=Resampling(n_resamples=50, n_draws=20))
    (row,) = rep.scores
    assert row.coherence is not None and row.coherence.score == 3 / 11
    assert row.conditional_coherence is not None and row.conditional_coherence.score == 0.5
    (story,) = rep.stories
    assert story.conditional_coherence == 0.5
    # a run without memory checks has neither figure
    prompt_only = [r for r in _image() if r["source"] == "prompt"]
    rep = score_run(
        make_run(prompt_only, name="p"), settings=Resampling(n_resamples=50, n_draws=20)
    )
    assert rep.scores[0].coherence is None and rep.scores[0].conditional_coherence is None
    assert rep.stories[0].conditional_coherence is None
    assert not math.isnan(rep.scores[0].adherence.score)  # type: ignore[union-attr]
