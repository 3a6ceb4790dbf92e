"""The blind extractor: round trips per attribute value and per object kind × state."""

from __future__ import annotations

import inspect
import io
import itertools
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from eval_helpers import character, first_state, with_char, with_obj, world
from PIL import Image

from vsb.evaluators.extractor import extract
from vsb.evaluators.render.detected import DetectedState, EntityVocabulary
from vsb.render import render_indices, render_png
from vsb.story import vocab
from vsb.story.models import WorldObject

TRIO = [
    character("Ama", skin="tone-1", hair_color="blond", top="red"),
    character("Bo", skin="tone-4", hair_color="black", top="green", hair_style="long"),
    character("Kai", skin="tone-6", hair_color="white", top="yellow", accessory="bag"),
]
OBJ_WORLD = world(
    TRIO,
    [WorldObject(kind=k, color="blue", initial_state=vocab.OBJECT_KINDS[k].states[0],
                 count=3 if vocab.OBJECT_KINDS[k].counted else None)
     for k in ("umbrella",)],
)  # fmt: skip


def _everything(w: object) -> EntityVocabulary:
    v = EntityVocabulary.from_world(w)  # type: ignore[arg-type]
    return EntityVocabulary(**{**vars(v), "object_kinds": tuple(vocab.OBJECT_KINDS)})


def test_extract_cannot_receive_an_expected_state() -> None:
    sig = inspect.signature(extract).parameters
    assert list(sig) == ["image", "vocab", "counts"]
    assert sig["counts"].annotation == "NDArray[np.intp] | None"  # pixel counts, nothing else
    for f in fields(EntityVocabulary):
        assert f.type in ("tuple[str, ...]",), f"{f.name}: {f.type}"
    src = inspect.signature(EntityVocabulary.from_world).parameters
    assert list(src) == ["world"] and src["world"].annotation == "World"


VALUES = [
    *[("skin", v) for v in vocab.SKIN_TONES],
    *[("hair_color", v) for v in vocab.HAIR_COLORS],
    *[("hair_style", v) for v in vocab.HAIR_STYLES],
    *[("top", v) for v in vocab.CLOTHING_COLORS],
    *[("trousers", v) for v in vocab.CLOTHING_COLORS],
    *[("accessory", v) for v in vocab.ACCESSORIES],
    *[("pose", v) for v in vocab.POSES],
]


@pytest.mark.parametrize(("attr", "value"), VALUES)
def test_character_attribute_round_trip(attr: str, value: str) -> None:
    w = world(TRIO)
    voc = EntityVocabulary.from_world(w)
    for name in ("Ama", "Bo", "Kai"):  # in every slot
        s = with_char(first_state(w), name, **{attr: value})
        for seed in (0, 1):
            d = extract(render_png(s, seed=seed), voc)
            assert len(d.people) == 3
            i = s.order.index(name)
            assert getattr(d.people[i], attr) == value
            assert [p.skin for p in d.people] == [s.characters[n].skin for n in s.order]


def test_style_pose_accessory_combinations_round_trip() -> None:
    w = world([character("Ama")])
    voc = EntityVocabulary.from_world(w)
    combos = itertools.product(vocab.HAIR_STYLES, vocab.POSES, vocab.ACCESSORIES)
    for k, (style, pose, acc) in enumerate(combos):
        s = with_char(first_state(w), "Ama", hair_style=style, pose=pose, accessory=acc)
        (p,) = extract(render_indices(s, seed=k), voc).people
        assert (p.hair_style, p.pose, p.accessory) == (style, pose, acc)


KIND_STATES = [(k, st) for k, kind in vocab.OBJECT_KINDS.items() for st in kind.states]


@pytest.mark.parametrize(("kind", "state"), KIND_STATES)
def test_object_kind_and_state_round_trip(kind: str, state: str) -> None:
    counted = vocab.OBJECT_KINDS[kind].counted
    w = world(
        TRIO,
        [WorldObject(kind=kind, color="red", initial_state=state, count=2 if counted else None),
         WorldObject(kind="coin" if kind != "coin" else "apple", color="red",
                     initial_state="whole", count=4)],
    )  # fmt: skip
    voc = _everything(w)
    base = first_state(w)
    holders: list[str | None] = [None] if counted else [None, "Ama", "Bo", "Kai"]
    for holder, color, pose in itertools.product(
        holders, vocab.OBJECT_COLORS, ("standing", "cheering")
    ):
        s = with_obj(base, kind, color=color, holder=holder, place=None if holder else "park")
        if holder:
            s = with_char(s, holder, pose=pose)
        d = extract(render_png(s, seed=len(color)), voc)
        found = d.objects_of(kind)
        assert len(found) == 1, d.objects
        o = found[0]
        assert (o.kind, o.state, o.color) == (kind, state, color)
        held = None if o.holder is None else s.order[o.holder]
        assert held == holder and o.on_ground == (holder is None)
        assert o.count == (2 if counted else None)
        other = d.objects_of("coin" if kind != "coin" else "apple")
        assert [x.count for x in other] == [4]


@pytest.mark.parametrize("kind", ["apple", "coin", "flower"])
def test_counts_round_trip(kind: str) -> None:
    first = vocab.OBJECT_KINDS[kind].states[0]
    w = world(TRIO, [WorldObject(kind=kind, color="yellow", initial_state=first, count=1)])
    voc = EntityVocabulary.from_world(w)
    for n in range(0, vocab.MAX_COUNT + 1):
        s = with_obj(first_state(w), kind, count=n)
        found = extract(render_png(s, seed=n), voc).objects_of(kind)
        assert [o.count for o in found] == ([n] if n else [])


def test_environment_round_trip() -> None:
    w = world([character("Ama")])
    voc = EntityVocabulary.from_world(w)
    base = first_state(w)
    combos = itertools.product(vocab.LOCATIONS, vocab.TIMES, vocab.WEATHERS)
    for k, (loc, time, weather) in enumerate(combos):
        s = base.model_copy(update={"location": loc, "time": time, "weather": weather})
        d = extract(render_indices(s, seed=k), voc)
        assert (d.location, d.time, d.weather) == (loc, time, weather)


def test_every_image_input_gives_the_same_reading(tmp_path: Path) -> None:
    w = world(TRIO, [WorldObject(kind="vase", color="teal", initial_state="cracked")])
    voc = EntityVocabulary.from_world(w)
    s = first_state(w)
    png = render_png(s, seed=5)
    path = tmp_path / "x.png"
    path.write_bytes(png)
    with Image.open(io.BytesIO(png)) as im:
        rgb = np.asarray(im.convert("RGB"))
        reference = extract(im, voc)
    inputs = [png, path, str(path), rgb, render_indices(s, seed=5)]
    readings: list[DetectedState] = [extract(x, voc) for x in inputs]
    assert all(r == reference for r in readings)
    assert len(reference.people) == 3 and reference.objects[0].state == "cracked"


def test_objects_outside_the_vocabulary_are_not_named() -> None:
    w = world(TRIO, [WorldObject(kind="box", color="pink", initial_state="open")])
    voc = EntityVocabulary(**{**vars(EntityVocabulary.from_world(w)), "object_kinds": ()})
    (o,) = extract(render_png(first_state(w), seed=0), voc).objects
    assert o.kind is None and o.color == "pink"
