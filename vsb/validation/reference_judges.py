"""Reference judges that vsb did not tune to its own answer key, for ``vsb validate-judge``.

* ``LiteralJudge`` reads the question as worded and the picture as drawn: it decodes the
  image with vsb's blind extractor (told only the attribute vocabulary and the object kinds
  the questions name, never a story or an oracle), parses each question's text (who it
  locates by which cues, what it asks) and answers what it literally asks, the way a careful
  VLM would. It cannot look an answer up: it gets bytes and sentences, nothing else. A
  question whose person it cannot find (no one, or several, show the cues) is UNSURE; a
  sentence it cannot parse is UNSURE.
* ``ConstantJudge`` answers every question YES, NO or UNSURE; ``GarbageJudge`` answers with
  a sentence that is no answer (a parse failure for every question).

Each is an ``Answerer`` that ``vsb.validation.sim_judge.JudgeServer`` serves as an
OpenAI-compatible chat-completions endpoint on 127.0.0.1. Validation must rank them:
always-YES finds nothing (recall ≈ 0), always-NO flags everything (precision ≈ the base
rate), the literal judge is close to the rule checker.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from vsb.evaluators.extractor import extract
from vsb.evaluators.render.decode import index_counts, load_indices
from vsb.evaluators.render.detected import DetectedPerson, DetectedState, EntityVocabulary
from vsb.evaluators.vlm.questions import FALLBACK, ORDER_LEAD
from vsb.story import vocab
from vsb.validation.drawn import DrawnFrames

Answer = str
_SKIN = {
    "very light": "tone-1",
    "light": "tone-2",
    "medium-light": "tone-3",
    "medium-dark": "tone-4",
    "dark": "tone-5",
    "very dark": "tone-6",
}
_POSES = {
    "standing": "standing",
    "sitting": "sitting",
    "waving": "waving",
    "cheering with both arms raised": "cheering",
}
_ACCESSORIES = {
    "wearing a hat": "hat",
    "wearing a scarf": "scarf",
    "wearing glasses": "glasses",
    "carrying a bag": "bag",
}
_ANY_ACCESSORY = "wearing a hat, a scarf or glasses, or carrying a bag"
_PLACES = {f"on a {p}" for p in ("beach", "street")}
_WEATHER = {
    "Is the weather clear?": "clear",
    "Is it cloudy?": "cloudy",
    "Is it raining?": "rainy",
    "Is it snowing?": "snowy",
}
_TIME = {
    "Is it morning?": "morning",
    "Is it noon?": "noon",
    "Is it afternoon?": "afternoon",
    "Is it evening?": "evening",
    "Is it night?": "night",
}
_PLURAL = {k.plural: k.name for k in vocab.OBJECT_KINDS.values()}
#: Decoded pictures a literal judge keeps (a plane is 256 KiB).
_PLANES = 8
_WHO = r"the person with (.+?)"


def _yes(ok: bool) -> Answer:
    return "YES" if ok else "NO"


def _hair(text: str) -> tuple[str, str] | None:
    """``short black hair`` / ``black hair in a ponytail`` -> (colour, style)."""
    m = re.fullmatch(r"(.+) hair in an? (bun|ponytail)", text)
    if m:
        return m.group(1), m.group(2)
    m = re.fullmatch(r"(short|long) (.+) hair", text)
    return (m.group(2), m.group(1)) if m else None


@dataclass(frozen=True)
class _Cue:
    attribute: str  # skin | hair_color | hair_style | top | trousers | hair (colour, style)
    value: str | tuple[str, str]

    def shown_by(self, p: DetectedPerson) -> bool:
        if self.attribute == "hair":
            return (p.hair_color, p.hair_style) == self.value
        return getattr(p, self.attribute) == self.value


def _cue(text: str) -> _Cue | None:
    text = text.strip()
    if (hair := _hair(text)) is not None:  # "short black hair": colour and style at once
        return _Cue("hair", hair)
    if text.endswith(" skin") and text[:-5] in _SKIN:
        return _Cue("skin", _SKIN[text[:-5]])
    if text.endswith(" hair") and text[:-5] in vocab.HAIR_COLORS:
        return _Cue("hair_color", text[:-5])
    m = re.fullmatch(r"an? (\w+) top", text)
    if m and m.group(1) in vocab.CLOTHING_COLORS:
        return _Cue("top", m.group(1))
    m = re.fullmatch(r"(\w+) trousers", text)
    if m and m.group(1) in vocab.CLOTHING_COLORS:
        return _Cue("trousers", m.group(1))
    m = re.fullmatch(r"(short|long) hair|an? (bun|ponytail)", text)
    if m:
        return _Cue("hair_style", m.group(1) or m.group(2))
    return None


class _Unparsed(Exception):
    """A sentence the literal judge does not understand (answered UNSURE)."""


@dataclass(frozen=True)
class _Locator:
    """``light skin, black hair or a red top`` (any cue) or ``light skin and black hair``."""

    cues: tuple[_Cue, ...]
    every: bool

    @classmethod
    def parse(cls, text: str) -> _Locator:
        every = " and " in text and " or " not in text
        parts = re.split(r", | or | and ", text)
        cues = tuple(c for c in (_cue(p) for p in parts) if c is not None)
        if not cues or len(cues) != len(parts):
            raise _Unparsed(text)
        return cls(cues, every)

    def matches(self, p: DetectedPerson) -> bool:
        shown = [c.shown_by(p) for c in self.cues]
        return all(shown) if self.every else any(shown)

    def find(self, d: DetectedState) -> list[int]:
        """Indices of the people showing the cues; of several, those who show the most (the
        best match, as a careful reader picks the person meant)."""
        found = [i for i, p in enumerate(d.people) if self.matches(p)]
        if self.every or len(found) < 2:
            return found
        shown = {i: sum(c.shown_by(d.people[i]) for c in self.cues) for i in found}
        best = max(shown.values())
        return [i for i in found if shown[i] == best]


@dataclass(frozen=True)
class _Tiered:
    """``light skin or black hair (failing that, with a red top; failing that, with blue
    trousers)``: the first tier someone in the picture shows decides who is meant."""

    tiers: tuple[_Locator, ...]

    @classmethod
    def parse(cls, text: str) -> _Tiered:
        m = re.fullmatch(rf"(.+?) \(({FALLBACK}.+)\)", text)
        if m is None:
            return cls((_Locator.parse(text),))
        rest = [t.removeprefix(FALLBACK) for t in m.group(2).split("; ")]
        return cls(tuple(_Locator.parse(t) for t in (m.group(1), *rest)))

    def find(self, d: DetectedState) -> list[int]:
        """The people the first tier that anyone shows picks (none: no one shows any)."""
        return next((found for t in self.tiers if (found := t.find(d))), [])


@lru_cache(maxsize=1024)
def _tiered(text: str) -> _Tiered:
    """``_Tiered.parse(text)``, parsed once per wording (a ``_Tiered`` is immutable)."""
    return _Tiered.parse(text)


class LiteralJudge:
    """Answers questions from what the picture shows, read through their own wording."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, tuple[str, ...]], DetectedState] = {}
        self._planes: dict[str, tuple[Any, Any]] = {}  # the last decoded pictures
        self._lock = threading.Lock()

    def _read(self, image: bytes, kinds: tuple[str, ...] | None) -> DetectedState:
        """The picture as read, looking for ``kinds`` of object (None: people and place
        only, so any earlier reading of the same picture will do)."""
        sha = hashlib.sha256(image).hexdigest()
        key = (sha, kinds or ())
        with self._lock:
            hit = self._seen.get(key)
            if hit is None and kinds is None:
                hit = next((v for k, v in self._seen.items() if k[0] == sha), None)
        if hit is None:
            plane, counts = self._decoded(image, sha)
            hit = extract(plane, EntityVocabulary.of_kinds(kinds or ()), counts)
            with self._lock:
                self._seen[key] = hit
        return hit

    def _decoded(self, image: bytes, sha: str) -> tuple[Any, Any]:
        """The picture's palette indices and their counts, decoded once for the questions
        that name different kinds of object (the last ``_PLANES`` pictures are kept: the
        questions about one picture come together)."""
        with self._lock:
            got = self._planes.get(sha)
        if got is None:
            plane = load_indices(image)
            got = (plane, index_counts(plane))
            with self._lock:
                self._planes[sha] = got
                while len(self._planes) > _PLANES:
                    del self._planes[next(iter(self._planes))]
        return got

    @staticmethod
    def kinds_named(questions: list[str]) -> tuple[str, ...]:
        """The object kinds the questions name (what a VLM's prompt would tell it to find)."""
        words = set(re.findall(r"[a-z]+", " ".join(questions).lower()))
        named = {k for k in vocab.OBJECT_KINDS if k in words}
        named |= {_PLURAL[w] for w in words if w in _PLURAL}
        return tuple(sorted(named))

    def answers(self, image: bytes, questions: list[str]) -> list[Answer]:
        """One answer per question about one picture."""
        d = self._read(image, self.kinds_named(questions))
        return [self._safe(self.answer, d, q) for q in questions]

    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[Answer]:
        """One answer per question comparing two pictures."""
        a, b = self._read(first, None), self._read(second, None)
        return [self._safe(self.compare, a, b, q) for q in questions]

    @staticmethod
    def _safe(fn: Callable[..., Answer], *args: object) -> Answer:
        try:
            return fn(*args)
        except _Unparsed:
            return "UNSURE"

    # --- one picture ----------------------------------------------------------------------

    def answer(self, d: DetectedState, q: str) -> Answer:
        """The literal answer to question ``q`` about ``d``."""
        if m := re.fullmatch(r"Is there a person with (.+) in the picture\?", q):
            return _yes(bool(_tiered(m.group(1)).find(d)))
        if q.startswith(ORDER_LEAD):
            names = q[len(ORDER_LEAD) : -1].strip().split("; then ")
            return self._order(d, [n.removeprefix("the person with ") for n in names])
        if m := re.fullmatch(rf"Does {_WHO} stand to the left of {_WHO}\?", q):
            return self._order(d, [m.group(1), m.group(2)])
        verb = r"((?:have|wearing|holding|carrying) .+|standing|sitting|waving|cheering .+)"
        if m := re.fullmatch(rf"(?:Does|Is) {_WHO} {verb}\?", q):
            return self._about_person(d, m.group(1), m.group(2))
        return self._about_scene(d, q)

    def _one(self, d: DetectedState, locator: str) -> DetectedPerson | None:
        found = _tiered(locator).find(d)
        return d.people[found[0]] if len(found) == 1 else None

    def _order(self, d: DetectedState, locators: list[str]) -> Answer:
        found = [_tiered(t).find(d) for t in locators]
        if any(len(f) > 1 for f in found):
            return "UNSURE"
        if any(not f for f in found):
            return "NO"  # someone named is not there: they do not stand in that order
        xs = [d.people[f[0]].x for f in found]
        return _yes(all(a < b for a, b in itertools.pairwise(xs)))

    def _about_person(self, d: DetectedState, locator: str, rest: str) -> Answer:
        p = self._one(d, locator)
        if p is None:
            return "UNSURE"  # no one, or more than one, is the person meant
        if rest.startswith("have "):
            asked = rest[5:]
            if asked.endswith(" skin") and asked[:-5] in _SKIN:
                return _yes(p.skin == _SKIN[asked[:-5]])
            hair = _hair(asked)
            if hair is None:
                raise _Unparsed(rest)
            return _yes((p.hair_color, p.hair_style) == hair)
        if rest == _ANY_ACCESSORY:
            return _yes(p.accessory not in (None, "none"))
        if rest in _ACCESSORIES:
            return _yes(p.accessory == _ACCESSORIES[rest])
        if rest in _POSES:
            return _yes(p.pose == _POSES[rest])
        if m := re.fullmatch(r"wearing an? (\w+) top", rest):
            return _yes(p.top == m.group(1))
        if m := re.fullmatch(r"wearing (\w+) trousers", rest):
            return _yes(p.trousers == m.group(1))
        if m := re.fullmatch(r"holding the (\w+) (\w+)", rest):
            i = d.people.index(p)
            held = [o for o in d.objects_of(m.group(2)) if o.color == m.group(1)]
            return _yes(any(o.holder == i for o in held))
        raise _Unparsed(rest)

    def _about_scene(self, d: DetectedState, q: str) -> Answer:
        if q == "Is there exactly one person in the picture?":
            return _yes(len(d.people) == 1)
        if m := re.fullmatch(r"Are there exactly (\d+) people in the picture\?", q):
            return _yes(len(d.people) == int(m.group(1)))
        if q in _WEATHER:
            return _yes(d.weather == _WEATHER[q])
        if q in _TIME:
            return _yes(d.time == _TIME[q])
        if m := re.fullmatch(r"Is there an? (\w+) of any colour in the picture\?", q):
            return _yes(bool(d.objects_of(m.group(1))))
        if m := re.fullmatch(r"Is there an? (\w+) (\w+) in the picture\?", q):
            if m.group(1) == "exactly":
                raise _Unparsed(q)
            return _yes(any(o.color == m.group(1) for o in d.objects_of(m.group(2))))
        if m := re.fullmatch(r"Is there an? (\w+) in the picture\?", q):
            return _yes(bool(d.objects_of(m.group(1))))
        if m := re.fullmatch(r"Are there any (\w+) in the picture\?", q):
            return _yes(bool(d.objects_of(_PLURAL.get(m.group(1), m.group(1)))))
        if m := re.fullmatch(r"Is there exactly one (\w+) in the picture\?", q):
            return _yes(self._count(d, m.group(1)) == 1)
        if m := re.fullmatch(r"Are there exactly (\d+) (\w+) in the picture\?", q):
            return _yes(self._count(d, _PLURAL.get(m.group(2), m.group(2))) == int(m.group(1)))
        if m := re.fullmatch(r"Are the (\w+) (\w+)\?", q):
            found = d.objects_of(_PLURAL.get(m.group(1), m.group(1)))
            return _yes(bool(found) and all(o.state == m.group(2) for o in found))
        if m := re.fullmatch(r"Is the (\w+) (\w+)\?", q):
            found = d.objects_of(m.group(1))
            return _yes(bool(found) and all(o.state == m.group(2) for o in found))
        if m := re.fullmatch(r"Is the scene set (on an?|in an?) (\w+)\?", q):
            return _yes(d.location == m.group(2))
        raise _Unparsed(q)

    @staticmethod
    def _count(d: DetectedState, kind: str) -> int:
        return sum(o.count or 1 for o in d.objects_of(kind))

    # --- two pictures ---------------------------------------------------------------------

    def compare(self, a: DetectedState, b: DetectedState, q: str) -> Answer:
        """The literal answer to a question comparing picture ``a`` with picture ``b``."""
        if q == "Do the two pictures show the same place?":
            return _yes(a.location is not None and a.location == b.location)
        pat = (
            rf"Does {_WHO} in the first picture (have the same skin tone, hair colour and hair "
            rf"style|wear the same clothes \(top, trousers and accessory\)) as {_WHO} in the "
            r"second picture\?"
        )
        m = re.fullmatch(pat, q)
        if m is None:
            raise _Unparsed(q)
        p, r = self._one(a, m.group(1)), self._one(b, m.group(3))
        if p is None or r is None:
            return "UNSURE"
        attrs = ("skin", "hair_color", "hair_style")
        if m.group(2).startswith("wear"):
            attrs = ("top", "trousers", "accessory")
        return _yes(all(getattr(p, x) == getattr(r, x) for x in attrs))


class DrawnJudge(LiteralJudge):
    """``LiteralJudge`` with perfect vision: it reads each question as worded, and the
    picture as the simulator drew it (``vsb.validation.drawn``: the oracle's rendered values
    over the story's state, never a fault's label) instead of through the extractor. An
    image that is not a frame of its run gets UNSURE to every question."""

    def __init__(self, run_dir: str | Path) -> None:
        super().__init__()
        self.drawn = DrawnFrames(run_dir)

    def _read(self, image: bytes, kinds: tuple[str, ...] | None) -> DetectedState:
        sha = hashlib.sha256(image).hexdigest()
        with self._lock:
            hit = self._seen.get((sha, ()))
        if hit is None:
            hit = self.drawn.seen(image) or _UNKNOWN
            with self._lock:
                self._seen[(sha, ())] = hit
        return hit

    def answers(self, image: bytes, questions: list[str]) -> list[Answer]:
        if self._read(image, None) is _UNKNOWN:
            return ["UNSURE"] * len(questions)
        return super().answers(image, questions)

    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[Answer]:
        if any(self._read(x, None) is _UNKNOWN for x in (first, second)):
            return ["UNSURE"] * len(questions)
        return super().pair_answers(first, second, questions)


#: What ``DrawnJudge`` sees in an image that is not a frame of its run.
_UNKNOWN = DetectedState((), (), None, None, None)


class ConstantJudge:
    """Answers every question with the same word (YES, NO or UNSURE)."""

    def __init__(self, word: Answer) -> None:
        self.word = word

    def answers(self, image: bytes, questions: list[str]) -> list[Answer]:
        return [self.word] * len(questions)

    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[Answer]:
        return [self.word] * len(questions)


class GarbageJudge(ConstantJudge):
    """Answers with a sentence that is no YES/NO/UNSURE (every answer a parse failure)."""

    def __init__(self) -> None:
        super().__init__("What a lovely picture, full of colour and life!")


#: The reference judges by name (``vsb validate-judge`` ranks them; the site shows them),
#: each made for the run folder whose frames it is asked about (only ``literal-drawn``
#: reads it: what was drawn in each frame).
REFERENCE_JUDGES: dict[str, Callable[[Path], LiteralJudge | ConstantJudge]] = {
    "literal": lambda _run: LiteralJudge(),
    "literal-drawn": DrawnJudge,
    "always-yes": lambda _run: ConstantJudge("YES"),
    "always-no": lambda _run: ConstantJudge("NO"),
    "always-unsure": lambda _run: ConstantJudge("UNSURE"),
    "garbage": lambda _run: GarbageJudge(),
}
