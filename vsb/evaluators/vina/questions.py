"""VinaBench's eight VQA questions, which scenes and samples it asks them of, and how it reads
the answers: ``evaluation/minicpm_vqa_*.py`` of its repository (Silin159/VinaBench), each
question worded as there (its "Only answer yes or no." / "Only answer an Arabic number."
instructions and its spelling "charcater" included).

- entity_align: each entity of a scene's ``linked_entities`` (split at ``"; "``) that is not
  empty and does not start with a capital: "Does this image contain or imply '<entity>'?";
- char_num_align: every scene of a sample with a profile: "How many characters are in this
  image?";
- char_attr_align: those scenes with someone present (``num_present`` > 0 and a profiled name
  present): the profiles, then "Do characters in this image fit into their descriptions?";
- time_align: scenes whose time is one of six named periods: "Is this image taken at/in the
  <time>?";
- location_align: every scene: "Is this image taken at a/an <location>?";
- style_consist: every sample, all its images in one request: "Are all these images in the
  same style?";
- char_consist: each profiled character present in two scenes or more, those images: "Do all
  these images contain the same charcater <name>: <profile>?";
- location_consist: each location of two scenes or more, those images: "Are all these images
  taken at the same <location>?".

Answers are read as VinaBench reads them: an alignment answer is a yes when it starts with
"yes" (any case); a consistency answer when its first space-separated word, leading and
trailing dots stripped, does; a count answer is that first word read as Python's ``int()``
reads it, aligned when it equals ``int(num_present)``. Where VinaBench's scripts stop (a count
answer that is not a number: ``int()`` raises), vsb counts the scene as not aligned and says
the answer was unreadable (docs/vinabench.md).

Aggregation (``score``): each metric's values are one per *unit* — a scene for the five
alignment metrics (entity alignment: the share of the scene's entities answered yes), a sample
for the three consistency metrics (character and location consistency: the share of its
characters or locations answered yes) — and the score is their mean, as VinaBench's
``np.mean`` over its lists.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from vsb.story.vinabench import TIMES, VinaSample

#: The eight metrics, in VinaBench's table order.
SCENE_METRICS = ("entity_align", "char_num_align", "char_attr_align", "time_align",
                 "location_align")  # fmt: skip
SAMPLE_METRICS = ("style_consist", "char_consist", "location_consist")
METRICS = SCENE_METRICS + SAMPLE_METRICS
#: Signal names: ``vinabench.<portion>.<metric>`` (the evaluator's rows).
PREFIX = "vinabench."
YES_NO = "Only answer yes or no."
NUMBER = "Only answer an Arabic number."


@dataclass(frozen=True)
class Ask:
    """One of VinaBench's questions about one story: the metric it counts for, its unit
    (the scene for an alignment metric, 0 for the sample), the scenes whose images it shows
    (in order), what it asks about and, for the count question, the number expected."""

    metric: str
    unit: int
    scenes: tuple[int, ...]
    prompt: str
    subject: str = ""
    count: int | None = None


def _int(value: object) -> int | None:
    """``int(value)`` as Python reads it (None where it raises)."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _entities(text: str) -> Iterator[str]:
    for ent in text.split("; "):
        if len(ent) == 0 or ent[0].isupper():  # VinaBench skips character names
            continue
        yield ent


def scene_asks(sample: VinaSample, k: int) -> list[Ask]:
    """The alignment questions of scene ``k`` (from 1), in VinaBench's order."""
    sc = sample.scenes[k - 1]
    out = []
    if sc.linked_entities is not None:
        for ent in _entities(sc.linked_entities):
            q = f"Does this image contain or imply '{ent}'? {YES_NO}"
            out.append(Ask("entity_align", k, (k,), q, ent))
    count = _int(sc.num_present)
    profile = sample.profile
    if profile and count is not None:
        q = f"How many characters are in this image? {NUMBER}"
        out.append(Ask("char_num_align", k, (k,), q, count=count))
        named = [n for n in dict.fromkeys(sc.present or ()) if n in profile]
        if count > 0 and named:
            lines = "".join(f"{n}: {profile[n]}\n" for n in named)
            q = f"Character descriptions:\n{lines}Do characters in this image fit into their descriptions? {YES_NO}"  # noqa: E501
            out.append(Ask("char_attr_align", k, (k,), q, ", ".join(named)))
    if sc.time in TIMES:
        art = "at" if sc.time in ("night", "noon") else "in the"
        out.append(Ask("time_align", k, (k,), f"Is this image taken {art} {sc.time}? {YES_NO}",
                       sc.time))  # fmt: skip
    if sc.location is not None:
        art = "an" if sc.location[:1] in ("a", "e", "i", "o", "u") else "a"
        q = f"Is this image taken at {art} {sc.location}? {YES_NO}"
        out.append(Ask("location_align", k, (k,), q, sc.location))
    return out


def sample_asks(sample: VinaSample) -> list[Ask]:
    """The consistency questions of a sample, in VinaBench's order (locations in the order
    they first appear: VinaBench iterates a ``set``, and the order changes no score)."""
    n = len(sample.scenes)
    every = tuple(range(1, n + 1))
    out = [Ask("style_consist", 0, every, f"Are all these images in the same style? {YES_NO}")]
    for name, desc in sample.profiles:
        seen = tuple(k for k in every if name in (sample.scenes[k - 1].present or ()))
        if len(seen) >= 2:
            q = f"Do all these images contain the same charcater {name}: {desc}? {YES_NO}"
            out.append(Ask("char_consist", 0, seen, q, name))
    places = [sc.location for sc in sample.scenes if sc.location is not None]
    for loc in dict.fromkeys(places):
        at = tuple(k for k in every if sample.scenes[k - 1].location == loc)
        if len(at) >= 2:
            q = f"Are all these images taken at the same {loc}? {YES_NO}"
            out.append(Ask("location_consist", 0, at, q, loc))
    return out


def asks_of(sample: VinaSample) -> list[Ask]:
    """Every question VinaBench asks of a sample: the scenes' in scene order, then the
    sample's."""
    out = [a for k in range(1, len(sample.scenes) + 1) for a in scene_asks(sample, k)]
    return out + sample_asks(sample)


def _first_word(text: str) -> str:
    return text.split(" ")[0].strip(".")


def read_count(text: str) -> int | None:
    """A count answer as VinaBench reads it (None: ``int()`` would raise)."""
    return _int(_first_word(text))


def readable(ask: Ask, text: str) -> bool:
    """Whether VinaBench's reading of ``text`` is defined (only a count answer can fail)."""
    return ask.count is None or read_count(text) is not None


def value(ask: Ask, text: str) -> float:
    """1.0 when VinaBench counts the answer as aligned or consistent, else 0.0."""
    if ask.count is not None:
        return float(read_count(text) == ask.count)
    word = _first_word(text) if ask.metric in SAMPLE_METRICS else text
    return float(word.lower().startswith("yes"))


def unit_values(answered: Sequence[tuple[Ask, float]]) -> dict[tuple[str, int], float]:
    """(metric, unit) -> the unit's value: the mean of its questions' values (one question
    per unit, but for entities, characters and locations)."""
    acc: dict[tuple[str, int], list[float]] = {}
    for ask, v in answered:
        acc.setdefault((ask.metric, ask.unit), []).append(v)
    return {k: sum(vs) / len(vs) for k, vs in acc.items()}


def signal_name(portion: str, metric: str) -> str:
    """The signal of one metric in one portion."""
    return f"{PREFIX}{portion}.{metric}"


def parse_signal(name: str) -> tuple[str, str] | None:
    """(portion, metric) of a ``vinabench`` signal (None: not one)."""
    if not name.startswith(PREFIX):
        return None
    portion, _, metric = name[len(PREFIX) :].partition(".")
    return (portion, metric) if metric in METRICS else None
