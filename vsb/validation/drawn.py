"""What a simulator drew, seen with perfect vision (the second literal reference judge's eyes).

``drawn_state`` lays the oracle's *rendered values* over a scene's expected state, as the
simulator did before rendering (``vsb.adapters.faults``): a character's look, pose, presence;
an object's colour, holder, state, count, presence; the place, weather, time and order. It
reads a fault's rendered value only, never its label. ``perceived`` is what a reader with
perfect vision sees in that state (a ``DetectedState``: people left to right as the renderer
places them, every object the renderer draws), so a judge built on it answers from the
picture as drawn, free of the blind extractor's reading errors.

``DrawnFrames`` finds the frame of an image by its sha256 (``records.jsonl``) and gives what
was drawn in it. ``render_png(drawn_state(...), seed=jitter_seed(...))`` gives the image's
bytes back (a test and ``scripts/literal_judge_family.py --verify`` check this).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vsb.evaluators.render.detected import DetectedObject, DetectedPerson, DetectedState
from vsb.fsio import iter_jsonl
from vsb.render import layout
from vsb.render.scene import people_drawn
from vsb.story import vocab
from vsb.story.io import load_suite
from vsb.story.models import SceneState, Story

Frame = tuple[str, str, str, int]
"""(model, condition, story_id, scene)."""
_LOOK = ("skin", "top", "trousers", "accessory", "pose")


def drawn_state(state: SceneState, faults: Iterable[dict[str, Any]]) -> SceneState:
    """``state`` with the rendered values of one frame's oracle rows laid over it."""
    scene: dict[str, Any] = {}
    chars = {n: c.model_dump() for n, c in state.characters.items()}
    objs = {k: o.model_dump() for k, o in state.objects.items()}
    order = list(state.order)
    for f in faults:
        subject, attr, value = str(f["subject"]), str(f["attribute"]), f.get("rendered_value")
        if subject == "scene":
            if attr == "order" and isinstance(value, list):
                order = [str(n) for n in value]
            else:
                scene[attr] = value
        elif subject in chars:
            c = chars[subject]
            if attr == "hair" and isinstance(value, list) and len(value) == 2:
                c["hair_color"], c["hair_style"] = (str(v) for v in value)
            elif attr == "present":
                c["present"] = bool(value)
            elif attr in _LOOK:
                c[attr] = value
        elif subject in objs:
            o = objs[subject]
            if attr == "present" and value is False:
                o["removed"] = True
            elif attr == "present":  # drawn although the story removed it (resurrected)
                o.update(removed=False, appeared=True, holder=None, place=None)
                o["count"] = o["count"] if o["count"] != 0 else 1
            elif attr == "color":
                o["color"] = value
            elif attr == "holder":
                o.update(holder=value, place=None)
            elif attr in ("state", "count"):
                o[attr] = value
    location = str(scene.get("location", state.location))
    for o in objs.values():  # what lies here is drawn where the scene is drawn
        if o["holder"] is None and (o["place"] is None or o["place"] == state.location):
            o["place"] = location
    for name, c in chars.items():
        if c["present"] and name not in order:
            order.append(name)  # drawn although not expected: placed after the others
    order = [n for n in order if chars.get(n, {}).get("present")]
    characters = {
        n: (c if c.model_dump() == chars[n] else c.model_copy(update=chars[n]))
        for n, c in state.characters.items()
    }
    objects = {
        k: (o if o.model_dump() == objs[k] else o.model_copy(update=objs[k]))
        for k, o in state.objects.items()
    }
    return state.model_copy(
        update={**scene, "order": order, "characters": characters, "objects": objects}
    )


#: What a figure shows of its character: every attribute the vocabulary draws, and the pose.
_SHOWN = (*vocab.CHARACTER_ATTRIBUTES, "pose")


def perceived(state: SceneState) -> DetectedState:
    """What perfect vision reads in a picture of ``state``: the renderer's people, left to
    right, and every object it draws (held, or lying in the scene)."""
    names = people_drawn(state)
    people = tuple(
        DetectedPerson(x=float(i), **{a: getattr(c, a) for a in _SHOWN})
        for i, c in enumerate(state.characters[n] for n in names)
    )
    slots = layout.object_slots(len(state.objects))
    objects = []
    for j, (kind, o) in enumerate(sorted(state.objects.items())):
        if not state.object_visible(kind) or (o.count is not None and o.count <= 0):
            continue
        held = names.index(o.holder) if o.holder in names else None
        x = float(held) if held is not None else slots[j] / layout.W * max(len(names), 1)
        objects.append(
            DetectedObject(
                kind=kind,
                color=o.color,
                state=o.state,
                count=o.count,
                holder=held,
                on_ground=held is None,
                x=x,
            )
        )
    return DetectedState(people, tuple(objects), state.location, state.time, state.weather)


class DrawnFrames:
    """The frames of a simulator run and what was drawn in each (from its oracle)."""

    def __init__(self, run_dir: str | Path) -> None:
        root = Path(run_dir)
        self.stories: dict[str, Story] = {s.id: s for s in load_suite(root / "suite")}
        self.frames: dict[str, Frame] = {}
        for _, rec in iter_jsonl(root / "records.jsonl"):
            if rec.get("error") is None and rec.get("path"):
                sha = rec.get("sha256") or hashlib.sha256((root / rec["path"]).read_bytes())
                sha = sha if isinstance(sha, str) else sha.hexdigest()
                frame = (rec["model"], rec["condition"], rec["story_id"], int(rec["scene"]))
                self.frames.setdefault(sha, frame)
        self.faults: dict[Frame, list[dict[str, Any]]] = defaultdict(list)
        oracle = root / "oracle" / "faults.jsonl"
        if oracle.is_file():
            for _, f in iter_jsonl(oracle):
                if f.get("visual", True):
                    key = (f["model"], f["condition"], f["story_id"], int(f["scene"]))
                    self.faults[key].append(f)

    def state(self, frame: Frame) -> SceneState:
        """The state drawn in ``frame``."""
        scene = self.stories[frame[2]].scenes[frame[3] - 1]
        return drawn_state(scene.state, self.faults.get(frame, ()))

    def seen(self, image: bytes) -> DetectedState | None:
        """What perfect vision reads in ``image`` (None: not a frame of the run)."""
        frame = self.frames.get(hashlib.sha256(image).hexdigest())
        return None if frame is None else perceived(self.state(frame))
