"""``rows_from_outcomes`` writes each row directly: the rows are exactly
``RequirementResult.row`` of ``outcome_results`` (and the signal rows their pass rates), for
the calls of real scenes of the default suite, single-image and cross-frame, batched or not,
answered in any mix of words, wrong numbers and garbage, with failed calls among them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vsb.evaluators.vlm.execute import CallOutcome
from vsb.evaluators.vlm.plan import JudgeCall, plan_calls, plan_pair_calls
from vsb.evaluators.vlm.rows import outcome_results, rows_from_outcomes
from vsb.evaluators.vlm.transports import JudgeReply
from vsb.story.models import Story

WORDS = ["YES", "NO", "UNSURE", "yes", "maybe", "What a lovely picture!"]


def _calls(root: Path, suite: list[Story], batch: int) -> list[JudgeCall]:
    frames, seqs = [], []
    for m in ("sim-a", "sim-b"):
        for story in suite[:3]:
            images = []
            for k, scene in enumerate(story.scenes, start=1):
                path = root / m / story.id / f"scene_{k:02d}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(f"{m}/{story.id}/{k}".encode())
                frames.append((m, "independent", story.id, k, str(path), scene))
                images.append((k, str(path)))
            seqs.append((m, "independent", story.id, images, story.scenes))
    return plan_calls(frames, "judge", batch) + plan_pair_calls(seqs, "judge")


@pytest.fixture(scope="module")
def calls(
    tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]
) -> dict[int, list[JudgeCall]]:
    root = tmp_path_factory.mktemp("rows")
    return {b: _calls(root / str(b), default_suite, b) for b in (0, 1, 3)}


def _reply(call: JudgeCall, words: list[str], layout: int) -> JudgeReply | None:
    n = len(call.questions)
    said = [words[i % len(words)] for i in range(n)]
    if layout == 0:
        return None  # the call failed
    if layout == 1:
        return JudgeReply("\n".join(f"{i}: {w}" for i, w in enumerate(said, start=1)))
    if layout == 2:  # one line, the last answer missing
        return JudgeReply(", ".join(f"{i}: {w}" for i, w in enumerate(said[:-1], start=1)))
    return JudgeReply(said[0])  # a single word (a whole reply to a one-question call)


def _by_results(outcomes: list[CallOutcome], judge: str) -> tuple[list[Any], list[Any]]:
    rows, frames = [], {}
    for out in outcomes:
        c = out.call
        for r in outcome_results(out, judge):
            rows.append(r.row(model=c.model, condition=c.condition, story_id=c.story_id,
                              scene=c.scene))  # fmt: skip
            key = (c.evaluator, c.model, c.condition, c.story_id, c.scene)
            frames.setdefault(key, []).append(r.passed)
    sigs = [
        {"model": m, "condition": cond, "story_id": s, "scene": k, "signal": f"{ev}_pass_rate",
         "value": sum(p) / len(p), "evaluator": ev}
        for (ev, m, cond, s, k), p in frames.items()
    ]  # fmt: skip
    return rows, sigs


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batch=st.sampled_from([0, 1, 3]),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=7),
    layouts=st.lists(st.integers(0, 3), min_size=1, max_size=5),
)
def test_direct_rows_are_the_results_rows(
    calls: dict[int, list[JudgeCall]], batch: int, words: list[str], layouts: list[int]
) -> None:
    outcomes = [
        CallOutcome(c, _reply(c, words[i % len(words) :] + words, layouts[i % len(layouts)]))
        for i, c in enumerate(calls[batch])
    ]
    rows, sigs = rows_from_outcomes(outcomes, "judge")
    want_rows, want_sigs = _by_results(outcomes, "judge")
    assert rows == want_rows
    assert sigs == want_sigs
    assert [list(r) for r in rows[:1]] == [list(r) for r in want_rows[:1]]  # column order too


def test_every_verdict_and_a_knock_on_label_appear(calls: dict[int, list[JudgeCall]]) -> None:
    """The mixes above reach every verdict the rows can carry, and knock-on labels."""
    outcomes = [CallOutcome(c, _reply(c, WORDS[i % 6 :] + WORDS, 1 + i % 3))
                for i, c in enumerate(calls[0])]  # fmt: skip
    rows, _ = rows_from_outcomes(outcomes, "judge")
    assert {r["verdict"] for r in rows} == {"passed", "failed", "unsure", "parse_failure"}
    assert any(r["failure"] not in ("", r["taxonomy"]) for r in rows)
