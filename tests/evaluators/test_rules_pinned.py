"""The rule checker, pinned on hand-made detections (no rendering): the weights of the
matching distance, the bias against absent characters, the position cue, and what each
kind of requirement observes and labels when it fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from eval_helpers import character, first_state, scene_of, with_char, with_obj, world

from vsb.evaluators.render.detected import DetectedObject, DetectedPerson, DetectedState
from vsb.evaluators.rules import (
    ABSENT_BIAS,
    MAX_DISTANCE,
    ORDER_WEIGHT,
    RequirementResult,
    check_scene,
    distance,
    match_people,
)
from vsb.story.models import CharacterState, Requirement, Scene, World, WorldObject

ATTRS = ("skin", "hair_color", "hair_style", "top", "trousers", "accessory", "pose")
#: Another value for every attribute of ``character()``'s defaults.
OTHER = {
    "skin": "tone-6", "hair_color": "blond", "hair_style": "bun", "top": "green",
    "trousers": "navy", "accessory": "hat", "pose": "sitting",
}  # fmt: skip


def _state(**kw: Any) -> CharacterState:
    base: dict[str, Any] = dict(
        skin="tone-3", hair_color="black", hair_style="short", top="red", trousers="blue",
        accessory="none", pose="standing", present=True, seen=True,
    )  # fmt: skip
    base.update(kw)
    return CharacterState(**base)


def _person(x: float, like: CharacterState, *differ: str, **kw: Any) -> DetectedPerson:
    """A figure at ``x`` that looks like ``like`` except in the attributes ``differ``
    (taken from OTHER) and in ``kw``."""
    values = {a: getattr(like, a) for a in ATTRS}
    values.update({a: OTHER[a] for a in differ})
    values.update(kw)
    return DetectedPerson(x, **values)


def _seen(*people: DetectedPerson, objects: tuple[DetectedObject, ...] = ()) -> DetectedState:
    return DetectedState(tuple(people), objects, "park", "noon", "clear")


# --- the weights of the matching distance ---------------------------------------------------


@pytest.mark.parametrize(
    ("differ", "expected"),
    [
        ((), 0.0),
        (("skin",), 3.0),
        (("hair_color",), 3.0),
        (("hair_style",), 3.0),
        (("top",), 1.0),
        (("trousers",), 1.0),
        (("accessory",), 1.0),
        (("pose",), 0.5),
        (("skin", "hair_style", "trousers"), 7.0),
        (ATTRS, 12.5),
    ],
)
def test_distance_weighs_identity_3_clothes_1_pose_half(
    differ: tuple[str, ...], expected: float
) -> None:
    c = _state()
    assert distance(_person(0, c, *differ), c) == expected


def test_a_figure_whose_every_attribute_drifted_is_still_matched() -> None:
    c = _state()
    assert distance(_person(0, c, *ATTRS), c) + ABSENT_BIAS + ORDER_WEIGHT < MAX_DISTANCE
    w = world([character("Ama")])
    scene = scene_of(w, first_state(w))
    p = _person(100, scene.state.characters["Ama"], *ATTRS)
    assert match_people(_seen(p), scene, w) == {"Ama": 0}


def _two(**bo: Any) -> tuple[World, Scene]:
    w = world([character("Ama"), character("Bo", **bo)])
    return w, scene_of(w, first_state(w))


@pytest.mark.parametrize("identity", ["skin", "hair_color", "hair_style"])
def test_one_identity_attribute_outweighs_two_clothing_attributes(identity: str) -> None:
    # Bo differs from Ama in one identity attribute and in top and trousers; each figure
    # keeps its identity and wears the other's top and trousers
    w, scene = _two(**{identity: OTHER[identity]}, top="green", trousers="navy")
    ama, bo = scene.state.characters["Ama"], scene.state.characters["Bo"]
    p0 = _person(100, ama, top=bo.top, trousers=bo.trousers)
    p1 = _person(300, bo, top=ama.top, trousers=ama.trousers)
    assert match_people(_seen(p0, p1), scene, w) == {"Ama": 0, "Bo": 1}


@pytest.mark.parametrize("identity", ["skin", "hair_color", "hair_style"])
def test_one_identity_attribute_gives_way_to_three_clothing_attributes_and_pose(
    identity: str,
) -> None:
    w, scene = _two(
        **{identity: OTHER[identity]}, top="green", trousers="navy", accessory="hat",
        pose="sitting",
    )  # fmt: skip
    ama, bo = scene.state.characters["Ama"], scene.state.characters["Bo"]
    clothes = ("top", "trousers", "accessory", "pose")
    p0 = _person(100, ama, **{a: getattr(bo, a) for a in clothes})
    p1 = _person(300, bo, **{a: getattr(ama, a) for a in clothes})
    assert match_people(_seen(p0, p1), scene, w) == {"Ama": 1, "Bo": 0}


@pytest.mark.parametrize("cloth", ["top", "trousers", "accessory"])
def test_one_clothing_attribute_outweighs_the_pose(cloth: str) -> None:
    w, scene = _two(**{cloth: OTHER[cloth]}, pose="sitting")
    ama, bo = scene.state.characters["Ama"], scene.state.characters["Bo"]
    p0 = _person(100, ama, pose=bo.pose)
    p1 = _person(300, bo, pose=ama.pose)
    assert match_people(_seen(p0, p1), scene, w) == {"Ama": 0, "Bo": 1}


# --- characters expected absent -------------------------------------------------------------


def _with_absent_bo(**bo: Any) -> tuple[World, Scene]:
    w = world([character("Ama"), character("Bo", **bo)])
    s = with_char(first_state(w), "Bo", present=False).model_copy(update={"order": ["Ama"]})
    return w, scene_of(w, s)


def test_a_seen_figure_half_resembling_an_absent_character_is_the_expected_one() -> None:
    # Bo (absent) looks like Ama but for skin and top; the figure is Ama with her skin and
    # top drifted to Bo's and another pose (4.5 from Ama, 0.5 from Bo): far more like Bo,
    # but not by the bias of 6, so it is still Ama, with three failed facts
    w, scene = _with_absent_bo(skin="tone-6", top="green")
    ama, bo = scene.state.characters["Ama"], scene.state.characters["Bo"]
    p = _person(100, ama, skin=bo.skin, top=bo.top, pose="sitting")
    assert distance(p, bo) + ABSENT_BIAS > distance(p, ama) > distance(p, bo)
    assert match_people(_seen(p), scene, w) == {"Ama": 0}
    failed = {r.req_id: r.failure for r in check_scene(_seen(p), scene, w) if not r.passed}
    assert failed == {
        "s1.Ama.skin": "identity_drift",
        "s1.Ama.top": "clothing_change",
        "s1.Ama.pose": "pose_mismatch",
    }


@pytest.mark.parametrize(
    ("bo", "to_ama", "who"),
    [
        (dict(skin="tone-6", top="green", trousers="navy", pose="sitting"), 5.5, "Ama"),
        (dict(skin="tone-6", hair_color="blond", pose="sitting"), 6.5, "Bo"),
        (dict(skin="tone-6", hair_color="blond", hair_style="bun"), 9.0, "Bo"),
    ],
)
def test_a_figure_is_taken_for_an_absent_character_only_when_6_closer(
    bo: dict[str, str], to_ama: float, who: str
) -> None:
    # the figure is exactly Bo (absent): 0 + ABSENT_BIAS against its distance to Ama
    w, scene = _with_absent_bo(**bo)
    p = _person(100, scene.state.characters["Bo"])
    assert distance(p, scene.state.characters["Ama"]) == to_ama
    assert match_people(_seen(p), scene, w) == {who: 0}
    res = {r.req_id: r for r in check_scene(_seen(p), scene, w)}
    assert res["s1.Bo.present"].passed is (who == "Ama")
    assert res["s1.Ama.present"].passed is (who == "Ama")
    if who == "Bo":
        assert res["s1.Bo.present"].failure == "character_unexpected"
        assert res["s1.Ama.present"].failure == "character_missing"


# --- the position cue -----------------------------------------------------------------------


#: Bo's clothes where they differ from Ama's (``character()``'s defaults).
BO_CLOTHES = {"top": "green", "trousers": "navy", "accessory": "hat", "pose": "sitting"}


def _strangers(cue: tuple[str, ...]) -> tuple[World, Scene, DetectedState]:
    """Ama left of Bo, who differ in identity and in the clothes ``cue`` only; the two
    figures have identities unlike either character, and each wears the other's clothes
    (the clothes point the wrong way by the weight of ``cue`` per figure)."""
    w = world(
        [character("Ama", skin="tone-1", hair_color="black", hair_style="short"),
         character("Bo", skin="tone-2", hair_color="auburn", hair_style="long",
                   **{a: BO_CLOTHES[a] for a in cue})],
    )  # fmt: skip
    scene = scene_of(w, first_state(w))
    ama, bo = scene.state.characters["Ama"], scene.state.characters["Bo"]
    unknown = dict(skin="tone-6", hair_color="blond", hair_style="bun")
    p0 = _person(100, bo, **unknown)
    p1 = _person(300, ama, **unknown)
    return w, scene, _seen(p0, p1)


def test_figures_unlike_anyone_are_matched_by_position() -> None:
    # each figure wears the other's top and pose (1.5 each way, 3 in all): the place, at
    # ORDER_WEIGHT 2 per misplaced pairing (4 in all), decides
    w, scene, d = _strangers(("top", "pose"))
    assert scene.state.order == ["Ama", "Bo"]
    assert match_people(d, scene, w) == {"Ama": 0, "Bo": 1}


def test_position_gives_way_to_clothes_and_pose_together() -> None:
    # each wears the other's top, trousers and pose (2.5 each way, 5 in all > 4)
    w, scene, d = _strangers(("top", "trousers", "pose"))
    assert match_people(d, scene, w) == {"Ama": 1, "Bo": 0}


def test_position_counts_only_when_as_many_people_are_seen_as_expected() -> None:
    w, scene, d = _strangers(("top", "pose"))
    third = DetectedPerson(500, "tone-5", "grey", "ponytail", "yellow", "pink", "scarf", "cheering")
    assert match_people(_seen(*d.people, third), scene, w) == {"Ama": 1, "Bo": 0}


def test_position_is_no_cue_for_a_figure_with_a_known_identity() -> None:
    # Bo stands left of Ama (an order swap): identity decides, the order check fails
    w, scene = _two(skin="tone-6", top="green")
    ama, bo = scene.state.characters["Ama"], scene.state.characters["Bo"]
    d = _seen(_person(100, bo, skin="tone-4", top=ama.top), _person(300, ama, top=bo.top))
    assert match_people(d, scene, w) == {"Ama": 1, "Bo": 0}
    res = {r.req_id: r for r in check_scene(d, scene, w)}
    assert (res["s1.scene.order"].observed, res["s1.scene.order"].failure) == (
        ["Bo", "Ama"], "order_swap",
    )  # fmt: skip


@pytest.mark.parametrize("identity", ["skin", "hair_color", "hair_style"])
def test_one_shared_identity_attribute_makes_a_figure_known_not_placed(identity: str) -> None:
    # Ama and Bo differ in identity only. The left figure shares one identity attribute
    # with Bo (6 from Bo, 9 from Ama); the right one shares none (9 from both) and stands
    # in Bo's place. Only the unknown right figure pays for standing elsewhere than Ama's
    # place (2), so the left figure is taken for Bo: 6 + 9 + 2 = 17 < 9 + 9 = 18.
    w, scene = _two(skin="tone-2", hair_color="auburn", hair_style="long")
    bo = scene.state.characters["Bo"]
    unknown = dict(skin="tone-6", hair_color="blond", hair_style="bun")
    p0 = _person(100, bo, **{**unknown, identity: getattr(bo, identity)})
    p1 = _person(300, bo, **unknown)
    assert match_people(_seen(p0, p1), scene, w) == {"Ama": 1, "Bo": 0}


def test_position_rank_is_by_x() -> None:
    # the figures listed right to left: rank comes from x, not from the list order
    w, scene, d = _strangers(("top", "pose"))
    flipped = _seen(d.people[1], d.people[0])
    assert match_people(flipped, scene, w) == {"Ama": 1, "Bo": 0}


def test_no_people_no_match() -> None:
    w, scene = _two()
    assert match_people(_seen(), scene, w) == {}


# --- what each requirement observes ---------------------------------------------------------


def _req(res: list[RequirementResult], req_id: str) -> RequirementResult:
    return next(r for r in res if r.req_id == req_id)


def test_character_facts_observe_the_matched_figure() -> None:
    w, scene = _two(skin="tone-6")
    ama, bo = scene.state.characters["Ama"], scene.state.characters["Bo"]
    d = _seen(_person(100, ama, hair_style="bun", accessory="hat"), _person(300, bo))
    res = check_scene(d, scene, w)
    hair = _req(res, "s1.Ama.hair")
    assert (hair.observed, hair.passed, hair.failure) == (["black", "bun"], False,
                                                          "identity_drift")  # fmt: skip
    assert _req(res, "s1.Ama.present").observed is True
    assert _req(res, "s1.Bo.skin").observed == "tone-6" and _req(res, "s1.Bo.skin").passed
    assert all(r.passed for r in res if r.subject == "Bo")
    assert [r.req_id for r in res if not r.passed] == ["s1.Ama.hair"]


def test_a_missing_character_fails_every_fact_as_missing() -> None:
    w, scene = _two(skin="tone-6")
    d = _seen(_person(100, scene.state.characters["Ama"]))
    res = [r for r in check_scene(d, scene, w) if r.subject == "Bo"]
    assert {r.attribute for r in res} == {"present", "skin", "hair", "top", "trousers", "pose"}
    for r in res:
        assert (r.passed, r.failure) == (False, "character_missing"), r.req_id
        assert r.observed is (False if r.attribute == "present" else None)
    order = _req(check_scene(d, scene, w), "s1.scene.order")
    assert (order.observed, order.failure) == (["Ama"], "character_missing")


def test_scene_facts_observe_the_image() -> None:
    w, scene = _two()
    ps = [_person(100 + 200 * i, c) for i, c in enumerate(scene.state.characters.values())]
    d = DetectedState(tuple(ps), (), "beach", "noon", None)
    res = {r.attribute: r for r in check_scene(d, scene, w) if r.subject == "scene"}
    assert (res["location"].observed, res["location"].failure) == ("beach", "wrong_location")
    assert res["time"].passed and res["time"].observed == "noon"
    assert (res["weather"].observed, res["weather"].failure) == (None, "wrong_weather")
    assert res["order"].passed and res["order"].observed == ["Ama", "Bo"]


def _object_scene(**obj: Any) -> tuple[World, Scene]:
    w = world(
        [character("Ama")],
        [WorldObject(kind="vase", color="red", initial_state="intact", initial_holder="Ama"),
         WorldObject(kind="coin", color="yellow", initial_state="whole", count=3)],
    )  # fmt: skip
    s = first_state(w)
    if obj:
        s = with_obj(s, "vase", **obj)
    return w, scene_of(w, s)


def _obj(kind: str, color: str, *, holder: int | None = None, **kw: Any) -> DetectedObject:
    base: dict[str, Any] = dict(state=None, count=None, on_ground=holder is None, x=50.0)
    base.update(kw)
    return DetectedObject(kind, color, holder=holder, **base)


def _ama(w: World, scene: Scene) -> DetectedPerson:
    return _person(100, scene.state.characters["Ama"])


def test_object_facts_observe_the_object_of_the_story_colour() -> None:
    w, scene = _object_scene()
    d = _seen(
        _ama(w, scene),
        objects=(_obj("vase", "red", holder=0, state="cracked"),
                 _obj("coin", "yellow", count=2)),
    )  # fmt: skip
    res = {r.req_id: r for r in check_scene(d, scene, w)}
    assert (res["s1.vase.holder"].observed, res["s1.vase.holder"].passed) == ("Ama", True)
    st = res["s1.vase.state"]
    assert (st.observed, st.passed, st.failure) == ("cracked", False, "wrong_state")
    cnt = res["s1.coin.count"]
    assert (cnt.observed, cnt.passed, cnt.failure) == (2, False, "count_mismatch")
    assert (res["s1.coin.present"].observed, res["s1.coin.present"].passed) == (True, True)


def test_an_object_held_by_nobody_or_by_a_stranger() -> None:
    w, scene = _object_scene()
    for holder, observed in ((None, None), (1, "?")):
        people = (_ama(w, scene), _person(300, scene.state.characters["Ama"], *ATTRS))
        d = DetectedState(people[: 1 if holder is None else 2],
                          (_obj("vase", "red", holder=holder, state="intact"),),
                          "park", "noon", "clear")  # fmt: skip
        if holder is not None:
            # the second figure is an unmatched stranger: one character, two people
            assert match_people(d, scene, w) == {"Ama": 0}
        r = _req(check_scene(d, scene, w), "s1.vase.holder")
        assert (r.observed, r.passed, r.failure) == (observed, False, "wrong_holder")


def test_an_object_only_in_another_colour_is_a_colour_change_for_presence_and_holder() -> None:
    w, scene = _object_scene()
    d = _seen(
        _ama(w, scene),
        objects=(_obj("vase", "blue", holder=0, state="broken"), _obj("coin", "green", count=3)),
    )
    res = {r.req_id: r for r in check_scene(d, scene, w)}
    for req_id, color in (("s1.vase.holder", "blue"), ("s1.coin.present", "green")):
        r = res[req_id]
        assert (r.observed, r.passed, r.failure) == ({"color": color}, False,
                                                     "object_color_change")  # fmt: skip
    # its state and count are read on the recoloured object
    state = res["s1.vase.state"]
    assert (state.observed, state.failure) == ("broken", "wrong_state")
    assert res["s1.coin.count"].passed and res["s1.coin.count"].observed == 3


def test_a_missing_object_fails_its_facts_as_disappeared() -> None:
    w, scene = _object_scene()
    res = check_scene(_seen(_ama(w, scene)), scene, w)
    objs = [r for r in res if r.subject in ("vase", "coin")]
    assert {r.req_id for r in objs} == {
        "s1.vase.holder", "s1.vase.state", "s1.coin.present", "s1.coin.count",
    }  # fmt: skip
    for r in objs:
        assert (r.passed, r.failure) == (False, "object_disappeared"), r.req_id
        assert r.observed is (False if r.attribute == "present" else None), r.req_id


def test_an_object_expected_gone_passes_only_when_no_object_of_its_kind_is_seen() -> None:
    w, scene = _object_scene(removed=True)
    req = next(r for r in scene.requirements if r.subject == "vase")
    assert (req.attribute, req.expected, req.taxonomy) == ("present", False, "object_resurrected")
    gone = _req(check_scene(_seen(_ama(w, scene)), scene, w), req.id)
    assert (gone.observed, gone.passed) == (False, True)
    for color in ("red", "blue"):
        d = _seen(_ama(w, scene), objects=(_obj("vase", color),))
        back = _req(check_scene(d, scene, w), req.id)
        assert (back.observed, back.passed, back.failure) == (True, False, "object_resurrected")


def test_an_object_lying_in_the_scene_is_present() -> None:
    w, scene = _object_scene(holder=None, place="park")
    req = next(r for r in scene.requirements if r.subject == "vase" and r.attribute == "present")
    d = _seen(_ama(w, scene), objects=(_obj("vase", "red", state="intact"),))
    r = _req(check_scene(d, scene, w), req.id)
    assert (r.observed, r.passed, r.failure) == (True, True, "")


# --- the result rows ------------------------------------------------------------------------


def _requirement() -> Requirement:
    return Requirement(
        id="s2.Ama.hair", dimension="identity", taxonomy="identity_drift", source="memory",
        subject="Ama", attribute="hair", expected=["black", "short"],
    )  # fmt: skip


def test_a_result_keeps_its_failure_only_when_it_did_not_pass() -> None:
    req = _requirement()
    ok = RequirementResult.of(req, ["black", "short"], True, "identity_drift")
    bad = RequirementResult.of(req, ["black", "bun"], False, "character_missing")
    assert (ok.failure, ok.verdict, ok.evaluator, ok.judge_model) == ("", "passed", "rules", "")
    assert (bad.failure, bad.verdict) == ("character_missing", "failed")
    assert (bad.req_id, bad.dimension, bad.taxonomy, bad.source) == (
        "s2.Ama.hair", "identity", "identity_drift", "memory",
    )  # fmt: skip
    assert (bad.subject, bad.attribute, bad.expected) == ("Ama", "hair", ["black", "short"])
    judged = RequirementResult.of(
        req, None, False, "identity_drift", "vlm", verdict="unsure", judge_model="j"
    )
    assert (judged.evaluator, judged.verdict, judged.judge_model) == ("vlm", "unsure", "j")


def test_a_result_row_holds_json_text_and_the_run_columns() -> None:
    r = RequirementResult.of(_requirement(), {"b": 1, "a": [2]}, False, "identity_drift")
    row = r.row(model="m", condition="c", story_id="s", scene=2)
    assert row == {
        "model": "m", "condition": "c", "story_id": "s", "scene": 2, "req_id": "s2.Ama.hair",
        "dimension": "identity", "taxonomy": "identity_drift", "source": "memory",
        "subject": "Ama", "attribute": "hair", "expected": '["black", "short"]',
        "observed": '{"a": [2], "b": 1}', "passed": False, "failure": "identity_drift",
        "evaluator": "rules", "verdict": "failed", "judge_model": "",
    }  # fmt: skip
    assert json.loads(row["observed"]) == {"a": [2], "b": 1}
    blank = RequirementResult.model_construct(**{**r.model_dump(), "verdict": ""})
    assert blank.row(model="m", condition="c", story_id="s", scene=2)["verdict"] == "failed"
    ok = RequirementResult.model_construct(**{**r.model_dump(), "verdict": "", "passed": True})
    assert ok.row(model="m", condition="c", story_id="s", scene=2)["verdict"] == "passed"
