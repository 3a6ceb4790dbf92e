"""Imported stories send only what their source says, in its words (issue 44 item 2).

A VinaBench sample imported with ``--constraints gold`` (Karen's "long brown hair and a red
cardigan", a warehouse, a parking lot, an unknown and a free-text time) is sent, under every
condition, only facts its annotations give: no tone code, no placeholder clothes, weather or
place; the judge's questions neither. An LLM-read import keeps its free text and leaves out
what it does not give. The generated suite's contexts are pinned elsewhere
(``tests/test_conditions.py``); this checks only imported ones."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vsb.cli.main import cli
from vsb.conditions import PLACEBO_CONDITION, all_condition_names, get_condition
from vsb.errors import InputError
from vsb.evaluators.vlm.plan import colour_probe_question, held_objects
from vsb.evaluators.vlm.questions import judge_view, question_for
from vsb.fsio import canonical_json
from vsb.narrative.answer import parse_answer
from vsb.narrative.build import build_story
from vsb.narrative.gold import build_gold_story
from vsb.narrative.reader import read_story
from vsb.narrative.sources import read_narratives
from vsb.story.io import load_suite
from vsb.story.models import Story

FILES = sorted((Path(__file__).parent / "vinabench").glob("*.json"))
KAREN = {
    "scene_full_id": "tt0009999_0001_0", "story_id": 7,
    "narrative": [
        "Karen waits in the warehouse after dark, counting boxes.",
        "Elle arrives with the van keys; they argue by the loading door.",
        "Karen drives off alone and parks in the parking lot.",
        "Later, Elle finds Karen asleep in the car.",
    ],
    "global_profile": {"Karen": "long brown hair and a red cardigan",
                       "Elle": "a short woman with curly grey hair in a denim jacket"},
    "scene_characters": [
        {"present": ["Karen"], "num_present": 1}, {"present": ["Karen", "Elle"], "num_present": 2},
        {"present": ["Karen"], "num_present": 1}, {"present": ["Karen", "Elle"], "num_present": 2},
    ],
    "time": ["night", "night", "unknown", "early morning"],
    "location": ["warehouse", "warehouse", "parking lot", "parking lot"],
}  # fmt: skip
#: Conditions whose context is built from the state (scene texts are sent verbatim).
_TEXTS = {"previous_text", "full_context", "previous_image"}
_CONDITIONS = [
    *(n for n in all_condition_names() if n != PLACEBO_CONDITION),
    "predicted_memory-err50",
]
#: The words a context adds of its own (keys, the summary's frame): none names a fact.
_FRAME = {
    *("so", "far", "we", "are", "in", "the", "it", "is", "on", "day", "here", "has", "left"),
    *("and", "description", "present", "true", "false", "location", "time", "characters"),
    *("objects", "null"),
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def _gold_stories(tmp_path: Path) -> list[tuple[Story, dict[str, Any]]]:
    path = tmp_path / "vwp_karen.json"
    path.write_text(json.dumps([KAREN]))
    return [(build_gold_story(n), n.gold) for n in read_narratives([path, *FILES])]


def _source_words(gold: Any) -> set[str]:
    texts = [*gold.profile.keys(), *map(str, gold.profile.values())]
    texts += [t for t in gold.time + gold.location if isinstance(t, str)]
    return set().union(*map(_words, texts))


def _sent(story: Story, name: str, k: int) -> str:
    ctx = get_condition(name).context(story, k)
    return (ctx.text or "") + (canonical_json(ctx.data).decode() if ctx.data else "")


def test_karens_structured_memory_is_her_profile_and_the_annotated_place(tmp_path: Path) -> None:
    story = _gold_stories(tmp_path)[0][0]
    karen = {"description": "long brown hair and a red cardigan", "present": True}
    elle = {"description": "a short woman with curly grey hair in a denim jacket"}
    memory = get_condition("structured_memory").context
    assert memory(story, 2).data == {
        "location": "warehouse", "time": "night", "day": 1,
        "characters": {"Karen": karen}, "objects": {},
    }  # fmt: skip
    # scene 3's time is unknown: no time; the parking lot stays a parking lot
    assert memory(story, 4).data == {
        "location": "parking lot",
        "characters": {"Karen": karen, "Elle": {**elle, "present": False}}, "objects": {},
    }  # fmt: skip
    assert get_condition("summarized_state").context(story, 4).text == (
        "So far: we are in the parking lot. Karen (long brown hair and a red cardigan) is "
        "here. Elle (a short woman with curly grey hair in a denim jacket) has left."
    )
    assert story.scenes[0].state.location != "warehouse"  # a placeholder is held


def test_every_condition_sends_only_the_annotations_words(tmp_path: Path) -> None:
    checked = 0
    for story, gold in _gold_stories(tmp_path):
        allowed = _source_words(gold) | _FRAME
        for name in _CONDITIONS:
            for k in range(2, len(story.scenes) + 1):
                sent = _sent(story, name, k)
                assert "tone-" not in sent
                if name in _TEXTS:
                    continue
                if name.startswith("predicted_memory"):  # misreads are vocabulary values
                    data = get_condition(name).context(story, k).data or {}
                    assert not {"weather", "order"} & set(data)
                    assert all(set(c) <= {"description", "present"}
                               for c in data["characters"].values())  # fmt: skip
                    continue
                extra = _words(sent) - allowed
                assert not extra, (story.id, name, k, extra, sent)
                checked += 1
        for k in range(2, len(story.scenes) + 1):
            data = get_condition("structured_memory").context(story, k).data or {}
            for who, entry in data["characters"].items():
                assert set(entry) == {"description", "present"}
                assert entry["description"] == " ".join(str(gold.profile[who]).split())
            assert "weather" not in data and "order" not in data
    assert checked > 200


def test_the_placebo_says_it_cannot_apply_to_an_imported_story(tmp_path: Path) -> None:
    story = _gold_stories(tmp_path)[0][0]
    with pytest.raises(InputError, match="imported"):
        get_condition(PLACEBO_CONDITION).context(story, 2)


def _questions(story: Story) -> list[str]:
    out = []
    for scene in story.scenes:
        view = judge_view(scene)
        out += [question_for(r, view).text for r in scene.requirements]
        out += [colour_probe_question(k, view.objects[k].color).text for k in held_objects(scene)]
    return out


def test_no_placeholder_reaches_the_judge(tmp_path: Path) -> None:
    story = _gold_stories(tmp_path)[0][0]
    karen = story.world.characters[0]
    assert (karen.skin, karen.hair_color, karen.trousers) == ("tone-1", "black", "maroon")
    text = " ".join(_questions(story)).lower()
    for placeholder in ("very light", "black hair", "maroon", "beach", "park ", "clear", "tone-"):
        assert placeholder not in text
    assert "warehouse" in text and "brown hair" in text


_FREE = [
    "In the castle, in the morning; the weather is foggy. Ama has light skin and short black "
    "hair, wears a tartan top, blue trousers and a crown, and is standing.",
    "Ama sings a song to the walls.",
    "Everyone goes to the park. Ama is here.",
]
_UNKNOWN = ["Ama has light skin and short black hair, wears a red top, blue trousers and a hat, "
            "and is standing.", "Ama is waving now."]  # fmt: skip


def test_an_llm_read_import_keeps_its_free_text_and_omits_what_it_does_not_give(
    tmp_path: Path,
) -> None:
    (tmp_path / "free.txt").write_text("\n\n".join(_FREE))
    (tmp_path / "quiet.txt").write_text("\n\n".join(_UNKNOWN))
    got = CliRunner().invoke(cli, ["suite", "import", str(tmp_path / "free.txt"),
                                   str(tmp_path / "quiet.txt"), "--llm", "mock", "--out",
                                   str(tmp_path / "o")])  # fmt: skip
    assert got.exit_code == 0, got.output
    stories = {s.id: s for s in load_suite(tmp_path / "o")}
    free, quiet = stories["free"], stories["quiet"]
    assert free.scenes[0].state.location == "beach"  # the castle's placeholder
    memory = get_condition("structured_memory").context(free, 2).data
    assert memory == {
        "location": "castle", "time": "morning", "day": 1, "weather": "foggy",
        "characters": {"Ama": {"skin": "light", "hair": "short black hair", "top": "tartan",
                               "trousers": "blue", "accessory": "crown", "pose": "standing",
                               "present": True}},
        "objects": {},
    }  # fmt: skip
    summary = get_condition("summarized_state").context(free, 2).text
    assert summary == (
        "So far: we are in the castle; it is morning on day 1; the weather is foggy. Ama has "
        "light skin and short black hair, wears a tartan top, blue trousers and a crown, and "
        "is here and standing."
    )
    # the place, time and weather quiet.txt never gives are left out, under every condition
    assert quiet.scenes[0].state.weather == "clear" and quiet.scenes[0].state.location == "park"
    for name in _CONDITIONS:
        sent = _sent(quiet, name, 2)
        for placeholder in ("park", "clear", "beach", "tone-"):
            assert placeholder not in sent, (name, sent)
    quiet_memory = get_condition("structured_memory").context(quiet, 2).data or {}
    assert set(quiet_memory) == {"characters", "objects"}


def test_an_object_of_unknown_colour_is_sent_and_asked_about_without_one() -> None:
    scenes = ["In the park, in the morning; the weather is clear. Ama has light skin and short "
              "black hair, wears a red top, blue trousers and a hat, and is standing. A red "
              "umbrella, which is closed, is in Ama's hands.",
              "In the park. Ama puts the umbrella down on the ground.",
              "In the park. Ama is here."]  # fmt: skip
    answer = read_story(scenes)
    answer["objects"][0]["color"] = "unknown"
    story = build_story(parse_answer(json.dumps(answer), 3), scenes, "umbrella", source="t",
                        llm="test")  # fmt: skip
    assert story.world.objects[0].color == "red"  # the placeholder
    for k in (2, 3):
        memory = get_condition("structured_memory").context(story, k).data or {}
        assert "color" not in memory["objects"]["umbrella"]
        assert "red umbrella" not in _sent(story, "summarized_state", k)
    assert memory["objects"]["umbrella"]["place"] == "park"
    assert "The umbrella is closed, on the ground in the park." in _sent(
        story, "summarized_state", 3
    )
    questions = _questions(story)
    assert not [q for q in questions if "red umbrella" in q]
    assert any("umbrella" in q for q in questions)
