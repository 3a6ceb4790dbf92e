"""The story JSON Schema (2020-12), generated from the typed models."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel

from vsb.story.models import Story

SCHEMA_ID = "https://vsb.invalid/schema/story.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def generate_story_schema() -> dict[str, Any]:
    """The schema as generated now from ``vsb.story.models.Story``."""
    return model_schema(Story, SCHEMA_ID)


def model_schema(model: type[BaseModel], schema_id: str) -> dict[str, Any]:
    """The JSON Schema of a typed model as generated now, with its dialect and ``$id``."""
    return {"$schema": DIALECT, "$id": schema_id, **model.model_json_schema(mode="validation")}


def schema_text(schema: dict[str, Any]) -> str:
    """Canonical file text of a schema (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def committed_story_schema() -> dict[str, Any]:
    """The schema file shipped in the package (``vsb/schema/story.schema.json``)."""
    return shipped_schema("schema/story.schema.json")


@lru_cache(maxsize=8)
def shipped_schema(path: str) -> dict[str, Any]:
    """A schema file shipped in the package, by its path under ``vsb/`` (read once)."""
    result: dict[str, Any] = json.loads(resources.files("vsb").joinpath(path).read_text())
    return result
