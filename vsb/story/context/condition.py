"""What a prompting condition is (``Condition``), the context it builds for one request
(``ConditionContext``) and the registry of conditions by name. ``vsb.conditions`` registers
the built-in conditions here and is what the rest of vsb imports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from vsb.errors import InputError
from vsb.registry import Registry
from vsb.story.context.facts import Supplies
from vsb.story.models import Requirement, Story, Value

ConditionKind = Literal["main", "placebo", "ablation", "predicted"]
#: ``(story, k, requirement) -> (attribute, value)``: the wrong value a context states for a
#: requirement's fact, or None where it states the true one or nothing.
Misleads = Callable[[Story, int, Requirement], tuple[str, Value | None] | None]


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
    #: Set when the context may state wrong values of this story's facts (a predicted
    #: memory): what it states wrongly. A simulator that follows its context draws those;
    #: the oracle never does (it renders the truth whatever the context says).
    misleads: Misleads | None = None

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
    misleads: Misleads | None = None,
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
                misleads,
            ),
        )
        return build

    return deco


#: Families of conditions made on demand from their name, by prefix (e.g. ``predicted_memory-``
#: for ``predicted_memory-err20``): ``make(name)`` returns the condition, None when the name is
#: not one of the family's, or raises ``InputError`` for a malformed one. A made condition is
#: kept but not registered, so ``all_condition_names`` stays the registered ones.
CONDITION_FAMILIES: dict[str, Callable[[str], Condition | None]] = {}
_MADE: dict[str, Condition] = {}


def get_condition(name: str) -> Condition:
    """The condition registered as ``name``, or made by a family (``CONDITION_FAMILIES``);
    ``UnknownNameError`` lists the registered ones."""
    if name in CONDITIONS:
        return CONDITIONS.get(name)
    made = _MADE.get(name)
    if made is None:
        for prefix, make in CONDITION_FAMILIES.items():
            if name.startswith(prefix) and (made := make(name)) is not None:
                _MADE[name] = made
                break
    return made if made is not None else CONDITIONS.get(name)


def is_condition(name: str) -> bool:
    """Whether ``get_condition(name)`` finds a condition (registered or of a family)."""
    try:
        get_condition(name)
    except InputError:
        return False
    return True


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
