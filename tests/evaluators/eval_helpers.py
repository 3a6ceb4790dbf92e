"""Hand-built worlds and state corruptions shared by the evaluator tests."""

from __future__ import annotations

from typing import Any

from vsb.state import replay
from vsb.story.models import (
    Character,
    ObjectState,
    Requirement,
    Scene,
    SceneState,
    Story,
    World,
    WorldObject,
)
from vsb.story.requirements import build_requirements


def character(name: str, **kw: Any) -> Character:
    base: dict[str, Any] = dict(
        skin="tone-3", hair_color="black", hair_style="short", top="red", trousers="blue",
        accessory="none", pose="standing",
    )  # fmt: skip
    base.update(kw)
    return Character(name=name, **base)


def world(chars: list[Character], objects: list[WorldObject] | None = None, **kw: Any) -> World:
    base: dict[str, Any] = dict(locations=["park"], start_time="noon", start_weather="clear")
    base.update(kw)
    return World(characters=chars, objects=objects or [], **base)


def first_state(w: World) -> SceneState:
    return replay(w, [[]], "t")[0]


def with_char(state: SceneState, name: str, **update: Any) -> SceneState:
    chars = dict(state.characters)
    chars[name] = chars[name].model_copy(update=update)
    return state.model_copy(update={"characters": chars})


def with_obj(scene_state: SceneState, kind: str, **update: Any) -> SceneState:
    objs = dict(scene_state.objects)
    objs[kind] = objs[kind].model_copy(update=update)
    return scene_state.model_copy(update={"objects": objs})


def scene_of(w: World, state: SceneState, index: int = 1) -> Scene:
    reqs: list[Requirement] = build_requirements(index, state, w, set(), [], [])
    return Scene(index=index, events=[], text="", state=state, requirements=reqs)


def story_of(w: World, state: SceneState) -> Story:
    return Story(
        id="t", category="wardrobe", difficulty="easy", seed=0, world=w,
        scenes=[scene_of(w, state)],
    )  # fmt: skip


def obj(state: SceneState, kind: str) -> ObjectState:
    return state.objects[kind]
