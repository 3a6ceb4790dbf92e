"""Prompting conditions: what context a model gets besides the scene text.

The scene text (``scene.text``, plain or paraphrased) never changes across conditions;
only the context does. Every condition is registered by name in ``CONDITIONS``:

==================  ==============================================================
independent         no context
previous_text       the previous scene's text
structured_memory   compact JSON of the state at the end of the previous scene (primary)
previous_image      the previous generated image, as a reference image
summarized_state    a one-paragraph summary of every persistent fact
full_context        every previous scene text
==================  ==============================================================

A condition also says which of a scene's facts its context carries (``supplies``); the
procedural simulators use that, with ``context_factor``, to set corruption probabilities.
Scene 1 gets no context under any condition (there is no previous scene).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vsb.registry import Registry
from vsb.story.models import Requirement, SceneState, Story, Value

PRIMARY_CONDITION = "structured_memory"


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
) -> Callable[[Callable[[Story, int], ConditionContext]], Callable[[Story, int], ConditionContext]]:
    """Decorator: register a context builder ``(story, k) -> ConditionContext`` as a condition."""

    def deco(
        build: Callable[[Story, int], ConditionContext],
    ) -> Callable[[Story, int], ConditionContext]:
        CONDITIONS.add(
            name,
            Condition(name, description, build, supplies, context_factor, reference_image),
        )
        return build

    return deco


def get_condition(name: str) -> Condition:
    """The condition registered as ``name`` (``UnknownNameError`` lists the known ones)."""
    return CONDITIONS.get(name)


def condition_names() -> list[str]:
    """Every registered condition, in registration order."""
    return CONDITIONS.names()


def resolve_conditions(spec: str) -> list[str]:
    """A comma-separated list of condition names, or ``all``; unknown names raise."""
    if spec.strip() == "all":
        return condition_names()
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for n in names:
        get_condition(n)
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


def _supplies_full_context(story: Story, k: int, req: Requirement) -> bool:
    """The latest earlier statement of the fact holds the current value."""
    for j in range(k - 1, 0, -1):
        for r in story.scenes[j - 1].requirements:
            if r.source == "prompt" and r.subject == req.subject and r.attribute == req.attribute:
                return r.expected == req.expected
    return False


# --- context builders ------------------------------------------------------------------------


def state_json(state: SceneState) -> dict[str, Any]:
    """The state fields a model needs, as plain JSON (characters seen so far, objects that
    have entered the story)."""
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
    return {
        "location": state.location,
        "time": state.time,
        "day": state.day,
        "weather": state.weather,
        "order": list(state.order),
        "characters": chars,
        "objects": objs,
    }


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
