"""A scene state written for a model: as compact JSON (structured memory, less a fact group
for an ablation) or as one paragraph in plain English (summarized state)."""

from __future__ import annotations

from typing import Any

from vsb.story.context.facts import GROUP_KEYS
from vsb.story.models import SceneState


def state_json(state: SceneState, without: str | None = None) -> dict[str, Any]:
    """The state fields a model needs, as plain JSON (characters seen so far, objects that
    have entered the story), less the keys of the fact group ``without`` (an ablation)."""
    chars: dict[str, Any] = {}
    for name, c in state.characters.items():
        if not c.seen:
            continue
        chars[name] = {
            "skin": c.skin,
            "hair": [c.hair_color, c.hair_style],
            "top": c.top,
            "trousers": c.trousers,
            "accessory": c.accessory,
            "pose": c.pose,
            "present": c.present,
        }
    objs: dict[str, Any] = {}
    for kind, o in state.objects.items():
        if not o.appeared:
            continue
        entry: dict[str, Any] = {"color": o.color, "state": o.state}
        if o.count is not None:
            entry["count"] = o.count
        if o.removed:
            entry["removed"] = True
        elif o.holder is not None:
            entry["holder"] = o.holder
        else:
            entry["place"] = o.place
        objs[kind] = entry
    out = {
        "location": state.location,
        "time": state.time,
        "day": state.day,
        "weather": state.weather,
        "order": list(state.order),
        "characters": chars,
        "objects": objs,
    }
    if without is not None:
        drop = GROUP_KEYS[without]
        out = {k: v for k, v in out.items() if k not in drop}
        for c in chars.values():
            for key in drop:
                c.pop(key, None)
    return out


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def state_summary(state: SceneState) -> str:
    """One paragraph stating every persistent fact of ``state`` in plain English."""
    parts = [
        f"So far: we are in the {state.location}, in the {state.time} of day {state.day}; "
        f"the weather is {state.weather}."
    ]
    for name, c in state.characters.items():
        if not c.seen:
            continue
        acc = "no accessory" if c.accessory == "none" else f"a {c.accessory}"
        where = f"is here and {c.pose}" if c.present else "has left"
        parts.append(
            f"{name} has {c.skin} skin and {c.hair_color} hair worn {c.hair_style}, wears a "
            f"{c.top} top, {c.trousers} trousers and {acc}, and {where}."
        )
    if len(state.order) >= 2:
        parts.append(f"From left to right: {_join(state.order)}.")
    for kind, o in state.objects.items():
        if not o.appeared:
            continue
        what = f"{o.count} {o.color} {kind}(s)" if o.count is not None else f"the {o.color} {kind}"
        if o.removed:
            parts.append(f"{what[0].upper()}{what[1:]} was taken away for good.")
            continue
        where = f"held by {o.holder}" if o.holder else f"on the ground in the {o.place}"
        parts.append(f"{what[0].upper()}{what[1:]} is {o.state}, {where}.")
    return " ".join(parts)
