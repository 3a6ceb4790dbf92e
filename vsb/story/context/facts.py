"""Which of a scene's facts a context carries: the fact groups an ablation removes, the value
of a requirement's fact in a state, and one ``supplies(story, k, requirement)`` per kind of
context (the procedural simulators read them to set corruption probabilities)."""

from __future__ import annotations

from collections.abc import Callable

from vsb.story import vocab
from vsb.story.models import Requirement, SceneState, Story, Value

PRIMARY_CONDITION = "structured_memory"
PLACEBO_CONDITION = "random_context"
#: The primary condition's memory as an extractor reads it (``vsb.story.context.predicted``).
PREDICTED_CONDITION = "predicted_memory"
#: The fact groups an ablation can remove from the structured memory, in display order.
FACT_GROUPS: tuple[str, ...] = ("identity", "clothing", "objects", "environment")
#: Ablation condition -> the fact group it removes.
ABLATIONS: dict[str, str] = {f"{PRIMARY_CONDITION}-no_{g}": g for g in FACT_GROUPS}
#: The JSON keys of ``state_json`` each group removes (per character, or at the top level).
GROUP_KEYS: dict[str, tuple[str, ...]] = {
    "identity": ("skin", "hair"),
    "clothing": ("top", "trousers", "accessory"),
    "objects": ("objects",),
    "environment": ("location", "time", "day", "weather"),
}

Supplies = Callable[[Story, int, Requirement], bool]


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


def stated_in(story: Story, j: int, req: Requirement) -> bool:
    """Whether scene ``j``'s text states ``req``'s fact with the same value (an ``inferred``
    requirement's fact is told by its event only, never stated)."""
    return any(
        r.source == "prompt"
        and not r.inferred
        and r.subject == req.subject
        and r.attribute == req.attribute
        and r.expected == req.expected
        for r in story.scenes[j - 1].requirements
    )


def supplies_nothing(story: Story, k: int, req: Requirement) -> bool:
    return False


def supplies_previous_text(story: Story, k: int, req: Requirement) -> bool:
    return k > 1 and stated_in(story, k - 1, req)


def supplies_previous_state(story: Story, k: int, req: Requirement) -> bool:
    if k <= 1:
        return False
    prev = story.scenes[k - 2].state
    return fact_value(prev, req.subject, req.attribute) == req.expected


def supplies_previous_image(story: Story, k: int, req: Requirement) -> bool:
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
    if attribute in GROUP_KEYS["identity"]:
        return "identity"
    if attribute in GROUP_KEYS["clothing"]:
        return "clothing"
    return None


def supplies_without(group: str) -> Supplies:
    """What structured memory supplies, minus the facts of ``group``."""

    def supplies(story: Story, k: int, req: Requirement) -> bool:
        return fact_group(req.subject, req.attribute) != group and supplies_previous_state(
            story, k, req
        )

    return supplies


def supplies_full_context(story: Story, k: int, req: Requirement) -> bool:
    """The latest earlier statement of the fact holds the current value."""
    for j in range(k - 1, 0, -1):
        for r in story.scenes[j - 1].requirements:
            if r.source == "prompt" and r.subject == req.subject and r.attribute == req.attribute:
                return r.expected == req.expected
    return False
