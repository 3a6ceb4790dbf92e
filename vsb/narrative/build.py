"""From an LLM's extraction to a state-checked story (docs/IMPORT.md).

The world and the events are replayed through the state machine (``vsb.state.replay``) and
the story invariants; the requirements are derived from the replayed states by the
generator's own derivation (``vsb.story.requirements.derive_story``), and each scene's text
is the narrative's, verbatim.

What the vocabulary cannot hold is kept apart from the state: a character's look or a
start value the text does not give ("unknown"), or gives outside the vocabulary (free
text), and places outside it. The world holds a placeholder from the vocabulary instead
(chosen to keep the invariants: characters told apart, tops distinct); every requirement
derived from a placeholder is withheld (unknown) or carries the free text, judged by a VLM
only (``Substitution``). Entities outside the vocabulary become VLM-only presence
requirements of their scenes. Everything else (event types, object kinds and states,
times and weathers in events, clothing changes, poses in events) must be in the
vocabulary: anything else is an ``AnswerError`` naming the scene.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydantic import ValidationError

from vsb.narrative.answer import UNKNOWN, AnswerError, Extraction
from vsb.state import replay
from vsb.story import vocab
from vsb.story.invariants import story_problems
from vsb.story.models import (
    IMPORTED,
    ChangeAttr,
    Character,
    Event,
    ImportInfo,
    Move,
    Requirement,
    Scene,
    SetPose,
    SetTime,
    SetWeather,
    Story,
    Substitution,
    Value,
    World,
    WorldObject,
)
from vsb.story.requirements import apply_substitutions, derive_story

Key = tuple[str, str]  # (subject, attribute)
#: Placeholders chosen for a value the narrative does not give in the vocabulary (the first
#: that keeps the characters apart; gold annotations use the same).
PLACEHOLDERS: dict[str, Sequence[str]] = {
    "skin": tuple(vocab.SKIN_TONES),
    "hair_color": tuple(vocab.HAIR_COLORS),
    "hair_style": vocab.HAIR_STYLES,
    "top": tuple(vocab.CLOTHING_COLORS),
    "trousers": tuple(reversed(vocab.CLOTHING_COLORS)),
    "pose": vocab.POSES,
}
_ALLOWED: dict[str, Sequence[str]] = {**PLACEHOLDERS, "accessory": vocab.ACCESSORIES}


def _free(value: str) -> str | None:
    """A value outside the vocabulary: its free text, or None for unknown."""
    text = value.strip()
    return None if not text or text.lower() == UNKNOWN else text


def difficulty_of(n_scenes: int) -> str:
    """easy up to 3 scenes, medium up to 5, hard beyond (as the generator's lengths)."""
    return "easy" if n_scenes <= 3 else "medium" if n_scenes <= 5 else "hard"


class _Builder:
    def __init__(self, ext: Extraction, texts: Sequence[str], story_id: str) -> None:
        self.ext, self.texts, self.id = ext, texts, story_id
        #: placeholder texts in force: (subject, attribute) -> free text or None (unknown)
        self.live: dict[Key, str | None] = {}
        self.places: dict[str, str] = {}  # free-text place -> placeholder location

    def fail(self, message: str, scene: int | None = None) -> AnswerError:
        return AnswerError(message, scene=scene)

    # --- world -------------------------------------------------------------------------

    def characters(self) -> list[Character]:
        ext = self.ext
        if len(ext.characters) > 3:
            raise self.fail(f"vsb stories hold at most 3 characters, the answer names "
                            f"{len(ext.characters)}")  # fmt: skip
        names = [c.name for c in ext.characters]
        if len(set(names)) != len(names):
            raise self.fail("the answer names a character twice")
        present = ext.start.present
        for n in present:
            if n not in names:
                raise self.fail(f"start.present names {n!r}, who is not a character", 1)
        if len(set(present)) != len(present):
            raise self.fail("start.present names a character twice", 1)
        order = [*present, *(n for n in names if n not in present)]
        taken: dict[str, list[str]] = {a: [] for a in _ALLOWED}
        pairs: list[tuple[str, str]] = []
        out = []
        for name in order:
            c = next(x for x in ext.characters if x.name == name)
            values: dict[str, str] = {}
            for attr, allowed in _ALLOWED.items():
                raw = getattr(c, attr).strip()
                if raw in allowed:
                    values[attr] = raw
                    continue
                self.live[(name, attr)] = _free(raw)
                if attr == "accessory":  # a free-text accessory is worn: checked; unknown: not
                    values[attr] = "none" if _free(raw) is None else "hat"
            for attr in PLACEHOLDERS:  # placeholders, keeping characters distinguishable
                if attr in values:
                    continue
                for v in PLACEHOLDERS[attr]:
                    if attr == "top" and (v in taken["top"] or v == values.get("trousers")):
                        continue
                    if attr == "trousers" and v == values.get("top"):
                        continue
                    if attr == "hair_color" and (values["skin"], v) in pairs:
                        continue
                    if attr == "skin" and (v, values.get("hair_color")) in pairs:
                        continue  # told apart from the others by (skin, hair colour)
                    values[attr] = v
                    break
            taken["top"].append(values["top"])
            pairs.append((values["skin"], values["hair_color"]))
            out.append(Character(name=name, initially_present=name in present, **values))
        return out

    def place(self, raw: str, scene: int) -> str:
        """The vocabulary location of a place (a placeholder for free text)."""
        if raw in vocab.LOCATIONS:
            return raw
        text = _free(raw) or UNKNOWN
        if text not in self.places:
            used = set(self.places.values()) | self._vocab_places()
            spare = [loc for loc in vocab.LOCATIONS if loc not in used]
            if not spare:
                raise self.fail("too many places outside the vocabulary", scene)
            self.places[text] = spare[0]
        return self.places[text]

    def _vocab_places(self) -> set[str]:
        found = {self.ext.start.place}
        for s in self.ext.scenes:
            found |= {e.location for e in s.events if isinstance(e, Move)}
        return found & set(vocab.LOCATIONS)

    def world(self) -> World:
        ext = self.ext
        chars = self.characters()
        names = {c.name for c in chars}
        objs = []
        if len(ext.objects) > 3:
            raise self.fail(f"vsb stories hold at most 3 objects, the answer has "
                            f"{len(ext.objects)}")  # fmt: skip
        for o in ext.objects:
            if o.kind not in vocab.OBJECT_KINDS:
                raise self.fail(
                    f"unknown vocabulary: object kind {o.kind!r} (things outside the "
                    "vocabulary go in a scene's entities)"
                )
            if o.holder is not None and o.holder not in names:
                raise self.fail(f"the {o.kind} is held by {o.holder!r}, not a character", 1)
            color = o.color if o.color in vocab.OBJECT_COLORS else None
            if color is None:
                self.live[(o.kind, "color")] = _free(o.color)
            objs.append(
                WorldObject(
                    kind=o.kind, color=color or next(iter(vocab.OBJECT_COLORS)),
                    initial_state=o.state, count=o.count,
                    initial_holder=o.holder if o.in_scene_1 else None,
                    initially_present=o.in_scene_1,
                )
            )  # fmt: skip
        start = ext.start
        for attr, raw, allowed in (
            ("time", start.time, vocab.TIMES),
            ("weather", start.weather, vocab.WEATHERS),
        ):
            if raw not in allowed:
                self.live[("scene", attr)] = _free(raw)
        if start.place not in vocab.LOCATIONS:
            self.live[("scene", "location")] = _free(start.place)
        return World(
            characters=chars,
            objects=objs,
            locations=[self.place(start.place, 1)],
            start_time=start.time if start.time in vocab.TIMES else vocab.TIMES[0],
            start_weather=start.weather if start.weather in vocab.WEATHERS else "clear",
        )

    # --- events --------------------------------------------------------------------------

    def events(self, k: int, events: Sequence[Event]) -> Iterator[Event]:
        """Scene ``k``'s events with places mapped; placeholders they end are dropped."""
        for ev in events:
            match ev:
                case Move():
                    free = ev.location not in vocab.LOCATIONS
                    loc = self.place(ev.location, k)
                    if free:
                        self.live[("scene", "location")] = _free(ev.location)
                    else:
                        self.live.pop(("scene", "location"), None)
                    yield Move(location=loc)
                    continue
                case SetTime():
                    self.live.pop(("scene", "time"), None)
                case SetWeather():
                    self.live.pop(("scene", "weather"), None)
                case ChangeAttr():
                    self.live.pop((ev.character, ev.attribute), None)
                case SetPose():
                    self.live.pop((ev.character, "pose"), None)
            yield ev


def _substitution(live: dict[Key, str | None], r: Requirement) -> tuple[bool, Value | None]:
    """Whether ``r`` rests on a placeholder, and its free text (None: withheld)."""
    s, a = r.subject, r.attribute
    if a == "hair":
        keys = [(s, "hair_color"), (s, "hair_style")]
        if not any(k in live for k in keys) or not isinstance(r.expected, list):
            return False, None
        parts = [live.get(k, v) for k, v in zip(keys, r.expected, strict=True)]
        if any(p is None for p in parts):
            return True, None
        return True, [str(p) for p in parts]
    if a in ("present", "holder") and (s, "color") in live and r.expected is not False:
        return True, r.expected  # the object's colour is not known: judged without it
    key = (s, a)
    if key not in live:
        return False, None
    return True, live[key]


def build_story(ext: Extraction, texts: Sequence[str], story_id: str, *, source: str,
                llm: str) -> Story:  # fmt: skip
    """The story, or ``AnswerError`` (a schema-valid answer outside the vocabulary, the story
    model or its invariants) or ``TransitionError`` (a contradiction in the events), each
    naming the scene."""
    b = _Builder(ext, texts, story_id)
    try:
        world = b.world()
    except ValidationError as err:
        raise AnswerError(f"the world does not fit a story: {err.errors()[0]['msg']}") from None
    if ext.scenes[0].events:
        raise AnswerError("scene 1 is the start and has no events", scene=1)
    scene_events: list[list[Event]] = []
    lives: list[dict[Key, str | None]] = []
    for k, s in enumerate(ext.scenes, start=1):
        scene_events.append(list(b.events(k, s.events)))
        lives.append(dict(b.live))
    states = replay(world, scene_events, story_id)
    derived = derive_story(world, scene_events, states)
    subs: list[Substitution] = []
    for k, reqs in enumerate(derived.requirements, start=1):
        for r in reqs:
            hit, value = _substitution(lives[k - 1], r)
            if hit:
                subs.append(Substitution(scene=k, subject=r.subject, attribute=r.attribute,
                                         value=value))  # fmt: skip
        for name in dict.fromkeys(e.strip() for e in ext.scenes[k - 1].entities):
            if (
                name
                and name != "scene"
                and name not in states[k - 1].characters
                and (name not in vocab.OBJECT_KINDS)
            ):
                subs.append(Substitution(scene=k, subject=name, attribute="present", value=True))
    scenes = [
        Scene(index=k, events=ev, text=texts[k - 1], state=states[k - 1],
              requirements=apply_substitutions(k, derived.requirements[k - 1], subs))
        for k, ev in enumerate(scene_events, start=1)
    ]  # fmt: skip
    story = Story(
        id=story_id, category=IMPORTED, difficulty=difficulty_of(len(texts)),
        seed=0, world=world, scenes=scenes, causal_links=derived.causal_links,
        imported=ImportInfo(source=source, llm=llm, substitutions=subs),
    )  # fmt: skip
    for problem in story_problems(story, states, story_id):
        raise AnswerError(f"contradiction: {problem.message}", scene=_scene_in(problem.location))
    return story


def _scene_in(pointer: str | None) -> int:
    parts = (pointer or "").split("/")
    if len(parts) > 2 and parts[1] == "scenes" and parts[2].isdigit():
        return int(parts[2]) + 1
    return 0
