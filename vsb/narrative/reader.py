"""A reader of vsb's own sentence shapes: the structured story that a careful reader of a
generated story's text extracts, written as an LLM answer (docs/IMPORT.md).

It reads the text only (never a story object): scene 1's opening, descriptions and
line-up, and each later scene's event sentences, in the shapes ``vsb.story.text`` writes
(plain style). A sentence it does not know (a line a person added, an instruction inside
the narrative) is skipped. It backs ``--llm mock`` (``ReaderLlm``) and the fake LLM server
of ``scripts/import_roundtrip.py``; it is a test of the importer's plumbing and of what the
text states, not a model of an LLM.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vsb.evaluators.vlm.transports import JudgeReply, JudgeRequest
from vsb.narrative.answer import UNKNOWN, scenes_of_prompt
from vsb.story import vocab, words
from vsb.story.text import NUMBER_WORDS, split_sentences

_NOUNS = {k.plural: k.name for k in vocab.OBJECT_KINDS.values()} | {
    k: k for k in vocab.OBJECT_KINDS
}
_NUM = {w: i for i, w in enumerate(NUMBER_WORDS)}
_OPENING = re.compile(r"^(?:In|On) the (\w+), (?:in the (\w+)|at (\w+)); the weather is (\w+)\.$")
_SKINS = "|".join(sorted(words.SKIN_CODE, key=len, reverse=True))
_POSES = "|".join(sorted(words.POSE_CODE, key=len, reverse=True))
_PERSON = re.compile(
    rf"^(\w+) has ({_SKINS}) skin and (.+? hair(?: in an? \w+)?), wears an? (\w+) top, "
    rf"(\w+) trousers and (no accessory|glasses|an? \w+), and is ({_POSES})\.$"
)
_WHERE = r"(?:is|are|appears|appear) (?:in (\w+)'s hands|on the ground)\.$"
_SINGLE = re.compile(rf"^An? (\w+) (\w+),(?: which is (\w+),)? {_WHERE}")
_COUNTED = re.compile(rf"^(\w+) (\w+), all (\w+),(?: which (?:is|are) (\w+),)? {_WHERE}")
_EVENTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(\w+) enters\.$"), "enter"),
    (re.compile(r"^(\w+) comes back\.$"), "enter"),
    (re.compile(r"^(\w+) leaves\.$"), "exit"),
    (re.compile(r"^Everyone goes to the (\w+)\.$"), "move"),
    (re.compile(r"^A new day begins; it is (\w+)\.$"), "new_day"),
    (re.compile(r"^It is (\w+) now\.$"), "set_time"),
    (re.compile(r"^The weather turns (\w+)\.$"), "set_weather"),
    (re.compile(r"^The (\w+) (?:is|are) taken away\.$"), "remove"),
    (re.compile(r"^(?:(.+), so )?[Tt]he (\w+) (?:is|are) (\w+) now\.$"), "change_state"),
    (re.compile(r"^(\w+) gives the (\w+) to (\w+)\.$"), "give"),
    (re.compile(r"^(\w+) puts the (\w+) down on the ground\.$"), "drop"),
    (re.compile(r"^(\w+) picks up the (\w+)\.$"), "pickup"),
    (re.compile(r"^Now there (?:is|are) (\w+) (\w+)\.$"), "set_count"),
    (re.compile(r"^(\w+) takes off the (\w+) and now has no accessory\.$"), "take_off"),
    (re.compile(r"^(\w+) puts on (glasses|an? \w+)\.$"), "put_on"),
    (re.compile(r"^(\w+) changes into (?:an? )?(\w+) (top|trousers)\.$"), "change"),
    (re.compile(r"^(\w+) and (\w+) swap places\.$"), "swap"),
    (re.compile(rf"^(\w+) is ({_POSES}) now\.$"), "set_pose"),
    (re.compile(r"^From left to right: (.+)\.$"), "order"),
]


def _accessory(phrase: str) -> str:
    if phrase == "no accessory":
        return "none"
    return phrase.split(" ")[-1]


class _Reader:
    def __init__(self) -> None:
        self.characters: dict[str, dict[str, Any]] = {}
        self.objects: dict[str, dict[str, Any]] = {}

    def person(self, s: str) -> str | None:
        m = _PERSON.match(s)
        if m is None:
            return None
        name, skin, hair_words, top, trousers, acc, pose = m.groups()
        hair, style = words.hair_value(hair_words) or (hair_words.removesuffix(" hair"), "")
        self.characters.setdefault(name, {
            "name": name, "skin": words.SKIN_CODE[skin], "hair_color": hair, "hair_style": style,
            "top": top, "trousers": trousers, "accessory": _accessory(acc),
            "pose": words.POSE_CODE[pose],
        })  # fmt: skip
        return name

    def thing(self, s: str, scene: int) -> dict[str, Any] | None:
        """An object description: the object as first seen, or None."""
        m = _SINGLE.match(s)
        if m is not None:
            color, kind, state, holder = m.groups()
            count = None
        else:
            m = _COUNTED.match(s)
            if m is None or m.group(1).lower() not in _NUM or m.group(2) not in _NOUNS:
                return None
            word, noun, color, state, holder = m.groups()
            kind, count = _NOUNS[noun], _NUM[word.lower()]
        if kind not in vocab.OBJECT_KINDS:
            return None
        obj = {
            "kind": kind, "color": color, "state": state or vocab.OBJECT_KINDS[kind].states[0],
            "count": count, "holder": holder if scene == 1 else None, "in_scene_1": scene == 1,
        }  # fmt: skip
        self.objects.setdefault(kind, obj)
        return {"type": "appear", "object": kind, "holder": holder}

    def event(self, s: str) -> dict[str, Any] | None:
        for pattern, kind in _EVENTS:
            m = pattern.match(s)
            if m is None:
                continue
            g = m.groups()
            match kind:
                case "enter" | "exit":
                    return {"type": kind, "character": g[0]}
                case "move":
                    return {"type": "move", "location": g[0]}
                case "new_day" | "set_time":
                    return {"type": "set_time", "time": g[0], "new_day": kind == "new_day"}
                case "set_weather":
                    return {"type": "set_weather", "weather": g[0]}
                case "remove":
                    return {"type": "remove", "object": _NOUNS.get(g[0], g[0])}
                case "change_state":
                    cause = g[0]
                    if cause and cause.split(" ")[0] not in self.characters:
                        cause = cause[0].lower() + cause[1:]
                    kind_ = _NOUNS.get(g[1], g[1])
                    return {"type": "change_state", "object": kind_, "state": g[2], "cause": cause}
                case "give":
                    return {"type": "give", "object": _NOUNS.get(g[1], g[1]), "giver": g[0],
                            "receiver": g[2]}  # fmt: skip
                case "drop" | "pickup":
                    return {"type": kind, "object": _NOUNS.get(g[1], g[1]), "character": g[0]}
                case "set_count":
                    return {"type": "set_count", "object": _NOUNS.get(g[1], g[1]),
                            "count": _NUM.get(g[0].lower(), -1)}  # fmt: skip
                case "take_off":
                    return {"type": "change_attr", "character": g[0], "attribute": "accessory",
                            "value": "none"}  # fmt: skip
                case "put_on":
                    return {"type": "change_attr", "character": g[0], "attribute": "accessory",
                            "value": _accessory(g[1])}  # fmt: skip
                case "change":
                    return {"type": "change_attr", "character": g[0], "attribute": g[2],
                            "value": g[1]}  # fmt: skip
                case "swap":
                    return {"type": "swap", "a": g[0], "b": g[1]}
                case "set_pose":
                    return {"type": "set_pose", "character": g[0], "pose": words.POSE_CODE[g[1]]}
                case "order":
                    return {"type": "order", "names": [n.strip() for n in g[0].split(",")]}
        return None


def _place_entrances(events: list[dict[str, Any]], order: list[str]) -> None:
    """Who enters stands where the scene's final line-up puts them, once the later swaps
    and entrances of the scene are undone (walking the events backwards)."""
    line = list(order)
    for ev in reversed(events):
        if ev["type"] == "swap" and ev["a"] in line and ev["b"] in line:
            i, j = line.index(ev["a"]), line.index(ev["b"])
            line[i], line[j] = line[j], line[i]
        elif ev["type"] == "enter" and ev["character"] in line:
            ev["position"] = line.index(ev["character"])
            line.remove(ev["character"])


def read_story(scenes: list[str]) -> dict[str, Any]:
    """The answer a careful reader of vsb's sentence shapes gives for a narrative."""
    r = _Reader()
    start: dict[str, Any] = {"place": UNKNOWN, "time": UNKNOWN, "weather": UNKNOWN}
    described: list[str] = []
    out_scenes: list[dict[str, Any]] = []
    for k, text in enumerate(scenes, start=1):
        events: list[dict[str, Any]] = []
        order: list[str] | None = None
        for s in split_sentences(text):
            if k == 1 and (m := _OPENING.match(s)) is not None:
                place, t1, t2, weather = m.groups()
                start.update(place=place, time=t1 or t2, weather=weather)
                continue
            if (name := r.person(s)) is not None:
                if k == 1:
                    described.append(name)
                continue
            if (appear := r.thing(s, k)) is not None:
                if k > 1:
                    events.append(appear)
                continue
            ev = r.event(s)
            if ev is None:
                continue  # an opening, "X is here", or a sentence of no known shape
            if ev["type"] == "order":
                order = ev["names"]
            else:
                events.append(ev)
        if order is not None:
            _place_entrances(events, order)
        if k == 1:
            start["present"] = order if order is not None else described
            events = []
        out_scenes.append({"events": events, "entities": []})
    return {
        "characters": list(r.characters.values()),
        "objects": list(r.objects.values()),
        "start": start,
        "scenes": out_scenes,
    }


#: Capitalised words that open sentences rather than name people (a sparse reading).
_NOT_NAMES = frozenset(
    re.findall(
        r"\w+",
        "A An The In On At By To Of For From With Into After Before When While Then Later Soon "
        "Now Next Finally Meanwhile Suddenly Once As But And So Or Yet Still There Here This "
        "That These Those It Its He She They We I You His Her Their Our My Your One Two Three "
        "Some Every Each All Both No Not Mr Mrs Ms Dr Scene",
    )
)
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_WORD = r"(?<![\w-]){}(?![\w-])"


def _names_in(text: str, lower: str) -> list[str]:
    """Capitalised words of ``text`` that are neither a sentence opener nor a word the
    narrative also writes in lower case (``lower``): the people it names, in order."""
    found = (w for w in _CAPITALISED.findall(text) if w not in _NOT_NAMES)
    return list(dict.fromkeys(w for w in found if not re.search(_WORD.format(w.lower()), lower)))


def _first_word(text: str, choices: Any) -> str | None:
    """The first of ``choices`` (vocabulary words) that ``text`` holds as a word."""
    hits = [(m.start(), c) for c in choices if (m := re.search(_WORD.format(c), text.lower()))]
    return min(hits)[1] if hits else None


def sparse_story(scenes: list[str]) -> dict[str, Any]:
    """A valid, sparse answer for a narrative in none of vsb's sentence shapes (most real
    prose): up to 3 people it names (capitalised words, not sentence openers), present
    where a scene names them (a scene naming no one keeps who was there), every look
    unknown; a vocabulary place, time of day or weather where a scene's words hold one,
    else unknown. The first scene naming no one still needs a character: the first name of
    the narrative, or ``Someone``."""
    lower = " ".join(scenes)
    names = _names_in(" ".join(scenes), lower)[:3] or ["Someone"]
    unknown = UNKNOWN
    characters = [
        {"name": n, "skin": unknown, "hair_color": unknown, "hair_style": unknown,
         "top": unknown, "trousers": unknown, "accessory": unknown, "pose": unknown}
        for n in names
    ]  # fmt: skip
    here = [n for n in names if re.search(_WORD.format(re.escape(n)), scenes[0])] or names[:1]
    start = {
        "place": _first_word(scenes[0], vocab.LOCATIONS) or unknown,
        "time": _first_word(scenes[0], vocab.TIMES) or unknown,
        "weather": _first_word(scenes[0], vocab.WEATHERS) or unknown,
        "present": list(here),
    }
    place, when = start["place"], start["time"]
    out: list[dict[str, Any]] = [{"events": [], "entities": []}]
    for text in scenes[1:]:
        named = [n for n in names if re.search(_WORD.format(re.escape(n)), text)]
        now = named or here
        events: list[dict[str, Any]] = [{"type": "exit", "character": n} for n in here
                                        if n not in now]  # fmt: skip
        new_place = _first_word(text, vocab.LOCATIONS)
        if new_place is not None and new_place != place:
            events.append({"type": "move", "location": new_place})
            place = new_place
        new_time = _first_word(text, vocab.TIMES)
        if new_time is not None and new_time != when:
            back = when in vocab.TIMES and vocab.TIMES.index(new_time) < vocab.TIMES.index(when)
            events.append({"type": "set_time", "time": new_time, "new_day": back})
            when = new_time
        events += [{"type": "enter", "character": n} for n in now if n not in here]
        here = now
        out.append({"events": events, "entities": []})
    return {"characters": characters, "objects": [], "start": start, "scenes": out}


def read_any(scenes: list[str]) -> dict[str, Any]:
    """``read_story`` where the narrative is in vsb's sentence shapes (it describes someone),
    else ``sparse_story``."""
    story = read_story(scenes)
    return story if story["characters"] else sparse_story(scenes)


class ReaderLlm:
    """``--llm mock``: answers every extraction with ``read_any`` of its narrative (vsb's
    sentence shapes read, other prose read sparsely), in process (free, no server); an
    answer sent back for repair gets the same reading."""

    paid = False
    endpoint: str | None = None
    judge_model = "mock:reader"

    def ask(self, request: JudgeRequest) -> JudgeReply:
        return JudgeReply(json.dumps(read_any(scenes_of_prompt(request.prompt))))
