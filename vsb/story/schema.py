"""The story JSON Schema (2020-12), generated from the typed models."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from vsb.story.models import Story

SCHEMA_ID = "https://vsb.invalid/schema/story.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def generate_story_schema() -> dict[str, Any]:
    """The schema as generated now from ``vsb.story.models.Story``."""
    schema = Story.model_json_schema(mode="validation")
    return {"$schema": DIALECT, "$id": SCHEMA_ID, **schema}


def schema_text(schema: dict[str, Any]) -> str:
    """Canonical file text of a schema (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def committed_story_schema() -> dict[str, Any]:
    """The schema file shipped in the package (``vsb/schema/story.schema.json``)."""
    text = resources.files("vsb").joinpath("schema/story.schema.json").read_text()
    result: dict[str, Any] = json.loads(text)
    return result
