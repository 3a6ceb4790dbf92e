"""Reading a prompt as a model receives it: what it states about the scene to draw.

The inverse of what vsb writes for a model (``vsb.story.text``, ``context.memory``,
``words``): ``read_prompt(prompt)`` takes the full prompt text of one request (the context
then ``Draw this scene: …``, or the scene text alone), and returns a ``Reading``, the facts
the text states: the place, time and weather, each character's look, pose and presence, the
left-to-right order, and each object's colour, state, count and whereabouts. Anything the
text does not state is None (``Reading.unknown``). It reads nothing else: no story, no
requirement, no oracle. It backs the ``procedural-reader`` simulators (``vsb.adapters.reader``),
which draw what a prompt carries and guess the rest, so their scores measure how much of what
must be remembered each condition's text actually carries.

The context is read first, then the scene: structured memory's JSON (a JSON cut short by a
text encoder is read up to its last complete value), a summary paragraph, the previous scene's
text, or every previous scene's text (replayed in order: each event changes what was read).
Scene 1's text describes everyone; a later scene's text names everyone present (``… are
here``), so who is in the picture is what the scene text says when it survived, else what the
context says. A paraphrased text is read after its fixed substitutions are undone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from vsb.story import vocab, words
from vsb.story.text import NUMBER_WORDS, PARAPHRASES, split_sentences

_NOUNS = {k.plural: k.name for k in vocab.OBJECT_KINDS.values()} | {
    k: k for k in vocab.OBJECT_KINDS
}
_NUM = {w: i for i, w in enumerate(NUMBER_WORDS)}
_SKINS = "|".join(sorted(words.SKIN_CODE, key=len, reverse=True))
_POSES = "|".join(sorted(words.POSE_CODE, key=len, reverse=True))
_ACC = r"no accessory|glasses|an? \w+"
_LOOK = (
    rf"(?P<n>\w+) has (?P<skin>{_SKINS}) skin and (?P<hair>.+? hair(?: in an? \w+)?), wears "
    rf"an? (?P<top>\w+) top, (?P<tr>\w+) trousers and (?P<acc>{_ACC}), and "
)
_WHERE = r"(?P<verb>is|are|appears|appear) (?:in (?P<holder>\w+)'s hands|on the ground)\."
_OBJ = r"(?:An? (?P<color>\w+) (?P<kind>\w+)|(?P<num>\w+) (?P<plural>\w+), all (?P<color2>\w+)),"
SHAPES: dict[str, re.Pattern[str]] = {
    name: re.compile(p)
    for name, p in {
        "opening": r"(?:In|On) the (?P<loc>\w+)(?:, (?:at (?P<t1>noon|night)|in the (?P<t2>\w+)); "
        r"the weather is (?P<weather>\w+))?\.",
        "summary_opening": r"So far: we are in the (?P<loc>\w+), in the (?P<time>\w+) of day "
        r"(?P<day>\d+); the weather is (?P<weather>\w+)\.",
        "describe": _LOOK + rf"is (?P<pose>{_POSES})\.",
        "summary_person": _LOOK + rf"(?:is here and (?P<pose>{_POSES})|(?P<left>has left))\.",
        "object": _OBJ + rf"(?: which (?:is|are) (?P<state>\w+),)? {_WHERE}",
        "summary_object": r"(?:The (?P<color>\w+) (?P<kind>\w+)|(?P<num>\w+) (?P<plural>\w+), "
        r"all (?P<color2>\w+),) (?:is|are) (?P<state>\w+), (?:held by (?P<holder>\w+)|on the "
        r"ground in the (?P<place>\w+))\.",
        "summary_removed": r"(?:The (?P<color>\w+) (?P<kind>\w+)|(?P<num>\w+) (?P<plural>\w+), "
        r"all (?P<color2>\w+),) (?:was|were) taken away for good\.",
        "enter": r"(?P<n>\w+) enters\.",
        "back": r"(?P<n>\w+) comes back\.",
        "leave": r"(?P<n>\w+) leaves\.",
        "move": r"Everyone goes to the (?P<loc>\w+)\.",
        "new_day": r"A new day begins; it is (?P<time>\w+)\.",
        "time": r"It is (?P<time>\w+) now\.",
        "weather": r"The weather turns (?P<weather>\w+)\.",
        "remove": r"The (?P<noun>\w+) (?:is|are) taken away\.",
        "state": r"(?:.+, so )?[Tt]he (?P<noun>\w+) (?:is|are) (?P<state>\w+) now\.",
        "give": r"(?P<n>\w+) gives the (?P<noun>\w+) to (?P<to>\w+)\.",
        "drop": r"(?P<n>\w+) puts the (?P<noun>\w+) down on the ground\.",
        "pickup": r"(?P<n>\w+) picks up the (?P<noun>\w+)\.",
        "count": r"Now there (?:is|are) (?P<num>\w+) (?P<noun>\w+)\.",
        "take_off": r"(?P<n>\w+) takes off the (?P<old>\w+) and (?:now )?has no accessory\.",
        "put_on": rf"(?P<n>\w+) puts on (?P<acc>{_ACC})\.",
        "change": r"(?P<n>\w+) changes into (?:an? )?(?P<v>\w+) (?P<what>top|trousers)\.",
        "swap": r"(?P<a>\w+) and (?P<b>\w+) swap places\.",
        "pose": rf"(?P<n>\w+) is (?P<pose>{_POSES}) now\.",
        "order": r"From left to right: (?P<names>.+)\.",
        "here": r"(?P<names>.+) (?:is|are) here\.",
    }.items()
}
_SCENE = re.compile(r"^Scene \d+: ", re.MULTILINE)
_UNDO = [(b, a) for a, b in PARAPHRASES if a.strip() != "now has"]


@dataclass
class Person:
    """What the text says of one character (None: not stated)."""

    skin: str | None = None
    hair_color: str | None = None
    hair_style: str | None = None
    top: str | None = None
    trousers: str | None = None
    accessory: str | None = None
    pose: str | None = None
    present: bool | None = None


@dataclass
class Thing:
    """What the text says of one object (None: not stated)."""

    color: str | None = None
    state: str | None = None
    count: int | None = None
    holder: str | None = None
    place: str | None = None
    removed: bool = False


@dataclass
class Reading:
    """The facts a prompt states about the scene it asks for."""

    location: str | None = None
    time: str | None = None
    weather: str | None = None
    order: list[str] | None = None
    people: dict[str, Person] = field(default_factory=dict)
    things: dict[str, Thing] = field(default_factory=dict)
    #: whether the scene text itself was read (a text encoder may have cut it off)
    scene_read: bool = False

    def person(self, name: str) -> Person:
        return self.people.setdefault(name, Person())

    def thing(self, kind: str) -> Thing:
        return self.things.setdefault(kind, Thing())


def _names(text: str) -> list[str]:
    parts = re.split(r", | and ", text)
    return [p.strip() for p in parts if p.strip()]


def _accessory(phrase: str) -> str:
    return words.ACCESSORY_CODE.get(phrase, phrase.split(" ")[-1])


def _look(r: Reading, g: dict[str, Any]) -> Person:
    p = r.person(g["n"])
    hair = words.hair_value(g["hair"])
    p.skin = words.SKIN_CODE[g["skin"]]
    p.hair_color, p.hair_style = hair if hair else (g["hair"].removesuffix(" hair"), None)
    p.top, p.trousers, p.accessory = g["top"], g["tr"], _accessory(g["acc"])
    if g.get("pose"):
        p.pose = words.POSE_CODE[g["pose"]]
    return p


def _object(r: Reading, g: dict[str, Any]) -> Thing | None:
    kind = g.get("kind") or _NOUNS.get(g.get("plural") or "")
    if kind not in vocab.OBJECT_KINDS:
        return None
    t = r.thing(kind)
    t.color = g.get("color") or g.get("color2")
    if g.get("num"):
        t.count = _NUM.get(g["num"].lower())
    if g.get("state"):
        t.state = g["state"]
    return t


def _held_or_lying(r: Reading, t: Thing, holder: str | None) -> None:
    t.holder, t.removed = holder, False
    t.place = None if holder else r.location


class _Scene:
    """Reads one scene's text into a reading, tracking who the text says is present."""

    def __init__(self, r: Reading) -> None:
        self.r = r
        self.present: list[str] = []
        self.gone: set[str] = set()

    def here(self, name: str) -> None:
        if name not in self.present:
            self.present.append(name)
        self.gone.discard(name)

    def sentence(self, s: str) -> None:
        for name, pattern in SHAPES.items():
            m = pattern.fullmatch(s)
            if m is not None:
                self.apply(name, m.groupdict())
                return

    def apply(self, shape: str, g: dict[str, Any]) -> None:
        r = self.r
        noun = _NOUNS.get(g.get("noun") or "", "")
        match shape:
            case "opening":
                r.location = g["loc"]
                if g["weather"]:
                    r.time, r.weather = g["t1"] or g["t2"], g["weather"]
            case "summary_opening":
                r.location, r.time, r.weather = g["loc"], g["time"], g["weather"]
            case "describe":
                _look(r, g)
                self.here(g["n"])
            case "summary_person":
                p = _look(r, g)
                p.present = not g["left"]
            case "object":
                t = _object(r, g)
                if t is not None:
                    _held_or_lying(r, t, g["holder"])
            case "summary_object":
                t = _object(r, g)
                if t is not None:
                    t.holder, t.place, t.removed = g["holder"], g["place"], False
            case "summary_removed":
                t = _object(r, g)
                if t is not None:
                    t.removed = True
            case "enter" | "back":
                self.here(g["n"])
            case "leave":
                self.gone.add(g["n"])
                if g["n"] in self.present:
                    self.present.remove(g["n"])
            case "move":
                r.location = g["loc"]
            case "new_day" | "time":
                r.time = g["time"]
            case "weather":
                r.weather = g["weather"]
            case "remove" if noun:
                r.thing(noun).removed = True
            case "state" if noun:
                r.thing(noun).state = g["state"]
            case "give" if noun:
                _held_or_lying(r, r.thing(noun), g["to"])
            case "drop" if noun:
                _held_or_lying(r, r.thing(noun), None)
            case "pickup" if noun:
                _held_or_lying(r, r.thing(noun), g["n"])
            case "count" if noun:
                r.thing(noun).count = _NUM.get(g["num"].lower())
            case "take_off":
                r.person(g["n"]).accessory = "none"
                self.here(g["n"])
            case "put_on":
                r.person(g["n"]).accessory = _accessory(g["acc"])
                self.here(g["n"])
            case "change":
                setattr(r.person(g["n"]), g["what"], g["v"])
                self.here(g["n"])
            case "swap":
                self.here(g["a"])
                self.here(g["b"])
                if r.order and g["a"] in r.order and g["b"] in r.order:
                    i, j = r.order.index(g["a"]), r.order.index(g["b"])
                    r.order[i], r.order[j] = r.order[j], r.order[i]
            case "pose":
                r.person(g["n"]).pose = words.POSE_CODE[g["pose"]]
                self.here(g["n"])
            case "order":
                r.order = _names(g["names"])
            case "here":
                for n in _names(g["names"]):
                    self.here(n)

    def close(self, *, scene_text: bool) -> None:
        """Presence after the text: a scene text names everyone present; a summary or memory
        says it per person."""
        if not scene_text:
            return
        for name, p in self.r.people.items():
            p.present = name in self.present
        for name in self.present:
            self.r.person(name).present = True


def read_text(r: Reading, text: str, *, scene_text: bool = True) -> None:
    """Apply one text (a scene's, or a summary) to ``r`` sentence by sentence."""
    for a, b in _UNDO:
        text = text.replace(a, b)
    scene = _Scene(r)
    for s in split_sentences(text):
        scene.sentence(s)
    if scene_text and not scene.present and not scene.gone:
        return  # no sentence naming anyone: nothing said about presence
    scene.close(scene_text=scene_text)


def partial_json(text: str) -> Any:
    """``text`` as JSON, or, when a text encoder cut it short, the JSON up to its last complete
    value (closing what is still open); None when nothing of it parses."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (position before a comma, the closers open there)
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            escaped = ch == "\\" and not escaped
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    for pos, closers in reversed(cuts):
        try:
            return json.loads(text[:pos] + closers)
        except json.JSONDecodeError:
            continue
    return None


def read_memory(r: Reading, memory: Any) -> None:
    """Apply a structured memory (``state_json``'s shape, in words) to ``r``."""
    if not isinstance(memory, dict):
        return
    memory = words.in_codes(memory)
    for key in ("location", "time", "weather"):
        if isinstance(memory.get(key), str):
            setattr(r, key, memory[key])
    if isinstance(memory.get("order"), list):
        r.order = [str(n) for n in memory["order"]]
    for name, c in (memory.get("characters") or {}).items():
        if not isinstance(c, dict):
            continue
        p = r.person(str(name))
        hair = c.get("hair")
        if isinstance(hair, list) and len(hair) == 2:
            p.hair_color, p.hair_style = str(hair[0]), str(hair[1])
        for attr in ("skin", "top", "trousers", "accessory", "pose"):
            if isinstance(c.get(attr), str):
                setattr(p, attr, c[attr])
        if isinstance(c.get("present"), bool):
            p.present = c["present"]
    for kind, o in (memory.get("objects") or {}).items():
        if kind not in vocab.OBJECT_KINDS or not isinstance(o, dict):
            continue
        t = r.thing(kind)
        t.color, t.state = o.get("color"), o.get("state")
        t.count = o.get("count") if isinstance(o.get("count"), int) else None
        t.removed = bool(o.get("removed"))
        t.holder, t.place = o.get("holder"), o.get("place")


_MEMORY = "State so far (JSON): "
_STORY = "Story so far: "
_DRAW = "Draw this scene: "


def read_prompt(prompt: str) -> Reading:
    """What ``prompt`` (a request's full text, possibly cut short) states; see the module."""
    r = Reading()
    scene = prompt
    parts = prompt.split("\n\n")
    if parts[0].startswith((_MEMORY, _STORY)):
        scene = ""
        for part in parts:
            if part.startswith(_MEMORY):
                read_memory(r, partial_json(part.removeprefix(_MEMORY)))
            elif part.startswith(_STORY):
                story = part.removeprefix(_STORY)
                texts = [t for t in _SCENE.split(story) if t.strip()]
                for t in texts if _SCENE.match(story) else [story]:
                    read_text(r, t.strip(), scene_text=not t.startswith("So far:"))
            elif part.startswith(_DRAW):
                scene = part.removeprefix(_DRAW)
    if scene:
        r.scene_read = True
        read_text(r, scene)
    return r
