"""Fault injection for the procedural simulators: corrupt a story's true states, scene by scene.

``simulate_story`` walks every scene of a story in order. For each requirement (one fact) it
draws three uniforms in a fixed order — fault, sticky, choice — whether or not they are
used, so the draws of scene *k* never depend on what happened to other facts. A fact is
corrupted with the probability ``fact_probability`` gives; a fault of scene *k-1* whose fact
is still required with the same true value persists with probability ``sticky``. Corrupted
values stay inside the vocabulary and within what an honest image could show:

* at most one fault per (subject, attribute); no attribute faults on a character made
  missing, no state/count faults on an object made missing;
* a character made missing takes what they hold along (as an exit does): the held object
  is recorded as a knock-on ``object_disappeared`` fault of the same origin;
* clothing and identity stay distinct between characters (tops differ, (skin, hair colour)
  pairs differ); a wrong holder is someone present and empty-handed, or the ground.

A context that states a fact wrongly (``Condition.misleads``: a predicted memory) misleads a
simulator that follows its context: the fact is drawn as the context states it (a fault of
origin ``context``) unless the fault draw falls below ``p_adherence × context_factor``, where
it drifts as it would under structured memory. A wrong value no honest image could show here
(an absent holder, a clash with another character) leaves the fact unsupplied (``p_memory``).
``procedural-oracle`` does not follow its context (``follows_context``): it renders the truth.

An ``inferred`` requirement (the implicit text style: the cause is told, the effect never
stated) follows the model's inference of its causal link (``inferred_links``, drawn once per
link with ``p_inference`` by the caller, from a stream of its own so the three draws above
are the same as for the plain story). A link the model missed is drawn in the state before
the cause, in the cause scene and every effect scene, unless the condition's memory states
the effect (a text-memory condition that ``supplies`` it: structured memory does from the
next scene on; the previous text and the previous image do not).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vsb.conditions import Condition
from vsb.story import vocab
from vsb.story.models import Requirement, SceneState, Story, Value


@dataclass(frozen=True)
class SimulatorParams:
    """Per-fact corruption probabilities of one simulator (see the methodology, section 3)."""

    p_memory: float
    p_adherence: float
    image_bonus: float = 1.0
    sticky: float = 0.7
    #: Draw what a context states wrongly (``Condition.misleads``); False for the oracle.
    follows_context: bool = True
    #: The chance the model infers an effect the text does not state (implicit style).
    p_inference: float = 1.0


@dataclass(frozen=True)
class Fault:
    """One injected fault of one image (the row of ``oracle/faults.jsonl`` minus the ids)."""

    scene: int
    subject: str
    attribute: str
    true_value: Value | None
    rendered_value: Value | None
    taxonomy: str
    dimension: str
    origin: str  # "new" | "sticky" | "context"
    source: str  # the requirement's source (prompt | memory)
    visual: bool = True

    def as_json(self) -> dict[str, Any]:
        return {
            "scene": self.scene,
            "subject": self.subject,
            "attribute": self.attribute,
            "true_value": self.true_value,
            "rendered_value": self.rendered_value,
            "taxonomy": self.taxonomy,
            "dimension": self.dimension,
            "origin": self.origin,
            "visual": self.visual,
        }


@dataclass(frozen=True)
class _Option:
    """One way to corrupt a fact: the attribute actually changed, its new value, the label."""

    attribute: str
    value: Value | None
    taxonomy: str


@dataclass
class SceneSim:
    """The outcome for one scene: the state to render and the faults injected."""

    rendered: SceneState
    faults: list[Fault] = field(default_factory=list)


def fact_probability(
    params: SimulatorParams, condition: Condition, story: Story, k: int, req: Requirement
) -> float:
    """The per-scene corruption probability of ``req`` in scene ``k`` under ``condition``.

    What the context does not supply gets ``p_memory``: a fact an ablation removed from the
    structured memory, and every fact under the placebo (whose context is another story's)."""
    if req.source == "prompt" or k == 1:
        p = params.p_adherence
    elif condition.context_factor is not None and condition.supplies(story, k, req):
        p = params.p_adherence * condition.context_factor
    elif condition.reference_image and condition.supplies(story, k, req):
        p = params.p_memory * params.image_bonus
    else:
        p = params.p_memory
    return min(max(p, 0.0), 1.0)


class _Work:
    """A mutable copy of a scene state that faults are applied to."""

    def __init__(self, state: SceneState) -> None:
        self.base = state
        self.scene: dict[str, Any] = {
            "location": state.location,
            "time": state.time,
            "weather": state.weather,
            "order": list(state.order),
        }
        self.chars = {n: c.model_dump() for n, c in state.characters.items()}
        self.objs = {k: o.model_dump() for k, o in state.objects.items()}
        self.blocked: set[str] = set()

    def holds(self, name: str) -> bool:
        return any(o["holder"] == name and not o["removed"] for o in self.objs.values())

    def others(self, name: str) -> Iterator[dict[str, Any]]:
        return (c for n, c in self.chars.items() if n != name)

    def freeze(self) -> SceneState:
        s = self.base
        chars = {
            n: (c if c.model_dump() == self.chars[n] else c.model_copy(update=self.chars[n]))
            for n, c in s.characters.items()
        }
        objs = {
            k: (o if o.model_dump() == self.objs[k] else o.model_copy(update=self.objs[k]))
            for k, o in s.objects.items()
        }
        return s.model_copy(update={**self.scene, "characters": chars, "objects": objs})


def _options(w: _Work, req: Requirement) -> list[list[_Option]]:
    """Feasible corruptions of ``req`` given the faults already applied, in groups (a group
    is chosen uniformly, then a member of it)."""
    subj, attr, tax = req.subject, req.attribute, req.taxonomy
    if subj == "scene":
        cur = w.scene[attr]
        if attr == "order":
            order = list(cur)
            swaps = []
            for i in range(len(order) - 1):
                new = list(order)
                new[i], new[i + 1] = new[i + 1], new[i]
                swaps.append(_Option(attr, new, tax))
            return [swaps] if swaps else []
        pool = {"location": vocab.LOCATIONS, "weather": vocab.WEATHERS, "time": vocab.TIMES}[attr]
        return [[_Option(attr, v, tax) for v in pool if v != cur]]
    if subj in w.chars:
        c = w.chars[subj]
        if attr == "present":
            return [[_Option(attr, not c["present"], tax)]]
        # An identity drift never takes another character's own skin tone or hair colour:
        # that would be a swap of who is who, which no image could tell from a drift.
        true_skins = {o.skin for n, o in w.base.characters.items() if n != subj}
        true_hair = {o.hair_color for n, o in w.base.characters.items() if n != subj}
        if attr == "skin":
            taken = {(o["skin"], o["hair_color"]) for o in w.others(subj)}
            return [
                [
                    _Option(attr, t, tax)
                    for t in vocab.SKIN_TONES
                    if t != c["skin"] and (t, c["hair_color"]) not in taken and t not in true_skins
                ]
            ]
        if attr == "hair":
            taken = {(o["skin"], o["hair_color"]) for o in w.others(subj)}
            colors = [
                _Option(attr, [h, c["hair_style"]], tax)
                for h in vocab.HAIR_COLORS
                if h != c["hair_color"] and (c["skin"], h) not in taken and h not in true_hair
            ]
            styles = [
                _Option(attr, [c["hair_color"], s], tax)
                for s in vocab.HAIR_STYLES
                if s != c["hair_style"]
            ]
            return [g for g in (colors, styles) if g]
        if attr == "top":
            taken = {o["top"] for o in w.others(subj)} | {c["trousers"]}
            return [
                [_Option(attr, v, tax) for v in vocab.CLOTHING_COLORS if v not in taken | {c[attr]}]
            ]
        if attr == "trousers":
            taken = {c["top"], c["trousers"]}
            return [[_Option(attr, v, tax) for v in vocab.CLOTHING_COLORS if v not in taken]]
        drawn = {"accessory": vocab.ACCESSORIES, "pose": vocab.POSES}.get(attr)
        if drawn is None:  # free text (an imported profile): no vocabulary value to swap in
            return []
        return [[_Option(attr, v, tax) for v in drawn if v != c[attr]]]
    o = w.objs[subj]
    if attr == "holder":
        here = [
            n
            for n in w.scene["order"]
            if n != o["holder"] and w.chars[n]["present"] and not w.holds(n)
        ]
        return [[_Option(attr, n, tax) for n in [*here, None]]]
    if attr == "present":
        if req.expected is False:
            return [[_Option(attr, True, tax)]]
        colors = [
            _Option("color", v, "object_color_change")
            for v in vocab.OBJECT_COLORS
            if v != o["color"]
        ]
        return [[_Option(attr, False, "object_disappeared")], colors]
    if attr == "count":
        n = int(o["count"])
        vals = [n + d for d in (-2, -1, 1, 2) if 1 <= n + d <= vocab.MAX_COUNT]
        return [[_Option(attr, v, tax) for v in vals]]
    if attr == "state":
        states = vocab.OBJECT_KINDS[subj].states
        return [[_Option(attr, s, tax) for s in states if s != o["state"]]]
    return []


def _apply(w: _Work, req: Requirement, opt: _Option) -> list[str]:
    """Apply ``opt``; returns the objects that vanish with a character made missing."""
    subj = req.subject
    if subj == "scene":
        if opt.attribute == "location":
            old = w.scene["location"]
            for o in w.objs.values():  # what lies here is drawn in the wrong place too
                if o["holder"] is None and o["place"] == old:
                    o["place"] = opt.value
        w.scene[opt.attribute] = opt.value
        return []
    if subj in w.chars:
        c = w.chars[subj]
        order: list[str] = w.scene["order"]
        if opt.attribute == "present":
            c["present"] = opt.value
            if opt.value:
                order.append(subj)
            else:
                order.remove(subj)
                w.blocked.add(subj)
                gone = [k for k, o in w.objs.items() if o["holder"] == subj and not o["removed"]]
                w.blocked.update(gone)
                return gone
        elif opt.attribute == "hair":
            assert isinstance(opt.value, list)
            c["hair_color"], c["hair_style"] = opt.value
        else:
            c[opt.attribute] = opt.value
        return []
    o = w.objs[subj]
    if opt.attribute == "holder":
        o["holder"] = opt.value
        o["place"] = None if opt.value is not None else w.scene["location"]
    elif opt.attribute == "present" and opt.value is False:
        o["removed"] = True
        w.blocked.add(subj)
    elif opt.attribute == "present":
        o.update(removed=False, appeared=True, holder=None, place=w.scene["location"])
        if o["count"] == 0:
            o["count"] = 1
    else:
        o[opt.attribute] = opt.value
    return []


def _true_value(w: _Work, req: Requirement, opt: _Option) -> Value | None:
    if opt.attribute == "color":
        return str(w.objs[req.subject]["color"])
    return req.expected


def _state_label(story: Story, k: int, req: Requirement, value: Value | None) -> str:
    if req.dimension == "causal":
        return req.taxonomy
    earlier = {s.state.objects[req.subject].state for s in story.scenes[: k - 1]}
    states = vocab.OBJECT_KINDS[req.subject].states
    before = isinstance(value, str) and states.index(value) < states.index(str(req.expected))
    return "state_regression" if value in earlier or before else "wrong_state"


def _pick(groups: list[list[_Option]], u: float) -> _Option | None:
    groups = [g for g in groups if g]
    if not groups:
        return None
    x = u * len(groups)
    g = groups[min(int(x), len(groups) - 1)]
    return g[min(int((x - int(x)) * len(g)), len(g) - 1)]


def _misled(
    params: SimulatorParams,
    condition: Condition,
    story: Story,
    k: int,
    req: Requirement,
    options: list[_Option],
) -> _Option | None:
    """The corruption a misleading context asks for (None: it states the truth, nothing, or
    something no image could show here; or the simulator does not follow its context)."""
    if condition.misleads is None or not params.follows_context:
        return None
    if req.source == "prompt" or k == 1:
        return None
    told = condition.misleads(story, k, req)
    if told is None:
        return None
    return next((o for o in options if (o.attribute, o.value) == told), None)


def infer_links(story: Story, params: SimulatorParams, rng: np.random.Generator) -> list[bool]:
    """Per causal link of ``story``: whether the model infers its effect (one uniform per
    link, drawn whether or not the story marks any requirement inferred)."""
    draws = rng.random(len(story.causal_links))
    return [bool(u < params.p_inference) for u in draws]


def _missed_effect(
    story: Story, condition: Condition, k: int, req: Requirement, inferred: list[bool] | None
) -> _Option | None:
    """The state before the cause, for an inferred requirement whose link the model missed
    and whose effect the context does not state; None otherwise."""
    if inferred is None or not req.inferred or req.causal_link is None:
        return None
    if inferred[req.causal_link]:
        return None
    link = story.causal_links[req.causal_link]
    told = condition.context_factor is not None and condition.supplies(story, k, req)
    if k > link.cause_scene and told:
        return None  # the memory states what the text never did
    before = story.scenes[link.cause_scene - 2].state.objects[req.subject].state
    if link.cause_scene < 2 or before == req.expected:
        return None
    return _Option(req.attribute, before, req.taxonomy)


def simulate_story(
    story: Story,
    condition: Condition,
    params: SimulatorParams,
    rng: np.random.Generator,
    inferred: list[bool] | None = None,
) -> list[SceneSim]:
    """Corrupt every scene of ``story`` in order; element *k-1* is scene *k*'s outcome.
    ``inferred`` (``infer_links``) says which causal links the model inferred; None: all."""
    out: list[SceneSim] = []
    drifted: dict[tuple[str, str], tuple[Value, _Option]] = {}
    for scene in story.scenes:
        k = scene.index
        reqs = scene.requirements
        draws = rng.random(3 * len(reqs)).reshape(-1, 3) if reqs else np.zeros((0, 3))
        w = _Work(scene.state)
        faults: list[Fault] = []
        now: dict[tuple[str, str], tuple[Value, _Option]] = {}
        for req, (u_fault, u_sticky, u_choice) in zip(reqs, draws, strict=True):
            if req.subject in w.blocked:
                continue
            key = (req.subject, req.attribute)
            groups = _options(w, req)
            flat = [o for g in groups for o in g]
            prev = drifted.get(key)
            opt = _missed_effect(story, condition, k, req, inferred)
            origin = "sticky"
            if opt is not None:
                link = story.causal_links[req.causal_link or 0]
                origin = "new" if k == link.cause_scene else "sticky"
            elif prev is not None and prev[0] == req.expected and u_sticky < params.sticky:
                opt = next((o for o in flat if o == prev[1]), None)
            if opt is None:
                origin = "new"
                told = _misled(params, condition, story, k, req, flat)
                if told is not None:
                    if u_fault >= params.p_adherence * (condition.context_factor or 1.0):
                        opt, origin = told, "context"
                    else:
                        opt = _pick(groups, float(u_choice))
                elif u_fault < fact_probability(params, condition, story, k, req):
                    opt = _pick(groups, float(u_choice))
            if opt is None:
                continue
            true_value = _true_value(w, req, opt)
            gone = _apply(w, req, opt)
            tax = opt.taxonomy
            if req.attribute == "state":
                tax = _state_label(story, k, req, opt.value)
            dim = "object_persistence" if opt.attribute == "color" else req.dimension
            faults.append(
                Fault(
                    k, req.subject, opt.attribute, true_value, opt.value, tax, dim, origin,
                    req.source,
                )
            )  # fmt: skip
            now[key] = (req.expected, opt)
            for kind in gone:  # knock-on: the held object leaves with its holder
                faults.append(
                    Fault(
                        k, kind, "present", True, False, "object_disappeared",
                        "object_persistence", origin, "knock-on",
                    )
                )  # fmt: skip
        drifted = now
        out.append(SceneSim(w.freeze() if faults else scene.state, faults))
    return out
