"""Loading and validating story files: JSON syntax, the JSON Schema, then transitions.

Every problem becomes one ``StoryValidationError`` with the file, a JSON pointer and what
was expected; ``iter_problems`` yields them all, ``load_story`` raises the first.

A suite directory holds ``suite.json`` and one ``<id>.json`` per story. ``suite_problems``
checks the directory as a whole: the index's file names stay inside the directory (no
absolute path, no ``..``, no symlink leading out: ``vsb run`` copies those files by name),
every listed file exists and holds the listed id and the listed counts (scenes,
requirements), category and difficulty, every story file is listed, and no story id is used
by two files; the index's seed is an integer in [0, 2**63 − 1] and its counts are integers
(``true`` is not a number). ``load_suite`` raises the first problem before anything is written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError
from pydantic import ValidationError as PydanticError

from vsb.errors import InputError, StoryValidationError, TransitionError
from vsb.fsio import load_json, read_limited, sha256_file
from vsb.state import replay
from vsb.story.invariants import story_problems
from vsb.story.models import EVENT_TYPES, Story, SuiteEntry, SuiteIndex
from vsb.story.schema import committed_story_schema

ALLOWED_SCENE_COUNTS = (3, 5, 8)
IMPORTED_SCENES = (2, 16)
"""Fewest and most scenes of an imported story (``vsb suite import``; generated: 3, 5 or 8)."""
MAX_STORY_BYTES = 16 * 1024 * 1024
"""Largest story or suite index read (a generated story is about 40 kB)."""
INDEX_NAME = "suite.json"
MAX_ID_CHARS = 100
"""Longest story id (it becomes a file and a folder name; generated ids have about 30)."""


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = committed_story_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


@lru_cache(maxsize=1)
def _fast_validator() -> Any:
    """The same schema compiled by jsonschema-rs: it says whether a document is valid ~800x
    faster than ``jsonschema`` (1 ms for the default suite's 40 stories, not 1 s). Only a
    document it refuses goes through ``jsonschema``, whose errors (with their JSON pointers)
    are the ones reported; a document that ``jsonschema`` finds valid is valid."""
    import jsonschema_rs

    return jsonschema_rs.validator_for(committed_story_schema())


def schema_errors(doc: Any) -> list[ValidationError]:
    """The JSON Schema errors of a story document, in document order ([] if it is valid)."""
    if _fast_validator().is_valid(doc):
        return []
    return sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))


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
    yield from _check_story(Path(path), [])


def _read_json(path: Path) -> Any:
    """A story or index document (repeated keys refused). A FIFO, device or directory is
    refused before it is opened: reading one could block for ever or never end."""
    if path.exists() and not path.is_file():
        raise InputError("not a regular file", file=path)
    return load_json(path, max_bytes=MAX_STORY_BYTES, unique_keys=True)


def _check_story(path: Path, found: list[Story]) -> Iterator[StoryValidationError]:
    """``iter_problems``, appending the parsed story to ``found`` once it fits the models."""
    try:
        doc = _read_json(path)
    except FileNotFoundError as exc:
        yield StoryValidationError(f"cannot read file: {exc.strerror}", file=path)
        return
    except InputError as exc:
        yield StoryValidationError(exc.message, file=path, location=exc.location)
        return
    errors = schema_errors(doc)
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
    if len(story.id) > MAX_ID_CHARS:  # the id names files and folders of every run
        yield StoryValidationError(
            f"a story id has at most {MAX_ID_CHARS} characters, not {len(story.id)}",
            file=path,
            location="/id",
        )
        return
    found.append(story)
    yield from _structure_problems(story, path)


def _structure_problems(story: Story, path: Path) -> Iterator[StoryValidationError]:
    n = len(story.scenes)
    lo, hi = IMPORTED_SCENES
    if story.imported is not None and not lo <= n <= hi:
        yield StoryValidationError(
            f"an imported story has {lo} to {hi} scenes, not {n}", file=path, location="/scenes"
        )
    elif story.imported is None and n not in ALLOWED_SCENE_COUNTS:
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


# Stories already validated in this process, by the sha256 of the file's bytes alone: a
# release build loads its suite in several stages and again from each scratch copy (the
# reference judges' slices). Only a story that
# passed every check is kept, and a story depends on its bytes alone, never on its path.
# Stories are frozen models, so callers may share one.
_LOADED: dict[str, Story] = {}
_LOADED_MAX = 4096


def load_story(path: str | Path) -> Story:
    """Load and fully validate one story; raises the first ``StoryValidationError``."""
    path = Path(path)
    key = None
    if path.is_file():
        try:
            key = hashlib.sha256(read_limited(path, MAX_STORY_BYTES)).hexdigest()
        except (OSError, InputError):
            key = None  # _check_story reports it
    if key is not None and key in _LOADED:
        return _LOADED[key]
    found: list[Story] = []
    for problem in _check_story(path, found):
        raise problem
    if key is not None:
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.clear()
        _LOADED[key] = found[0]
    return found[0]


def story_files(root: str | Path) -> list[Path]:
    """The story files of a suite directory (every ``*.json`` but ``suite.json``), sorted."""
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise InputError("no such file or directory", file=root)
    return sorted(p for p in root.glob("*.json") if p.name != INDEX_NAME)


def load_suite(root: str | Path) -> list[Story]:
    """Every story of a suite directory (or one story file), validated, sorted by id;
    raises the first problem of ``suite_problems`` (index, listing, duplicate ids)."""
    files = story_files(root)
    if not files:
        raise InputError("no story files (*.json) found", file=root)
    if Path(root).is_dir():
        read_suite_index(root)  # an unsafe index fails before any story is read
    loaded = [(p, load_story(p)) for p in files]
    for problem in suite_problems(root, loaded):
        raise problem
    return sorted((s for _, s in loaded), key=lambda s: s.id)


def check_suite(
    root: str | Path,
) -> tuple[dict[Path, list[StoryValidationError]], list[InputError]]:
    """Everything ``vsb suite validate`` reports for one path: the problems of each story
    file, then those of the suite as a whole (``suite_problems``)."""
    per_file: dict[Path, list[StoryValidationError]] = {}
    loaded: list[tuple[Path, Story]] = []
    for path in story_files(root):
        found: list[Story] = []
        per_file[path] = list(_check_story(path, found))
        loaded += [(path, s) for s in found]
    return per_file, list(suite_problems(root, loaded))


def load_suite_index(root: str | Path) -> SuiteIndex:
    """The ``suite.json`` of a suite directory, every file name in it checked to stay in the
    directory and exist (``InputError`` naming suite.json and the entry's JSON pointer)."""
    index, problems = _index_problems(Path(root))
    for problem in problems:
        raise problem
    if index is None:
        raise InputError(
            f"suite index not found; make one with `vsb suite index {root}`",
            file=Path(root) / INDEX_NAME,
        )
    return index


def read_suite_index(root: str | Path) -> SuiteIndex | None:
    """``load_suite_index``, or None when the directory has no ``suite.json``."""
    if not (Path(root) / INDEX_NAME).exists():
        return None
    return load_suite_index(root)


def suite_problems(root: str | Path, stories: Sequence[tuple[Path, Story]]) -> Iterator[InputError]:
    """Problems of a suite as a whole, given its loaded ``(file, story)`` pairs: the index
    (when there is one) and story ids used by two files."""
    root = Path(root)
    seen: dict[str, Path] = {}
    duplicates: set[Path] = set()
    for path, story in stories:
        if story.id in seen:
            duplicates.add(path)
            yield InputError(
                f"duplicate story id {story.id!r}: also in {seen[story.id]}",
                file=path,
                location="/id",
            )
        else:
            seen[story.id] = path
    if not root.is_dir():
        return
    index, problems = _index_problems(root)
    yield from problems
    if index is None or problems:  # a broken index would make every file look unlisted
        return
    index_file = root / INDEX_NAME
    listed = {e.file for e in index.stories}
    by_name = {p.name: s for p, s in stories if p.parent == root}
    for i, entry in enumerate(index.stories):
        held = by_name.get(entry.file)
        if held is not None and held.id != entry.id:
            yield InputError(
                f"lists id {entry.id!r} but {entry.file} holds story {held.id!r}",
                file=index_file,
                location=f"/stories/{i}/id",
            )
        elif held is not None:
            yield from _entry_problems(entry, held, index_file, i)
            digest = sha256_file(root / entry.file)
            if digest != entry.sha256:
                yield InputError(
                    f"{entry.file} changed since the index was written (its SHA-256 is "
                    f"{digest[:12]}…, the index says {entry.sha256[:12]}…); "
                    f"re-index with `vsb suite index {root}`",
                    file=index_file,
                    location=f"/stories/{i}/sha256",
                )
    for p, _ in stories:
        if p.parent == root and p.name not in listed and p not in duplicates:
            yield InputError(f"story file not listed in {index_file}", file=p)


def _entry_problems(
    entry: SuiteEntry, story: Story, index_file: Path, i: int
) -> Iterator[InputError]:
    """Where an index entry's facts differ from the story file it lists."""
    facts = {
        "scenes": len(story.scenes),
        "requirements": sum(len(s.requirements) for s in story.scenes),
        "category": story.category,
        "difficulty": story.difficulty,
    }
    for name, actual in facts.items():
        listed = getattr(entry, name)
        if listed != actual:
            yield InputError(
                f"says {name} {listed!r} but {entry.file} has {actual!r}; "
                f"re-index with `vsb suite index {index_file.parent}`",
                file=index_file,
                location=f"/stories/{i}/{name}",
            )


def _index_problems(root: Path) -> tuple[SuiteIndex | None, list[InputError]]:
    """The parsed index (None if absent or unreadable) and every problem of its entries."""
    p = root / INDEX_NAME
    try:
        index = SuiteIndex.model_validate(_read_json(p))
    except FileNotFoundError:
        return None, []
    except InputError as exc:
        return None, [exc]
    except PydanticError as exc:
        first = exc.errors()[0]
        return None, [InputError(first["msg"], file=p, location=_pointer(first["loc"]))]
    problems: list[InputError] = []
    seen_at: dict[str, int] = {}
    for i, entry in enumerate(index.stories):
        why = _unsafe_name(root, entry.file)
        if why:
            problems.append(InputError(why, file=p, location=f"/stories/{i}/file"))
        j = seen_at.setdefault(entry.file, i)
        if j != i:
            problems.append(
                InputError(
                    f"{entry.file!r} is listed twice (also at /stories/{j}/file)",
                    file=p,
                    location=f"/stories/{i}/file",
                )
            )
    return index, problems


def _unsafe_name(root: Path, name: str) -> str | None:
    """Why ``name`` is not the name of a story file inside ``root``, or None."""
    shown = repr(name)
    if not name:
        return "empty file name"
    if any(ord(c) < 32 or c == "\x7f" for c in name):
        return f"{shown} contains a control character"
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).anchor:
        return f"{shown} is an absolute path; name a file inside the suite directory"
    parts = PureWindowsPath(name).parts  # splits on both / and \\
    if ".." in parts:
        return f"{shown} leads out of the suite directory ('..'); name a file inside it"
    if len(parts) != 1 or parts[0] != name:
        return f"{shown} is a path; name a file directly inside the suite directory"
    if name == INDEX_NAME or not name.endswith(".json"):
        return f"{shown} is not a story file name (<id>.json)"
    target = root / name
    try:
        resolved = target.resolve(strict=True)
    except FileNotFoundError:
        return f"{shown} does not exist in the suite directory"
    except (OSError, RuntimeError) as exc:  # a symlink loop
        return f"{shown} cannot be resolved: {exc}"
    if not resolved.is_relative_to(root.resolve()):
        return f"{shown} is a symlink that resolves outside the suite directory"
    if not resolved.is_file():
        return f"{shown} is not a regular file"
    return None
