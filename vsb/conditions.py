"""Prompting conditions: what context a model gets besides the scene text.

The scene text (``scene.text``, plain or paraphrased) never changes across conditions;
only the context does. Every condition is registered by name in ``CONDITIONS``. The six
main conditions (``--condition all``):

==================  ==============================================================
independent         no context
previous_text       the previous scene's text
structured_memory   compact JSON of the state at the end of the previous scene (primary)
previous_image      the previous generated image, as a reference image
summarized_state    a one-paragraph summary of every persistent fact
full_context        every previous scene text
==================  ==============================================================

Controls of the primary condition (issue 16), run by name or as a set:

=================================  ==================================================
random_context                     placebo: the structured memory of *another* story
                                   of the same template and length (``placebo_partner``)
structured_memory-no_identity      structured memory without skin and hair
structured_memory-no_clothing      ... without top, trousers and accessory
structured_memory-no_objects       ... without the objects
structured_memory-no_environment   ... without location, time, day and weather
=================================  ==================================================

``--condition ablations`` names the four ``structured_memory-no_*`` variants. A condition
also says which of a scene's facts its context carries (``supplies``); the procedural
simulators use that, with ``context_factor``, to set corruption probabilities. An ablation
supplies what structured memory supplies minus its fact group, so a removed fact gets the
memory fault rate again. The placebo supplies no fact: its facts are another story's, and
the simulators ignore them (a simulator copies a context's fact only when it is this story's
fact with this story's value: they model a model that is neither helped nor misled by a
context about other people and places). ``stream_of`` names the condition whose random
stream a simulator shares (common random numbers with the condition a control is compared
with): an ablation shares structured memory's, so the paired difference isolates the removed
group; the placebo shares independent's, so for a simulator it *is* no context (the same
images), and any placebo gain measured on simulators would come from the pipeline, not from
chance. Scene 1 gets no context under any condition (there is no previous scene).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from vsb import vocab
from vsb.errors import InputError, TransitionError
from vsb.registry import Registry
from vsb.story.models import DIFFICULTIES, Requirement, SceneState, Story, Value

PRIMARY_CONDITION = "structured_memory"
PLACEBO_CONDITION = "random_context"
#: The fact groups an ablation can remove from the structured memory, in display order.
FACT_GROUPS: tuple[str, ...] = ("identity", "clothing", "objects", "environment")
#: Ablation condition -> the fact group it removes.
ABLATIONS: dict[str, str] = {f"{PRIMARY_CONDITION}-no_{g}": g for g in FACT_GROUPS}
#: The JSON keys of ``state_json`` each group removes (per character, or at the top level).
_GROUP_KEYS: dict[str, tuple[str, ...]] = {
    "identity": ("skin", "hair"),
    "clothing": ("top", "trousers", "accessory"),
    "objects": ("objects",),
    "environment": ("location", "time", "day", "weather"),
}
ConditionKind = Literal["main", "placebo", "ablation"]


@dataclass(frozen=True)
class ConditionContext:
    """The context of one request: text and/or JSON, and whether the previous image goes along."""

    condition: str
    text: str | None = None
    data: dict[str, Any] | None = None
    reference_image: bool = False

    def is_empty(self) -> bool:
        """No context at all (independent, or scene 1)."""
        return self.text is None and self.data is None and not self.reference_image


Supplies = Callable[[Story, int, Requirement], bool]


@dataclass(frozen=True)
class Condition:
    """One prompting condition (an intervention on the context, never on the scene text)."""

    name: str
    description: str
    build: Callable[[Story, int], ConditionContext]
    supplies: Supplies
    #: Multiplier of p_adherence for facts carried by a text/JSON context (None: no such
    #: context); long contexts are harder to follow.
    context_factor: float | None = None
    #: The context is the previous generated image (visual facts only).
    reference_image: bool = False
    #: main (``--condition all``), placebo, or ablation (``--condition ablations``).
    kind: ConditionKind = "main"
    #: The condition a simulator draws this one's chain from (common random numbers with the
    #: condition it is compared with); None: its own stream.
    stream_of: str | None = None
    #: The fact group an ablation removes (``FACT_GROUPS``); None otherwise.
    removes: str | None = None

    @property
    def stream(self) -> str:
        """The name of the random stream a simulator draws this condition's chain from."""
        return self.stream_of or self.name

    def context(self, story: Story, k: int) -> ConditionContext:
        """The context for scene ``k`` (1-based) of ``story``."""
        if k <= 1:
            return ConditionContext(self.name)
        return self.build(story, k)


CONDITIONS: Registry[Condition] = Registry("condition")


def register(
    name: str,
    description: str,
    *,
    supplies: Supplies,
    context_factor: float | None = None,
    reference_image: bool = False,
    kind: ConditionKind = "main",
    stream_of: str | None = None,
    removes: str | None = None,
) -> Callable[[Callable[[Story, int], ConditionContext]], Callable[[Story, int], ConditionContext]]:
    """Decorator: register a context builder ``(story, k) -> ConditionContext`` as a condition."""

    def deco(
        build: Callable[[Story, int], ConditionContext],
    ) -> Callable[[Story, int], ConditionContext]:
        CONDITIONS.add(
            name,
            Condition(
                name,
                description,
                build,
                supplies,
                context_factor,
                reference_image,
                kind,
                stream_of,
                removes,
            ),
        )
        return build

    return deco


def get_condition(name: str) -> Condition:
    """The condition registered as ``name`` (``UnknownNameError`` lists the known ones)."""
    return CONDITIONS.get(name)


def condition_names() -> list[str]:
    """The six main conditions (what ``--condition all`` means), in registration order."""
    return [n for n in CONDITIONS.names() if CONDITIONS.get(n).kind == "main"]


def all_condition_names() -> list[str]:
    """Every registered condition (main, placebo, ablations), in registration order."""
    return CONDITIONS.names()


def ablation_names() -> list[str]:
    """The ablations of the primary condition (what ``--condition ablations`` means)."""
    return [n for n in CONDITIONS.names() if CONDITIONS.get(n).kind == "ablation"]


#: Names that stand for a set of conditions in ``resolve_conditions`` (any case).
CONDITION_SETS: dict[str, Callable[[], list[str]]] = {
    "all": condition_names,
    "ablations": ablation_names,
}


def resolve_conditions(spec: str) -> list[str]:
    """A comma-separated list of condition names and sets (``all``: the six main conditions,
    ``ablations``: the four field ablations), e.g. ``all,random_context``; unknown names
    raise, duplicates are dropped (first place kept)."""
    names: list[str] = []
    for token in (t.strip() for t in spec.split(",")):
        if not token:
            continue
        expand = CONDITION_SETS.get(token.lower())
        if expand is not None:
            names += expand()
        else:
            names.append(get_condition(token).name)
    return list(dict.fromkeys(names))


# --- facts -----------------------------------------------------------------------------------


def fact_value(state: SceneState, subject: str, attribute: str) -> Value | None:
    """The value of a requirement's (subject, attribute) in ``state`` (None: not defined)."""
    if subject == "scene":
        if attribute == "order":
            return list(state.order)
        value = getattr(state, attribute, None)
        return value if isinstance(value, str) else None
    if subject in state.characters:
        c = state.characters[subject]
        if attribute == "hair":
            return [c.hair_color, c.hair_style]
        value = getattr(c, attribute, None)
        return value if isinstance(value, bool | str) else None
    if subject in state.objects:
        o = state.objects[subject]
        if attribute == "present":
            if o.removed:
                return False
            return True if o.appeared and o.holder is None else None
        if attribute in ("holder", "state", "count"):
            value = getattr(o, attribute)
            return value if isinstance(value, str | int) else None
    return None


def _stated_in(story: Story, j: int, req: Requirement) -> bool:
    """Whether scene ``j``'s text states ``req``'s fact with the same value."""
    return any(
        r.source == "prompt"
        and r.subject == req.subject
        and r.attribute == req.attribute
        and r.expected == req.expected
        for r in story.scenes[j - 1].requirements
    )


def _supplies_nothing(story: Story, k: int, req: Requirement) -> bool:
    return False


def _supplies_previous_text(story: Story, k: int, req: Requirement) -> bool:
    return k > 1 and _stated_in(story, k - 1, req)


def _supplies_previous_state(story: Story, k: int, req: Requirement) -> bool:
    if k <= 1:
        return False
    prev = story.scenes[k - 2].state
    return fact_value(prev, req.subject, req.attribute) == req.expected


def _supplies_previous_image(story: Story, k: int, req: Requirement) -> bool:
    """Facts visible in the previous image: the previous scene required the same value."""
    if k <= 1:
        return False
    return any(
        r.subject == req.subject and r.attribute == req.attribute and r.expected == req.expected
        for r in story.scenes[k - 2].requirements
    )


def fact_group(subject: str, attribute: str) -> str | None:
    """The fact group (``FACT_GROUPS``) of a requirement's (subject, attribute); None for
    facts no ablation removes (a character's presence and pose, the left-to-right order)."""
    if subject == "scene":
        return "environment" if attribute in ("location", "weather", "time") else None
    if subject in vocab.OBJECT_KINDS:
        return "objects"
    if attribute in _GROUP_KEYS["identity"]:
        return "identity"
    if attribute in _GROUP_KEYS["clothing"]:
        return "clothing"
    return None


def _supplies_without(group: str) -> Supplies:
    """What structured memory supplies, minus the facts of ``group``."""

    def supplies(story: Story, k: int, req: Requirement) -> bool:
        return fact_group(req.subject, req.attribute) != group and _supplies_previous_state(
            story, k, req
        )

    return supplies


def _supplies_full_context(story: Story, k: int, req: Requirement) -> bool:
    """The latest earlier statement of the fact holds the current value."""
    for j in range(k - 1, 0, -1):
        for r in story.scenes[j - 1].requirements:
            if r.source == "prompt" and r.subject == req.subject and r.attribute == req.attribute:
                return r.expected == req.expected
    return False


# --- context builders ------------------------------------------------------------------------


def state_json(state: SceneState, without: str | None = None) -> dict[str, Any]:
    """The state fields a model needs, as plain JSON (characters seen so far, objects that
    have entered the story), less the keys of the fact group ``without`` (an ablation)."""
    chars: dict[str, Any] = {}
    for name, c in state.characters.items():
        if not c.seen:
            continue
        chars[name] = {
            "skin": c.skin,
            "hair": [c.hair_color, c.hair_style],
            "top": c.top,
            "trousers": c.trousers,
            "accessory": c.accessory,
            "pose": c.pose,
            "present": c.present,
        }
    objs: dict[str, Any] = {}
    for kind, o in state.objects.items():
        if not o.appeared:
            continue
        entry: dict[str, Any] = {"color": o.color, "state": o.state}
        if o.count is not None:
            entry["count"] = o.count
        if o.removed:
            entry["removed"] = True
        elif o.holder is not None:
            entry["holder"] = o.holder
        else:
            entry["place"] = o.place
        objs[kind] = entry
    out = {
        "location": state.location,
        "time": state.time,
        "day": state.day,
        "weather": state.weather,
        "order": list(state.order),
        "characters": chars,
        "objects": objs,
    }
    if without is not None:
        drop = _GROUP_KEYS[without]
        out = {k: v for k, v in out.items() if k not in drop}
        for c in chars.values():
            for key in drop:
                c.pop(key, None)
    return out


# --- the placebo's partner story ---------------------------------------------------------------

#: Draws tried for a placebo partner before giving up (a clash of names is rare).
_PARTNER_ATTEMPTS = 64


def placebo_seed(story_id: str, seed: int, attempt: int) -> int:
    """The generator seed of the ``attempt``-th partner draw for a story (63 bits of sha256
    over its id and seed: a story's plain and paraphrased copies share it)."""
    digest = hashlib.sha256(f"placebo:{story_id}:{seed}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def placebo_partner(story: Story) -> Story:
    """The story whose structured memory ``random_context`` shows for ``story``.

    A fresh story of the same template (category) and difficulty — hence the same length
    in the generated suites — drawn with ``placebo_seed``: the first draw that has at least
    ``len(story.scenes) - 1`` scenes and shares no character name with ``story`` (so its
    facts are about other people; its objects and places may share kinds and names with
    ``story``'s, with other values). A story whose length its difficulty does not give
    takes the shortest difficulty long enough. Fixed for a given story: a pure function
    of (id, seed, category, difficulty, character names, length)."""
    names = tuple(c.name for c in story.world.characters)
    return _partner(
        story.id, story.seed, story.category, story.difficulty, names, len(story.scenes)
    )


@lru_cache(maxsize=256)
def _partner(
    story_id: str, seed: int, category: str, difficulty: str, names: tuple[str, ...], n: int
) -> Story:
    from vsb.generator.generate import generate_story

    difficulties = [difficulty, *(d for d in DIFFICULTIES if d != difficulty)]
    for d in difficulties:
        for attempt in range(_PARTNER_ATTEMPTS):
            try:
                partner = generate_story(
                    category, d, story_id, seed=placebo_seed(story_id, seed, attempt)
                )
            except TransitionError:  # pragma: no cover - the templates' fallbacks held so far
                continue
            if len(partner.scenes) < n - 1:
                break  # this difficulty is too short for the story: try the next one
            if not {c.name for c in partner.world.characters} & set(names):
                return partner
    raise InputError(
        f"story {story_id!r}: no placebo partner of template {category!r} with "
        f"{n - 1}+ scenes and other characters (random_context)"
    )


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def state_summary(state: SceneState) -> str:
    """One paragraph stating every persistent fact of ``state`` in plain English."""
    parts = [
        f"So far: we are in the {state.location}, in the {state.time} of day {state.day}; "
        f"the weather is {state.weather}."
    ]
    for name, c in state.characters.items():
        if not c.seen:
            continue
        acc = "no accessory" if c.accessory == "none" else f"a {c.accessory}"
        where = f"is here and {c.pose}" if c.present else "has left"
        parts.append(
            f"{name} has {c.skin} skin and {c.hair_color} hair worn {c.hair_style}, wears a "
            f"{c.top} top, {c.trousers} trousers and {acc}, and {where}."
        )
    if len(state.order) >= 2:
        parts.append(f"From left to right: {_join(state.order)}.")
    for kind, o in state.objects.items():
        if not o.appeared:
            continue
        what = f"{o.count} {o.color} {kind}(s)" if o.count is not None else f"the {o.color} {kind}"
        if o.removed:
            parts.append(f"{what[0].upper()}{what[1:]} was taken away for good.")
            continue
        where = f"held by {o.holder}" if o.holder else f"on the ground in the {o.place}"
        parts.append(f"{what[0].upper()}{what[1:]} is {o.state}, {where}.")
    return " ".join(parts)


@register("independent", "no context", supplies=_supplies_nothing)
def _independent(story: Story, k: int) -> ConditionContext:
    return ConditionContext("independent")


@register(
    "previous_text",
    "the previous scene's text",
    supplies=_supplies_previous_text,
    context_factor=1.0,
)
def _previous_text(story: Story, k: int) -> ConditionContext:
    return ConditionContext("previous_text", text=story.scenes[k - 2].text)


@register(
    "structured_memory",
    "a compact JSON of the state at the end of the previous scene (primary)",
    supplies=_supplies_previous_state,
    context_factor=1.0,
)
def _structured_memory(story: Story, k: int) -> ConditionContext:
    return ConditionContext("structured_memory", data=state_json(story.scenes[k - 2].state))


@register(
    "previous_image",
    "the previous generated image, as a reference image",
    supplies=_supplies_previous_image,
    reference_image=True,
)
def _previous_image(story: Story, k: int) -> ConditionContext:
    return ConditionContext("previous_image", reference_image=True)


@register(
    "summarized_state",
    "a one-paragraph natural-language summary of every persistent fact",
    supplies=_supplies_previous_state,
    context_factor=1.3,
)
def _summarized_state(story: Story, k: int) -> ConditionContext:
    return ConditionContext("summarized_state", text=state_summary(story.scenes[k - 2].state))


@register(
    "full_context",
    "every previous scene text",
    supplies=_supplies_full_context,
    context_factor=1.6,
)
def _full_context(story: Story, k: int) -> ConditionContext:
    texts = [f"Scene {s.index}: {s.text}" for s in story.scenes[: k - 1]]
    return ConditionContext("full_context", text="\n".join(texts))


@register(
    PLACEBO_CONDITION,
    "placebo: the structured memory of another story of the same template and length",
    supplies=_supplies_nothing,
    context_factor=1.0,
    kind="placebo",
    stream_of="independent",
)
def _random_context(story: Story, k: int) -> ConditionContext:
    partner = placebo_partner(story)
    return ConditionContext(PLACEBO_CONDITION, data=state_json(partner.scenes[k - 2].state))


def _register_ablation(name: str, group: str) -> None:
    def build(story: Story, k: int) -> ConditionContext:
        return ConditionContext(name, data=state_json(story.scenes[k - 2].state, without=group))

    register(
        name,
        f"structured memory without the {group} facts (ablation)",
        supplies=_supplies_without(group),
        context_factor=1.0,
        kind="ablation",
        stream_of=PRIMARY_CONDITION,
        removes=group,
    )(build)


for _name, _group in ABLATIONS.items():
    _register_ablation(_name, _group)
