"""Story invariants that are not transitions, and stored requirements checked against the events.

The renderer, the blind extractor, the rule checker and the simulators rely on the
"Generator invariants" of docs/CONTRACTS.md. The state machine (``vsb.state``) refuses the
events that would break them; this module checks the rest, on a story whose events replay:

* the world: characters differ in (skin, hair colour) — otherwise no image can tell them
  apart — and wear different top colours, each top differing from its own trousers;
* the scenes: scene 1 has no events (it shows the world's initial state), every later
  scene has at least one;
* every replayed state: a character holds at most one object, counted objects are never
  held, tops stay distinct (``state_problems``; the transitions keep these true, and a test
  checks that they do);
* the stored requirements and causal links equal those the generator's own builder derives
  from the replayed states (``vsb.story.requirements.derive_story``): a requirement whose
  expected value contradicts the state would mark a model wrong for being right.

``story_problems`` yields one ``StoryValidationError`` per problem, each naming the file,
a JSON pointer, the scene and (for requirements) the requirement id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from vsb.errors import StoryValidationError
from vsb.story import vocab
from vsb.story.models import Requirement, SceneState, Story, World
from vsb.story.requirements import apply_sources, apply_substitutions, derive_story

#: Requirement fields compared with the derived requirement, besides ``expected``.
_FIELDS = (
    "subject", "attribute", "dimension", "taxonomy", "source", "causal_link", "judged_by",
    "inferred",
)  # fmt: skip

Problem = tuple[str, str]  # (JSON pointer, message)


def _show(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def world_problems(world: World) -> Iterator[Problem]:
    """Characters that cannot be told apart or whose clothes clash."""
    for j, c in enumerate(world.characters):
        for other in world.characters[:j]:
            if (c.skin, c.hair_color) == (other.skin, other.hair_color):
                yield (
                    f"/world/characters/{j}",
                    f"{c.name} has the same skin and hair colour as {other.name} "
                    f"({c.skin}, {c.hair_color}): no image can tell them apart",
                )
            if c.top == other.top:
                yield (
                    f"/world/characters/{j}/top",
                    f"{c.name} wears the same top colour as {other.name} ({c.top})",
                )
        if c.top == c.trousers:
            yield (
                f"/world/characters/{j}/trousers",
                f"{c.name}'s top and trousers are both {c.top}",
            )


def scene_event_problems(story: Story) -> Iterator[Problem]:
    """Scene 1 has no events; every later scene of a generated story has at least one (a
    scene of an imported narrative may change nothing)."""
    for i, scene in enumerate(story.scenes):
        if i == 0 and scene.events:
            yield "/scenes/0/events", "scene 1 shows the world's initial state and has no events"
        elif i > 0 and not scene.events and story.imported is None:
            yield f"/scenes/{i}/events", f"scene {i + 1} has no events (every later scene has one)"


def state_problems(state: SceneState) -> list[str]:
    """What is wrong with one scene state (empty for every state the transitions reach)."""
    out: list[str] = []
    held: dict[str, str] = {}
    for kind, o in sorted(state.objects.items()):
        if o.holder is None or o.removed:
            continue
        if kind in vocab.OBJECT_KINDS and vocab.OBJECT_KINDS[kind].counted:
            out.append(f"the {kind} is counted but held by {o.holder}")
        if o.holder in held:
            out.append(f"{o.holder} holds two objects ({held[o.holder]}, {kind})")
        held[o.holder] = kind
    names = sorted(state.characters)
    for j, name in enumerate(names):
        c = state.characters[name]
        if c.top == c.trousers:
            out.append(f"{name}'s top and trousers are both {c.top}")
        for other in names[:j]:
            d = state.characters[other]
            if c.top == d.top:
                out.append(f"{name} and {other} wear the same top colour ({c.top})")
            if (c.skin, c.hair_color) == (d.skin, d.hair_color):
                out.append(f"{name} and {other} have the same skin and hair colour")
    return out


def _requirement_diff(k: int, stored: Requirement, derived: Requirement) -> str | None:
    if stored.expected != derived.expected:
        return (
            f"scene {k} requirement {stored.id}: expected {_show(stored.expected)} contradicts "
            f"the replayed state, which gives {_show(derived.expected)}"
        )
    for name in _FIELDS:
        a, b = getattr(stored, name), getattr(derived, name)
        if a != b:
            return (
                f"scene {k} requirement {stored.id}: {name} {_show(a)} differs from the "
                f"derived {_show(b)}"
            )
    return None


def requirement_problems(story: Story, states: Sequence[SceneState]) -> Iterator[Problem]:
    """Stored requirements and causal links against those derived from the replayed states."""
    derived = derive_story(
        story.world,
        [s.events for s in story.scenes],
        states,
        implicit=story.prompt_style == "implicit",
    )
    subs = story.imported.substitutions if story.imported is not None else []
    sources = story.imported.sources if story.imported is not None else {}
    for i, (scene, want) in enumerate(zip(story.scenes, derived.requirements, strict=True)):
        k = i + 1
        want = apply_sources(apply_substitutions(k, want, subs), sources)
        by_id = {r.id: r for r in want}
        stored_ids = {r.id for r in scene.requirements}
        for j, req in enumerate(scene.requirements):
            ptr = f"/scenes/{i}/requirements/{j}"
            if req.id not in by_id:
                yield (
                    ptr,
                    (
                        f"scene {k} requirement {req.id} is not derived from the events "
                        "(the replayed state has no such fact)"
                    ),
                )
                continue
            diff = _requirement_diff(k, req, by_id[req.id])
            if diff:
                yield ptr, diff
        for req in want:
            if req.id not in stored_ids:
                yield (
                    f"/scenes/{i}/requirements",
                    (f"scene {k} lacks requirement {req.id} (expected {_show(req.expected)})"),
                )
    stored_links, want_links = story.causal_links, derived.causal_links
    for n in range(max(len(stored_links), len(want_links))):
        a = stored_links[n] if n < len(stored_links) else None
        b = want_links[n] if n < len(want_links) else None
        if a == b:
            continue
        if b is None:
            yield f"/causal_links/{n}", f"causal link {n} is not derived from a stated cause"
        elif a is None:
            yield (
                "/causal_links",
                (
                    f"causal link {n} is missing (scene {b.cause_scene} event {b.cause_event}: "
                    f"{b.description!r})"
                ),
            )
        else:
            detail = ""
            if a.effect_scenes != b.effect_scenes:
                detail = f" (effect scenes {a.effect_scenes}, derived {b.effect_scenes})"
            yield (
                f"/causal_links/{n}",
                (f"causal link {n} differs from the one derived from the events{detail}"),
            )


def story_problems(
    story: Story, states: Sequence[SceneState], path: str | Path
) -> Iterator[StoryValidationError]:
    """Every invariant problem of a story whose events replay to ``states``."""
    world = list(world_problems(story.world))
    problems: list[Problem] = [*world, *scene_event_problems(story)]
    seen: set[str] = set()
    for i, state in enumerate(states if not world else ()):  # a bad world repeats in each
        for m in state_problems(state):
            if m not in seen:  # reported once, in the first scene that shows it
                seen.add(m)
                problems.append((f"/scenes/{i}/state", f"scene {i + 1}: {m}"))
    if len(states) == len(story.scenes):
        problems += requirement_problems(story, states)
    for ptr, message in problems:
        yield StoryValidationError(message, file=path, location=ptr)
