"""What the blind extractor is told (class names only) and what it reports.

``EntityVocabulary`` holds only class names — which attribute values, object kinds and
colours could appear in a world's images — so the extractor cannot see an expected state.
``DetectedState`` is what it found in one image.
"""

from __future__ import annotations

from dataclasses import dataclass

from vsb.story import vocab
from vsb.story.models import World


@dataclass(frozen=True)
class EntityVocabulary:
    """Class names a detector may report (like an open-vocabulary detector's prompt)."""

    skin_tones: tuple[str, ...]
    hair_colors: tuple[str, ...]
    hair_styles: tuple[str, ...]
    clothing_colors: tuple[str, ...]
    accessories: tuple[str, ...]
    poses: tuple[str, ...]
    object_kinds: tuple[str, ...]
    object_colors: tuple[str, ...]
    locations: tuple[str, ...]
    times: tuple[str, ...]
    weathers: tuple[str, ...]

    @classmethod
    def from_world(cls, world: World) -> EntityVocabulary:
        """The vocabulary of one world: its object kinds; every value a character, an object
        colour or the environment could take (clothes change, drift can recolour)."""
        return cls.of_kinds(tuple(o.kind for o in world.objects))

    @classmethod
    def of_kinds(cls, object_kinds: tuple[str, ...]) -> EntityVocabulary:
        """Every value of the shared vocabulary, looking for these kinds of object."""
        return cls(
            skin_tones=tuple(vocab.SKIN_TONES),
            hair_colors=tuple(vocab.HAIR_COLORS),
            hair_styles=vocab.HAIR_STYLES,
            clothing_colors=tuple(vocab.CLOTHING_COLORS),
            accessories=vocab.ACCESSORIES,
            poses=vocab.POSES,
            object_kinds=object_kinds,
            object_colors=tuple(vocab.OBJECT_COLORS),
            locations=tuple(vocab.LOCATIONS),
            times=vocab.TIMES,
            weathers=vocab.WEATHERS,
        )


@dataclass(frozen=True)
class DetectedPerson:
    """One figure; an attribute is None when it could not be read."""

    x: float
    skin: str | None
    hair_color: str | None
    hair_style: str | None
    top: str | None
    trousers: str | None
    accessory: str | None
    pose: str | None


@dataclass(frozen=True)
class DetectedObject:
    """One object: kind and state from its shape signature, colour, count, where it is."""

    kind: str | None
    color: str
    state: str | None
    count: int | None
    holder: int | None  # index into DetectedState.people, or None when not held
    on_ground: bool
    x: float


@dataclass(frozen=True)
class DetectedState:
    """Everything read from one image; ``people`` are sorted left to right."""

    people: tuple[DetectedPerson, ...]
    objects: tuple[DetectedObject, ...]
    location: str | None
    time: str | None
    weather: str | None

    def objects_of(self, kind: str) -> list[DetectedObject]:
        """Detected objects of one kind."""
        return [o for o in self.objects if o.kind == kind]
