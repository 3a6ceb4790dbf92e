"""The rating-file JSON Schemas (2020-12), generated from ``vsb.human.models.RatingFile``
(``rating.schema.json``, version 1.0) and ``BlindRatingFile`` (``blind_rating.schema.json``,
version 2.0: what the blinded evaluate page exports)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from vsb.human.models import BlindRatingFile, RatingFile
from vsb.story.schema import DIALECT, schema_text

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
    schema = RatingFile.model_json_schema(mode="validation")
    return {"$schema": DIALECT, "$id": SCHEMA_ID, **schema}


@lru_cache(maxsize=1)
def committed_rating_schema() -> dict[str, Any]:
    """The schema file shipped in the package (``vsb/schema/rating.schema.json``)."""
    text = resources.files("vsb").joinpath(SCHEMA_PATH).read_text()
    result: dict[str, Any] = json.loads(text)
    return result


def generate_blind_rating_schema() -> dict[str, Any]:
    """The blinded export's schema as generated now from the typed model."""
    schema = BlindRatingFile.model_json_schema(mode="validation")
    return {"$schema": DIALECT, "$id": BLIND_SCHEMA_ID, **schema}


@lru_cache(maxsize=1)
def committed_blind_rating_schema() -> dict[str, Any]:
    """The shipped ``vsb/schema/blind_rating.schema.json``."""
    text = resources.files("vsb").joinpath(BLIND_SCHEMA_PATH).read_text()
    result: dict[str, Any] = json.loads(text)
    return result
