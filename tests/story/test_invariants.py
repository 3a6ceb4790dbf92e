"""`vsb suite validate` enforces the generator invariants and checks stored requirements.

Each impossible story of issue #10 item 3 is built from a valid default story and must be
reported with the file, a JSON pointer, the scene and (for requirements) the requirement id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vsb.cli.main import main
from vsb.state import replay
from vsb.story.invariants import state_problems, story_problems
from vsb.story.io import iter_problems
from vsb.story.models import Event, Scene, Story, World
from vsb.story.requirements import derive_story

Doc = dict[str, Any]


def _doc(suite_dir: Path, story_id: str) -> Doc:
    doc: Doc = json.loads((suite_dir / f"{story_id}.json").read_text())
    return doc


def _problems(tmp_path: Path, doc: Doc) -> list[str]:
    path = tmp_path / f"{doc['id']}.json"
    path.write_text(json.dumps(doc))
    return [str(p) for p in iter_problems(path)]


def _rebuilt(story: Story, world: World, events: list[list[Event]] | None = None) -> Doc:
    """``story`` with another world (or events) and every derived part made consistent, so
    only the invariant under test can fail."""
    scene_events = events if events is not None else [sc.events for sc in story.scenes]
    states = replay(world, scene_events, story.id)
    d = derive_story(world, scene_events, states)
    scenes = [
        Scene(index=k, events=ev, text=t, state=st, requirements=r)
        for k, (ev, t, st, r) in enumerate(
            zip(scene_events, d.texts, states, d.requirements, strict=True), start=1
        )
    ]
    rebuilt = story.model_copy(
        update={"world": world, "scenes": scenes, "causal_links": d.causal_links}
    )
    return json.loads(rebuilt.model_dump_json())


def test_default_suite_has_no_invariant_problems(default_suite: list[Story]) -> None:
    for story in default_suite:
        states = [sc.state for sc in story.scenes]
        assert list(story_problems(story, states, story.id)) == [], story.id


# --- impossible events: refused by the state machine, reported by validate -----------------


def _insert(scene: int, event: Doc) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        doc["scenes"][scene]["events"].insert(0, event)

    return edit


def _take_off_missing(doc: Doc) -> None:
    """Take an accessory off, then take it off again: the second time none is worn."""
    c = next(c for c in doc["world"]["characters"] if c["accessory"] != "none")
    ev = {"type": "change_attr", "character": c["name"], "attribute": "accessory", "value": "none"}
    doc["scenes"][1]["events"][:0] = [ev, dict(ev)]


def _second_object_to_holder(doc: Doc) -> None:
    objs = doc["world"]["objects"]
    objs[1]["initial_holder"] = objs[0]["initial_holder"]


def _counted_in_hands(doc: Doc) -> None:
    counted = next(o for o in doc["world"]["objects"] if o["count"] is not None)
    counted["initial_holder"] = doc["world"]["characters"][0]["name"]


@pytest.mark.parametrize(
    ("story_id", "edit", "rule"),
    [
        # takes off an accessory that is not worn ("takes off the none")
        ("possession-medium-a", _take_off_missing, "attr_unchanged"),
        # one person holding two objects
        ("possession-medium-a", _second_object_to_holder, "hands_full"),
        # a counted object held by someone
        ("counting-medium-a", _counted_in_hands, "counted_held"),
    ],
)
def test_impossible_story_is_refused(
    tmp_path: Path, suite_dir: Path, story_id: str, edit: Callable[[Doc], None], rule: str
) -> None:
    doc = _doc(suite_dir, story_id)
    edit(doc)
    problems = _problems(tmp_path, doc)
    assert any(f"impossible transition ({rule})" in p for p in problems), problems


# --- invariants that are not transitions ----------------------------------------------------


def _characters(world: World, **changes: Any) -> World:
    chars = list(world.characters)
    chars[1] = chars[1].model_copy(update=changes)
    return world.model_copy(update={"characters": chars})


def _two_character_story(default_suite: list[Story]) -> Story:
    return next(s for s in default_suite if s.id == "possession-medium-a")


def test_identical_skin_and_hair_is_reported(tmp_path: Path, default_suite: list[Story]) -> None:
    story = _two_character_story(default_suite)
    first = story.world.characters[0]
    world = _characters(story.world, skin=first.skin, hair_color=first.hair_color)
    problems = _problems(tmp_path, _rebuilt(story, world))
    assert len(problems) == 1, problems
    assert "/world/characters/1: " in problems[0]
    assert "same skin and hair colour" in problems[0] and first.name in problems[0]


def test_same_top_or_top_like_trousers_is_reported(
    tmp_path: Path, default_suite: list[Story]
) -> None:
    story = _two_character_story(default_suite)
    a, b = story.world.characters[:2]
    same_top = _characters(story.world, top=a.top, trousers=b.trousers)
    if b.trousers == a.top:  # keep the top/trousers rule out of this case
        same_top = _characters(story.world, top=a.top, trousers=b.top)
    problems = _problems(tmp_path, _rebuilt(story, same_top))
    assert any("/world/characters/1/top: " in p and "same top colour" in p for p in problems)
    clash = _characters(story.world, trousers=b.top)
    problems = _problems(tmp_path, _rebuilt(story, clash))
    assert len(problems) == 1 and "/world/characters/1/trousers: " in problems[0], problems


def _quiet_scene(default_suite: list[Story]) -> tuple[Story, int]:
    """A story and a later scene whose events (weather, poses) nothing later depends on."""
    for story in default_suite:
        for i, sc in enumerate(story.scenes[1:], start=1):
            if all(e.type in ("set_weather", "set_pose") for e in sc.events):
                return story, i
    raise AssertionError("no scene of weather and poses only")  # pragma: no cover


def test_scene_events_rules(tmp_path: Path, default_suite: list[Story]) -> None:
    story, i = _quiet_scene(default_suite)
    events = [list(sc.events) for sc in story.scenes]
    empty = [*events[:i], [], *events[i + 1 :]]
    problems = _problems(tmp_path, _rebuilt(story, story.world, empty))
    assert problems == [f"{tmp_path / story.id}.json: /scenes/{i}/events: scene {i + 1} has no "
                        "events (every later scene has one)"]  # fmt: skip
    early = [events[i], *events[1:]]
    problems = _problems(tmp_path, _rebuilt(story, story.world, early))
    assert problems == [f"{tmp_path / story.id}.json: /scenes/0/events: scene 1 shows the "
                        "world's initial state and has no events"]  # fmt: skip


def test_state_problems_name_each_broken_invariant(default_suite: list[Story]) -> None:
    story = _two_character_story(default_suite)
    s = story.scenes[0].state
    a, b = story.world.characters[0].name, story.world.characters[1].name
    kinds = sorted(s.objects)
    objs = {k: o.model_copy(update={"holder": a, "place": None}) for k, o in s.objects.items()}
    chars = {**s.characters, b: s.characters[b].model_copy(update={"top": s.characters[a].top})}
    broken = s.model_copy(update={"objects": objs, "characters": chars})
    problems = state_problems(broken)
    assert f"{a} holds two objects ({kinds[0]}, {kinds[1]})" in problems
    assert any("same top colour" in p for p in problems)
    assert state_problems(s) == []


# --- stored requirements against the ones derived from the replayed states ------------------


def _req_index(doc: Doc, scene: int, attribute: str) -> int:
    reqs = doc["scenes"][scene]["requirements"]
    return next(j for j, r in enumerate(reqs) if r["attribute"] == attribute)


def test_requirement_contradicting_the_state_is_reported(tmp_path: Path, suite_dir: Path) -> None:
    doc = _doc(suite_dir, "possession-medium-a")
    j = _req_index(doc, 2, "holder")
    req = doc["scenes"][2]["requirements"][j]
    names = [c["name"] for c in doc["world"]["characters"]]
    right = req["expected"]
    req["expected"] = next(n for n in names if n != right)
    problems = _problems(tmp_path, doc)
    assert len(problems) == 1, problems
    p = problems[0]
    assert p.startswith(f"{tmp_path / 'possession-medium-a.json'}: /scenes/2/requirements/{j}: ")
    assert f"scene 3 requirement {req['id']}: expected" in p and json.dumps(right) in p


@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        (lambda reqs: reqs.pop(_first(reqs, "top")), "lacks requirement s2."),
        (lambda reqs: reqs.append({**reqs[0], "id": "s2.scene.mood", "attribute": "mood"}),
         "requirement s2.scene.mood is not derived from the events"),
        (lambda reqs: reqs[_first(reqs, "top")].update(source="prompt"),
         "source \"prompt\" differs from the derived \"memory\""),
        (lambda reqs: reqs[_first(reqs, "top")].update(taxonomy="identity_drift"),
         "taxonomy \"identity_drift\" differs from the derived \"clothing_change\""),
    ],
)  # fmt: skip
def test_missing_extra_or_relabelled_requirement_is_reported(
    tmp_path: Path, suite_dir: Path, edit: Callable[[list[Doc]], object], expect: str
) -> None:
    doc = _doc(suite_dir, "possession-medium-a")
    edit(doc["scenes"][1]["requirements"])
    problems = _problems(tmp_path, doc)
    assert len(problems) == 1 and expect in problems[0], problems
    assert "/scenes/1/requirements" in problems[0]


def _first(reqs: list[Doc], attribute: str) -> int:
    return next(j for j, r in enumerate(reqs) if r["attribute"] == attribute)


def test_causal_links_are_checked(tmp_path: Path, suite_dir: Path) -> None:
    doc = _doc(suite_dir, "cause_effect-medium-a")
    assert doc["causal_links"]
    doc["causal_links"][0]["effect_scenes"] = []
    problems = _problems(tmp_path, doc)
    assert any("/causal_links/0: causal link 0 differs" in p for p in problems), problems


def test_cli_validate_prints_one_line_per_problem(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _doc(suite_dir, "possession-medium-a")
    doc["scenes"][1]["requirements"][0]["expected"] = False
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert main(["suite", "validate", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "/scenes/1/requirements/0: scene 2 requirement s2." in lines[0]
