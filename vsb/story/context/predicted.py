"""Predicted memory: the state as an extractor reads it from the story so far, not the true
state (VinaBench's "LLM constraints" beside its "gold constraints").

An **extractor** is a callable ``(story, k) -> memory``: the memory of scenes 1..k-1 in
``state_json``'s shape (the JSON structured memory shows a model). A real extractor reads the
scene texts only; the built-in **simulated extractor** (``simulated_extractor(rate)``) reads
the true state and gets each fact wrong with probability ``rate``, so the condition runs on
simulators without a key. Its facts are the scene's location, time, weather and left-to-right
order; each seen character's presence, skin, hair, top, trousers, accessory and pose; each
object that has entered the story (its entry, colour, state, count and where it is). A fact
drawn wrong becomes one of:

* *stale*: the value the fact had before its latest change (the extractor missed an event),
  when the story so far changed it; chosen half the time when there is one;
* *wrong value*: another value of the vocabulary (another colour, pose, holder, an adjacent
  swap in the order, a count off by one or two);
* *dropped*: an object's entry is left out of the memory (its other facts go with it).

The draws come from ``numpy.random.default_rng(extractor_seed(story.id, k - 1))``: three
uniforms per fact (error, kind, value) in a fixed order whatever the rate, so the errors at a
rate are a subset of those at any higher rate, and nothing depends on the run, the model or
the condition. The true state is never changed.

``PredictedMemory`` wraps an extractor for a condition: the context (memoised per story and
scene), and what the memory says about a requirement's fact (``stated``), from which the
condition's ``supplies`` (the memory holds the true value) and ``misleads`` (it holds another
one) follow.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from vsb.errors import InputError
from vsb.fsio import canonical_json
from vsb.story import vocab
from vsb.story.context.memory import state_json
from vsb.story.models import Requirement, SceneState, Story, Value
from vsb.story.words import in_codes

#: A memory in ``state_json``'s shape: what an extractor returns for ``(story, k)``.
Memory = dict[str, Any]
Extractor = Callable[[Story, int], Memory]
#: The (attribute, value) a memory states for a requirement's fact; attribute ``color`` for
#: an object whose entry has another colour than the story's.
Stated = tuple[str, Value | None]

#: The simulated extractor's error rate of ``predicted_memory`` (per fact).
DEFAULT_ERROR_RATE = 0.10
_CHAR_FACTS = ("present", "skin", "hair", "top", "trousers", "accessory", "pose")
_OBJ_FACTS = ("present", "color", "state", "count", "holder")


def extractor_seed(story_id: str, scene: int) -> int:
    """The simulated extractor's seed for its reading of ``story_id`` up to ``scene``."""
    digest = hashlib.sha256(canonical_json(["predicted_memory", story_id, scene])).digest()
    return int.from_bytes(digest[:8], "big")


def memory_facts(state: SceneState) -> list[tuple[str, str]]:
    """The (subject, attribute) facts an extractor reads from ``state``, in a fixed order."""
    out = [("scene", a) for a in ("location", "time", "weather")]
    if len(state.order) >= 2:
        out.append(("scene", "order"))
    for name, c in state.characters.items():
        if c.seen:
            out += [(name, a) for a in _CHAR_FACTS]
    for kind, o in state.objects.items():
        if o.appeared:
            out += [(kind, a) for a in _OBJ_FACTS if a != "count" or o.count is not None]
    return out


def _where(holder: object, place: object, removed: object) -> list[Any]:
    """An object's whereabouts as one comparable value."""
    if removed:
        return ["removed"]
    return ["held", holder] if holder is not None else ["ground", place]


def state_value(state: SceneState, subject: str, attribute: str) -> Any:
    """The value of an extractor fact in a true state (``memory_facts``' attributes)."""
    if subject == "scene":
        return list(state.order) if attribute == "order" else getattr(state, attribute)
    if subject in state.characters:
        c = state.characters[subject]
        return [c.hair_color, c.hair_style] if attribute == "hair" else getattr(c, attribute)
    o = state.objects[subject]
    if attribute == "present":
        return o.appeared
    if attribute == "holder":
        return _where(o.holder, o.place, o.removed)
    return getattr(o, attribute)


def memory_value(memory: Memory, subject: str, attribute: str) -> Any:
    """The value of an extractor fact in a memory (None where the memory has no such fact)."""
    if subject == "scene":
        return memory.get(attribute)
    chars, objs = memory.get("characters") or {}, memory.get("objects") or {}
    if subject in chars:
        return chars[subject].get(attribute)
    if attribute == "present":
        return subject in objs
    entry = objs.get(subject)
    if entry is None:
        return None
    if attribute == "holder":
        return _where(entry.get("holder"), entry.get("place"), entry.get("removed"))
    return entry.get(attribute)


def _wrong_values(state: SceneState, subject: str, attribute: str, now: Any) -> list[Any]:
    """Other values the fact could be read as (vocabulary order, the true value left out)."""
    if subject == "scene":
        if attribute == "order":
            swaps = []
            for i in range(len(now) - 1):
                new = list(now)
                new[i], new[i + 1] = new[i + 1], new[i]
                swaps.append(new)
            return swaps
        pool: Iterable[Any] = {
            "location": vocab.LOCATIONS, "time": vocab.TIMES, "weather": vocab.WEATHERS,
        }[attribute]  # fmt: skip
    elif subject in state.characters:
        if attribute == "hair":
            colors = [[h, now[1]] for h in vocab.HAIR_COLORS]
            pool = [*colors, *([now[0], s] for s in vocab.HAIR_STYLES)]
        else:
            pool = {
                "present": (True, False), "skin": vocab.SKIN_TONES,
                "top": vocab.CLOTHING_COLORS, "trousers": vocab.CLOTHING_COLORS,
                "accessory": vocab.ACCESSORIES, "pose": vocab.POSES,
            }[attribute]  # fmt: skip
    elif attribute == "color":
        pool = vocab.OBJECT_COLORS
    elif attribute == "state":
        pool = vocab.OBJECT_KINDS[subject].states
    elif attribute == "count":
        pool = [now + d for d in (-2, -1, 1, 2) if 1 <= now + d <= vocab.MAX_COUNT]
    else:  # holder: someone else seen so far, or the ground here
        seen = [n for n, c in state.characters.items() if c.seen]
        pool = [*(["held", n] for n in seen), ["ground", state.location]]
    return [v for v in pool if v != now]


def _stale(history: Sequence[SceneState], subject: str, attribute: str, now: Any) -> Any:
    """The value before the fact's latest change in ``history`` (None: it never changed)."""
    for past in reversed(history):
        if subject in past.characters and not past.characters[subject].seen:
            break
        if subject in past.objects and not past.objects[subject].appeared:
            break
        old = state_value(past, subject, attribute)
        if old != now:
            return old
    return None


def _apply(memory: Memory, subject: str, attribute: str, value: Any) -> None:
    """Write ``value`` into a memory (``state_json``'s shape) in place."""
    if subject == "scene":
        memory[attribute] = value
        return
    if subject in memory["characters"]:
        memory["characters"][subject][attribute] = value
        return
    if attribute == "present":  # dropped
        memory["objects"].pop(subject, None)
        return
    entry = memory["objects"].get(subject)
    if entry is None:
        return
    if attribute != "holder":
        entry[attribute] = value
        return
    for key in ("holder", "place", "removed"):
        entry.pop(key, None)
    where, *rest = value
    if where == "removed":
        entry["removed"] = True
    else:
        entry["holder" if where == "held" else "place"] = rest[0]


def simulated_reading(story: Story, k: int, rate: float) -> tuple[Memory, list[tuple[str, str]]]:
    """The simulated extractor's memory of ``story`` before scene ``k`` and the facts it got
    wrong (in ``memory_facts`` order)."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"error rate {rate!r} is not in [0, 1]")
    true, history = story.scenes[k - 2].state, [s.state for s in story.scenes[: k - 2]]
    memory = state_json(true)
    facts = memory_facts(true)
    draws = np.random.default_rng(extractor_seed(story.id, k - 1)).random((len(facts), 3))
    wrong: list[tuple[str, str]] = []
    dropped: set[str] = set()
    for (subject, attribute), (u_error, u_kind, u_value) in zip(facts, draws, strict=True):
        if u_error >= rate or subject in dropped:
            continue
        if attribute == "present" and subject in true.objects:
            dropped.add(subject)
            _apply(memory, subject, attribute, False)
            wrong.append((subject, attribute))
            continue
        now = state_value(true, subject, attribute)
        stale = _stale(history, subject, attribute, now)
        pool = _wrong_values(true, subject, attribute, now)
        if stale is not None and (u_kind < 0.5 or not pool):
            value = stale
        elif pool:
            value = pool[min(int(u_value * len(pool)), len(pool) - 1)]
        else:
            continue
        _apply(memory, subject, attribute, value)
        wrong.append((subject, attribute))
    return memory, wrong


def simulated_extractor(rate: float = DEFAULT_ERROR_RATE) -> Extractor:
    """The simulated extractor at ``rate`` errors per fact (see the module docstring)."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"error rate {rate!r} is not in [0, 1]")

    def extract(story: Story, k: int) -> Memory:
        return simulated_reading(story, k, rate)[0]

    return extract


def reading_errors(true: SceneState, memory: Memory) -> tuple[int, int]:
    """(facts read wrong, facts) of a memory against the true state: a dropped object counts
    once (its entry), its other facts not at all."""
    wrong = total = 0
    objects = memory.get("objects") or {}
    for subject, attribute in memory_facts(true):
        if subject in true.objects and attribute != "present" and subject not in objects:
            continue
        total += 1
        wrong += memory_value(memory, subject, attribute) != state_value(true, subject, attribute)
    return wrong, total


def suite_reading_errors(stories: Iterable[Story], rate: float) -> tuple[int, int]:
    """(facts read wrong, facts) of the simulated extractor at ``rate`` over every scene
    after the first of ``stories`` (``reading_errors`` summed)."""
    wrong = total = 0
    for story in stories:
        for k in range(2, len(story.scenes) + 1):
            w, t = reading_errors(story.scenes[k - 2].state, simulated_reading(story, k, rate)[0])
            wrong, total = wrong + w, total + t
    return wrong, total


def _stated(memory: Memory, story: Story, k: int, req: Requirement) -> Stated | None:
    subj, attr = req.subject, req.attribute
    if subj == "scene":
        value = memory.get(attr)
        return None if value is None else (attr, value)
    chars = memory.get("characters") or {}
    if subj in chars:
        c = chars[subj]
        return (attr, c.get(attr)) if attr in c else None
    entry = (memory.get("objects") or {}).get(subj)
    if entry is None:
        return None
    if entry.get("removed"):
        return ("present", False) if attr == "present" else None
    held = entry.get("holder")
    if attr == "holder":
        return ("holder", held)
    if attr == "present":
        if req.expected is False:
            return ("present", True)
        if held is not None:
            return None  # in someone's hands: says nothing drawable about lying here
        color = story.scenes[k - 1].state.objects[subj].color
        return ("present", True) if entry.get("color") == color else ("color", entry.get("color"))
    return (attr, entry[attr]) if attr in entry else None


class PredictedMemory:
    """An extractor as a condition's context: the memory of each (story, scene), memoised,
    and what it states about a requirement."""

    def __init__(self, name: str, extract: Extractor, memo_size: int = 1024) -> None:
        self.name = name
        self.extract = extract
        self._memo: OrderedDict[tuple[int, int], tuple[Story, Memory, Memory]] = OrderedDict()
        self._size = memo_size
        self._lock = threading.Lock()

    def memory(self, story: Story, k: int) -> Memory:
        """The extractor's memory of ``story`` before scene ``k`` (2 ≤ k ≤ len(scenes))."""
        return self._read(story, k)[0]

    def _read(self, story: Story, k: int) -> tuple[Memory, Memory]:
        """(the extractor's memory, the true one) before scene ``k``. The memo keeps the story
        it was read from, so a key is never another story's."""
        key = (id(story), k)
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                return hit[1], hit[2]
        memory = self.extract(story, k)
        if not (
            isinstance(memory, dict)
            and isinstance(memory.get("characters", {}), dict)
            and isinstance(memory.get("objects", {}), dict)
        ):
            raise InputError(
                f"extractor {self.name!r}, story {story.id} scene {k}: expected the memory as "
                "a JSON object shaped like structured memory's (characters and objects objects)"
            )
        memory = in_codes(memory)  # a reading in words (a real extractor's) compares as codes
        true = state_json(story.scenes[k - 2].state)
        with self._lock:
            self._memo[key] = (story, memory, true)
            if len(self._memo) > self._size:
                self._memo.popitem(last=False)
        return memory, true

    def stated(self, story: Story, k: int, req: Requirement) -> Stated | None:
        """What the memory before scene ``k`` states about ``req``'s fact (None: nothing)."""
        if k <= 1:
            return None
        return _stated(self._read(story, k)[0], story, k, req)

    def supplies(self, story: Story, k: int, req: Requirement) -> bool:
        """The memory states ``req``'s fact with its true value."""
        return self.stated(story, k, req) == (req.attribute, req.expected)

    def misleads(self, story: Story, k: int, req: Requirement) -> Stated | None:
        """The (attribute, value) the memory states for ``req``'s fact where the extractor
        read it wrong: neither the true value now nor what the true memory states (None:
        it states the truth, the true memory's value, or nothing)."""
        if k <= 1:
            return None
        memory, true = self._read(story, k)
        said = _stated(memory, story, k, req)
        if said is None or said == (req.attribute, req.expected):
            return None
        return None if said == _stated(true, story, k, req) else said
