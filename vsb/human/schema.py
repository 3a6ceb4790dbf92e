"""The rating-file JSON Schema (2020-12), generated from ``vsb.human.models.RatingFile``."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from vsb.human.models import RatingFile
from vsb.story.schema import DIALECT, schema_text

SCHEMA_ID = "https://vsb.invalid/schema/rating.schema.json"
SCHEMA_PATH = "schema/rating.schema.json"

__all__ = ["committed_rating_schema", "generate_rating_schema", "schema_text"]


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
