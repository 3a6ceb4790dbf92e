"""An unread answer never changes another question's verdict (issue #45 §1).

The presence answers and the probes (objects of any colour, who stands left, how many
people) decide other checks' failure labels, and whether a missing person's facts fail with
them. When one of them cannot be read (left out, or given twice with two words), a check
that hangs on it is ``parse_failure`` (unreadable), never failed as ``character_missing``;
a check that does not hang on it keeps its verdict. Hypothesis drops any answers of any
call of real scenes and checks that every row is the full reply's row or unreadable.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_helpers import character, first_state, scene_of, world
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vsb.evaluators.vlm.execute import CallOutcome
from vsb.evaluators.vlm.plan import JudgeCall, plan_calls
from vsb.evaluators.vlm.rows import rows_from_outcomes
from vsb.evaluators.vlm.transports import JudgeReply
from vsb.story.models import Story

Rows = dict[str, tuple[str, str]]


def _call(tmp_path: Path) -> JudgeCall:
    w = world([character("Ama", skin="tone-2", hair_color="black", top="red"),
               character("Bo", skin="tone-6", hair_color="auburn", top="teal")])  # fmt: skip
    scene = scene_of(w, first_state(w))
    path = tmp_path / "scene_01.png"
    path.write_bytes(b"an image")
    (call,) = plan_calls([("m", "independent", "t", 1, str(path), scene)], "judge", 0)
    assert call.people_probe == 2
    return call


def _rows(call: JudgeCall, lines: list[str]) -> Rows:
    rows, _ = rows_from_outcomes([CallOutcome(call, JudgeReply("\n".join(lines)))], "judge")
    return {r["req_id"]: (r["verdict"], r["failure"]) for r in rows}


def _answers(call: JudgeCall, **said: str) -> list[str]:
    """``N: WORD`` lines: each question answered as expected, ``said`` (req id or "count"
    -> word) answered otherwise."""
    n = len(call.requirements)
    reqs = zip(call.requirements, call.questions, strict=False)
    words = [said.get(r.id, q.expect) for r, q in reqs]
    words += [q.expect for q in call.questions[n:-1]]  # the probes
    words.append(said.get("count", "YES"))  # the count last
    return [f"{i}: {w}" for i, w in enumerate(words, start=1)]


@pytest.fixture
def call(tmp_path: Path) -> JudgeCall:
    return _call(tmp_path)


def test_a_dropped_count_makes_the_unfound_person_s_facts_unreadable(call: JudgeCall) -> None:
    """Bo is not found by his cues while both people are there: unrecognised, so his top
    passes (it was asked of the person the question found). With the count left out, whether
    he is there at all is not read: his facts hang on it."""
    full = _rows(call, _answers(call, **{"s1.Bo.present": "NO"}))
    assert full["s1.Bo.top"] == ("passed", "")
    dropped = _rows(call, _answers(call, **{"s1.Bo.present": "NO"})[:-1])
    assert dropped["s1.Bo.top"][0] == "parse_failure"  # was failed as character_missing
    assert dropped["s1.Bo.present"] == ("parse_failure", "character_missing")
    assert all(dropped[k] == v for k, v in full.items() if not k.startswith("s1.Bo."))


def test_a_presence_answered_twice_makes_the_person_s_facts_unreadable(call: JudgeCall) -> None:
    """Fewer people than expected: whether Bo is the one not there is his presence answer,
    given twice with two words."""
    lines = _answers(call, count="NO")
    i = next(i for i, r in enumerate(call.requirements) if r.id == "s1.Bo.present")
    twice = _rows(call, [*lines, f"{i + 1}: NO"])
    assert twice["s1.Bo.present"][0] == "parse_failure"
    assert twice["s1.Bo.top"] == ("parse_failure", "clothing_change")  # was failed, missing
    full = _rows(call, lines)
    assert all(twice[k] == v for k, v in full.items() if not k.startswith("s1.Bo."))


def test_an_unread_count_that_decides_nothing_changes_nothing(call: JudgeCall) -> None:
    """Everyone found by their cues: the count decides no verdict, and none is unreadable."""
    full = _rows(call, _answers(call))
    assert _rows(call, _answers(call)[:-1]) == full
    assert {v for v, _ in full.values()} == {"passed"}


# --- Hypothesis: any answers left out of any call of real scenes -----------------------------

WORDS = ("YES", "NO", "UNSURE")


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> list[JudgeCall]:
    root = tmp_path_factory.mktemp("unread")
    frames = []
    for story in default_suite[:8]:
        for k, scene in enumerate(story.scenes, start=1):
            path = root / story.id / f"scene_{k:02d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f"{story.id}/{k}".encode())
            frames.append(("m", "independent", story.id, k, str(path), scene))
    return [c for c in plan_calls(frames, "judge", 0) if c.people_probe]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_a_left_out_answer_changes_no_other_verdict(
    calls: list[JudgeCall], data: st.DataObject
) -> None:
    call = data.draw(st.sampled_from(calls), label="call")
    n = len(call.questions)
    expect = [q.expect for q in call.questions]
    # mostly the expected word, so that people are found and probes pass
    words = [data.draw(st.sampled_from((e, e, e, *WORDS))) for e in expect]
    gone = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=4), label="gone")
    how = data.draw(st.sampled_from(("left out", "twice")), label="how")
    lines = [f"{i}: {w}" for i, w in enumerate(words, start=1)]
    if how == "left out":
        cut = [ln for i, ln in enumerate(lines) if i not in gone]
    else:
        cut = lines + [f"{i + 1}: {'NO' if words[i] == 'YES' else 'YES'}" for i in gone]
    full, part = _rows(call, lines), _rows(call, cut)
    for req_id, row in full.items():
        assert part[req_id] in (row, ("parse_failure", part[req_id][1])), (req_id, how, gone)
