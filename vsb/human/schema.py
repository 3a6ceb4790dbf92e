"""The rating-file JSON Schemas (2020-12), generated from ``vsb.human.models.RatingFile``
(``rating.schema.json``, version 1.0) and ``BlindRatingFile`` (``blind_rating.schema.json``,
version 2.0: what the blinded evaluate page exports)."""

from __future__ import annotations

from typing import Any

from vsb.human.models import BlindRatingFile, RatingFile
from vsb.story.schema import model_schema, schema_text, shipped_schema

SCHEMA_ID = "https://vsb.invalid/schema/rating.schema.json"
SCHEMA_PATH = "schema/rating.schema.json"

BLIND_SCHEMA_ID = "https://vsb.invalid/schema/blind_rating.schema.json"
BLIND_SCHEMA_PATH = "schema/blind_rating.schema.json"

__all__ = [
    "committed_blind_rating_schema",
    "committed_rating_schema",
    "generate_blind_rating_schema",
    "generate_rating_schema",
    "schema_text",
]


def generate_rating_schema() -> dict[str, Any]:
    """The schema as generated now from the typed model."""
    return model_schema(RatingFile, SCHEMA_ID)


def committed_rating_schema() -> dict[str, Any]:
    """The schema file shipped in the package (``vsb/schema/rating.schema.json``)."""
    return shipped_schema(SCHEMA_PATH)


def generate_blind_rating_schema() -> dict[str, Any]:
    """The blinded export's schema as generated now from the typed model."""
    return model_schema(BlindRatingFile, BLIND_SCHEMA_ID)


def committed_blind_rating_schema() -> dict[str, Any]:
    """The shipped ``vsb/schema/blind_rating.schema.json``."""
    return shipped_schema(BLIND_SCHEMA_PATH)
