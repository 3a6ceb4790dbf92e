"""Reading rating files: every file checked before anything is computed or written.

A file must be a regular file no larger than ``MAX_RATING_BYTES`` (checked before reading
it whole), UTF-8 JSON nested at most ``MAX_RATING_DEPTH`` deep with no repeated key in any
object, and a valid ``RatingFile``. Every problem of every file is one line
(``FILE: LOCATION: MESSAGE``); ``RatingImportError`` carries them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from vsb.errors import InputError
from vsb.fsio import loads_json, read_limited, sha256_hex
from vsb.human.models import LikertItem, RatingFile

MAX_RATING_BYTES = 8 * 1024 * 1024
"""Largest rating file read (a long session is a few hundred kilobytes)."""
MAX_RATING_DEPTH = 16
"""Deepest nesting accepted (a rating file nests 4 deep)."""
MAX_PROBLEMS_PER_FILE = 20


class RatingImportError(InputError):
    """One or more rating files are bad; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)
        self.problems = problems


@dataclass(frozen=True)
class LoadedFile:
    """A validated rating file and where it came from."""

    path: Path
    sha256: str
    rating: RatingFile


def _pointer(loc: Sequence[int | str]) -> str:
    # discriminated unions put the tag in the location ('items', 3, 'likert', 'ratings'…)
    parts = [str(x) for x in loc if x not in ("likert", "pairwise", "control")]
    return "/" + "/".join(parts)


def _validation_lines(path: Path, err: ValidationError) -> list[str]:
    lines = []
    for e in err.errors(include_url=False)[:MAX_PROBLEMS_PER_FILE]:
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        lines.append(str(InputError(msg, file=path, location=_pointer(e["loc"]))))
    if err.error_count() > MAX_PROBLEMS_PER_FILE:
        lines.append(f"{path}: … {err.error_count() - MAX_PROBLEMS_PER_FILE} more problem(s)")
    return lines


def load_rating_file(path: str | Path) -> LoadedFile:
    """One rating file, validated; ``RatingImportError`` listing its problems."""
    p = Path(path)
    if not p.exists():
        raise RatingImportError([str(InputError("file not found", file=p))])
    if not p.is_file():
        raise RatingImportError([str(InputError("not a regular file", file=p))])
    try:
        size = p.stat().st_size
        if size > MAX_RATING_BYTES:
            raise InputError(
                f"file of {size:,} bytes exceeds the {MAX_RATING_BYTES:,}-byte limit", file=p
            )
        data = read_limited(p, MAX_RATING_BYTES)
        obj = loads_json(
            data, file=p, max_depth=MAX_RATING_DEPTH, max_bytes=MAX_RATING_BYTES, unique_keys=True
        )
    except InputError as err:
        raise RatingImportError([str(err)]) from None
    if not isinstance(obj, dict):
        raise RatingImportError([str(InputError("expected a JSON object", file=p))])
    try:
        rating = RatingFile.model_validate(obj)
    except ValidationError as err:
        raise RatingImportError(_validation_lines(p, err)) from None
    return LoadedFile(p, sha256_hex(data), rating)


def release_problems(
    files: Sequence[LoadedFile], models: set[str], stories: set[str], release: Path
) -> list[str]:
    """One line per file that rates a model or a story the release does not have."""
    problems = []
    for f in files:
        for i, it in enumerate(f.rating.items):
            names = [it.model] if isinstance(it, LikertItem) else [it.model_a, it.model_b]
            unknown = [m for m in names if m not in models]
            if unknown or it.story_id not in stories:
                what = f"model {unknown[0]!r}" if unknown else f"story {it.story_id!r}"
                problems.append(
                    str(InputError(f"{what} is not in the release {release}", file=f.path,
                                   location=f"/items/{i}"))
                )  # fmt: skip
                break
    return problems


def root_hash_problems(files: Sequence[LoadedFile], root_hash: str, release: Path) -> list[str]:
    """One line per file made from another release than ``release`` (root hash ``root_hash``),
    naming both hashes."""
    return [
        str(InputError(f"root_hash {f.rating.root_hash} is not the root hash {root_hash} of "
                       f"the release {release}: these ratings are of another release",
                       file=f.path, location="/root_hash"))
        for f in files
        if f.rating.root_hash != root_hash
    ]  # fmt: skip


def load_rating_files(paths: Sequence[str | Path]) -> list[LoadedFile]:
    """Every file validated; ``RatingImportError`` with the problems of all bad files.
    The same session (rater and session id) twice is a problem too."""
    if not paths:
        raise RatingImportError(["no rating files given"])
    problems: list[str] = []
    loaded: list[LoadedFile] = []
    seen: dict[tuple[str, str], Path] = {}
    for path in paths:
        try:
            f = load_rating_file(path)
        except RatingImportError as err:
            problems += err.problems
            continue
        key = (f.rating.rater_id, f.rating.session_id)
        if key in seen:
            problems.append(
                str(InputError(f"the same session as {seen[key]} (rater {key[0]})", file=f.path))
            )
            continue
        seen[key] = f.path
        loaded.append(f)
    if problems:
        raise RatingImportError(problems)
    return loaded
