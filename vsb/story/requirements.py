"""Requirements: the checkable facts of each scene, with dimension, taxonomy and source.

``derive_story`` is the single derivation of everything that follows from a story's events
and replayed states (scene texts, causal links, requirements): the generator builds stories
with it, and validation re-derives a stored story with it to catch requirements that
contradict the replayed state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vsb.story import vocab
from vsb.story.models import (
    CausalLink,
    ChangeState,
    Event,
    Requirement,
    SceneState,
    Substitution,
    Value,
    World,
)
from vsb.story.text import Fact, compose_scene

#: attribute -> (dimension, taxonomy) for character facts.
CHARACTER_FACTS: dict[str, tuple[str, str]] = {
    "present": ("adherence", "character_missing"),
    "skin": ("identity", "identity_drift"),
    "hair": ("identity", "identity_drift"),
    "top": ("clothing", "clothing_change"),
    "trousers": ("clothing", "clothing_change"),
    "accessory": ("clothing", "clothing_change"),
    "pose": ("action", "pose_mismatch"),
}
OBJECT_FACTS: dict[str, tuple[str, str]] = {
    # present=True is checked as "an object of this kind AND the story's colour is visible";
    # the checker labels a wrong-coloured one object_color_change.
    "present": ("object_persistence", "object_disappeared"),
    "count": ("object_persistence", "count_mismatch"),
    "state": ("object_state", "wrong_state"),
    "holder": ("spatial", "wrong_holder"),
}
SCENE_FACTS: dict[str, tuple[str, str]] = {
    "location": ("environment", "wrong_location"),
    "weather": ("environment", "wrong_weather"),
    "time": ("chronology", "time_regression"),
    "order": ("spatial", "order_swap"),
}


def scene_facts(
    state: SceneState, world: World, history: Sequence[SceneState] = ()
) -> list[tuple[str, str, Value]]:
    """Every checkable (subject, attribute, expected) of a scene's image, in a fixed order
    (``history`` = the states of the earlier scenes)."""
    out: list[tuple[str, str, Value]] = []
    for c in world.characters:
        cs = state.characters[c.name]
        if cs.present:
            out.append((c.name, "present", True))
            out.append((c.name, "skin", cs.skin))
            out.append((c.name, "hair", [cs.hair_color, cs.hair_style]))
            out.append((c.name, "top", cs.top))
            out.append((c.name, "trousers", cs.trousers))
            worn = c.accessory != "none" or any(
                h.characters[c.name].accessory != "none" for h in history
            )
            if cs.accessory != "none" or worn:
                # "none" is checked only once an accessory was taken off
                out.append((c.name, "accessory", cs.accessory))
            out.append((c.name, "pose", cs.pose))
        elif cs.seen:
            out.append((c.name, "present", False))
    if len(state.order) >= 2:
        out.append(("scene", "order", list(state.order)))
    for o in world.objects:
        os_ = state.objects[o.kind]
        if os_.removed:
            out.append((o.kind, "present", False))
            continue
        if not state.object_visible(o.kind) or os_.count == 0:
            continue
        kind = vocab.OBJECT_KINDS[o.kind]
        # A held object is checked once, in its holder's hands (knock-on: disappeared);
        # an object lying here is checked as present.
        if os_.holder is not None:
            out.append((o.kind, "holder", os_.holder))
        else:
            out.append((o.kind, "present", True))
        if len(kind.states) > 1:
            out.append((o.kind, "state", os_.state))
        if os_.count is not None:
            out.append((o.kind, "count", os_.count))
    out.append(("scene", "location", state.location))
    out.append(("scene", "weather", state.weather))
    out.append(("scene", "time", state.time))
    return out


def _labels(subject: str, attribute: str, value: Value) -> tuple[str, str]:
    if subject == "scene":
        return SCENE_FACTS[attribute]
    if subject in vocab.OBJECT_KINDS:
        dim, tax = OBJECT_FACTS[attribute]
        if attribute == "present" and value is False:
            tax = "object_resurrected"
        return dim, tax
    dim, tax = CHARACTER_FACTS[attribute]
    if attribute == "present" and value is False:
        tax = "character_unexpected"
    return dim, tax


def build_requirements(
    k: int,
    state: SceneState,
    world: World,
    stated: set[Fact],
    history: Sequence[SceneState],
    causal_links: Sequence[CausalLink],
    *,
    implicit: bool = False,
) -> list[Requirement]:
    """The requirements of scene ``k`` (``history`` = states of scenes 1..k-1). With
    ``implicit`` (the implicit text style), every requirement that checks a causal effect is
    ``inferred``: the text tells the cause and never states the effect."""
    reqs: list[Requirement] = []
    for subject, attribute, expected in scene_facts(state, world, history):
        dim, tax = _labels(subject, attribute, expected)
        if attribute == "state" and any(
            h.objects[subject].state != expected for h in history if subject in h.objects
        ):
            tax = "state_regression"
        link = _causal_index(causal_links, k, subject, attribute, expected)
        if link is not None:
            dim, tax = "causal", "causal_break"
        source = "prompt" if k == 1 or (subject, attribute) in stated else "memory"
        reqs.append(
            Requirement(
                id=f"s{k}.{subject}.{attribute}",
                dimension=dim,
                taxonomy=tax,
                source=source,
                subject=subject,
                attribute=attribute,
                expected=expected,
                causal_link=link,
                inferred=implicit and link is not None,
            )
        )
    return reqs


def _causal_index(
    links: Sequence[CausalLink], k: int, subject: str, attribute: str, value: Value
) -> int | None:
    for i, link in enumerate(links):
        if (
            link.subject == subject
            and link.attribute == attribute
            and link.value == value
            and (k == link.cause_scene or k in link.effect_scenes)
        ):
            return i
    return None


def derive_causal_links(
    scene_events: Sequence[Sequence[Event]], states: Sequence[SceneState]
) -> list[CausalLink]:
    """One link per state change with a stated cause; its effect scenes are the later scenes,
    up to the next change (or removal) of that object, in which the object is visible."""
    links: list[CausalLink] = []
    for k, events in enumerate(scene_events, start=1):
        for i, ev in enumerate(events):
            if not isinstance(ev, ChangeState) or ev.cause is None:
                continue
            effect: list[int] = []
            for j in range(k + 1, len(states) + 1):
                st = states[j - 1]
                o = st.objects[ev.object]
                if o.removed or o.state != ev.state:
                    break
                if st.object_visible(ev.object):
                    effect.append(j)
            links.append(
                CausalLink(
                    cause_scene=k,
                    cause_event=i,
                    description=ev.cause,
                    subject=ev.object,
                    attribute="state",
                    value=ev.state,
                    effect_scenes=effect,
                )
            )
    return links


@dataclass(frozen=True)
class Derived:
    """What a story's events determine: scene texts, causal links, requirements."""

    texts: list[str]
    causal_links: list[CausalLink]
    requirements: list[list[Requirement]]


def derive_story(
    world: World,
    scene_events: Sequence[Sequence[Event]],
    states: Sequence[SceneState],
    *,
    implicit: bool = False,
) -> Derived:
    """Texts (plain style, or the implicit style with ``implicit``), causal links and
    per-scene requirements of a story whose events replay to ``states`` (one state per
    scene)."""
    links = derive_causal_links(scene_events, states)
    texts: list[str] = []
    reqs: list[list[Requirement]] = []
    for k, events in enumerate(scene_events, start=1):
        before = states[k - 2] if k > 1 else None
        text, stated = compose_scene(k, events, before, states[k - 1], world, implicit=implicit)
        texts.append(text)
        reqs.append(
            build_requirements(
                k, states[k - 1], world, stated, states[: k - 1], links, implicit=implicit
            )
        )
    return Derived(texts, links, reqs)


#: Dimension and taxonomy of a requirement a substitution adds (an entity outside the render
#: vocabulary seen in a scene, or a scene fact told in free text).
FREE_TEXT_FACTS: dict[str, tuple[str, str]] = {
    "present": ("object_persistence", "object_disappeared"),
    # gold annotations: a character's profile as written, and a profiled character's absence
    "profile": ("identity", "identity_drift"),
    "absent": ("adherence", "character_unexpected"),
    **{a: SCENE_FACTS[a] for a in ("location", "weather", "time")},
}


def apply_substitutions(
    k: int, reqs: Sequence[Requirement], substitutions: Sequence[Substitution]
) -> list[Requirement]:
    """Scene ``k``'s requirements of an imported story: those derived from a placeholder
    withheld or given their free-text value (``judged_by`` vlm), then one per substitution
    with no derived requirement (an entity outside the vocabulary), in the order given."""
    subs = {(s.subject, s.attribute): s.value for s in substitutions if s.scene == k}
    out: list[Requirement] = []
    used: set[tuple[str, str]] = set()
    for r in reqs:
        key = (r.subject, r.attribute)
        if key not in subs:
            out.append(r)
            continue
        used.add(key)
        value = subs[key]
        if value is not None:
            out.append(r.model_copy(update={"expected": value, "judged_by": "vlm"}))
    for (subject, attribute), value in subs.items():
        if (subject, attribute) in used or value is None:
            continue
        dim, tax = FREE_TEXT_FACTS.get(attribute, ("adherence", "character_missing"))
        out.append(
            Requirement(
                id=f"s{k}.{subject}.{attribute}",
                dimension=dim,
                taxonomy=tax,
                source="prompt",
                subject=subject,
                attribute=attribute,
                expected=value,
                judged_by="vlm",
            )
        )
    return out


def apply_sources(reqs: Sequence[Requirement], sources: Mapping[str, str]) -> list[Requirement]:
    """Requirements with the source ``sources`` gives their id (a story imported from gold
    annotations, ``ImportInfo.sources``); the others unchanged."""
    return [
        r.model_copy(update={"source": sources[r.id]})
        if r.id in sources and sources[r.id] != r.source
        else r
        for r in reqs
    ]
