"""A scene state written for a model: as compact JSON (structured memory, less a fact group
for an ablation) or as one paragraph in plain English (summarized state)."""

from __future__ import annotations

from typing import Any

from vsb.story import vocab, words
from vsb.story.context.facts import GROUP_KEYS
from vsb.story.models import SceneState


def state_json(state: SceneState, without: str | None = None) -> dict[str, Any]:
    """The state fields a model needs, as plain JSON (characters seen so far, objects that
    have entered the story), less the keys of the fact group ``without`` (an ablation), in
    the story's codes; a model is sent ``words.in_words`` of it (``memory_context``)."""
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
    return out if without is None else drop_group(out, without)


def drop_group(out: dict[str, Any], without: str) -> dict[str, Any]:
    """A context without the facts of the group ``without`` (an ablation): its keys dropped
    from the top level and from every character (in place)."""
    drop = GROUP_KEYS[without]
    for c in out.get("characters", {}).values():
        for key in drop:
            c.pop(key, None)
    return {k: v for k, v in out.items() if k not in drop}


def memory_context(state: SceneState, without: str | None = None) -> dict[str, Any]:
    """The structured memory a model is sent: ``state_json`` in words (``vsb.story.words``)."""
    return words.in_words(state_json(state, without))


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def state_summary(state: SceneState) -> str:
    """One paragraph stating every persistent fact of ``state`` in plain English, each fact
    in the words of ``vsb.story.words`` (as the scene text and the judge name it)."""
    parts = [
        f"So far: we are in the {state.location}, in the {state.time} of day {state.day}; "
        f"the weather is {state.weather}."
    ]
    for name, c in state.characters.items():
        if not c.seen:
            continue
        where = f"is here and {words.pose(c.pose)}" if c.present else "has left"
        parts.append(
            f"{name} has {words.skin(c.skin)} and {words.hair(c.hair_color, c.hair_style)}, "
            f"wears {words.article(f'{c.top} top')}, {c.trousers} trousers and "
            f"{words.accessory(c.accessory)}, and {where}."
        )
    if len(state.order) >= 2:
        parts.append(f"From left to right: {_join(state.order)}.")
    for kind, o in state.objects.items():
        if not o.appeared:
            continue
        if o.count is not None:
            k = vocab.OBJECT_KINDS.get(kind)
            plural = k.plural if k is not None else f"{kind}s"
            what = f"{words.count(kind, plural, o.count)}, all {o.color},"
            be = "is" if o.count == 1 else "are"
        else:
            what, be = f"the {o.color} {kind}", "is"
        if o.removed:
            parts.append(
                f"{what[0].upper()}{what[1:]} {'was' if be == 'is' else 'were'} "
                "taken away for good."
            )
            continue
        where = f"held by {o.holder}" if o.holder else f"on the ground in the {o.place}"
        parts.append(f"{what[0].upper()}{what[1:]} {be} {o.state}, {where}.")
    return " ".join(parts)
