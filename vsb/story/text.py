"""Scene text: compose screenplay-style prompts from events, and the paraphrase and implicit
styles.

Scene 1 states everything visible. Later scenes state the names of who is there, the place,
and what changes — nothing else — so every unchanged fact is a ``memory`` requirement.
``compose_scene`` returns the text together with the set of facts it states; the
requirement builder uses that set to mark sources, and ``fact_cues`` gives the phrases by
which a fact is stated, so a test can check the split against the text itself. In the
implicit style a state change with a stated cause is told as the event alone ("A dog pulls at
the book until its pages rip."), never as its effect ("... so the book is torn now"): the
effect is for the model to infer (``implicit_cause``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vsb.story import vocab, words
from vsb.story.models import (
    Appear,
    ChangeAttr,
    ChangeState,
    Drop,
    Enter,
    Event,
    Exit,
    Give,
    Move,
    ObjectState,
    Pickup,
    Remove,
    SceneState,
    SetCount,
    SetPose,
    SetTime,
    SetWeather,
    Swap,
    World,
)

Fact = tuple[str, str]  # (subject, attribute)

NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six")


def _count_phrase(kind: str, count: int) -> str:
    k = vocab.OBJECT_KINDS[kind]
    return f"{NUMBER_WORDS[count]} {k.name if count == 1 else k.plural}"


def _be(kind: str, count: int | None) -> str:
    return "are" if count is not None and count != 1 else "is"


def _a(word: str) -> str:
    """The indefinite article for ``word``."""
    return "an" if word[:1] in "aeiou" else "a"


def accessory_phrase(accessory: str) -> str:
    """'no accessory', 'a hat', 'glasses' (``words.accessory``)."""
    return words.accessory(accessory)


def describe_character(name: str, state: SceneState) -> tuple[str, set[Fact]]:
    """A full description of a character: every identity, clothing and pose fact."""
    c = state.characters[name]
    acc = accessory_phrase(c.accessory)
    text = (
        f"{name} has {words.skin(c.skin)} and {words.hair(c.hair_color, c.hair_style)}, "
        f"wears {_a(c.top)} {c.top} top, {c.trousers} trousers and {acc}, "
        f"and is {words.pose(c.pose)}."
    )
    facts = {(name, a) for a in ("skin", "hair", "top", "trousers", "accessory", "pose", "present")}
    return text, facts


def describe_object(kind: str, o: ObjectState) -> tuple[str, set[Fact]]:
    """A full description of a visible object: colour, state, count and where it is."""
    k = vocab.OBJECT_KINDS[kind]
    if o.count is not None:
        head = f"{_count_phrase(kind, o.count).capitalize()}, all {o.color},"
    else:
        head = f"{_a(o.color).capitalize()} {o.color} {kind},"
    facts: set[Fact] = {(kind, "present"), (kind, "color"), (kind, "holder")}
    if o.count is not None:
        facts.add((kind, "count"))
    state_part = ""
    if len(k.states) > 1:
        state_part = f" which {_be(kind, o.count)} {o.state},"
        facts.add((kind, "state"))
    where = f"in {o.holder}'s hands" if o.holder else "on the ground"
    verb = "are" if o.count is not None and o.count != 1 else "is"
    return f"{head}{state_part} {verb} {where}.", facts


def order_sentence(state: SceneState) -> str:
    """The left-to-right line-up as stated in the text."""
    return f"From left to right: {', '.join(state.order)}."


_AT_TIME = {"noon": "at noon", "night": "at night"}


def where(location: str) -> str:
    """'In the park', 'On the beach'."""
    return f"{'On' if location in ('beach', 'street') else 'In'} the {location}"


def _opening(k: int, state: SceneState, before: SceneState | None, moves: bool) -> str:
    """The heading: where the scene starts (a scene that moves says where to, later)."""
    if k == 1 or before is None:
        when = _AT_TIME.get(state.time, f"in the {state.time}")
        return f"{where(state.location)}, {when}; the weather is {state.weather}."
    return f"{where(before.location if moves else state.location)}."


def compose_scene(
    k: int,
    events: Sequence[Event],
    before: SceneState | None,
    after: SceneState,
    world: World,
    *,
    implicit: bool = False,
) -> tuple[str, set[Fact]]:
    """Text of scene ``k`` and the facts it states. ``before`` is None for scene 1. With
    ``implicit``, a state change with a cause is told without its effect (the fact stays in
    the set: the scene's text tells the event that sets it).

    A character who enters or an object that appears is described as it is at that moment
    (nothing can change while it is out of the story), so a later event of the same scene
    reads as a change, never as a contradiction."""
    stated: set[Fact] = {("scene", "location")}
    moves = any(isinstance(ev, Move) for ev in events)
    sentences: list[str] = [_opening(k, after, before, moves)]
    present = [n for n in after.order]
    stated |= {(n, "present") for n in present}
    if k == 1:
        stated |= {("scene", "time"), ("scene", "weather")}
        for n in after.order:
            s, f = describe_character(n, after)
            sentences.append(s)
            stated |= f
        for o in world.objects:
            if after.object_visible(o.kind):
                s, f = describe_object(o.kind, after.objects[o.kind])
                sentences.append(s)
                stated |= f
        if len(after.order) >= 2:
            sentences.append(order_sentence(after))
            stated.add(("scene", "order"))
        return " ".join(sentences), stated

    assert before is not None
    mentioned: set[str] = set()
    order_changed = False
    for ev in events:
        s, f = _event_sentence(ev, before, after, implicit)
        if s:
            sentences.append(s)
        stated |= f
        kind = getattr(ev, "object", None)
        if kind is not None and not isinstance(ev, Remove):
            stated.add((kind, "present"))  # the text names the object, so it is there
        if isinstance(ev, (Enter, Exit, Swap, SetPose, ChangeAttr)):
            mentioned.add(getattr(ev, "character", None) or "")
        if isinstance(ev, (Swap,)) or (isinstance(ev, Enter) and len(after.order) >= 2):
            order_changed = True
    if order_changed and len(after.order) >= 2:
        sentences.append(order_sentence(after))
        stated.add(("scene", "order"))
    quiet = [n for n in present if n not in mentioned]
    if quiet:
        sentences.append(f"{_join(quiet)} {'is' if len(quiet) == 1 else 'are'} here.")
    return " ".join(sentences), stated


def _join(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _event_sentence(
    ev: Event, before: SceneState, after: SceneState, implicit: bool = False
) -> tuple[str, set[Fact]]:
    match ev:
        case Enter():
            if not before.characters[ev.character].seen:
                desc, facts = describe_character(ev.character, before)
                return f"{ev.character} enters. {desc}", facts
            return f"{ev.character} comes back.", {(ev.character, "present")}
        case Exit():
            return f"{ev.character} leaves.", {(ev.character, "present")}
        case Move():
            return f"Everyone goes to the {ev.location}.", {("scene", "location")}
        case SetTime():
            if ev.new_day:
                return f"A new day begins; it is {ev.time}.", {("scene", "time")}
            return f"It is {ev.time} now.", {("scene", "time")}
        case SetWeather():
            return f"The weather turns {ev.weather}.", {("scene", "weather")}
        case Appear():
            o = before.objects[ev.object].model_copy(update={"holder": ev.holder})
            desc, facts = describe_object(ev.object, o)
            for verb in ("is", "are"):
                plural = "appear" if verb == "are" else "appears"
                desc = desc.replace(f" {verb} on the ground", f" {plural} on the ground")
                desc = desc.replace(
                    f" {verb} in {ev.holder}'s hands", f" {plural} in {ev.holder}'s hands"
                )
            return desc, facts
        case Remove():
            o = before.objects[ev.object]
            noun = _noun(ev.object, before)
            return f"The {noun} {_be(ev.object, o.count)} taken away.", {(ev.object, "present")}
        case ChangeState():
            o = after.objects[ev.object]
            noun = _noun(ev.object, after)
            tail = f"the {noun} {_be(ev.object, o.count)} {ev.state} now."
            cause = ev.cause
            if cause and implicit:
                told = implicit_cause(cause)
                return f"{told[0].upper()}{told[1:]}.", {(ev.object, "state")}
            text = f"{cause[0].upper()}{cause[1:]}, so {tail}" if cause else tail.capitalize()
            return text, {(ev.object, "state")}
        case Give():
            return (
                f"{ev.giver} gives the {_noun(ev.object, before)} to {ev.receiver}.",
                {(ev.object, "holder")},
            )
        case Drop():
            return (
                f"{ev.character} puts the {_noun(ev.object, before)} down on the ground.",
                {(ev.object, "holder")},
            )
        case Pickup():
            return (
                f"{ev.character} picks up the {_noun(ev.object, before)}.",
                {(ev.object, "holder")},
            )
        case SetCount():
            return (
                f"Now there {'is' if ev.count == 1 else 'are'} "
                f"{_count_phrase(ev.object, ev.count)}.",
                {(ev.object, "count")},
            )
        case ChangeAttr():
            if ev.attribute == "accessory":
                if ev.value == "none":
                    old = before.characters[ev.character].accessory
                    return (
                        f"{ev.character} takes off the {old} and now has no accessory.",
                        {(ev.character, "accessory")},
                    )
                return (
                    f"{ev.character} puts on {accessory_phrase(ev.value)}.",
                    {(ev.character, "accessory")},
                )
            noun = "top" if ev.attribute == "top" else "trousers"
            art = f"{_a(ev.value)} " if noun == "top" else ""
            return (
                f"{ev.character} changes into {art}{ev.value} {noun}.",
                {(ev.character, ev.attribute)},
            )
        case Swap():
            return f"{ev.a} and {ev.b} swap places.", {("scene", "order")}
        case SetPose():
            return f"{ev.character} is {words.pose(ev.pose)} now.", {(ev.character, "pose")}
    return "", set()  # pragma: no cover


def _noun(kind: str, state: SceneState) -> str:
    o = state.objects[kind]
    return vocab.OBJECT_KINDS[kind].plural if o.count is not None and o.count != 1 else kind


# --- cues: how a fact reads in text (used by tests to check the prompt/memory split) -------


def fact_cues(subject: str, attribute: str, value: object) -> list[str]:
    """Regular expressions, any of which states the fact in a sentence about ``subject``."""
    v = re.escape(str(value))
    match attribute:
        case "present":
            if value is not False:
                return subject_patterns(subject)
            if subject in vocab.OBJECT_KINDS:
                return [r"\btaken away\b"]
            return [r"\bleaves\b", r"\bwalks out\b"]
        case "skin":
            return [rf"\b{re.escape(words.skin(str(value)))}\b"]
        case "hair":
            assert isinstance(value, list)
            return [rf"\b{re.escape(words.hair(str(value[0]), str(value[1])))}\b"]
        case "top":
            return [rf"\b{v} top\b"]
        case "trousers":
            return [rf"\b{v} trousers\b"]
        case "accessory":
            return [rf"\b{re.escape(accessory_phrase(str(value)))}\b"]
        case "pose":
            return [rf"\bis {re.escape(words.pose(str(value)))}\b"]
        case "color":
            return [rf"\b{v} {re.escape(subject)}\b", rf"\ball {v}\b"]
        case "state":
            return [rf"\b(is|are) {v}\b"]
        case "count":
            return [rf"(?i)\b{NUMBER_WORDS[int(str(value))]}\b"]
        case "holder":
            if value == "ground":
                return [r"\bon the ground\b"]
            return [rf"\b{v}'s hands\b", rf"\bto {v}\b", rf"\b{v} (picks up|lifts)\b"]
        case "order":
            assert isinstance(value, list)
            return [re.escape("left to right: " + ", ".join(value))]
        case "location" | "time" | "weather":
            return [rf"\b{v}\b"]
    raise ValueError(f"no cue for attribute {attribute!r}")


def subject_patterns(subject: str) -> list[str]:
    """Words by which a sentence is about ``subject`` (object kinds also match their plural)."""
    if subject == "scene":
        return [r"."]
    if subject in vocab.OBJECT_KINDS:
        k = vocab.OBJECT_KINDS[subject]
        return [rf"\b{k.name}\b", rf"\b{k.plural}\b"]
    return [rf"\b{re.escape(subject)}\b"]


def split_sentences(text: str) -> list[str]:
    """Sentences of a scene text (every sentence ends with a full stop)."""
    return [s for s in re.split(r"(?<=\.)\s+", text.strip()) if s]


def is_stated(text: str, subject: str, attribute: str, value: object) -> bool:
    """Whether some sentence about ``subject`` contains a cue of the fact."""
    subj = subject_patterns(subject)
    cues = fact_cues(subject, attribute, value)
    for s in split_sentences(text):
        if any(re.search(p, s) for p in subj) and any(re.search(c, s) for c in cues):
            return True
    return False


# --- paraphrase style ------------------------------------------------------------------------

#: Deterministic synonym substitutions over non-fact words (fact words are never touched).
PARAPHRASES: tuple[tuple[str, str], ...] = (
    (" enters.", " walks in."),
    (" comes back.", " returns."),
    (" leaves.", " walks out."),
    (" wears ", " is dressed in "),
    (" picks up ", " lifts "),
    (" gives the ", " hands the "),
    (" puts the ", " sets the "),
    (" changes into ", " switches to "),
    (" swap places.", " trade places."),
    ("Everyone goes to the ", "The group heads to the "),
    ("The weather turns ", "The weather becomes "),
    ("A new day begins;", "The next day comes;"),
    ("Now there ", "At this point there "),
    (" now has ", " has "),
    (" are here.", " are still here."),
    (" is here.", " is still here."),
    ("; the weather is ", "; the weather: "),
)


def paraphrase(text: str) -> str:
    """The paraphrase prompt style: the same facts in other words (fixed substitutions)."""
    for a, b in PARAPHRASES:
        text = text.replace(a, b)
    return text


# --- implicit style --------------------------------------------------------------------------

#: The generator's stated causes (``vsb.generator.beats.stated_cause``) reworded to tell the
#: event so that its effect follows by common sense without being named: (pattern, rewording)
#: over the whole cause. A cause none of them matches is told as it is (it never names the
#: effect: the plain style adds that as ", so the … is … now").
IMPLICIT_CAUSES: tuple[tuple[str, str], ...] = (
    (r"(.+) lights the (lantern|candle) with a match",
     r"\1 strikes a match and holds it to the \2"),
    (r"(.+) slits the letter open", r"\1 runs a knife along the seal of the letter"),
    (r"The wind blows the lid of the box open",
     "The wind catches the lid of the box and flips it back"),
    (r"A cat knocks the lid of the box open", "A cat paws at the box until its lid slides off"),
    (r"A strong gust of wind catches the umbrella",
     "A strong gust of wind catches the umbrella and snaps its ribs"),
    (r"The umbrella gets caught in a slamming door",
     "The umbrella gets caught in a slamming door and its ribs snap"),
    (r"A heavy chair falls on the umbrella",
     "A heavy chair falls on the umbrella and snaps its ribs"),
    (r"(.+) knocks the vase hard against (.+)",
     r"\1 knocks the vase hard against \2 and it cracks into pieces"),
    (r"A dog pulls at the book", "A dog pulls at the book until its pages rip"),
    (r"The hot sun beats down on the flowers",
     "The hot sun beats down on the flowers all day"),
    (r"Nobody waters the flowers", "Nobody waters the flowers for days"),
)  # fmt: skip


def implicit_cause(cause: str) -> str:
    """The implicit-style wording of a stated cause (``IMPLICIT_CAUSES``)."""
    for pattern, rewording in IMPLICIT_CAUSES:
        m = re.fullmatch(pattern, cause)
        if m:
            return m.expand(rewording)
    return cause
