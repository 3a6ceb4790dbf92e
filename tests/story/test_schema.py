"""The committed JSON Schema equals the generated one, and every story validates against it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from vsb.story.models import Story
from vsb.story.schema import committed_story_schema, generate_story_schema, schema_text

SCHEMA_FILE = Path(__file__).parents[2] / "vsb" / "schema" / "story.schema.json"


def test_committed_schema_equals_generated() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(generate_story_schema()), (
        "regenerate with: python -c 'from vsb.story.schema import *; "
        'open("vsb/schema/story.schema.json","w").write(schema_text(generate_story_schema()))\''
    )


def test_schema_is_2020_12_and_accepts_every_default_story(default_suite: list[Story]) -> None:
    schema = committed_story_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for story in default_suite:
        doc = json.loads(story.model_dump_json())
        errors = list(validator.iter_errors(doc))
        assert not errors, (story.id, errors[0].message)
