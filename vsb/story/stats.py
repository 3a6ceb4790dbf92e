"""Suite statistics: counts of stories, scenes and requirements by facet."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from vsb.story.models import Story


def suite_stats(stories: Sequence[Story]) -> dict[str, Counter[str]]:
    """Counters keyed by facet: category, difficulty (stories), dimension, source, taxonomy,
    dimension×source (requirements), and totals."""
    out: dict[str, Counter[str]] = {
        k: Counter()
        for k in (
            "totals",
            "category",
            "difficulty",
            "category_difficulty",
            "dimension",
            "source",
            "dimension_source",
        )
    }
    for s in stories:
        out["totals"]["stories"] += 1
        out["totals"]["scenes"] += len(s.scenes)
        out["category"][s.category] += 1
        out["difficulty"][s.difficulty] += 1
        out["category_difficulty"][f"{s.category}/{s.difficulty}"] += 1
        for sc in s.scenes:
            for r in sc.requirements:
                out["totals"]["requirements"] += 1
                out["dimension"][r.dimension] += 1
                out["source"][r.source] += 1
                out["dimension_source"][f"{r.dimension}/{r.source}"] += 1
    return out
