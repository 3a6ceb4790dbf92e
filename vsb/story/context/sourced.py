"""An imported story's context: only what its source gives, in its words (issue 44).

An imported story's state holds a vocabulary placeholder wherever its source (VinaBench's
annotations, an LLM's reading) gives no value the renderer knows: a profile's "long brown
hair" is held as black hair, a "warehouse" as a beach, an unknown weather as clear. Its
``imported`` record says which facts rest on one (``substitutions``: withheld, or the
source's free text) and, from gold annotations, each character's profile as written (the
``profile`` and ``absent`` facts). A model's context states none of the placeholders:

- a character with a profile is that profile (``description``) and their presence;
- any other character is each look attribute the source gives (a vocabulary value, or the
  free text in place of a placeholder), and their presence; an attribute it does not give
  is left out;
- the place, time, weather and left-to-right order as the source gives them (the annotated
  place, "warehouse", in place of its placeholder location), the day only while every time
  so far was read; objects without a colour the source does not give, and where one lies
  on the ground, the place in the source's words.

A fact is told at scene ``j`` as at the latest scene up to ``j`` that checks it: a
substitution there (its free text, or withheld), else a requirement derived from the state
(the state's value, read from the source). ``sourced_memory`` takes an extractor's reading
(``predicted_memory``) as well as the true state: a fact read as the story holds it is
stated in the source's words, one read otherwise keeps the reading's value.
"""

from __future__ import annotations

from typing import Any

from vsb.story import vocab, words
from vsb.story.context.memory import drop_group, state_json
from vsb.story.imported import Substitution
from vsb.story.models import SceneState, Story

#: The look attributes of ``state_json``'s character entry, in its order.
_LOOK = ("skin", "hair", "top", "trousers", "accessory", "pose")
#: The fact groups a profile states (an ablation of either drops the description).
_DESCRIBED_BY_PROFILE = ("identity", "clothing")


class _Source:
    """What an imported story's source tells, indexed: substitutions and checked facts per
    scene, profiles, and the words of each placeholder location."""

    def __init__(self, story: Story) -> None:
        assert story.imported is not None
        self.story = story
        subs: list[Substitution] = story.imported.substitutions
        self.subs = {(s.scene, s.subject, s.attribute): s.value for s in subs}
        self.checked = [{(r.subject, r.attribute) for r in s.requirements} for s in story.scenes]
        self.profiles: dict[str, str] = {}
        self.seen_at: dict[str, int] = {}  # a profiled character: first scene present
        for s in subs:
            if s.attribute in ("profile", "absent") and isinstance(s.value, str):
                self.profiles.setdefault(s.subject, s.value)
                if s.attribute == "profile":
                    self.seen_at[s.subject] = min(self.seen_at.get(s.subject, s.scene), s.scene)
        self.colourless = {
            s.subject
            for s in subs
            if s.subject in vocab.OBJECT_KINDS and s.attribute in ("present", "holder")
        }

    def told(self, j: int, subject: str, attribute: str) -> tuple[bool, Any]:
        """(whether the source gives the fact at scene ``j``, its free text or None: the
        state's value)."""
        for m in range(j, 0, -1):
            key = (m, subject, attribute)
            if key in self.subs:
                value = self.subs[key]
                return (value is not None, value)
            if (subject, attribute) in self.checked[m - 1]:
                return True, None
        return False, None

    def time_read_throughout(self, j: int) -> bool:
        """Every scene up to ``j`` has its time from the source's vocabulary (so its day
        count is the source's too)."""
        return all(
            (m, "scene", "time") not in self.subs and ("scene", "time") in self.checked[m - 1]
            for m in range(1, j + 1)
        )

    def place_words(self, j: int) -> dict[str, str | None]:
        """Each placeholder location of scenes 1..``j`` -> the source's place (None: not
        given)."""
        out: dict[str, str | None] = {}
        for m in range(1, j + 1):
            key = (m, "scene", "location")
            if key in self.subs:
                value = self.subs[key]
                out[self.story.scenes[m - 1].state.location] = (
                    value if isinstance(value, str) else None
                )
        return out


def _value(true: Any, read: Any, free: Any) -> Any:
    """The value a context states: the source's words (``free``, or the true value) where
    the reading holds the true value, else the reading's own."""
    if read != true:
        return read
    return true if free is None else free


def _character(src: _Source, j: int, name: str, true: dict[str, Any], read: dict[str, Any]
               ) -> dict[str, Any]:  # fmt: skip
    if name in src.profiles:
        return {"description": src.profiles[name], "present": read.get("present")}
    out: dict[str, Any] = {}
    for attr in _LOOK:
        told, free = src.told(j, name, attr)
        if told and attr in read:
            out[attr] = _value(true.get(attr), read[attr], free)
    out["present"] = read.get("present")
    return out


def _object(src: _Source, kind: str, true: dict[str, Any] | None, read: dict[str, Any],
            places: dict[str, str | None]) -> dict[str, Any]:  # fmt: skip
    out = dict(read)
    if kind in src.colourless and (true is None or out.get("color") == true.get("color")):
        out.pop("color", None)  # the source gives no colour: the placeholder's is not said
    place = out.get("place")
    if isinstance(place, str) and place in places:
        if places[place] is None:
            out.pop("place")
        else:
            out["place"] = places[place]
    return out


def _profiled_outside_state(src: _Source, state: SceneState, j: int) -> dict[str, Any]:
    """Profiled characters the state does not track (a fourth one), seen by scene ``j``."""
    return {
        name: {"description": src.profiles[name], "present": (j, name, "profile") in src.subs}
        for name, first in sorted(src.seen_at.items(), key=lambda x: x[1])
        if first <= j and name not in state.characters
    }


def sourced_memory(
    story: Story, j: int, memory: dict[str, Any] | None = None, without: str | None = None
) -> dict[str, Any]:
    """The structured memory of imported ``story`` after scene ``j``: the facts its source
    gives, in its words (``memory``: a reading of that state in codes, ``state_json``'s
    shape; default the true state), less the fact group ``without``; in words
    (``vsb.story.words``) like ``memory_context``."""
    src = _Source(story)
    state = story.scenes[j - 1].state
    true = state_json(state)
    read = true if memory is None else memory
    out: dict[str, Any] = {}
    places = src.place_words(j)
    for attr in ("location", "time", "weather"):
        told, free = src.told(j, "scene", attr)
        if not told or attr not in read:
            continue
        value = _value(true[attr], read[attr], free)
        if attr == "location" and value in places:  # a reading naming a placeholder place
            value = places[value]
        if value is not None:
            out[attr] = value
        if attr == "time" and "day" in read and src.time_read_throughout(j):
            out["day"] = read["day"]
    if ("scene", "order") in src.checked[j - 1] and (j, "scene", "order") not in src.subs:
        out["order"] = read.get("order")
    chars_read: dict[str, Any] = read.get("characters") or {}
    chars = {
        name: _character(src, j, name, true["characters"].get(name) or {}, entry)
        for name, entry in chars_read.items()
        if name in true["characters"]
    }
    chars |= _profiled_outside_state(src, state, j)
    out["characters"] = chars
    objs_read: dict[str, Any] = read.get("objects") or {}
    out["objects"] = {
        kind: _object(src, kind, true["objects"].get(kind), entry, places)
        for kind, entry in objs_read.items()
        if isinstance(entry, dict)
    }
    if without is not None:
        out = drop_group(out, without)
        if without in _DESCRIBED_BY_PROFILE:
            for c in chars.values():
                c.pop("description", None)
    return words.in_words(out)


# --- the summary -----------------------------------------------------------------------

_PREPOSITIONS = ("in", "at", "on", "under", "inside", "outside", "near", "by", "behind")


def _place_phrase(place: str) -> str:
    """``warehouse`` -> ``in the warehouse``; ``a busy street`` -> ``in a busy street``;
    ``under a bridge`` stays."""
    first = place.split(" ", 1)[0].lower()
    if first in _PREPOSITIONS:
        return place
    return f"in {place}" if first in ("the", "a", "an") else f"in the {place}"


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _person(name: str, c: dict[str, Any]) -> str:
    where = "is here" if c.get("present") else "has left"
    if "description" in c:
        return f"{name} ({c['description']}) {where}."
    has = [f"{c['skin']} skin"] if "skin" in c else []
    has += [str(c["hair"])] if "hair" in c else []
    wears = [words.article(f"{c['top']} top")] if "top" in c else []
    wears += [f"{c['trousers']} trousers"] if "trousers" in c else []
    if "accessory" in c:  # a free-text one ("crown") is a thing one wears
        acc = str(c["accessory"])
        wears.append(acc if acc in words.ACCESSORY.values() else words.article(acc))
    if c.get("present") and "pose" in c:
        where += f" and {c['pose']}"
    clauses = [f"has {_join(has)}"] if has else []
    clauses += [f"wears {_join(wears)}"] if wears else []
    return f"{name} {', '.join(clauses)}, and {where}." if clauses else f"{name} {where}."


def _thing(kind: str, o: dict[str, Any]) -> str:
    colour = o.get("color")
    n = o.get("count")
    if isinstance(n, int):
        k = vocab.OBJECT_KINDS.get(kind)
        plural = k.plural if k is not None else f"{kind}s"
        what = words.count(kind, plural, n) + (f", all {colour}," if colour else "")
        be, was = ("is", "was") if n == 1 else ("are", "were")
    else:
        what, be, was = f"the {colour} {kind}" if colour else f"the {kind}", "is", "was"
    what = what[0].upper() + what[1:]
    if o.get("removed"):
        return f"{what} {was} taken away for good."
    if o.get("holder"):
        where = f", held by {o['holder']}"
    elif o.get("place"):
        where = f", on the ground {_place_phrase(str(o['place']))}"
    else:
        where = ", on the ground"
    return f"{what} {be} {o.get('state')}{where}."


def sourced_summary(story: Story, j: int) -> str:
    """One paragraph stating every fact ``sourced_memory`` states after scene ``j``."""
    m = sourced_memory(story, j)
    env = [f"we are {_place_phrase(m['location'])}"] if "location" in m else []
    if "time" in m:
        env.append(f"it is {m['time']}" + (f" on day {m['day']}" if "day" in m else ""))
    env += [f"the weather is {m['weather']}"] if "weather" in m else []
    parts = [f"So far: {'; '.join(env)}."] if env else ["So far:"]
    parts += [_person(name, c) for name, c in m["characters"].items()]
    if len(m.get("order") or []) >= 2:
        parts.append(f"From left to right: {_join(m['order'])}.")
    parts += [_thing(kind, o) for kind, o in m["objects"].items()]
    return " ".join(parts)
