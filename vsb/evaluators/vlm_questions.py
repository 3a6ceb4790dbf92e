"""Requirements as plain-words YES/NO questions for the VLM judge.

A judge cannot know the story's names, so a question locates each character by the identity
the story fixed for them (skin tone, hair colour and style), never by name alone and never
by clothes that may have changed. A question never reveals the answer of the fact it asks:
a character's skin is asked with the hair as the locator ("the person with short black
hair: light skin?"), the hair with the skin, and every other fact with both.
``Question.expect`` is the answer that satisfies the requirement (UNSURE never does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from vsb.errors import InputError
from vsb.story.models import Requirement, Scene, SceneState
from vsb.vocab import OBJECT_KINDS

_SKIN = {
    "tone-1": "very light",
    "tone-2": "light",
    "tone-3": "medium-light",
    "tone-4": "medium-dark",
    "tone-5": "dark",
    "tone-6": "very dark",
}
_POSE = {
    "standing": "standing",
    "sitting": "sitting",
    "waving": "waving",
    "cheering": "cheering with both arms raised",
}
_ACCESSORY = {
    "hat": "wearing a hat",
    "scarf": "wearing a scarf",
    "glasses": "wearing glasses",
    "bag": "carrying a bag",
}
_PLACE = {"beach": "on a beach", "street": "on a street"}
_WEATHER = {
    "clear": "Is the weather clear?",
    "cloudy": "Is it cloudy?",
    "rainy": "Is it raining?",
    "snowy": "Is it snowing?",
}
_TIME = {
    "morning": "Is it morning?",
    "noon": "Is it midday?",
    "afternoon": "Is it afternoon?",
    "evening": "Is it evening?",
    "night": "Is it night?",
}


@dataclass(frozen=True)
class Question:
    """One requirement as a question, and the answer that satisfies the requirement."""

    text: str
    expect: Literal["YES", "NO"]


def _a(words: str) -> str:
    return ("an " if words[:1] in "aeiou" else "a ") + words


def skin_words(skin: str) -> str:
    """``tone-2`` -> ``light skin``."""
    return f"{_SKIN.get(skin, skin)} skin"


def hair_words(value: Any) -> str:
    """``["black", "short"]`` -> ``short black hair``; ponytails and buns read naturally."""
    parts = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    color, hair_style = [*parts, "", ""][:2]
    if hair_style in ("bun", "ponytail"):
        return f"{color} hair in {_a(hair_style)}"
    return f"{hair_style} {color} hair".strip()


def person(state: SceneState, name: str, *, without: str = "") -> str:
    """``the person with light skin and short black hair``; ``without`` leaves out the
    identity fact being asked (``skin`` or ``hair``)."""
    c = state.characters.get(name)
    if c is None:
        raise InputError(f"the VLM judge cannot locate {name!r}: not a character of the story")
    parts = []
    if without != "skin":
        parts.append(skin_words(c.skin))
    if without != "hair":
        parts.append(hair_words([c.hair_color, c.hair_style]))
    return "the person with " + " and ".join(parts)


def _character_question(req: Requirement, state: SceneState) -> Question:
    name, attr, value = req.subject, req.attribute, req.expected
    who = person(state, name)
    if attr == "present":
        text = f"Is there a person with {who.removeprefix('the person with ')} in the picture?"
        return Question(text, "YES" if value is True else "NO")
    if attr == "skin":
        return Question(
            f"Does {person(state, name, without='skin')} have {skin_words(str(value))}?", "YES"
        )
    if attr == "hair":
        return Question(
            f"Does {person(state, name, without='hair')} have {hair_words(value)}?", "YES"
        )
    if attr == "top":
        return Question(f"Is {who} wearing {_a(f'{value} top')}?", "YES")
    if attr == "trousers":
        return Question(f"Is {who} wearing {value} trousers?", "YES")
    if attr == "accessory":
        if value == "none":
            return Question(f"Is {who} wearing a hat, a scarf or glasses, or carrying a bag?", "NO")
        return Question(f"Is {who} {_ACCESSORY.get(str(value), f'wearing {value}')}?", "YES")
    if attr == "pose":
        return Question(f"Is {who} {_POSE.get(str(value), str(value))}?", "YES")
    raise InputError(f"the VLM judge has no question for character attribute {attr!r}")


def _object_question(req: Requirement, state: SceneState) -> Question:
    kind, attr, value = req.subject, req.attribute, req.expected
    spec = OBJECT_KINDS.get(kind)
    color = state.objects[kind].color if kind in state.objects else ""
    thing = f"{color} {kind}".strip()
    if attr == "present":
        if value is False:  # removed: no object of this kind, in any colour, may be seen
            return Question(f"Is there {_a(kind)} in the picture?", "NO")
        return Question(f"Is there {_a(thing)} in the picture?", "YES")
    if attr == "holder":
        return Question(f"Is {person(state, str(value))} holding the {thing}?", "YES")
    if attr == "state":
        if spec is not None and spec.counted:
            return Question(f"Are the {color} {spec.plural} {value}?".replace("  ", " "), "YES")
        return Question(f"Is the {thing} {value}?", "YES")
    if attr == "count":
        n = int(value) if isinstance(value, int) else 0
        plural = spec.plural if spec is not None else f"{kind}s"
        if n == 0:
            return Question(f"Are there any {plural} in the picture?", "NO")
        if n == 1:
            return Question(f"Is there exactly one {thing} in the picture?", "YES")
        return Question(f"Are there exactly {n} {color} {plural} in the picture?", "YES")
    raise InputError(f"the VLM judge has no question for object attribute {attr!r}")


def _scene_question(req: Requirement, state: SceneState) -> Question:
    attr, value = req.attribute, req.expected
    if attr == "location":
        where = _PLACE.get(str(value), f"in {_a(str(value))}")
        return Question(f"Is the scene set {where}?", "YES")
    if attr == "weather":
        return Question(_WEATHER.get(str(value), f"Is the weather {value}?"), "YES")
    if attr == "time":
        return Question(_TIME.get(str(value), f"Is it {value}?"), "YES")
    if attr == "order":
        names = list(value) if isinstance(value, list) else [str(value)]
        people = ", then ".join(person(state, str(n)) for n in names)
        return Question(f"From left to right, are the people: {people}?", "YES")
    raise InputError(f"the VLM judge has no question for scene attribute {attr!r}")


def question_for(req: Requirement, state: SceneState) -> Question:
    """The plain-words question for ``req`` in a scene whose expected state is ``state``."""
    if req.subject == "scene":
        return _scene_question(req, state)
    if req.subject in state.objects:
        return _object_question(req, state)
    return _character_question(req, state)


#: Cross-frame facts: (dimension, taxonomy) of each.
PAIR_FACTS: dict[str, tuple[str, str]] = {
    "same_person": ("identity", "identity_drift"),
    "same_clothes": ("clothing", "clothing_change"),
    "same_place": ("environment", "wrong_location"),
}


def _pair_req(k: int, subject: str, attribute: str, expected: bool) -> Requirement:
    dimension, taxonomy = PAIR_FACTS[attribute]
    return Requirement(
        id=f"x{k}.{subject}.{attribute}", dimension=dimension, taxonomy=taxonomy,
        source="memory", subject=subject, attribute=attribute, expected=expected,
    )  # fmt: skip


def pair_questions(prev: Scene, cur: Scene) -> list[tuple[Requirement, Question]]:
    """Cross-frame questions about two consecutive frames (VinaBench's consistency checks,
    with vsb's known truth): for every character in both scenes, whether they look the same
    person and wear the same clothes (YES when the story keeps them), and whether the two
    pictures show the same place (YES when the story stays). The requirement's scene is the
    later frame; its expected value is whether the two should look alike."""
    a, b = prev.state, cur.state
    out = []
    for name, c in b.characters.items():
        p = a.characters.get(name)
        if p is None or not (p.present and c.present):
            continue
        who = person(a, name)
        out.append((
            _pair_req(cur.index, name, "same_person", True),
            Question(f"Is {who} in the first picture also in the second picture, with the "
                     "same skin tone and the same hair colour and style?", "YES"),
        ))  # fmt: skip
        same = (p.top, p.trousers, p.accessory) == (c.top, c.trousers, c.accessory)
        out.append((
            _pair_req(cur.index, name, "same_clothes", same),
            Question(f"Does {who} wear the same clothes in both pictures?",
                     "YES" if same else "NO"),
        ))  # fmt: skip
    same_place = a.location == b.location
    out.append((
        _pair_req(cur.index, "scene", "same_place", same_place),
        Question("Do the two pictures show the same place?", "YES" if same_place else "NO"),
    ))  # fmt: skip
    return out
