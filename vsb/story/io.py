"""Loading and validating story files: JSON syntax, the JSON Schema, then transitions.

Every problem becomes one ``StoryValidationError`` with the file, a JSON pointer and what
was expected; ``validate_file`` collects them all, ``load_story`` raises the first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError
from pydantic import ValidationError as PydanticError

from vsb.errors import InputError, StoryValidationError, TransitionError
from vsb.state import replay
from vsb.story.invariants import story_problems
from vsb.story.models import EVENT_TYPES, Story, SuiteIndex
from vsb.story.schema import committed_story_schema

ALLOWED_SCENE_COUNTS = (3, 5, 8)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = committed_story_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "/"


def _describe(err: ValidationError) -> tuple[str, str]:
    """(pointer, message) for a schema error, digging into oneOf branches for events."""
    inst = err.instance
    if err.validator in ("oneOf", "anyOf") and isinstance(inst, dict) and "type" in inst:
        etype = inst.get("type")
        if etype not in EVENT_TYPES:
            return _pointer(err.absolute_path) + "/type", (
                f"unknown event type {etype!r}; expected one of {', '.join(EVENT_TYPES)}"
            )
        branch = [
            e
            for e in err.context or []
            if not (e.validator == "const" and list(e.relative_path) == ["type"])
        ]
        matching = [
            e
            for e in branch
            if not any(
                s.validator == "const" and list(s.relative_path) == ["type"]
                for s in err.context or []
                if s.relative_schema_path
                and e.relative_schema_path
                and s.relative_schema_path[0] == e.relative_schema_path[0]
            )
        ]
        if matching:
            return _describe(matching[0])
    if err.validator == "type":
        return _pointer(err.absolute_path), f"expected {err.validator_value}, got {_short(inst)}"
    if err.validator == "required":
        return _pointer(err.absolute_path), str(err.message).replace(
            "is a required property", "is required but missing"
        )
    if err.validator == "additionalProperties":
        return _pointer(err.absolute_path), f"unexpected property: {err.message}"
    return _pointer(err.absolute_path), f"{err.message}"


def _short(value: Any) -> str:
    text = json.dumps(value)
    kind = type(value).__name__.replace("str", "string").replace("dict", "object")
    kind = kind.replace("list", "array").replace("NoneType", "null")
    return f"{kind} {text[:40]}{'…' if len(text) > 40 else ''}"


def iter_problems(path: str | Path) -> Iterator[StoryValidationError]:
    """Every problem of one story file: syntax, schema, scene structure, transitions."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        yield StoryValidationError(f"cannot read file: {exc.strerror}", file=path)
        return
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        yield StoryValidationError(
            f"invalid JSON: {exc.msg}", file=path, location=f"line {exc.lineno} column {exc.colno}"
        )
        return
    except UnicodeDecodeError:
        yield StoryValidationError("invalid JSON: not UTF-8 text", file=path)
        return
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        for err in errors:
            loc, msg = _describe(err)
            yield StoryValidationError(msg, file=path, location=loc)
        return
    try:
        story = Story.model_validate(doc)
    except PydanticError as exc:  # schema and models agree, so this is a safety net
        first = exc.errors()[0]
        yield StoryValidationError(first["msg"], file=path, location=_pointer(first["loc"]))
        return
    yield from _structure_problems(story, path)


def _structure_problems(story: Story, path: Path) -> Iterator[StoryValidationError]:
    n = len(story.scenes)
    if n not in ALLOWED_SCENE_COUNTS:
        yield StoryValidationError(
            f"a story has 3, 5 or 8 scenes, not {n}", file=path, location="/scenes"
        )
    for i, scene in enumerate(story.scenes):
        if scene.index != i + 1:
            yield StoryValidationError(
                f"expected scene index {i + 1}, got {scene.index}",
                file=path,
                location=f"/scenes/{i}/index",
            )
    try:
        states = replay(story.world, [s.events for s in story.scenes], story.id)
    except TransitionError as exc:
        loc = f"/scenes/{exc.scene - 1}/events/{exc.event}" if exc.scene else "/world"
        yield StoryValidationError(f"{exc.message} [{exc.location}]", file=path, location=loc)
        return
    for i, (scene, state) in enumerate(zip(story.scenes, states, strict=True)):
        if scene.state != state:
            yield StoryValidationError(
                "expected state differs from the state obtained by replaying the events",
                file=path,
                location=f"/scenes/{i}/state",
            )
        ids = [r.id for r in scene.requirements]
        if len(set(ids)) != len(ids):
            yield StoryValidationError(
                "requirement ids are not unique", file=path, location=f"/scenes/{i}/requirements"
            )
    yield from story_problems(story, states, path)


def load_story(path: str | Path) -> Story:
    """Load and fully validate one story; raises the first ``StoryValidationError``."""
    for problem in iter_problems(path):
        raise problem
    return Story.model_validate_json(Path(path).read_bytes())


def story_files(root: str | Path) -> list[Path]:
    """The story files of a suite directory (every ``*.json`` but ``suite.json``), sorted."""
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise InputError("no such file or directory", file=root)
    return sorted(p for p in root.glob("*.json") if p.name != "suite.json")


def load_suite(root: str | Path) -> list[Story]:
    """Every story of a suite directory, validated, sorted by id."""
    files = story_files(root)
    if not files:
        raise InputError("no story files (*.json) found", file=root)
    return sorted((load_story(p) for p in files), key=lambda s: s.id)


def load_suite_index(root: str | Path) -> SuiteIndex:
    """The ``suite.json`` of a suite directory."""
    p = Path(root) / "suite.json"
    try:
        return SuiteIndex.model_validate_json(p.read_bytes())
    except FileNotFoundError:
        raise InputError("suite index not found", file=p) from None
    except PydanticError as exc:
        first = exc.errors()[0]
        raise InputError(first["msg"], file=p, location=_pointer(first["loc"])) from None
