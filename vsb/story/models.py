"""Typed models of everything a story file holds (the JSON Schema is generated from these)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from vsb.fsio import STRICT
from vsb.story.imported import ImportInfo, Substitution

STORY_FORMAT_VERSION: Literal["1.0"] = "1.0"

Dimension = Literal[
    "identity",
    "clothing",
    "object_persistence",
    "object_state",
    "spatial",
    "environment",
    "causal",
    "chronology",
    "action",
    "adherence",
]
#: The ten scored dimensions, in display order.
DIMENSIONS: tuple[str, ...] = Dimension.__args__  # type: ignore[attr-defined]

DIMENSION_LABELS: dict[str, str] = {
    "identity": "character identity",
    "clothing": "clothing",
    "object_persistence": "object persistence",
    "object_state": "object state",
    "spatial": "spatial consistency",
    "environment": "environment",
    "causal": "causal continuity",
    "chronology": "chronology",
    "action": "action consistency",
    "adherence": "text-image adherence",
}

Taxonomy = Literal[
    "character_missing",
    "character_unexpected",
    "identity_drift",
    "clothing_change",
    "pose_mismatch",
    "order_swap",
    "wrong_holder",
    "object_disappeared",
    "object_resurrected",
    "object_color_change",
    "count_mismatch",
    "state_regression",
    "wrong_state",
    "wrong_location",
    "wrong_weather",
    "time_regression",
    "causal_break",
    # not a requirement's own label: every requirement of an image that failed to generate
    # (an error, or a refusal) fails with it (vsb.evaluators.failed)
    "generation_failed",
]
TAXONOMY: tuple[str, ...] = Taxonomy.__args__  # type: ignore[attr-defined]

Source = Literal["prompt", "memory"]
#: How scene texts are worded: plain, paraphrased (other words, same facts) or implicit
#: (an event with a stated cause is told without its effect, which a model must infer).
PromptStyle = Literal["plain", "paraphrase", "implicit"]
PROMPT_STYLES: tuple[str, ...] = PromptStyle.__args__  # type: ignore[attr-defined]
Category = Literal[
    "object_persistence",
    "wardrobe",
    "location_transitions",
    "counting",
    "possession",
    "cause_effect",
    "damage_state",
    "relationships",
    "spatial_arrangement",
    "temporal_progression",
]
CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]
Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[str, ...] = Difficulty.__args__  # type: ignore[attr-defined]
#: An imported story's category (``vsb suite import``): not a template, not in CATEGORIES.
IMPORTED = "imported"
StoryCategory = Category | Literal["imported"]

__all__ = ["ImportInfo", "Substitution"]  # re-exported: part of the story model


# --- world -------------------------------------------------------------------------------


class Character(BaseModel):
    """A character of the world as first seen."""

    model_config = STRICT
    name: str = Field(description="Short unique name used in every scene text.")
    skin: str = Field(description="Neutral skin-tone label (vsb.story.vocab.SKIN_TONES).")
    hair_color: str = Field(description="Hair colour (vsb.story.vocab.HAIR_COLORS).")
    hair_style: str = Field(description="Hair style (vsb.story.vocab.HAIR_STYLES).")
    top: str = Field(description="Colour of the top (vsb.story.vocab.CLOTHING_COLORS).")
    trousers: str = Field(description="Colour of the trousers (vsb.story.vocab.CLOTHING_COLORS).")
    accessory: str = Field(description="Accessory worn, or 'none' (vsb.story.vocab.ACCESSORIES).")
    pose: str = Field(default="standing", description="Initial pose (vsb.story.vocab.POSES).")
    initially_present: bool = Field(default=True, description="Present in scene 1.")


class WorldObject(BaseModel):
    """An object of the world; its kind is its identifier within the story."""

    model_config = STRICT
    kind: str = Field(description="Object kind (vsb.story.vocab.OBJECT_KINDS); unique in a story.")
    color: str = Field(description="Object colour (vsb.story.vocab.OBJECT_COLORS).")
    initial_state: str = Field(description="State before the first scene.")
    count: int | None = Field(default=None, description="How many, for counted kinds only.")
    initial_holder: str | None = Field(
        default=None, description="Character holding it at the start, or null if on the ground."
    )
    initially_present: bool = Field(
        default=True, description="Present in scene 1; otherwise it enters with an appear event."
    )


class World(BaseModel):
    """The world specification: who and what exists, and where the story starts."""

    model_config = STRICT
    characters: list[Character] = Field(min_length=1, max_length=3)
    objects: list[WorldObject] = Field(default_factory=list, max_length=3)
    locations: list[str] = Field(min_length=1, description="Locations visited, in order.")
    start_time: str = Field(description="Time of day in scene 1 (vsb.story.vocab.TIMES).")
    start_weather: str = Field(description="Weather in scene 1 (vsb.story.vocab.WEATHERS).")


# --- events ------------------------------------------------------------------------------


class _Event(BaseModel):
    model_config = STRICT


class Enter(_Event):
    """A character comes into the scene (at the right end of the line unless ``position``)."""

    type: Literal["enter"] = "enter"
    character: str
    position: int | None = Field(default=None, description="Index in left-to-right order.")


class Exit(_Event):
    """A character leaves, taking what they hold."""

    type: Literal["exit"] = "exit"
    character: str


class Move(_Event):
    """Everyone present goes to another location."""

    type: Literal["move"] = "move"
    location: str


class SetTime(_Event):
    """The time of day changes; earlier times need ``new_day``."""

    type: Literal["set_time"] = "set_time"
    time: str
    new_day: bool = False


class SetWeather(_Event):
    """The weather changes."""

    type: Literal["set_weather"] = "set_weather"
    weather: str


class Appear(_Event):
    """A not-yet-present object appears, on the ground here or held by ``holder``."""

    type: Literal["appear"] = "appear"
    object: str
    holder: str | None = None


class Remove(_Event):
    """An object is taken away for good."""

    type: Literal["remove"] = "remove"
    object: str


class ChangeState(_Event):
    """An object's state changes (irreversible states cannot be undone)."""

    type: Literal["change_state"] = "change_state"
    object: str
    state: str
    cause: str | None = Field(default=None, description="What caused it, stated in the text.")


class Give(_Event):
    """One character hands an object they hold to another present character."""

    type: Literal["give"] = "give"
    object: str
    giver: str
    receiver: str


class Drop(_Event):
    """A character sets an object they hold down at the current location."""

    type: Literal["drop"] = "drop"
    object: str
    character: str


class Pickup(_Event):
    """A character picks up an object lying at the current location."""

    type: Literal["pickup"] = "pickup"
    object: str
    character: str


class SetCount(_Event):
    """The number of a counted object changes."""

    type: Literal["set_count"] = "set_count"
    object: str
    count: int


class ChangeAttr(_Event):
    """A character changes a clothing attribute (top, trousers, accessory)."""

    type: Literal["change_attr"] = "change_attr"
    character: str
    attribute: str
    value: str


class Swap(_Event):
    """Two present characters swap places in the left-to-right order."""

    type: Literal["swap"] = "swap"
    a: str
    b: str


class SetPose(_Event):
    """A character takes a pose."""

    type: Literal["set_pose"] = "set_pose"
    character: str
    pose: str


Event = Annotated[
    Enter
    | Exit
    | Move
    | SetTime
    | SetWeather
    | Appear
    | Remove
    | ChangeState
    | Give
    | Drop
    | Pickup
    | SetCount
    | ChangeAttr
    | Swap
    | SetPose,
    Field(discriminator="type"),
]
EVENT_TYPES: tuple[str, ...] = (
    "enter", "exit", "move", "set_time", "set_weather", "appear", "remove", "change_state",
    "give", "drop", "pickup", "set_count", "change_attr", "swap", "set_pose",
)  # fmt: skip


# --- state -------------------------------------------------------------------------------


class CharacterState(BaseModel):
    """A character at the end of a scene."""

    model_config = STRICT
    skin: str
    hair_color: str
    hair_style: str
    top: str
    trousers: str
    accessory: str
    pose: str
    present: bool = Field(description="In the scene (visible).")
    seen: bool = Field(description="Has appeared in some scene so far.")


class ObjectState(BaseModel):
    """An object at the end of a scene."""

    model_config = STRICT
    color: str
    state: str
    count: int | None
    holder: str | None = Field(description="Holding character, or null if lying somewhere.")
    place: str | None = Field(description="Location where it lies when not held.")
    appeared: bool = Field(description="Has entered the story.")
    removed: bool = Field(description="Taken away for good.")


class SceneState(BaseModel):
    """The full expected state at the end of one scene."""

    model_config = STRICT
    location: str
    time: str
    day: int = Field(description="Day number, starting at 1.")
    weather: str
    order: list[str] = Field(description="Present characters, left to right.")
    characters: dict[str, CharacterState]
    objects: dict[str, ObjectState]

    def object_visible(self, kind: str) -> bool:
        """Whether the object can be seen: in the story, not removed, held by someone present
        or lying at the current location."""
        o = self.objects[kind]
        if not o.appeared or o.removed:
            return False
        if o.holder is not None:
            return self.characters[o.holder].present
        return o.place == self.location


# --- requirements, scenes, stories ----------------------------------------------------------

Value = bool | int | str | list[str]


class Requirement(BaseModel):
    """One checkable visual fact about one scene's image."""

    model_config = STRICT
    id: str = Field(description="Unique within the story: s<scene>.<subject>.<attribute>.")
    dimension: Dimension = Field(description="Which of the ten scored dimensions it counts for.")
    taxonomy: Taxonomy = Field(description="Failure label used when the check fails.")
    source: Source = Field(description="prompt: stated in this scene's text; memory: carried.")
    subject: str = Field(description="Character name, object kind, or 'scene'.")
    attribute: str = Field(description="Checked attribute (top, state, count, location…).")
    expected: Value = Field(description="Expected value.")
    causal_link: int | None = Field(
        default=None, description="Index into the story's causal_links when this is an effect."
    )
    judged_by: Literal["vlm"] | None = Field(
        default=None,
        description="'vlm': free text outside the render vocabulary (imported stories), judged "
        "by a VLM only; the rule checker marks it not_applicable. Left out when null.",
        exclude_if=lambda v: v is None,
    )

    inferred: bool = Field(
        default=False,
        description="The text tells the event but never states this effect (implicit style): "
        "a model must infer it. Written only when true.",
        exclude_if=lambda v: v is False,
    )


class Scene(BaseModel):
    """One scene: its events, its text, the expected state and the requirements."""

    model_config = STRICT
    index: int = Field(ge=1, description="1-based scene number.")
    events: list[Event]
    text: str = Field(description="Natural-language prompt composed from the events.")
    state: SceneState = Field(description="Expected state after replaying the events.")
    requirements: list[Requirement]


class CausalLink(BaseModel):
    """A stated cause in one scene and the later scenes where its effect must persist."""

    model_config = STRICT
    cause_scene: int = Field(ge=1)
    cause_event: int = Field(ge=0, description="Index of the causing event in that scene.")
    description: str = Field(description="The cause as stated in the text.")
    subject: str
    attribute: str
    value: Value
    effect_scenes: list[int] = Field(description="Later scenes in which the effect is visible.")


class Story(BaseModel):
    """A complete benchmark unit."""

    model_config = STRICT
    version: Literal["1.0"] = STORY_FORMAT_VERSION
    id: str = Field(pattern=r"^[a-z0-9_\-]+$")
    category: StoryCategory
    difficulty: Difficulty
    seed: int = Field(description="Generator seed that produced this story.")
    prompt_style: PromptStyle = "plain"
    world: World
    scenes: list[Scene] = Field(description="3, 5 or 8 scenes.")
    causal_links: list[CausalLink] = Field(default_factory=list)
    imported: ImportInfo | None = Field(
        default=None,
        description="Set for a story imported from a narrative. Left out when null.",
        exclude_if=lambda v: v is None,
    )


#: The largest suite seed (a signed 64-bit integer: what SQLite and numpy hold exactly).
MAX_SEED = 2**63 - 1


class SuiteEntry(BaseModel):
    """One line of the suite index (``vsb.story.io.suite_problems`` checks its counts, category
    and difficulty against the story file)."""

    model_config = STRICT
    id: str
    file: str
    category: StoryCategory
    difficulty: Difficulty
    scenes: int = Field(strict=True, ge=1, description="The story's number of scenes.")
    requirements: int = Field(
        strict=True, ge=0, description="The story's number of requirements (all scenes)."
    )
    sha256: str


class SuiteIndex(BaseModel):
    """``suite.json``: which stories a suite holds."""

    model_config = STRICT
    version: Literal["1.0"] = STORY_FORMAT_VERSION
    seed: int = Field(strict=True, ge=0, le=MAX_SEED, description="The suite's seed.")
    prompt_style: PromptStyle = "plain"
    stories: list[SuiteEntry]
