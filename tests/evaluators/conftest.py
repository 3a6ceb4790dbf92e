"""Fixtures for the evaluator tests (hand-built worlds live in eval_helpers.py)."""

from __future__ import annotations

import pytest

from vsb.evaluators.render.detected import EntityVocabulary
from vsb.story.models import Story


@pytest.fixture(scope="session")
def vocabularies(default_suite: list[Story]) -> dict[str, EntityVocabulary]:
    """Each default-suite story's entity vocabulary, by story id."""
    return {s.id: EntityVocabulary.from_world(s.world) for s in default_suite}
