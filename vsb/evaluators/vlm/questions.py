"""Requirements as plain-words YES/NO questions for the VLM judge.

A judge cannot know the story's names, so a question locates each character by *cues* that
tell them apart in the scene, each used only when no other character of the scene shares
it, in three tiers: identity (skin tone, hair colour: no fault gives them to anyone else),
the top (a fault gives it to someone else only when its owner's top changed too) and the
weak cues (trousers, hair style: a fault may give them to anyone). A locator names the
first tier and each later one "failing that" ("the person with light skin or black hair
(failing that, with a red top; failing that, with blue trousers)"): a reader turns to a
later tier only when no one shows a cue of an earlier one, so a character whose look
drifted is still found, and a bystander who drifted into a weak cue never competes with
the person's own skin. Presence is asked with the identity cues and the top joined by "or"
(never a weak cue, so a missing person is never stood in for); a character drawn with all
of them drifted is not found by it, and the credit rules (``rows``) file that, when
everyone is there, as the drift of those cues (``unrecognised_label``). A question never
reveals the answer of the fact it asks: a fact's own cue is left out of its locator (the
skin is asked of "the person with black hair or a red top"). An object's state and count
are asked without its colour (a recoloured object is still there, in another colour; see
``vsb.validation.truth``); its presence and holder name the story's colour.
``Question.expect`` is the answer that satisfies the requirement (UNSURE never does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from vsb.errors import InputError
from vsb.story import words
from vsb.story.models import Requirement, Scene, SceneState
from vsb.story.vocab import OBJECT_KINDS

_POSE = words.POSE
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
    "noon": "Is it noon?",
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
    """``tone-2`` -> ``light skin`` (``vsb.story.words``: the prompt's own words)."""
    return words.skin(skin)


def hair_words(value: Any) -> str:
    """``["black", "short"]`` -> ``short black hair``; ponytails and buns read naturally
    (``vsb.story.words.hair``, as the prompt says it)."""
    parts = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    color, hair_style = [*parts, "", ""][:2]
    return words.hair(color, hair_style)


def _unique(state: SceneState, name: str, attribute: str) -> str:
    """``name``'s value of ``attribute`` when no other character of the scene shares it
    (an empty value is one the narrative does not give, see ``judge_view``: never a cue)."""
    value = str(getattr(state.characters[name], attribute))
    others = (o for n, o in state.characters.items() if n != name)
    return value if value and all(getattr(o, attribute) != value for o in others) else ""


#: A cue of a locator: (attribute, value) of the character, ``hair_style`` included.
Cue = tuple[str, str]


def locator_cues(
    state: SceneState, name: str, without: tuple[str, ...] = (), *, weak: bool = True
) -> list[list[Cue]]:
    """The cues of ``name`` no other character of the scene shares, in three tiers (see the
    module docstring): identity (skin, hair colour: no fault gives them to anyone else), the
    top (a fault may give it to another person only when its owner's top changed too), and
    the weak cues (trousers, hair style: a fault may give them to anyone); ``without``
    leaves some out (skin, hair, top, trousers), ``weak=False`` the weak tier. Empty tiers
    are dropped. What ``person`` names, as (attribute, value) pairs (``vsb.validation.hidden``
    reads them to find whom a question's words single out in what was drawn)."""
    skin, hair = _unique(state, name, "skin"), _unique(state, name, "hair_color")
    top, trousers = _unique(state, name, "top"), _unique(state, name, "trousers")
    style = _unique(state, name, "hair_style")
    identity = [("skin", skin)] if skin and "skin" not in without else []
    identity += [("hair_color", hair)] if hair and "hair" not in without else []
    clothes = [("top", top)] if top and "top" not in without else []
    loose = [("trousers", trousers)] if weak and trousers and "trousers" not in without else []
    if weak and style and "hair" not in without:
        loose.append(("hair_style", style))
    return [t for t in (identity, clothes, loose) if t]


def _cue_words(cue: Cue) -> str:
    attribute, value = cue
    if attribute == "skin":
        return skin_words(value)
    if attribute == "hair_color":
        return f"{value} hair"
    if attribute in ("top", "trousers"):
        return _a(f"{value} top") if attribute == "top" else f"{value} trousers"
    return _a(value) if value in ("bun", "ponytail") else f"{value} hair"


def _tiers(
    state: SceneState, name: str, without: tuple[str, ...] = (), *, weak: bool = True
) -> list[list[str]]:
    """``locator_cues`` in words."""
    return [[_cue_words(c) for c in t] for t in locator_cues(state, name, without, weak=weak)]


def cue_list(cues: list[str]) -> str:
    """``["light skin", "a red top"]`` -> ``light skin or a red top``."""
    return cues[0] if len(cues) == 1 else ", ".join(cues[:-1]) + " or " + cues[-1]


#: How a locator's later tier is introduced: read only when no one shows an earlier one.
FALLBACK = "failing that, with "


def person(
    state: SceneState, name: str, *, without: tuple[str, ...] = (), weak: bool = True
) -> str:
    """``the person with light skin or black hair (failing that, with a red top; failing
    that, with blue trousers or a bun)``: the cues that tell ``name`` apart, tier by tier
    (``_tiers``), less the ``without`` ones (skin, hair, top, trousers); a later tier is
    read only when no one in the picture shows a cue of an earlier one. With no cue left,
    the full identity."""
    c = state.characters.get(name)
    if c is None:
        raise InputError(f"the VLM judge cannot locate {name!r}: not a character of the story")
    tiers = _tiers(state, name, without, weak=weak)
    if not tiers and not (c.skin and c.hair_color):
        return f"the person called {name}"  # an imported story that does not describe them
    if not tiers:
        return f"the person with {skin_words(c.skin)} and {c.hair_color} hair"
    rest = "; ".join(FALLBACK + cue_list(t) for t in tiers[1:])
    return "the person with " + cue_list(tiers[0]) + (f" ({rest})" if rest else "")


def presence_cues(state: SceneState, name: str) -> str:
    """What the presence question looks for: any of ``name``'s identity cues and top (one
    tier: no one else shows them while ``name`` is missing, as another's top takes
    ``name``'s only when ``name``'s own top changed), else their full identity; never a
    weak cue (a drifted bystander could show it)."""
    cues = [c for t in _tiers(state, name, weak=False) for c in t]
    return cue_list(cues) if cues else person(state, name).removeprefix("the person with ")


def unrecognised_label(state: SceneState, name: str) -> str:
    """The root cause of ``name`` not being found by their presence cues while everyone is
    there: every one of those cues drifted. ``identity_drift`` when they name a skin tone or
    a hair colour (or none is unique: the full identity is asked), ``clothing_change`` when
    the top is the only one."""
    cues = [c for t in _tiers(state, name, weak=False) for c in t]
    return "clothing_change" if cues and all(c.endswith(" top") for c in cues) else "identity_drift"


#: The cue a question about each character attribute leaves out of its locator.
_OWN_CUE = {"skin": ("skin",), "hair": ("hair",), "top": ("top",), "trousers": ("trousers",)}


def question_locators(req: Requirement, state: SceneState) -> list[tuple[str, list[list[Cue]]]]:
    """Whom the question of ``req`` names by a locator (``person``), with that locator's
    cues: a character attribute's subject (less the fact's own cue), a holder check's
    holder, every person of the left-to-right order, a present person's presence (which
    is asked by ``presence_cues``, one tier)."""
    if req.attribute == "holder" and str(req.expected) in state.characters:
        return [(str(req.expected), locator_cues(state, str(req.expected)))]
    if req.subject == "scene" and req.attribute == "order" and isinstance(req.expected, list):
        names = [str(n) for n in req.expected if n in state.characters]
        return [(n, locator_cues(state, n)) for n in names]
    if req.subject not in state.characters:
        return []
    if req.attribute == "present":
        cues = [c for t in locator_cues(state, req.subject, weak=False) for c in t]
        return [(req.subject, [cues])] if cues and req.expected is True else []
    return [(req.subject, locator_cues(state, req.subject, _OWN_CUE.get(req.attribute, ())))]


def unsure_label(req: Requirement, state: SceneState) -> str:
    """The root cause when the judge cannot tell which person a question about people means
    (UNSURE: no one, or more than one, shows its locator's cues): every cue of the locator
    drifted, or another person's drifted into it. ``identity_drift`` when a locator names a
    skin tone, a hair colour or style (or the full identity), ``clothing_change`` when every
    one names only clothes; empty for a question that names no one (``question_locators``:
    a holder check has the holder's, the left-to-right order every named person's)."""
    named = question_locators(req, state) if req.attribute != "present" else []
    if not named:
        return ""
    clothes = [
        bool(tiers) and all(a in ("top", "trousers") for t in tiers for a, _ in t)
        for _, tiers in named
    ]
    return "clothing_change" if all(clothes) else "identity_drift"


def _character_question(req: Requirement, state: SceneState) -> Question:
    name, attr, value = req.subject, req.attribute, req.expected
    who = person(state, name)
    if attr == "present":
        who = person(state, name, weak=False)
        if not who.startswith("the person with "):  # no cue: the narrative does not describe them
            return Question(f"Is {who} in the picture?", "YES" if value is True else "NO")
        text = f"Is there a person with {presence_cues(state, name)} in the picture?"
        return Question(text, "YES" if value is True else "NO")
    if attr == "skin":
        return Question(
            f"Does {person(state, name, without=('skin',))} have {skin_words(str(value))}?", "YES"
        )
    if attr == "hair":
        return Question(
            f"Does {person(state, name, without=('hair',))} have {hair_words(value)}?", "YES"
        )
    if attr == "top":
        who = person(state, name, without=("top",))
        return Question(f"Is {who} wearing {_a(f'{value} top')}?", "YES")
    if attr == "trousers":
        who = person(state, name, without=("trousers",))
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
    if attr == "state":  # the state of the object as drawn, whatever its colour
        if spec is not None and spec.counted:
            return Question(f"Are the {spec.plural} {value}?", "YES")
        return Question(f"Is the {kind} {value}?", "YES")
    if attr == "count":
        n = int(value) if isinstance(value, int) else 0
        plural = spec.plural if spec is not None else f"{kind}s"
        if n == 0:
            return Question(f"Are there any {plural} in the picture?", "NO")
        if n == 1:
            return Question(f"Is there exactly one {kind} in the picture?", "YES")
        return Question(f"Are there exactly {n} {plural} in the picture?", "YES")
    raise InputError(f"the VLM judge has no question for object attribute {attr!r}")


#: The start of the left-to-right order question (others may stand between those named).
ORDER_LEAD = "From left to right, do these people stand in this order:"


def order_probe(state: SceneState, left: str, right: str) -> Question:
    """The auxiliary question whether ``left`` stands left of ``right`` (order labelling)."""
    return Question(
        f"Does {person(state, left)} stand to the left of {person(state, right)}?", "YES"
    )


_PREPOSITION = re.compile(
    r"^(?:in|at|on|under|inside|outside|near|by|beside|behind|above|below|on top of)\s",
    re.IGNORECASE,
)
_DETERMINER = re.compile(r"^(?:a|an|the|his|her|their|its|my|our|your)\s", re.IGNORECASE)


def free_place_question(text: str) -> Question:
    """A place told in free text, named as written: "Is this in a restaurant?", "Is this
    under a bridge?", "Is this in the old mill?"."""
    text = " ".join(text.split())
    if _PREPOSITION.match(text):
        return Question(f"Is this {text}?", "YES")
    if _DETERMINER.match(text):
        return Question(f"Is this in {text}?", "YES")
    return Question(f"Is this in {_a(text)}?", "YES")


def description_question(req: Requirement) -> Question:
    """A character told by a description (gold annotations): a ``profile`` fact asks whether
    someone in the picture fits it (YES), an ``absent`` fact the same (NO)."""
    text = " ".join(str(req.expected).split()).rstrip(".")
    return Question(
        f"Is there someone in the picture who fits this description: {text}?",
        "NO" if req.attribute == "absent" else "YES",
    )


def _scene_question(req: Requirement, state: SceneState) -> Question:
    attr, value = req.attribute, req.expected
    if attr == "location" and req.judged_by == "vlm":
        return free_place_question(str(value))
    if attr == "location":
        where = _PLACE.get(str(value), f"in {_a(str(value))}")
        return Question(f"Is the scene set {where}?", "YES")
    if attr == "weather":
        return Question(_WEATHER.get(str(value), f"Is the weather {value}?"), "YES")
    if attr == "time":
        return Question(_TIME.get(str(value), f"Is it {value}?"), "YES")
    if attr == "order":
        names = list(value) if isinstance(value, list) else [str(value)]
        people = "; then ".join(person(state, str(n)) for n in names)
        return Question(f"{ORDER_LEAD} {people}?", "YES")
    raise InputError(f"the VLM judge has no question for scene attribute {attr!r}")


def question_for(req: Requirement, state: SceneState) -> Question:
    """The plain-words question for ``req`` in a scene whose expected state is ``state``."""
    if req.subject == "scene":
        return _scene_question(req, state)
    if req.subject in state.objects:
        return _object_question(req, state)
    if req.judged_by == "vlm" and req.attribute in ("profile", "absent"):
        return description_question(req)
    if req.subject not in state.characters and req.judged_by == "vlm":
        # an entity outside the render vocabulary (imported stories): is it there?
        return Question(f"Is there {_a(req.subject)} in the picture?", "YES")
    return _character_question(req, state)


#: Character attributes every present character of a generated scene has a requirement for.
_DESCRIBED = ("skin", "top", "trousers")


def judge_view(scene: Scene) -> SceneState:
    """The scene's state as the judge's questions describe it: in an imported story, a
    character attribute told in free text (a ``judged_by`` vlm requirement) takes that text,
    and one the narrative does not give (no requirement) is empty, never a cue; so is the
    colour of an object whose presence or holder is judged by VLM only. A generated
    scene has every requirement, none judged by VLM only: its state is returned unchanged."""
    st = scene.state
    reqs = {(r.subject, r.attribute): r for r in scene.requirements}
    changes: dict[str, Any] = {}
    for name, c in st.characters.items():
        if not c.present:
            continue
        update: dict[str, Any] = {}
        for attr in (*_DESCRIBED, "hair"):
            r = reqs.get((name, attr))
            if r is not None and r.judged_by is None:
                continue
            value = r.expected if r is not None else None
            if attr == "hair":
                parts = [str(v) for v in value] if isinstance(value, list) else ["", ""]
                update["hair_color"], update["hair_style"] = parts[0], parts[1]
            else:
                update[attr] = "" if value is None else str(value)
        if update:
            changes[name] = c.model_copy(update=update)
    colourless = {
        r.subject
        for r in scene.requirements
        if r.subject in st.objects and r.attribute in ("present", "holder") and r.judged_by
    }  # an object whose colour the narrative does not give: asked about without one
    if not changes and not colourless:
        return st
    objects = {k: o.model_copy(update={"color": ""}) if k in colourless else o
               for k, o in st.objects.items()}  # fmt: skip
    return st.model_copy(update={"characters": {**st.characters, **changes}, "objects": objects})


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
        first, second = person(a, name), person(b, name)
        out.append((
            _pair_req(cur.index, name, "same_person", True),
            Question(f"Does {first} in the first picture have the same skin tone, hair colour "
                     f"and hair style as {second} in the second picture?", "YES"),
        ))  # fmt: skip
        same = (p.top, p.trousers, p.accessory) == (c.top, c.trousers, c.accessory)
        no = ("top", "trousers")
        first, second = person(a, name, without=no), person(b, name, without=no)
        out.append((
            _pair_req(cur.index, name, "same_clothes", same),
            Question(f"Does {first} in the first picture wear the same clothes (top, trousers "
                     f"and accessory) as {second} in the second picture?",
                     "YES" if same else "NO"),
        ))  # fmt: skip
    same_place = a.location == b.location
    out.append((
        _pair_req(cur.index, "scene", "same_place", same_place),
        Question("Do the two pictures show the same place?", "YES" if same_place else "NO"),
    ))  # fmt: skip
    return out
