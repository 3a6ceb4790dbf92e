"""The round trip: generated stories as plain text, imported again, compared requirement by
requirement with the originals (``scripts/import_roundtrip.py``, docs/IMPORT.md).

``story_text`` writes a story as the plain-text format reads it (one paragraph per scene);
``agreement`` counts, per requirement type (its attribute) and per dimension, the original
requirements the imported story reproduces exactly (same id, expected value, dimension,
taxonomy, source and causal link), and the imported requirements no original has.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from vsb.story.models import Requirement, Story

_COMPARED = ("expected", "dimension", "taxonomy", "source", "causal_link", "judged_by")


def story_text(story: Story) -> str:
    """The story's scene texts, one paragraph each (what a person would paste in a file)."""
    return "\n\n".join(s.text for s in story.scenes) + "\n"


def same(a: Requirement, b: Requirement) -> bool:
    """Whether two requirements say the same thing about the same scene."""
    return a.id == b.id and all(getattr(a, f) == getattr(b, f) for f in _COMPARED)


@dataclass
class Agreement:
    """Original requirements reproduced, by type (attribute) and by dimension."""

    total: Counter[str] = field(default_factory=Counter)
    agreed: Counter[str] = field(default_factory=Counter)
    by_dimension: Counter[str] = field(default_factory=Counter)
    agreed_by_dimension: Counter[str] = field(default_factory=Counter)
    #: requirements of the imported stories that no original has
    extra: int = 0
    #: original stories with no imported counterpart (rejected)
    missing_stories: list[str] = field(default_factory=list)

    def rate(self, kind: str) -> float:
        """Share of the originals of one type reproduced."""
        return self.agreed[kind] / self.total[kind] if self.total[kind] else 1.0

    def dimension_rate(self, dim: str) -> float:
        """Share of the originals of one dimension reproduced."""
        n = self.by_dimension[dim]
        return self.agreed_by_dimension[dim] / n if n else 1.0

    def overall(self) -> float:
        """Share of all original requirements reproduced."""
        n = sum(self.total.values())
        return sum(self.agreed.values()) / n if n else 1.0


def agreement(originals: Sequence[Story], imported: Sequence[Story]) -> Agreement:
    """How many original requirements each imported story reproduces."""
    out = Agreement()
    by_id = {s.id: s for s in imported}
    for story in originals:
        got = by_id.get(story.id)
        if got is None:
            out.missing_stories.append(story.id)
        for k, scene in enumerate(story.scenes):
            theirs = got.scenes[k].requirements if got is not None and k < len(got.scenes) else []
            mine = {r.id: r for r in theirs}
            for r in scene.requirements:
                ok = r.id in mine and same(r, mine[r.id])
                out.total[r.attribute] += 1
                out.agreed[r.attribute] += ok
                out.by_dimension[r.dimension] += 1
                out.agreed_by_dimension[r.dimension] += ok
            out.extra += len(set(mine) - {r.id for r in scene.requirements})
    return out
