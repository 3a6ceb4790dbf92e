"""The literal reference judge, reading VinaBench's questions as worded.

``VinaLiteralJudge`` is ``LiteralJudge`` (``vsb.validation.reference_judges``: the picture read
by vsb's blind extractor, told only the object kinds a question names; no story, no oracle)
that also understands the eight question forms of ``vsb.evaluators.vina.questions``, each
read literally from what the extractor decodes:

- entity: ``Does this image contain or imply '<entity>'?`` -> an object of that kind shows
  the entity's colour and (when it names one) state, and, for a counted entity (``three red
  apples``), that many of them;
- count: ``How many characters are in this image?`` -> the people it finds, as a number;
- attribute: the profiles (``<name>: <skin>, <hair>, <top>…``, in the words of
  ``vsb.story.words``), then ``Do characters in this image fit into their descriptions?``
  -> each described character is a different person showing every cue of their profile;
- time and location: ``Is this image taken at night / in the <time> / at a <place>?`` ->
  the sky's time, the ground's place;
- style: ``Are all these images in the same style?`` -> every image reads as a render (one
  palette, one way of drawing);
- character: ``Do all these images contain the same charcater <name>: <profile>?`` -> in
  every image someone shows every cue of the profile;
- location: ``Are all these images taken at the same <place>?`` -> every image is there.

A question it cannot parse (a word outside vsb's vocabulary, ``early morning``) is UNSURE,
which VinaBench reads as a no. ``VinaDrawnJudge`` is the same reader with perfect vision
(``literal-drawn``: the state the simulator drew, ``vsb.validation.drawn``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

from vsb.evaluators.render.detected import DetectedPerson, DetectedState
from vsb.evaluators.vina.questions import NUMBER, YES_NO
from vsb.story import vocab, words
from vsb.validation.reference_judges import Answer, DrawnJudge, LiteralJudge

_NUMBERS = {w: n for n, w in enumerate(("no", "one", "two", "three", "four", "five", "six"))}
_PLURAL = {k.plural: k.name for k in vocab.OBJECT_KINDS.values()}
_COUNT = f"How many characters are in this image? {NUMBER}"
_ATTR_LEAD = "Character descriptions:\n"
_ATTR_ASK = f"Do characters in this image fit into their descriptions? {YES_NO}"
_ENTITY = re.compile(rf"Does this image contain or imply '(.+)'\? {YES_NO}")
_TIME = re.compile(rf"Is this image taken (?:at|in the) ({'|'.join(vocab.TIMES)})\? {YES_NO}")
_PLACE = re.compile(rf"Is this image taken at an? (.+)\? {YES_NO}")
_STYLE = f"Are all these images in the same style? {YES_NO}"
_SAME_CHAR = re.compile(rf"Do all these images contain the same charcater (.+?): (.+)\? {YES_NO}")
_SAME_PLACE = re.compile(rf"Are all these images taken at the same (.+)\? {YES_NO}")
#: Several images in one request: VinaBench's consistency questions begin so.
_MANY = ("Are all these images", "Do all these images")

Cues = tuple[tuple[str, str], ...]
"""(attribute of a detected person, value in codes), every one to be shown."""


class _Unsure(Exception):
    """A VinaBench question with a word the literal judge does not know (UNSURE)."""


def _yes(ok: bool) -> Answer:
    return "YES" if ok else "NO"


def profile_cues(profile: str) -> Cues:
    """``dark skin, short black hair, a red top, blue trousers, no accessory`` -> the cues
    in codes (``vsb.story.words`` read back); ``_Unsure`` for a part it does not know."""
    out: list[tuple[str, str]] = []
    for part in profile.split(", "):
        if part.endswith(" skin") and part[:-5] in words.SKIN_CODE:
            out.append(("skin", words.SKIN_CODE[part[:-5]]))
        elif (hair := words.hair_value(part)) is not None:
            out += [("hair_color", hair[0]), ("hair_style", hair[1])]
        elif m := re.fullmatch(r"an? (\w+) top", part):
            out.append(("top", m.group(1)))
        elif m := re.fullmatch(r"(\w+) trousers", part):
            out.append(("trousers", m.group(1)))
        elif part in words.ACCESSORY_CODE:
            out.append(("accessory", words.ACCESSORY_CODE[part]))
        else:
            raise _Unsure(part)
    return tuple(out)


def fits(p: DetectedPerson, cues: Cues) -> bool:
    """Whether person ``p`` shows every cue."""
    return all(getattr(p, attr) == value for attr, value in cues)


def _entity(d: DetectedState, entity: str) -> bool:
    """``open red umbrella`` / ``three fresh pink flowers``: shown in ``d``."""
    tokens = entity.split(" ")
    n = _NUMBERS.get(tokens[0])
    noun, adjectives = tokens[-1], tokens[1 if n is not None else 0 : -1]
    kind = noun if noun in vocab.OBJECT_KINDS else _PLURAL.get(noun)
    if kind is None:
        raise _Unsure(entity)
    states = vocab.OBJECT_KINDS[kind].states
    colour = [a for a in adjectives if a in vocab.OBJECT_COLORS]
    state = [a for a in adjectives if a in states]
    if len(colour) + len(state) != len(adjectives) or len(colour) > 1 or len(state) > 1:
        raise _Unsure(entity)
    found = [o for o in d.objects_of(kind)
             if all(o.color == c for c in colour) and all(o.state == s for s in state)]  # fmt: skip
    if n is None:
        return bool(found)
    return sum(o.count or 1 for o in found) == n


def _described(d: DetectedState, q: str) -> bool:
    """Each profile of the attribute question fits a different person of ``d``."""
    lines = q[len(_ATTR_LEAD) : -len(_ATTR_ASK)].strip("\n").split("\n")
    wanted = []
    for line in lines:
        _name, sep, profile = line.partition(": ")
        if not sep:
            raise _Unsure(line)
        wanted.append(profile_cues(profile))
    return any(
        all(fits(d.people[i], cues) for i, cues in zip(pick, wanted, strict=True))
        for pick in itertools.permutations(range(len(d.people)), len(wanted))
    )


def answer_one(d: DetectedState, q: str) -> Answer | None:
    """The literal answer to a VinaBench question about one picture (None: not one)."""
    if q == _COUNT:
        return str(len(d.people))
    if m := _ENTITY.fullmatch(q):
        return _yes(_entity(d, m.group(1)))
    if q.startswith(_ATTR_LEAD) and q.endswith(_ATTR_ASK):
        return _yes(_described(d, q))
    if m := _TIME.fullmatch(q):
        return _yes(d.time == m.group(1))
    if m := _PLACE.fullmatch(q):
        return _yes(d.location == m.group(1))
    return None


def answer_many(states: list[DetectedState | None], q: str) -> Answer:
    """The literal answer to a VinaBench consistency question about several pictures
    (None: a picture that does not read as a render)."""
    if q == _STYLE:
        return _yes(all(s is not None for s in states))
    if any(s is None for s in states):
        return "NO"  # a picture in another style shows none of vsb's people or places
    seen = [s for s in states if s is not None]
    if m := _SAME_CHAR.fullmatch(q):
        cues = profile_cues(m.group(2))
        return _yes(all(any(fits(p, cues) for p in s.people) for s in seen))
    if m := _SAME_PLACE.fullmatch(q):
        return _yes(all(s.location == m.group(1) for s in seen))
    raise _Unsure(q)


def _vina_many(questions: list[str]) -> bool:
    return bool(questions) and all(q.startswith(_MANY) for q in questions)


class VinaLiteralJudge(LiteralJudge):
    """``LiteralJudge`` that also reads VinaBench's questions (the module docstring)."""

    def answer(self, d: DetectedState, q: str) -> Answer:
        try:
            got = answer_one(d, q)
        except _Unsure:
            return "UNSURE"
        return super().answer(d, q) if got is None else got

    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[Answer]:
        if _vina_many(questions):
            return self.many_answers([first, second], questions)
        return super().pair_answers(first, second, questions)

    def many_answers(self, images: list[bytes], questions: list[str]) -> list[Answer]:
        """One answer per question about several pictures (VinaBench's consistency)."""
        states = [self._render(x) for x in images]
        return [_safe(answer_many, states, q) for q in questions]

    def _render(self, image: bytes) -> DetectedState | None:
        """The picture as read (None: it does not read as a render)."""
        try:
            return self._read(image, None)
        except Exception:  # any image the extractor cannot read
            return None


class VinaDrawnJudge(VinaLiteralJudge, DrawnJudge):
    """``VinaLiteralJudge`` with perfect vision (``DrawnJudge``'s eyes: what was drawn)."""

    def many_answers(self, images: list[bytes], questions: list[str]) -> list[Answer]:
        if any(self.drawn.seen(x) is None for x in images):
            return ["UNSURE"] * len(questions)
        return super().many_answers(images, questions)


def _safe(fn: Callable[..., Answer], *args: object) -> Answer:
    try:
        return fn(*args)
    except _Unsure:
        return "UNSURE"


#: The literal readers of VinaBench's questions by name, each made for its run folder.
VINA_JUDGES: dict[str, Callable[[Path], VinaLiteralJudge]] = {
    "literal": lambda _run: VinaLiteralJudge(),
    "literal-drawn": VinaDrawnJudge,
}
