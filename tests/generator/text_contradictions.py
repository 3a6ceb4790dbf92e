"""A scanner for scene texts that contradict the scene's state (issue #10 item 5).

A model that follows the text must draw the expected state, so no sentence may say
otherwise. The scanner reads the generator's sentence shapes (plain, paraphrase and implicit) and
reports, per scene:

* phrasing that cannot hold in the picture: an object falling or dropping while it ends the
  scene in someone's hands; sun or daylight in the evening, at night or under a non-clear
  sky; moon or stars by day; wind or gusts indoors; a lid blown away from a box that is
  later closed;
* statements against the final state: for every fact a sentence states (pose, clothing,
  time, weather, object state, count, holder, location, line-up, who is here), the last
  statement of the scene must equal the state at the end of the scene;
* the same moment stated twice ("Tomi is waving now. Tomi is cheering now.");
* changes that change nothing or start from the wrong value (changing into the top one
  already wears, putting on the accessory one wears, taking off an accessory that is not
  worn, giving an object one does not hold, going to the place one is at).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vsb.story import vocab
from vsb.story.models import SceneState, Story
from vsb.story.text import split_sentences, subject_patterns

NOUNS = {k.name: k.name for k in vocab.OBJECT_KINDS.values()} | {
    k.plural: k.name for k in vocab.OBJECT_KINDS.values()
}
NUMBERS = {"no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
#: How the text names each pose and skin tone (the words a model reads, ``vsb.story.words``).
POSE_OF = {"cheering with both arms raised": "cheering"} | {p: p for p in vocab.POSES}
POSES = "|".join(sorted(POSE_OF, key=len, reverse=True))
SKIN_OF = {
    "very light": "tone-1", "light": "tone-2", "medium-light": "tone-3",
    "medium-dark": "tone-4", "dark": "tone-5", "very dark": "tone-6",
}  # fmt: skip
SKINS = "|".join(sorted(SKIN_OF, key=len, reverse=True))

FALLING = re.compile(
    r"\b(slips?|falls?|fell|drops?|dropped|tumbles?|tips over|hits the (floor|ground)|"
    r"off the edge|smash(es)? on)\b",
    re.I,
)
SUN = re.compile(r"\b(sun|sunny|sunshine|sunlight|daylight)\b", re.I)
NIGHT = re.compile(r"\b(moon|moonlight|stars|starlight)\b", re.I)
WIND = re.compile(r"\b(wind|winds|gust|gusts|breeze)\b", re.I)
LID_GONE = re.compile(r"\blid of the box (away|off)\b", re.I)
PICKED_UP = re.compile(r"\b(picks up|lifts) the (\w+)\b")

# One regular expression per sentence shape: name -> pattern (fully matching a sentence).
SHAPES: dict[str, re.Pattern[str]] = {
    name: re.compile(p)
    for name, p in {
        "opening": r"(In|On) the (?P<loc>\w+)(, (at|in the) (?P<time>\w+); the weather"
        r"(:| is) (?P<weather>\w+))?\.",
        "describe": rf"(?P<n>\w+) has (?P<skin>{SKINS}) skin and ((?P<hs>short|long) "
        r"(?P<hc>.+?) hair|(?P<hc2>.+?) hair in an? (?P<hs2>bun|ponytail)), "
        r"(wears|is dressed in) an? (?P<top>\w+) top, (?P<tr>\w+) trousers and (?P<acc>.+?), "
        rf"and is (?P<pose>{POSES})\.",
        "enter": r"(?P<n>\w+) (enters|walks in)\.",
        "come_back": r"(?P<n>\w+) (comes back|returns)\.",
        "leave": r"(?P<n>\w+) (leaves|walks out)\.",
        "pose": rf"(?P<n>\w+) is (?P<pose>{POSES}) now\.",
        "clothes": r"(?P<n>\w+) (changes into|switches to) (an? )?(?P<v>\w+) "
        r"(?P<what>top|trousers)\.",
        "put_on": r"(?P<n>\w+) puts on (?P<acc>.+)\.",
        "take_off": r"(?P<n>\w+) takes off the (?P<old>\w+) and (now )?has no accessory\.",
        "time": r"It is (?P<time>\w+) now\.",
        "new_day": r"(A new day begins|The next day comes); it is (?P<time>\w+)\.",
        "weather": r"The weather (turns|becomes) (?P<weather>\w+)\.",
        "move": r"(Everyone goes|The group heads) to the (?P<loc>\w+)\.",
        "object": r"(An? (?P<color>\w+) (?P<kind>\w+)|(?P<num>[A-Z]\w+) (?P<plural>\w+), all "
        r"(?P<color2>\w+)),( which (is|are) (?P<state>\w+),)? (is|are|appears|appear) "
        r"(in (?P<holder>\w+)'s hands|on the ground)\.",
        "removed": r"The (?P<noun>\w+) (is|are) taken away\.",
        "state": r"(?P<cause>.+, so )?[Tt]he (?P<noun>\w+) (is|are) (?P<state>\w+) now\.",
        # the implicit style: a cause told without its effect (vsb.story.text.IMPLICIT_CAUSES)
        "implicit": r".+ (strikes a match and holds it to the (lantern|candle)|runs a knife "
        r"along the seal of the letter|flips it back|until its lid slides off|snaps its ribs|"
        r"its ribs snap|and it cracks into pieces|until its pages rip|all day|for days|"
        r"smashes on the (floor|ground))\.",
        "count": r"(Now|At this point) there (is|are) (?P<num>\w+) (?P<noun>\w+)\.",
        "give": r"(?P<n>\w+) (gives|hands) the (?P<noun>\w+) to (?P<m>\w+)\.",
        "drop": r"(?P<n>\w+) (puts|sets) the (?P<noun>\w+) down on the ground\.",
        "pickup": r"(?P<n>\w+) (picks up|lifts) the (?P<noun>\w+)\.",
        "swap": r"(?P<n>\w+) and (?P<m>\w+) (swap|trade) places\.",
        "order": r"From left to right: (?P<names>.+)\.",
        "here": r"(?P<names>.+) (is|are) (still )?here\.",
    }.items()
}

Fact = tuple[str, str]  # (subject, attribute)


@dataclass
class _Scan:
    """Running values while reading a scene's sentences in order."""

    k: int
    now: dict[Fact, object]
    problems: list[str] = field(default_factory=list)
    last: dict[Fact, tuple[object, str]] = field(default_factory=dict)
    stative: dict[Fact, object] = field(default_factory=dict)

    def state(self, fact: Fact, value: object, sentence: str, *, moment: bool = False) -> None:
        """A statement of ``fact`` (``moment``: 'X is P now', which a second one cannot
        follow in the same picture)."""
        if moment and fact in self.stative and self.stative[fact] != value:
            self.problems.append(
                f"scene {self.k}: {fact} stated as {self.stative[fact]!r} and {value!r}: "
                f"{sentence!r}"
            )
        if moment:
            self.stative[fact] = value
        self.last[fact] = (value, sentence)
        self.now[fact] = value

    def change(
        self, fact: Fact, value: object, sentence: str, *, frm: object = None, moment: bool = False
    ) -> None:
        """A change of ``fact`` to ``value`` (optionally from ``frm``)."""
        cur = self.now.get(fact)
        if frm is not None and cur != frm:
            self.problems.append(
                f"scene {self.k}: {sentence!r} starts from {frm!r}, but {fact} is {cur!r}"
            )
        elif frm is None and cur == value:
            self.problems.append(f"scene {self.k}: {sentence!r} changes nothing ({fact})")
        self.state(fact, value, sentence, moment=moment)


def _acc(phrase: str) -> str:
    phrase = phrase.strip()
    if phrase == "no accessory":
        return "none"
    return phrase.removeprefix("a ").removeprefix("an ")


def _running(state: SceneState | None) -> dict[Fact, object]:
    """Every fact of ``state`` as the scanner names it (empty before scene 1)."""
    if state is None:
        return {}
    now: dict[Fact, object] = {
        ("scene", "location"): state.location,
        ("scene", "time"): state.time,
        ("scene", "weather"): state.weather,
        ("scene", "order"): list(state.order),
    }
    for n, c in state.characters.items():
        now |= {
            (n, "skin"): c.skin, (n, "hair"): [c.hair_color, c.hair_style], (n, "top"): c.top,
            (n, "trousers"): c.trousers, (n, "accessory"): c.accessory, (n, "pose"): c.pose,
            (n, "present"): c.present,
        }  # fmt: skip
    for kind, o in state.objects.items():
        now |= {
            (kind, "state"): o.state, (kind, "count"): o.count, (kind, "holder"): o.holder,
            (kind, "present"): state.object_visible(kind),
        }  # fmt: skip
    return now


def _read(scan: _Scan, sentence: str) -> None:
    """Apply one sentence to the scan."""
    m = next(((name, mm) for name, p in SHAPES.items() if (mm := p.fullmatch(sentence))), None)
    if m is None:
        return
    name, g = m[0], m[1].groupdict()
    n = g.get("n")
    match name:
        case "opening":
            scan.state(("scene", "location"), g["loc"], sentence)
            if g["time"]:
                scan.state(("scene", "time"), g["time"], sentence)
                scan.state(("scene", "weather"), g["weather"], sentence)
        case "describe":
            assert n is not None
            for attr, value in (
                ("skin", SKIN_OF[g["skin"]]), ("hair", [g["hc"] or g["hc2"], g["hs"] or g["hs2"]]),
                ("top", g["top"]), ("trousers", g["tr"]), ("accessory", _acc(g["acc"])),
                ("pose", POSE_OF[g["pose"]]),
            ):  # fmt: skip
                scan.state((n, attr), value, sentence)
            scan.state((n, "present"), True, sentence)
        case "enter" | "come_back":
            scan.change((n or "", "present"), True, sentence)
        case "leave":
            scan.change((n or "", "present"), False, sentence)
        case "pose":
            scan.change((n or "", "pose"), POSE_OF[g["pose"]], sentence, moment=True)
        case "clothes":
            scan.change((n or "", g["what"]), g["v"], sentence)
        case "put_on":
            scan.change((n or "", "accessory"), _acc(g["acc"]), sentence)
        case "take_off":
            scan.change((n or "", "accessory"), "none", sentence, frm=g["old"])
        case "time" | "new_day":
            scan.change(("scene", "time"), g["time"], sentence, moment=True)
        case "weather":
            scan.change(("scene", "weather"), g["weather"], sentence)
        case "move":
            scan.change(("scene", "location"), g["loc"], sentence)
        case "object":
            kind = g["kind"] or NOUNS.get(g["plural"] or "", "")
            if g["state"]:
                scan.state((kind, "state"), g["state"], sentence)
            if g["num"]:
                scan.state((kind, "count"), NUMBERS.get(g["num"].lower()), sentence)
            scan.state((kind, "holder"), g["holder"], sentence)
            scan.state((kind, "present"), True, sentence)
        case "removed":
            scan.change((NOUNS.get(g["noun"], ""), "present"), False, sentence, frm=True)
        case "state":
            kind = NOUNS.get(g["noun"], "")
            scan.change((kind, "state"), g["state"], sentence, moment=True)
        case "count":
            kind = NOUNS.get(g["noun"], "")
            scan.change((kind, "count"), NUMBERS.get(g["num"]), sentence)
        case "give":
            kind = NOUNS.get(g["noun"], "")
            scan.change((kind, "holder"), g["m"], sentence, frm=n)
        case "drop":
            scan.change((NOUNS.get(g["noun"], ""), "holder"), None, sentence, frm=n)
        case "pickup":
            kind = NOUNS.get(g["noun"], "")
            if scan.now.get((kind, "holder")) is not None:
                scan.problems.append(f"scene {scan.k}: {sentence!r}: the {kind} is held")
            scan.state((kind, "holder"), n, sentence)
        case "order":
            scan.state(("scene", "order"), g["names"].split(", "), sentence)
        case "here":
            for who in re.split(r", | and ", g["names"]):
                scan.state((who, "present"), True, sentence)


def _phrasing(k: int, sentence: str, text: str, state: SceneState) -> list[str]:
    """Phrasing that cannot hold in the picture at the end of the scene."""
    out: list[str] = []
    tag = f"scene {k}: {sentence!r}"
    if FALLING.search(sentence):
        for kind, o in state.objects.items():
            about = any(re.search(p, sentence) for p in subject_patterns(kind))
            picked = any(NOUNS.get(m[2]) == kind for m in PICKED_UP.finditer(text))
            if about and o.holder is not None and not picked:
                out.append(f"{tag}: the {kind} falls but stays in {o.holder}'s hands")
    if SUN.search(sentence) and (state.time in ("evening", "night") or state.weather != "clear"):
        out.append(f"{tag}: sun or daylight at {state.time} in {state.weather} weather")
    if NIGHT.search(sentence) and state.time not in ("evening", "night"):
        out.append(f"{tag}: moon or stars at {state.time}")
    if WIND.search(sentence) and vocab.LOCATIONS[state.location].indoor:
        out.append(f"{tag}: wind indoors ({state.location})")
    return out


def scene_contradictions(story: Story) -> list[str]:
    """Every contradiction between a scene text of ``story`` and the scene's state."""
    problems: list[str] = []
    lid_gone_since: int | None = None
    for i, scene in enumerate(story.scenes):
        k, final = scene.index, scene.state
        before = story.scenes[i - 1].state if i else None
        scan = _Scan(k, _running(before))
        for sentence in split_sentences(scene.text):
            _read(scan, sentence)
            problems += _phrasing(k, sentence, scene.text, final)
            if LID_GONE.search(sentence) and lid_gone_since is None:
                lid_gone_since = k
        problems += scan.problems
        truth = _running(final)
        for fact, (value, sentence) in scan.last.items():
            if fact in truth and truth[fact] != value:
                problems.append(
                    f"scene {k}: {sentence!r} states {fact} = {value!r}, but the picture shows "
                    f"{truth[fact]!r}"
                )
            elif fact not in truth:
                problems.append(f"scene {k}: {sentence!r} names {fact[0]!r}, unknown to the story")
        box = final.objects.get("box")
        if lid_gone_since is not None and k > lid_gone_since and box and box.state == "closed":
            problems.append(f"scene {k}: the box is closed, but its lid blew away in scene "
                            f"{lid_gone_since}")  # fmt: skip
    return problems
