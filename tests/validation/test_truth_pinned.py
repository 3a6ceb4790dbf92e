"""Requirement-level truth from the oracle, pinned rule by rule through ``oracle_agreement``
(a fault on the fact itself, a missing character's knock-ons, the holder, the order) and the
cross-frame facts' ``PairTruth``. Recoloured objects are left to their own tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vsb.scores.inputs import RequirementRows
from vsb.state import replay
from vsb.story.models import (
    ChangeAttr,
    Character,
    Event,
    Exit,
    Move,
    Scene,
    Story,
    World,
)
from vsb.validation.matching import Fault, Frame
from vsb.validation.metrics import wilson_interval
from vsb.validation.truth import PairTruth, fault_sets, oracle_agreement

FRAME: Frame = ("m", "c", "t", 2)
OTHER: Frame = ("m", "c", "t", 3)

Row = tuple[str, str, Any, str]
"""(subject, attribute, expected value, verdict) of one check of FRAME."""


def _rows(checks: list[Row], frame: Frame = FRAME, raw: bool = False) -> RequirementRows:
    rows = RequirementRows()
    for subject, attribute, expected, verdict in checks:
        rows.append({
            "model": frame[0], "condition": frame[1], "story_id": frame[2], "scene": frame[3],
            "dimension": "x", "source": "memory", "subject": subject, "attribute": attribute,
            "taxonomy": "x", "passed": verdict == "passed", "failure": "", "verdict": verdict,
            "expected": expected if raw else json.dumps(expected),
        })  # fmt: skip
    return rows


def _fault(subject: str, attribute: str, *, visual: bool = True, frame: Frame = FRAME) -> Fault:
    return Fault(frame, subject, attribute, "x", visual)


def _true(subject: str, attribute: str, expected: Any, faults: list[Fault]) -> bool:
    """Whether the oracle holds the fact true (a 'passed' answer is then right)."""
    agreement = oracle_agreement(_rows([(subject, attribute, expected, "passed")]), faults)
    assert agreement.n_answers == 1
    return agreement.n_wrong == 0


MISSING_BO = [_fault("Bo", "present")]


@pytest.mark.parametrize(
    ("subject", "attribute", "expected", "faults", "truth"),
    [
        # no fault: every fact holds
        ("Ama", "top", "red", [], True),
        # a fault on the fact itself
        ("Ama", "top", "red", [_fault("Ama", "top")], False),
        ("vase", "state", "intact", [_fault("vase", "state")], False),
        ("scene", "location", "park", [_fault("scene", "location")], False),
        # a fault on another fact of the subject, or on the same fact of another subject
        ("Ama", "top", "red", [_fault("Ama", "trousers")], True),
        ("Ama", "top", "red", [_fault("Bo", "top")], True),
        # a fault that is not visual, or on another image, changes nothing
        ("Ama", "top", "red", [_fault("Ama", "top", visual=False)], True),
        ("Ama", "top", "red", [_fault("Ama", "top", frame=OTHER)], True),
        # a missing character fails every fact about it
        ("Bo", "present", True, MISSING_BO, False),
        ("Bo", "hair", ["grey", "bun"], MISSING_BO, False),
        ("Bo", "pose", "standing", MISSING_BO, False),
        ("Ama", "pose", "standing", MISSING_BO, True),
        # ... a held object's holder check, when the holder is missing
        ("lantern", "holder", "Bo", MISSING_BO, False),
        ("lantern", "holder", "Ama", MISSING_BO, True),
        ("lantern", "state", "lit", MISSING_BO, True),
        # ... and the left-to-right order when anyone in it is missing
        ("scene", "order", ["Ama", "Bo"], MISSING_BO, False),
        ("scene", "order", ["Ama", "Cy"], MISSING_BO, True),
        ("scene", "location", "park", MISSING_BO, True),
        # only the order looks at the names it holds: another scene fact never borrows a
        # character's fault through its value
        ("scene", "weather", "B", [_fault("B", "present")], True),
        ("scene", "location", ["Bo"], MISSING_BO, True),
    ],
)
def test_a_fact_is_true_unless_a_visual_fault_breaks_it(
    subject: str, attribute: str, expected: Any, faults: list[Fault], truth: bool
) -> None:
    assert _true(subject, attribute, expected, faults) is truth


def test_fault_sets_keep_the_visual_faults_per_image() -> None:
    sets = fault_sets(
        [_fault("Ama", "top"), _fault("Bo", "present", visual=False), _fault("Cy", "hair",
                                                                              frame=OTHER)]
    )  # fmt: skip
    assert sets == {FRAME: {("Ama", "top")}, OTHER: {("Cy", "hair")}}


def test_agreement_counts_false_passes_and_false_fails() -> None:
    faults = [_fault("Ama", "top"), _fault("Bo", "present")]
    rows = _rows(
        [("Ama", "skin", "tone-1", "unsure"),  # not an answer
         ("Ama", "same_person", True, "passed"),  # cross-frame: left out without pairs
         ("Ama", "top", "red", "passed"),  # false pass
         ("Bo", "pose", "standing", "passed"),  # false pass (Bo is missing)
         ("Ama", "trousers", "blue", "failed"),  # false fail
         ("Bo", "top", "green", "failed"),  # right
         ("Ama", "pose", "standing", "passed"),  # right
         ("Ama", "hair", ["black", "short"], "parse_failure"),
         ("Ama", "accessory", "none", "not_applicable")]
    )  # fmt: skip
    a = oracle_agreement(rows, faults)
    assert (a.n_answers, a.n_wrong, a.n_false_pass, a.n_false_fail) == (5, 3, 2, 1)
    assert a.error_rate == 0.6
    assert (a.error_rate_ci_low, a.error_rate_ci_high) == wilson_interval(3, 5)


def test_no_answers_no_rate() -> None:
    a = oracle_agreement(_rows([("Ama", "top", "red", "unsure")]), [])
    assert (a.n_answers, a.n_wrong, a.error_rate) == (0, 0, None)
    assert (a.error_rate_ci_low, a.error_rate_ci_high) == (None, None)


def test_an_expected_value_that_is_not_json_is_read_as_text() -> None:
    # the holder's expected name written bare (not JSON): still the missing holder's name
    rows = _rows([("lantern", "holder", "Bo", "passed")], raw=True)
    assert rows.expected == ["Bo"]
    assert oracle_agreement(rows, MISSING_BO).n_wrong == 1
    assert oracle_agreement(rows, [_fault("Ama", "present")]).n_wrong == 0


# --- cross-frame facts ----------------------------------------------------------------------

WORLD = World(
    characters=[
        Character(name="Ama", skin="tone-1", hair_color="black", hair_style="short", top="red",
                  trousers="blue", accessory="none"),
        Character(name="Bo", skin="tone-5", hair_color="grey", hair_style="bun", top="green",
                  trousers="navy", accessory="hat"),
    ],
    locations=["park", "beach"],
    start_time="noon",
    start_weather="clear",
)  # fmt: skip


def _story() -> Story:
    """Scene 2: Ama changes her top; scene 3: Bo leaves; scene 4: everyone moves."""
    events: list[list[Event]] = [
        [],
        [ChangeAttr(character="Ama", attribute="top", value="orange")],
        [Exit(character="Bo")],
        [Move(location="beach")],
    ]
    states = replay(WORLD, events, "t")
    scenes = [
        Scene(index=k, events=list(ev), text="", state=st, requirements=[])
        for k, (ev, st) in enumerate(zip(events, states, strict=True), start=1)
    ]
    return Story(id="t", category="wardrobe", difficulty="easy", seed=0, world=WORLD,
                 scenes=scenes)  # fmt: skip


def _frame(k: int) -> Frame:
    return ("m", "c", "t", k)


def _oracle(k: int, subject: str, attribute: str, value: Any, **kw: Any) -> dict[str, Any]:
    return {"model": "m", "condition": "c", "story_id": "t", "scene": k, "subject": subject,
            "attribute": attribute, "rendered_value": value, **kw}  # fmt: skip


def test_rendered_values_are_the_story_state_unless_the_oracle_says_otherwise() -> None:
    pairs = PairTruth(
        [_story()],
        [_oracle(2, "Bo", "top", "pink"), _oracle(2, "Ama", "skin", "tone-6", visual=False)],
    )
    assert pairs.rendered(_frame(2), "Bo", "top") == "pink"
    assert pairs.rendered(_frame(2), "Ama", "skin") == "tone-1"  # not visual: as the story
    assert pairs.rendered(_frame(2), "Ama", "top") == "orange"
    assert pairs.rendered(_frame(1), "Ama", "top") == "red"
    assert pairs.rendered(_frame(3), "Bo", "present") is False
    assert pairs.rendered(_frame(4), "scene", "location") == "beach"
    assert pairs.rendered(("m", "other", "t", 2), "Bo", "top") == "green"


def test_alike_compares_the_frame_with_the_one_before() -> None:
    pairs = PairTruth([_story()], [_oracle(2, "Bo", "hair_color", "white")])
    # Ama changed her top in scene 2 (clothes differ, person the same)
    assert pairs.alike(_frame(2), "Ama", "same_clothes") is False
    assert pairs.alike(_frame(2), "Ama", "same_person") is True
    assert pairs.alike(_frame(3), "Ama", "same_clothes") is True
    # Bo's hair was rendered white in scene 2: a different person in 2 than in 1 and 3
    assert pairs.alike(_frame(2), "Bo", "same_person") is False
    assert pairs.alike(_frame(3), "Bo", "same_person") is False  # and Bo is gone in 3
    assert pairs.alike(_frame(2), "Bo", "same_clothes") is True
    # a character missing from either frame is never alike
    assert pairs.alike(_frame(4), "Bo", "same_clothes") is False
    # the place: the same until the move
    assert pairs.alike(_frame(3), "scene", "same_place") is True
    assert pairs.alike(_frame(4), "scene", "same_place") is False


def test_cross_frame_answers_are_right_when_alike_exactly_as_expected() -> None:
    pairs = PairTruth([_story()], [])
    rows = RequirementRows()
    for k, subject, attribute, expected, verdict in [
        (2, "Ama", "same_clothes", False, "passed"),  # right: she changed, as expected
        (2, "Ama", "same_person", True, "passed"),  # right
        (3, "Ama", "same_clothes", True, "failed"),  # wrong: a false fail
        (4, "scene", "same_place", True, "passed"),  # wrong: a false pass (it moved)
    ]:
        rows.append({
            "model": "m", "condition": "c", "story_id": "t", "scene": k, "dimension": "x",
            "source": "memory", "subject": subject, "attribute": attribute, "taxonomy": "x",
            "passed": verdict == "passed", "failure": "", "verdict": verdict,
            "expected": json.dumps(expected),
        })  # fmt: skip
    a = oracle_agreement(rows, [], pairs)
    assert (a.n_answers, a.n_wrong, a.n_false_pass, a.n_false_fail) == (4, 2, 1, 1)
    # without the rendered pairs, cross-frame rows are left out
    assert oracle_agreement(rows, []).n_answers == 0


@pytest.mark.parametrize(
    ("attribute", "fact"),
    [
        ("skin", "same_person"), ("hair_color", "same_person"), ("hair_style", "same_person"),
        ("top", "same_clothes"), ("trousers", "same_clothes"), ("accessory", "same_clothes"),
    ],
)  # fmt: skip
def test_each_rendered_attribute_of_a_pair_fact_counts(attribute: str, fact: str) -> None:
    # Bo rendered with one attribute off in scene 2 only: unlike scene 1 in that fact alone
    off = {"skin": "tone-6", "hair_color": "white", "hair_style": "long", "top": "pink",
           "trousers": "teal", "accessory": "scarf"}  # fmt: skip
    pairs = PairTruth([_story()], [_oracle(2, "Bo", attribute, off[attribute])])
    assert pairs.alike(_frame(2), "Bo", fact) is False
    other = "same_clothes" if fact == "same_person" else "same_person"
    assert pairs.alike(_frame(2), "Bo", other) is True
