"""An extraction becomes a state-checked story: requirements derived from the replayed state,
text verbatim, and what the render vocabulary cannot hold kept as free text for a VLM only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from narrative_helpers import PARK, answer_doc

from vsb.errors import TransitionError
from vsb.evaluators.extractor import extract
from vsb.evaluators.render.detected import EntityVocabulary
from vsb.evaluators.rules import check_scene
from vsb.evaluators.vlm.plan import plan_calls
from vsb.evaluators.vlm.questions import judge_view, question_for, skin_words
from vsb.generator.generate import story_json
from vsb.narrative.answer import AnswerError, parse_answer
from vsb.narrative.build import build_story
from vsb.render import render_png
from vsb.story.io import iter_problems
from vsb.story.models import Story


def _build(doc: dict[str, Any], texts: tuple[str, ...] = PARK) -> Story:
    return build_story(parse_answer(json.dumps(doc), len(texts)), texts, "park", source="t",
                       llm="test")  # fmt: skip


def _free_text_doc() -> dict[str, Any]:
    doc = answer_doc(list(PARK))
    ama = doc["characters"][0]
    ama.update(top="tartan", skin="unknown", accessory="crown")
    doc["characters"][1]["hair_style"] = "unknown"
    doc["start"]["place"] = "castle courtyard"
    doc["scenes"][1]["entities"] = ["dog"]
    return doc


def test_careful_answer_gives_a_valid_story_with_the_text_verbatim(tmp_path: Path) -> None:
    story = _build(answer_doc(list(PARK)))
    assert [s.text for s in story.scenes] == list(PARK)
    assert story.category == "imported" and story.imported is not None
    assert story.imported.substitutions == []
    reqs = {r.id: r for r in story.scenes[2].requirements}
    assert reqs["s3.umbrella.state"].expected == "broken"
    assert reqs["s3.umbrella.state"].dimension == "causal"  # the stated cause links it
    assert reqs["s3.Bo.present"].expected is False
    path = tmp_path / "park.json"
    path.write_text(story_json(story))
    assert list(iter_problems(path)) == []


def test_free_text_and_unknown_become_substitutions(tmp_path: Path) -> None:
    story = _build(_free_text_doc())
    s1 = {r.id: r for r in story.scenes[0].requirements}
    assert s1["s1.Ama.top"].expected == "tartan" and s1["s1.Ama.top"].judged_by == "vlm"
    assert s1["s1.Ama.accessory"].expected == "crown" and s1["s1.Ama.accessory"].judged_by == "vlm"
    assert "s1.Ama.skin" not in s1  # unknown: withheld, never checked against a placeholder
    assert "s1.Bo.hair" not in s1
    assert s1["s1.scene.location"].expected == "castle courtyard"
    assert s1["s1.scene.location"].judged_by == "vlm"
    assert s1["s1.Ama.trousers"].judged_by is None  # told in the vocabulary: rules check it
    s2 = {r.id: r for r in story.scenes[1].requirements}
    assert s2["s2.dog.present"].expected is True and s2["s2.dog.present"].judged_by == "vlm"
    assert "s3.dog.present" not in {r.id for r in story.scenes[2].requirements}
    # the stored story validates: the substitutions explain every departure from the state
    path = tmp_path / "park.json"
    path.write_text(story_json(story))
    assert list(iter_problems(path)) == []
    # ...and a requirement edited by hand does not
    doc = json.loads(path.read_text())
    doc["scenes"][0]["requirements"][0]["judged_by"] = "vlm"
    path.write_text(json.dumps(doc))
    assert any("judged_by" in str(p) for p in iter_problems(path))


def test_rules_mark_free_text_not_applicable_and_check_the_rest() -> None:
    story = _build(_free_text_doc())
    scene = story.scenes[0]
    image = render_png(scene.state, seed=0)
    rows = check_scene(extract(image, EntityVocabulary.from_world(story.world)), scene,
                       story.world)  # fmt: skip
    by_id = {r.req_id: r for r in rows}
    for rid in ("s1.Ama.top", "s1.Ama.accessory", "s1.scene.location"):
        assert by_id[rid].verdict == "not_applicable", rid
    checked = [r for r in rows if r.verdict != "not_applicable"]
    assert checked and all(r.passed for r in checked)


def test_vlm_questions_cover_free_text_without_placeholder_cues(tmp_path: Path) -> None:
    story = _build(_free_text_doc())
    scene = story.scenes[0]
    view = judge_view(scene)
    qs = {r.id: question_for(r, view).text for r in scene.requirements}
    assert "tartan top" in qs["s1.Ama.top"]
    assert "crown" in qs["s1.Ama.accessory"]
    assert "castle courtyard" in qs["s1.scene.location"]
    placeholder = skin_words(story.world.characters[0].skin)  # Ama's skin is unknown
    assert not any(placeholder in q for q in qs.values())  # ...so it is never a cue
    assert "dark skin" in qs["s1.Bo.top"]  # Bo's, told in the vocabulary, is
    assert view.characters["Ama"].skin == ""
    s2 = story.scenes[1]
    q2 = {r.id: question_for(r, judge_view(s2)).text for r in s2.requirements}
    assert q2["s2.dog.present"] == "Is there a dog in the picture?"
    image = tmp_path / "f.png"
    image.write_bytes(render_png(scene.state, seed=0))
    (call,) = plan_calls([("m", "c", story.id, 1, str(image), scene)], "mock:0")
    assert "tartan top" in call.prompt


def test_generated_scenes_are_judged_as_before(default_suite: list[Story]) -> None:
    for story in default_suite[:10]:
        for scene in story.scenes:
            assert judge_view(scene) is scene.state


def test_a_contradiction_names_scene_and_event() -> None:
    doc = answer_doc(list(PARK))
    doc["scenes"][2]["events"].append({"type": "set_pose", "character": "Bo", "pose": "waving"})
    with pytest.raises(TransitionError) as err:
        _build(doc)
    assert err.value.scene == 3 and err.value.rule == "character_absent"


@pytest.mark.parametrize(
    ("spoil", "message", "scene"),
    [
        (lambda d: d["objects"].append({**d["objects"][0], "kind": "dragon"}),
         "unknown vocabulary: object kind 'dragon'", None),
        (lambda d: d["scenes"][0]["events"].append({"type": "exit", "character": "Bo"}),
         "scene 1 is the start and has no events", 1),
        (lambda d: d["characters"].extend(
            [{**d["characters"][0], "name": n} for n in ("C", "D")]),
         "at most 3 characters", None),
        (lambda d: d["start"].update(present=["Ama", "Zed"]), "'Zed', who is not a character", 1),
    ],
)  # fmt: skip
def test_answers_outside_the_vocabulary_or_the_model(spoil: Any, message: str,
                                                     scene: int | None) -> None:  # fmt: skip
    doc = answer_doc(list(PARK))
    spoil(doc)
    with pytest.raises(AnswerError) as err:
        _build(doc)
    assert message in err.value.message and err.value.scene == scene


def test_placeholders_keep_characters_apart() -> None:
    doc = answer_doc(list(PARK))
    ama, bo = doc["characters"]
    ama.update(skin="tone-1", hair_color="black")
    bo.update(skin="unknown", hair_color="black", top="unknown", trousers="red")
    story = _build(doc)
    a, b = story.world.characters
    assert (b.skin, b.hair_color) != (a.skin, a.hair_color)  # the placeholder skin differs
    assert b.top not in (a.top, b.trousers)
    ids = {r.id for r in story.scenes[0].requirements}
    assert {"s1.Bo.skin", "s1.Bo.top"}.isdisjoint(ids) and "s1.Bo.trousers" in ids
