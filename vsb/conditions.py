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

The primary condition under imperfect extraction (issue 26, VinaBench's "LLM constraints"):

=================================  ==================================================
predicted_memory                   structured memory as an extractor reads the story
                                   so far: the simulated extractor, 10 % of facts
                                   wrong (stale, another value, an object dropped)
predicted_memory-errNN             ... with NN % wrong (two digits, made on demand)
predicted_memory-NAME              ... read by an extractor registered as NAME
                                   (``register_extractor``: the hook for an LLM)
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
chance. A predicted memory supplies the facts its extractor read right, and shares structured
memory's stream, so the paired difference isolates the extraction errors; the facts it read
wrong it ``misleads`` on: a simulator draws them as the memory states them (unless it fails
to adhere to its context, as it would under structured memory), except ``procedural-oracle``,
which renders the truth whatever its context says. Scene 1 gets no context under any
condition (there is no previous scene).

This module is the face of the conditions: it registers the built-in ones (below) and
re-exports what the rest of vsb imports. What a condition is and its registry live in
``vsb.story.context.condition``, which facts a context carries in ``.facts``, the state as
JSON or a paragraph in ``.memory``, an extractor's reading in ``.predicted``; the placebo's
partner story in ``vsb.generator.placebo``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from vsb.errors import InputError
from vsb.generator.placebo import placebo_partner, placebo_seed
from vsb.story.context.condition import (
    CONDITION_FAMILIES,
    CONDITION_SETS,
    CONDITIONS,
    Condition,
    ConditionContext,
    ConditionKind,
    ablation_names,
    all_condition_names,
    condition_names,
    get_condition,
    is_condition,
    register,
    resolve_conditions,
)
from vsb.story.context.facts import (
    ABLATIONS,
    FACT_GROUPS,
    PLACEBO_CONDITION,
    PREDICTED_CONDITION,
    PRIMARY_CONDITION,
    Supplies,
    fact_group,
    fact_value,
    supplies_full_context,
    supplies_nothing,
    supplies_previous_image,
    supplies_previous_state,
    supplies_previous_text,
    supplies_without,
)
from vsb.story.context.memory import memory_context, state_json, state_summary
from vsb.story.context.predicted import (
    DEFAULT_ERROR_RATE,
    Extractor,
    PredictedMemory,
    simulated_extractor,
)
from vsb.story.context.sourced import sourced_memory, sourced_summary
from vsb.story.models import Story
from vsb.story.words import in_words

__all__ = [
    "ABLATIONS",
    "CONDITIONS",
    "CONDITION_SETS",
    "FACT_GROUPS",
    "PLACEBO_CONDITION",
    "PREDICTED_CONDITION",
    "PRIMARY_CONDITION",
    "Condition",
    "ConditionContext",
    "ConditionKind",
    "Supplies",
    "ablation_names",
    "all_condition_names",
    "condition_names",
    "fact_group",
    "fact_value",
    "get_condition",
    "is_condition",
    "memory_context",
    "placebo_partner",
    "placebo_seed",
    "register",
    "register_extractor",
    "resolve_conditions",
    "state_json",
    "state_summary",
]


def _memory(story: Story, k: int, without: str | None = None) -> dict[str, Any]:
    """The structured memory before scene ``k``: the previous scene's state in words, or,
    for an imported story, only what its source gives (``sourced_memory``)."""
    if story.imported is not None:
        return sourced_memory(story, k - 1, without=without)
    return memory_context(story.scenes[k - 2].state, without)


def _summary(story: Story, k: int) -> str:
    """The summary before scene ``k`` (``state_summary``; ``sourced_summary`` for an
    imported story)."""
    if story.imported is not None:
        return sourced_summary(story, k - 1)
    return state_summary(story.scenes[k - 2].state)


def _reading(story: Story, k: int, memory: dict[str, Any]) -> dict[str, Any]:
    """An extractor's reading (codes) as a model is sent it: in words, or, for an imported
    story, only the facts its source gives (``sourced_memory``)."""
    if story.imported is not None:
        return sourced_memory(story, k - 1, memory=memory)
    return in_words(memory)


@register("independent", "no context", supplies=supplies_nothing)
def _independent(story: Story, k: int) -> ConditionContext:
    return ConditionContext("independent")


@register(
    "previous_text",
    "the previous scene's text",
    supplies=supplies_previous_text,
    context_factor=1.0,
)
def _previous_text(story: Story, k: int) -> ConditionContext:
    return ConditionContext("previous_text", text=story.scenes[k - 2].text)


@register(
    "structured_memory",
    "a compact JSON of the state at the end of the previous scene (primary)",
    supplies=supplies_previous_state,
    context_factor=1.0,
)
def _structured_memory(story: Story, k: int) -> ConditionContext:
    return ConditionContext("structured_memory", data=_memory(story, k))


@register(
    "previous_image",
    "the previous generated image, as a reference image",
    supplies=supplies_previous_image,
    reference_image=True,
)
def _previous_image(story: Story, k: int) -> ConditionContext:
    return ConditionContext("previous_image", reference_image=True)


@register(
    "summarized_state",
    "a one-paragraph natural-language summary of every persistent fact",
    supplies=supplies_previous_state,
    context_factor=1.3,
)
def _summarized_state(story: Story, k: int) -> ConditionContext:
    return ConditionContext("summarized_state", text=_summary(story, k))


@register(
    "full_context",
    "every previous scene text",
    supplies=supplies_full_context,
    context_factor=1.6,
)
def _full_context(story: Story, k: int) -> ConditionContext:
    texts = [f"Scene {s.index}: {s.text}" for s in story.scenes[: k - 1]]
    return ConditionContext("full_context", text="\n".join(texts))


@register(
    PLACEBO_CONDITION,
    "placebo: the structured memory of another story of the same template and length",
    supplies=supplies_nothing,
    context_factor=1.0,
    kind="placebo",
    stream_of="independent",
)
def _random_context(story: Story, k: int) -> ConditionContext:
    if story.imported is not None:
        raise InputError(
            f"{PLACEBO_CONDITION}: story {story.id!r} is imported: its placebo, another story "
            "of its template, does not exist (run an imported suite without it)"
        )
    partner = placebo_partner(story)
    return ConditionContext(PLACEBO_CONDITION, data=memory_context(partner.scenes[k - 2].state))


def _register_ablation(name: str, group: str) -> None:
    def build(story: Story, k: int) -> ConditionContext:
        return ConditionContext(name, data=_memory(story, k, without=group))

    register(
        name,
        f"structured memory without the {group} facts (ablation)",
        supplies=supplies_without(group),
        context_factor=1.0,
        kind="ablation",
        stream_of=PRIMARY_CONDITION,
        removes=group,
    )(build)


for _name, _group in ABLATIONS.items():
    _register_ablation(_name, _group)


def predicted_condition(name: str, description: str, extract: Extractor) -> Condition:
    """A predicted-memory condition: the memory ``extract`` reads from the story so far,
    shown as structured memory is (same JSON shape, same context factor, same stream)."""
    reading = PredictedMemory(name, extract)

    def build(story: Story, k: int) -> ConditionContext:
        return ConditionContext(
            name, data=_reading(story, k, copy.deepcopy(reading.memory(story, k)))
        )

    return Condition(
        name,
        description,
        build,
        supplies=reading.supplies,
        context_factor=1.0,
        kind="predicted",
        stream_of=PRIMARY_CONDITION,
        misleads=reading.misleads,
    )


_ERR = re.compile(rf"{PREDICTED_CONDITION}-err(\d\d)")


def _error_variant(name: str) -> Condition | None:
    """``predicted_memory-errNN``: the simulated extractor at NN % (None: not an errNN name)."""
    if not name.startswith(f"{PREDICTED_CONDITION}-err"):
        return None
    match = _ERR.fullmatch(name)
    if match is None:
        raise InputError(
            f"condition {name!r}: expected {PREDICTED_CONDITION}-errNN, NN the simulated "
            "extractor's error rate in percent as two digits (00 to 99)"
        )
    rate = int(match.group(1)) / 100
    return predicted_condition(
        name,
        f"structured memory as a simulated extractor reads it, {rate:.0%} of facts wrong",
        simulated_extractor(rate),
    )


def register_extractor(name: str, extract: Extractor, description: str | None = None) -> str:
    """The hook for a real (LLM) extractor: register ``extract`` (``(story, k) -> memory``,
    the state before scene ``k`` read from the texts of scenes 1..k-1, in ``state_json``'s
    shape) as the condition ``predicted_memory-NAME``, and return that name. vsb makes no
    call itself: ``extract`` owns its transport, and should cache (the judge's call
    machinery, ``vsb.store.calls``, does) since it is asked once per story and scene in
    each process. Register it before the run (e.g. where a plug-in adapter is imported)."""
    if name.startswith("err") or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name):
        raise InputError(
            f"extractor name {name!r}: expected lower-case letters, digits, '_', '-' or '.', "
            "not starting with 'err' (those name the simulated extractor's rates)"
        )
    full = f"{PREDICTED_CONDITION}-{name}"
    CONDITIONS.add(
        full,
        predicted_condition(
            full, description or f"structured memory as extractor {name!r} reads it", extract
        ),
    )
    return full


CONDITIONS.add(
    PREDICTED_CONDITION,
    predicted_condition(
        PREDICTED_CONDITION,
        "structured memory as a simulated extractor reads the story so far "
        f"({DEFAULT_ERROR_RATE:.0%} of facts wrong: stale, another value, an object dropped)",
        simulated_extractor(DEFAULT_ERROR_RATE),
    ),
)
CONDITION_FAMILIES[f"{PREDICTED_CONDITION}-"] = _error_variant
