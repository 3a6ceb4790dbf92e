"""The fast JSON Schema check (jsonschema-rs) agrees with jsonschema on every document it is
shown: six stories of the default suite and 360 seeded mutations of them (a key removed, an
unknown key, a value of another type, an empty or overlong string, an event of an unknown
type). A story the fast path passes never skips a check jsonschema would fail."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vsb.story import io

_OTHER_TYPE: list[Any] = [None, 0, -1, 1.5, "", "x" * 300, [], {}, True]


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _mutants(doc: dict[str, Any], rng: np.random.Generator, n: int) -> Iterator[dict[str, Any]]:
    paths = [p for p in _paths(doc) if p]
    for _ in range(n):
        path = paths[int(rng.integers(len(paths)))]
        out = copy.deepcopy(doc)
        parent, last = _get(out, path[:-1]), path[-1]
        kind = int(rng.integers(4))
        if kind == 0 and isinstance(parent, dict):
            del parent[last]
        elif kind == 1 and isinstance(parent, dict):
            parent[f"unknown_{last}"] = parent[last]
        elif kind == 2 and isinstance(parent, dict) and parent.get("type") is not None:
            parent["type"] = "teleport"
        else:
            parent[last] = _OTHER_TYPE[int(rng.integers(len(_OTHER_TYPE)))]
        yield out


def _documents(suite_dir: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in io.story_files(suite_dir)[:n]]


def test_the_fast_path_and_jsonschema_agree(suite_dir: Path) -> None:
    fast, slow = io._fast_validator(), io._validator()
    rng = np.random.default_rng(25)
    docs = _documents(suite_dir, 6)
    seen = {True: 0, False: 0}
    for doc in docs:
        assert fast.is_valid(doc) and not list(slow.iter_errors(doc))
        for mutant in _mutants(doc, rng, 60):
            valid = slow.is_valid(mutant)  # stops at the first error: half the time
            assert fast.is_valid(mutant) == valid, mutant.get("id")
            seen[valid] += 1
    assert seen[False] > 200  # most mutants are invalid: the refusals are what is compared
    assert seen[True] > 5  # and some are not (a mutation the schema allows)


def test_schema_errors_reports_jsonschemas_errors_for_a_refused_document(
    suite_dir: Path,
) -> None:
    doc = _documents(suite_dir, 1)[0]
    assert io.schema_errors(doc) == []
    doc["scenes"][0]["index"] = "one"
    errors = io.schema_errors(doc)
    assert [list(e.absolute_path) for e in errors] == [["scenes", 0, "index"]]


@pytest.mark.parametrize("bad", [[], "story", 3, None])
def test_a_document_that_is_not_an_object_is_refused_by_both(bad: Any) -> None:
    assert not io._fast_validator().is_valid(bad)
    assert io.schema_errors(bad)
