"""``--constraints gold``: a story's state from VinaBench's annotations, no LLM (docs/IMPORT.md).

The annotations give, per scene, who of the profiled characters is present, the time and
the location, and, per character, a profile. They become the story's world and events
(``enter``/``exit`` for presence, ``move`` for the location, ``set_time`` for the time, a
new day when it goes back), replayed through the state machine; the requirements are
derived from the replayed states as for any story, then:

- what vsb can render (a vocabulary place or time, a profile's vocabulary hair, skin, top,
  trousers or accessory: ``vsb.narrative.profile``) stays a vocabulary fact; the rest is
  free text judged by the VLM only (a "restaurant", "early morning", "brown" hair); what the
  annotations do not give (weather, pose, left-to-right order, an unknown time or place, a
  look the profile does not name) is withheld;
- each present character's profile as written is an identity fact (``profile``), and each
  profiled character absent from a scene an ``absent`` fact, both judged by the VLM from the
  description;
- a fact is ``prompt`` when its scene text states it, else ``memory`` (``gold_source``).

An annotation that contradicts itself (a name listed twice in a scene, fewer characters
than it names, a profile with two hair colours, a per-scene list of the wrong length) is a
``GoldError`` naming the scene: that story is rejected, the others go on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from vsb.errors import InputError, TransitionError
from vsb.narrative.build import PLACEHOLDERS, difficulty_of
from vsb.narrative.importer import ImportReport, StoryResult
from vsb.narrative.profile import Look, ProfileConflict, read_profile
from vsb.narrative.sources import Narrative
from vsb.narrative.vinabench import Gold
from vsb.state import replay
from vsb.story import vocab
from vsb.story.invariants import story_problems
from vsb.story.models import (
    IMPORTED,
    Character,
    Enter,
    Event,
    Exit,
    ImportInfo,
    Move,
    Requirement,
    Scene,
    SetTime,
    Story,
    Substitution,
    World,
)
from vsb.story.requirements import apply_sources, apply_substitutions, derive_story

#: ``ImportInfo.llm`` of a story built from gold annotations.
GOLD = "gold"
MAX_CHARACTERS = 3
_UNKNOWN = {"", "unknown", "none", "n/a", "na", "null", "unclear", "not specified"}
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_LOOK = ("skin", "hair_color", "hair_style", "top", "trousers", "accessory")
#: The import's placeholders for a look the annotations do not give (a pose is withheld).
_PLACEHOLDERS = {a: v for a, v in PLACEHOLDERS.items() if a != "pose"}


class GoldError(InputError):
    """Annotations that cannot make a story; ``scene`` is the 1-based scene (None: the
    whole sample)."""

    def __init__(self, message: str, *, scene: int | None = None) -> None:
        super().__init__(message, location=f"scene {scene}" if scene else None)
        self.scene = scene


def known(value: Any) -> str | None:
    """An annotation's text, or None when it says nothing ("unknown", empty)."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return None if text.lower() in _UNKNOWN else text


def place_key(text: str) -> str:
    """A place as compared: lower case, without a leading article."""
    return _ARTICLE.sub("", text.strip().lower())


@dataclass(frozen=True)
class Annotations:
    """A sample's annotations, checked: the profiles, and per scene the profiled characters
    present (as listed), the time and the location (None: not given)."""

    profile: dict[str, str]
    present: list[list[str]]
    times: list[str | None]
    places: list[str | None]


def _per_scene(value: Any, key: str, n: int, total: int) -> list[Any]:
    """A per-scene list of a story of ``n`` scenes cut from a sample of ``total`` (a list
    that does not fit the sample is kept whole by ``vsb.narrative.vinabench``): one entry
    too few names the first scene without one; one too many names no scene."""
    if not isinstance(value, list):
        raise GoldError(f"the annotations have no {key} list (one entry per scene)")
    if len(value) != n:
        total = max(total, n)
        scene = len(value) + 1 if len(value) < total else None
        raise GoldError(f"{key} has {len(value)} entries for {total} scenes", scene=scene)
    return value


def check_annotations(gold: Gold, n: int) -> Annotations:
    """The annotations of a sample of ``n`` scenes, or ``GoldError``."""
    if not isinstance(gold.profile, dict) or not gold.profile:
        raise GoldError("global_profile is empty or not an object {name: description}")
    profile: dict[str, str] = {}
    for name, text in gold.profile.items():
        if isinstance(text, dict):  # a profile given field by field: its texts in order
            text = ", ".join(str(v) for v in text.values() if isinstance(v, str | int) and v)
        if not name.strip() or not isinstance(text, str):
            raise GoldError(f"global_profile[{name!r}] is not a named description")
        profile[name.strip()] = " ".join(text.split())
    present: list[list[str]] = []
    per_scene = gold.scene_characters, "scene_characters", n, gold.sample_scenes
    for k, entry in enumerate(_per_scene(*per_scene), 1):
        names = entry.get("present") if isinstance(entry, dict) else None
        if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
            raise GoldError('expected scene_characters {"present": [NAME, …]}', scene=k)
        listed = [x.strip() for x in names]
        twice = sorted({x for x in listed if listed.count(x) > 1})
        if twice:
            raise GoldError(f"contradiction: {', '.join(twice)} listed present twice", scene=k)
        count = entry.get("num_present")
        if isinstance(count, str) and count.strip().isdigit():
            count = int(count)
        if isinstance(count, int) and not isinstance(count, bool) and count < len(listed):
            raise GoldError(
                f"contradiction: num_present is {count} but {len(listed)} characters are "
                f"listed present ({', '.join(listed)})",
                scene=k,
            )
        present.append([x for x in listed if x in profile])
    times = [known(t) for t in _per_scene(gold.time, "time", n, gold.sample_scenes)]
    places = [known(p) for p in _per_scene(gold.location, "location", n, gold.sample_scenes)]
    return Annotations(profile, present, times, places)


# --- the world -------------------------------------------------------------------------


def _cast(ann: Annotations) -> list[str]:
    """The world's characters: the first ``MAX_CHARACTERS`` profiled characters to appear,
    in order of appearance (the first profiled one when none does: the world needs one).
    Any further one is judged by the VLM from its profile only."""
    cast: list[str] = []
    for names in ann.present:
        cast += [n for n in names if n not in cast]
    return cast[:MAX_CHARACTERS] or [next(iter(ann.profile))]


def _first_scene(ann: Annotations, name: str) -> int:
    return next((k for k, names in enumerate(ann.present, 1) if name in names), 1)


def _looks(ann: Annotations, cast: list[str]) -> dict[str, Look]:
    looks = {}
    for name in cast:
        try:
            looks[name] = read_profile(ann.profile[name])
        except ProfileConflict as err:
            raise GoldError(
                f"contradiction: {name}'s profile gives two values: {err}",
                scene=_first_scene(ann, name),
            ) from None
    return looks


def _characters(cast: list[str], looks: dict[str, Look], first: list[str]
                ) -> tuple[list[Character], dict[tuple[str, str], Any]]:  # fmt: skip
    """The world's characters and the look facts that are not vocabulary values held by the
    state: (name, attribute) -> free text, or None (withheld). A vocabulary value that would
    make two characters look alike (same top; same skin and hair colour) or a top the colour
    of its trousers is kept as free text instead."""
    values: dict[str, dict[str, str]] = {n: {} for n in cast}
    live: dict[tuple[str, str], Any] = {}
    for name in cast:
        facts, mine = looks[name].facts, values[name]
        for attr in _LOOK:
            fact = facts.get(attr)
            if fact is None:
                live[(name, attr)] = None
                continue
            clash = (
                (attr == "top" and any(v.get("top") == fact.value for v in values.values()))
                or (attr == "trousers" and mine.get("top") == fact.value)
                or (attr == "skin" and "hair_color" in mine and any(
                    (v.get("skin"), v.get("hair_color")) == (fact.value, mine["hair_color"])
                    for v in values.values()))
            )  # fmt: skip
            if fact.vocab and not clash:
                mine[attr] = fact.value
            else:
                live[(name, attr)] = fact.value
    chars = []
    for name in cast:
        mine = values[name]
        mine.setdefault("accessory", "none")
        for attr, choices in _PLACEHOLDERS.items():
            if attr in mine:
                continue
            for v in choices:
                others = [values[o] for o in cast if o != name]
                if attr == "top" and (v == mine.get("trousers") or any(
                        o.get("top") == v for o in others)):  # fmt: skip
                    continue
                if attr == "trousers" and v == mine.get("top"):
                    continue
                if attr in ("skin", "hair_color") and any(
                    (o.get("skin"), o.get("hair_color"))
                    == ({**mine, attr: v}.get("skin"), {**mine, attr: v}.get("hair_color"))
                    for o in others
                ):
                    continue
                mine[attr] = v
                break
        live[(name, "pose")] = None
        chars.append(Character(name=name, initially_present=name in first, **mine))
    return chars, live


# --- the events ------------------------------------------------------------------------


class _Places:
    """Vocabulary locations for the annotated places: a vocabulary place is itself, each
    other place a spare vocabulary location (a placeholder, its requirements free text)."""

    def __init__(self, places: Sequence[str | None]) -> None:
        self.vocab = {place_key(p) for p in places if p} & set(vocab.LOCATIONS)
        self.free: dict[str, str] = {}

    def of(self, text: str | None, scene: int) -> str:
        key = place_key(text) if text else "?"
        if key in vocab.LOCATIONS:
            return key
        if key not in self.free:
            spare = [x for x in vocab.LOCATIONS if x not in self.vocab | set(self.free.values())]
            if not spare:
                raise GoldError(f"more than {len(vocab.LOCATIONS)} places", scene=scene)
            self.free[key] = spare[0]
        return self.free[key]


def _events(ann: Annotations, cast: list[str], places: _Places, start: tuple[str, str]
            ) -> list[list[Event]]:  # fmt: skip
    where, when = start
    out: list[list[Event]] = [[]]
    for k in range(2, len(ann.present) + 1):
        before = [n for n in ann.present[k - 2] if n in cast]
        now = [n for n in ann.present[k - 1] if n in cast]
        ev: list[Event] = [Exit(character=n) for n in cast if n in before and n not in now]
        place = ann.places[k - 1]
        if place is not None and places.of(place, k) != where:
            where = places.of(place, k)
            ev.append(Move(location=where))
        t = ann.times[k - 1]
        if t is not None and t.lower() in vocab.TIMES and t.lower() != when:
            new_day = vocab.time_index(t.lower()) < vocab.time_index(when)
            when = t.lower()
            ev.append(SetTime(time=when, new_day=new_day))
        ev += [Enter(character=n) for n in now if n not in before]
        out.append(ev)
    return out


# --- requirements: substitutions and sources ------------------------------------------


def _said(phrase: str | None, text: str) -> bool:
    """Whether ``text`` contains ``phrase`` as words (case and spacing aside)."""
    if not phrase:
        return False
    words = r"\s+".join(re.escape(w) for w in phrase.split())
    return re.search(rf"(?<!\w){words}(?!\w)", text, re.IGNORECASE) is not None


def _scene_sub(r: Requirement, ann: Annotations, k: int) -> tuple[bool, Any]:
    if r.attribute == "location":
        text = ann.places[k - 1]
        if text is None:
            return True, None
        return place_key(text) not in vocab.LOCATIONS, text
    if r.attribute == "time":
        t = ann.times[k - 1]
        if t is None:
            return True, None
        return t.lower() not in vocab.TIMES, t
    return True, None  # weather, order: the annotations do not give them


def _character_sub(r: Requirement, live: dict[tuple[str, str], Any], uncued: set[str]
                   ) -> tuple[bool, Any]:  # fmt: skip
    name, attr = r.subject, r.attribute
    if name in uncued:  # a profile with no skin, hair colour or top: nothing to find them
        return True, None  # by, so presence and look are asked through the profile fact
    if attr == "present":
        return r.expected is False, None  # absence: the ``absent`` fact, by description
    if attr == "hair":
        keys = [(name, "hair_color"), (name, "hair_style")]
        if not any(key in live for key in keys) or not isinstance(r.expected, list):
            return False, None
        colour, style = (live.get(key, v) for key, v in zip(keys, r.expected, strict=True))
        return True, None if colour is None else [str(colour), str(style or "")]
    return (name, attr) in live, live.get((name, attr))


def _source(r: Requirement, ann: Annotations, looks: dict[str, Look], text: str, k: int
            ) -> Literal["prompt", "memory"]:  # fmt: skip
    """The gold source rule (docs/IMPORT.md): ``prompt`` when the scene text states the
    fact (names the character, says the place or the time, or holds the profile's phrase),
    else ``memory``."""
    s, a = r.subject, r.attribute
    if s == "scene":
        value = ann.places[k - 1] if a == "location" else ann.times[k - 1]
        said = _said(place_key(value), text) if a == "location" and value else _said(value, text)
        return "prompt" if said else "memory"
    if a == "present":
        return "prompt" if r.expected is True and _said(s, text) else "memory"
    if a == "profile":
        return "prompt" if _said(ann.profile.get(s), text) else "memory"
    look = looks.get(s)
    attrs = ("hair_color", "hair_style") if a == "hair" else (a,)
    facts = [look.facts[x] for x in attrs if look is not None and x in look.facts]
    return "prompt" if facts and all(_said(f.phrase, text) for f in facts) else "memory"


def build_gold_story(n: Narrative) -> Story:
    """The story of a VinaBench sample from its annotations, or ``GoldError`` naming the
    scene."""
    if n.gold is None:
        raise GoldError("no VinaBench annotations (--constraints gold reads VinaBench's files)")
    ann = check_annotations(n.gold, len(n.scenes))
    cast = _cast(ann)
    looks = _looks(ann, cast)
    chars, live = _characters(cast, looks, [n for n in ann.present[0] if n in cast])
    places = _Places(ann.places)
    cues = ("skin", "hair_color", "top")
    uncued = {n for n in cast if not any(a in looks[n].facts for a in cues)}
    start_place = places.of(ann.places[0], 1)
    t0 = (ann.times[0] or "").lower()
    start_time = t0 if t0 in vocab.TIMES else vocab.TIMES[0]
    world = World(characters=chars, locations=[start_place], start_time=start_time,
                  start_weather="clear")  # fmt: skip
    scene_events = _events(ann, cast, places, (start_place, start_time))
    try:
        states = replay(world, scene_events, n.id)
    except TransitionError as err:
        raise GoldError(f"contradiction: {err.message}", scene=err.scene) from None
    derived = derive_story(world, scene_events, states)
    subs: list[Substitution] = []
    for k, reqs in enumerate(derived.requirements, start=1):
        for r in reqs:
            if r.subject == "scene":
                hit, value = _scene_sub(r, ann, k)
            else:
                hit, value = _character_sub(r, live, uncued)
            if hit:
                subs.append(Substitution(scene=k, subject=r.subject, attribute=r.attribute,
                                         value=value))  # fmt: skip
        for name, desc in ann.profile.items():
            if desc:
                attr = "profile" if name in ann.present[k - 1] else "absent"
                subs.append(Substitution(scene=k, subject=name, attribute=attr, value=desc))
    sources: dict[str, Literal["prompt", "memory"]] = {}
    scenes = []
    for k, ev in enumerate(scene_events, start=1):
        reqs = apply_substitutions(k, derived.requirements[k - 1], subs)
        text = n.scenes[k - 1]
        sources.update({r.id: _source(r, ann, looks, text, k) for r in reqs})
        scenes.append(Scene(index=k, events=ev, text=text, state=states[k - 1],
                            requirements=apply_sources(reqs, sources)))  # fmt: skip
    story = Story(
        id=n.id, category=IMPORTED, difficulty=difficulty_of(len(n.scenes)), seed=0,
        world=world, scenes=scenes, causal_links=derived.causal_links,
        imported=ImportInfo(source=n.source, llm=GOLD, substitutions=subs,
                            sources=sources),
    )  # fmt: skip
    for problem in story_problems(story, states, n.id):
        raise GoldError(f"contradiction: {problem.message}", scene=_scene_in(problem.location))
    return story


def _scene_in(pointer: str | None) -> int | None:
    parts = (pointer or "").split("/")
    if len(parts) > 2 and parts[1] == "scenes" and parts[2].isdigit():
        return int(parts[2]) + 1
    return None


def import_gold(narratives: Sequence[Narrative]) -> ImportReport:
    """Every narrative's story from its annotations (no call made); a story whose
    annotations contradict themselves is rejected with its scene, the others go on."""
    report = ImportReport([StoryResult(n) for n in narratives])
    for result in report.results:
        try:
            result.story = build_gold_story(result.narrative)
        except GoldError as err:
            result.error, result.scene = err.message, err.scene
    return report
