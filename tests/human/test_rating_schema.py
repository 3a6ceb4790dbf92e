"""rating.schema.json equals the one generated from the typed model and agrees with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from vsb.human.models import RatingFile
from vsb.human.schema import committed_rating_schema, generate_rating_schema, schema_text

SCHEMA_FILE = Path(__file__).parents[2] / "vsb" / "schema" / "rating.schema.json"


def test_committed_schema_equals_generated() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(generate_rating_schema()), (
        "regenerate with: python -c 'from vsb.human.schema import *; "
        'open("vsb/schema/rating.schema.json","w").write(schema_text(generate_rating_schema()))\''
    )


def test_schema_accepts_synthetic_files_and_refuses_what_the_model_refuses(
    simulated: list[RatingFile],
) -> None:
    schema = committed_rating_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    doc: dict[str, Any] = json.loads(simulated[0].model_dump_json())
    assert not list(validator.iter_errors(doc))
    bad = [
        {**doc, "rater_id": "<script>x</script>"},
        {**doc, "extra": 1},
        {
            **doc,
            "items": [
                {**doc["items"][0], "ratings": {**doc["items"][0]["ratings"], "visual_quality": 6}}
            ],
        },
    ]
    for b in bad:
        assert list(validator.iter_errors(b))
        with pytest.raises(ValueError):
            RatingFile.model_validate(b)
