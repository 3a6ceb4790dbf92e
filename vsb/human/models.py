"""Typed models of a rating file: what the ``/evaluate`` page exports (and ``vsb human
simulate`` writes). ``vsb/schema/rating.schema.json`` is generated from ``RatingFile``.

Two versions. ``2.0`` (``BlindRatingFile``) is what the ``/evaluate`` page exports: items
name opaque *target ids* (:mod:`vsb.human.blinding`), never a model, and a comparison does
not say whether it was a control; ``vsb human import --release R`` resolves it into ``1.0``.
``1.0`` (``RatingFile``, written by ``vsb human simulate``) names the models:

A file is one rater's session: who rated (``rater_id``), which release the images came from,
the blinding letters of that session, and one entry per answered item. Item kinds:

- ``likert``: one model's version of one story rated 1-5 on the six rated dimensions;
  ``repeat_of`` names the item it repeats (the session's repeated item, test-retest);
- ``pairwise``: two models' versions of one story, which tells it more coherently;
- ``control``: a pairwise item between the perfect simulator and the memory-less one,
  whose answer is known (the rater's control accuracy is the share chosen right).

Models are strict (``"5"`` is not a rating, ``true`` is not a number) and reject unknown keys.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

RATING_FORMAT_VERSION = "1.0"
#: What the blinded /evaluate page exports: opaque target ids instead of model names.
BLIND_FORMAT_VERSION = "2.0"
RATING_FORMAT = "vsb-ratings"
#: The control pair: the perfect simulator is the known answer against the amnesiac.
CONTROL_GOOD = "procedural-oracle"
CONTROL_BAD = "procedural-amnesiac"

#: The six rated dimensions (key, label, what the rater is asked), display order.
RATED_DIMENSIONS: tuple[tuple[str, str, str], ...] = (
    ("identity_consistency", "Identity consistency",
     "The same characters look the same in every picture (skin, hair, clothes)."),
    ("object_consistency", "Object consistency",
     "Objects keep their colour, state and number unless the story changes them."),
    ("causal_coherence", "Causal coherence",
     "What happens in one scene still shows in the later scenes."),
    ("narrative_coherence", "Narrative coherence",
     "The pictures read as one continuous story, in order."),
    ("visual_quality", "Visual quality", "The pictures are clear and well made."),
    ("prompt_adherence", "Prompt adherence", "Each picture shows what its scene text says."),
)  # fmt: skip
DIMENSION_KEYS: tuple[str, ...] = tuple(k for k, _, _ in RATED_DIMENSIONS)

_RATER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RATER_ID_RULE = "1-64 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)

TIME_RULE = "an ISO 8601 time with its UTC offset, e.g. 2025-01-01T12:00:00Z"


def parse_time(value: str) -> datetime:
    """A rating file's ``started_at``/``finished_at`` as an aware datetime; ``ValueError``
    (naming ``TIME_RULE``) for anything else: a date alone, no UTC offset, control bytes."""
    try:
        t = datetime.fromisoformat(value) if value.isprintable() else None
    except ValueError:
        t = None
    if t is None or t.tzinfo is None or t.utcoffset() is None:
        raise ValueError(f"{value!r} is not {TIME_RULE}")
    return t


Score = Annotated[int, Field(ge=1, le=5, description="1 (poor) to 5 (excellent).")]
ItemId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,32}$", description="Unique in the file.")]
Letter = Annotated[str, Field(pattern=r"^[A-Z]{1,2}$", description="Blinding letter shown.")]
Name = Annotated[str, Field(min_length=1, max_length=300)]
Seconds = Annotated[
    float, Field(ge=0.0, le=86400.0, description="Seconds the item was on screen (all visits).")
]


class Ratings(BaseModel):
    """The six Likert ratings of one likert item (every one required)."""

    model_config = _STRICT
    identity_consistency: Score
    object_consistency: Score
    causal_coherence: Score
    narrative_coherence: Score
    visual_quality: Score
    prompt_adherence: Score


class _Item(BaseModel):
    model_config = _STRICT
    item_id: ItemId
    story_id: Name = Field(description="Story id of the release's suite.")
    condition: Name = Field(description="Prompting condition of the images.")
    time_s: Seconds
    order: int = Field(ge=0, le=10_000, description="Position in the session (0-based).")


class LikertItem(_Item):
    """One model's version of one story, rated on the six dimensions."""

    kind: Literal["likert"] = Field(description="Item kind.")
    model: Name = Field(description="The model behind the letter (never shown to the rater).")
    letter: Letter
    ratings: Ratings
    repeat_of: ItemId | None = Field(
        default=None, description="The item this one repeats (test-retest), or null."
    )


class _PairItem(_Item):
    model_a: Name = Field(description="Model shown on the left.")
    model_b: Name = Field(description="Model shown on the right.")
    letter_a: Letter
    letter_b: Letter
    choice: Literal["a", "b", "tie"] = Field(description="Which side tells the story better.")

    @model_validator(mode="after")
    def _two_models(self) -> _PairItem:
        if self.model_a == self.model_b:
            raise ValueError("model_a and model_b must differ")
        return self


class PairwiseItem(_PairItem):
    """Two models' versions of one story: which is more coherent."""

    kind: Literal["pairwise"] = Field(description="Item kind.")


class ControlItem(_PairItem):
    """The perfect simulator against the amnesiac: the known answer is the perfect one."""

    kind: Literal["control"] = Field(description="Item kind.")

    @model_validator(mode="after")
    def _control_pair(self) -> ControlItem:
        if {self.model_a, self.model_b} != {CONTROL_GOOD, CONTROL_BAD}:
            raise ValueError(f"a control item compares {CONTROL_GOOD} with {CONTROL_BAD}")
        return self

    @property
    def correct(self) -> bool:
        """Whether the rater chose the perfect simulator."""
        good = "a" if self.model_a == CONTROL_GOOD else "b"
        return self.choice == good


Item = Annotated[LikertItem | PairwiseItem | ControlItem, Field(discriminator="kind")]


class SyntheticTruth(BaseModel):
    """What a synthetic file was generated from (present only when ``synthetic``)."""

    model_config = _STRICT
    model_means: dict[Name, float] = Field(
        description="Latent mean rating of each model (before rater, story and noise effects)."
    )
    careless: bool = Field(description="Whether this synthetic rater answers carelessly.")


class _Session(BaseModel):
    """The header both rating file formats open with: who rated which release, and when."""

    model_config = _STRICT
    # version, synthetic and note: each format pins and describes its own
    version: str = Field(description="Rating file format version.")
    format: Literal["vsb-ratings"] = Field(description="Marks a vsb rating file.")
    synthetic: bool
    note: str
    rater_id: str = Field(
        description=f"Who rated: {RATER_ID_RULE}.",
        json_schema_extra={"pattern": f"^{_RATER_ID.pattern}$"},
    )
    session_id: str = Field(pattern=r"^[0-9a-f]{8,64}$", description="Random id of the session.")
    release: Name = Field(description="Release the images came from.")
    root_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="That release's root hash.")
    started_at: str = Field(max_length=40, description="ISO 8601 time the session started.")
    finished_at: str = Field(max_length=40, description="ISO 8601 time of the export.")

    @field_validator("rater_id")
    @classmethod
    def _rater_id(cls, v: str) -> str:
        if not _RATER_ID.fullmatch(v):
            raise ValueError(f"rater_id must be {RATER_ID_RULE}")
        return v

    @field_validator("started_at", "finished_at")
    @classmethod
    def _time(cls, v: str) -> str:
        parse_time(v)
        return v

    @model_validator(mode="after")
    def _times_in_order(self) -> _Session:
        if parse_time(self.finished_at) < parse_time(self.started_at):
            raise ValueError(
                f"finished_at {self.finished_at} is before started_at {self.started_at}"
            )
        return self


class RatingFile(_Session):
    """One rater's exported session."""

    version: Literal["1.0"] = Field(description="Rating file format version.")
    synthetic: bool = Field(description="True for files written by vsb human simulate.")
    note: str = Field(default="", max_length=500, description="Free text (synthetic: a label).")
    letters: dict[Letter, Name] = Field(
        max_length=52, description="The session's blinding: letter -> model (export only)."
    )
    items: list[Item] = Field(max_length=5000, description="Answered items, session order.")
    truth: SyntheticTruth | None = Field(
        default=None, description="Synthetic files only: the generating parameters."
    )

    @model_validator(mode="after")
    def _consistent(self) -> RatingFile:
        if len(set(self.letters.values())) != len(self.letters):
            raise ValueError("'letters' gives two letters to one model")
        ids = [it.item_id for it in self.items]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"item_id {dup!r} appears more than once")
        orders = [it.order for it in self.items]
        if len(set(orders)) != len(orders):
            dup_order = next(o for o in orders if orders.count(o) > 1)
            raise ValueError(f"order {dup_order} is given to more than one item")
        for it in self.items:
            pairs = (
                [(it.letter, it.model)]
                if isinstance(it, LikertItem)
                else [(it.letter_a, it.model_a), (it.letter_b, it.model_b)]
            )
            for letter, model in pairs:
                if self.letters.get(letter) != model:
                    raise ValueError(
                        f"item {it.item_id}: letter {letter} is not {model!r} in 'letters'"
                    )
        likert = {it.item_id: it for it in self.items if isinstance(it, LikertItem)}
        for it in likert.values():
            if it.repeat_of is None:
                continue
            first = likert.get(it.repeat_of)
            if first is None or first.repeat_of is not None:
                raise ValueError(f"item {it.item_id}: repeat_of names no first likert item")
            if (first.story_id, first.condition, first.model) != (
                it.story_id, it.condition, it.model
            ):  # fmt: skip
                raise ValueError(f"item {it.item_id}: repeats a different story or model")
        if self.synthetic != (self.truth is not None):
            raise ValueError("'truth' is present exactly when 'synthetic' is true")
        return self


Target = Annotated[
    str, Field(pattern=r"^t[0-9a-f]{20}$", description="Opaque id of one model's strip.")
]


class _BlindItem(BaseModel):
    model_config = _STRICT
    item_id: ItemId
    time_s: Seconds
    order: int = Field(ge=0, le=10_000, description="Position in the session (0-based).")


class BlindLikertItem(_BlindItem):
    """One strip rated on the six dimensions."""

    kind: Literal["likert"] = Field(description="Item kind.")
    target: Target
    letter: Letter
    ratings: Ratings
    repeat_of: ItemId | None = Field(
        default=None, description="The item this one repeats (test-retest), or null."
    )


class BlindPairItem(_BlindItem):
    """Two strips of one story: which tells it better (a control or not: the page
    cannot tell; the import decides from the release)."""

    kind: Literal["pair"] = Field(description="Item kind.")
    target_a: Target = Field(description="Strip shown on the left.")
    target_b: Target = Field(description="Strip shown on the right.")
    letter_a: Letter
    letter_b: Letter
    choice: Literal["a", "b", "tie"] = Field(description="Which side tells the story better.")


BlindItem = Annotated[BlindLikertItem | BlindPairItem, Field(discriminator="kind")]


class BlindRatingFile(_Session):
    """One rater's session as the blinded ``/evaluate`` page exports it."""

    version: Literal["2.0"] = Field(description="Rating file format version.")
    synthetic: bool = Field(description="True for files not made by a person.")
    note: str = Field(default="", max_length=500, description="Free text.")
    items: list[BlindItem] = Field(max_length=5000, description="Answered items, session order.")
