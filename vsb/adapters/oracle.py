"""The sealed oracle writer: every injected fault of a simulator run.

``RUN/oracle/faults.jsonl`` holds one JSON object per fault, sorted by (model, condition,
story_id, scene, subject, attribute). Only ``vsb.validation`` reads it; evaluators cannot
import this module (they may not import ``vsb.adapters`` at all — a test scans them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vsb.fsio import atomic_write_text

ORACLE_FILE = "oracle/faults.jsonl"
_ORDER = ("model", "condition", "story_id", "scene", "subject", "attribute")


def fault_row(
    model: str, condition: str, story_id: str, fault: Mapping[str, Any]
) -> dict[str, Any]:
    """One oracle line: the image identifiers plus a simulator fault (``Fault.as_json``)."""
    return {"model": model, "condition": condition, "story_id": story_id, **fault}


def write_faults(run_dir: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``RUN/oracle/faults.jsonl`` atomically (sorted; an empty file when no faults)."""
    path = Path(run_dir) / ORACLE_FILE
    ordered = sorted(rows, key=lambda r: tuple(r[k] for k in _ORDER))
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in ordered)
    atomic_write_text(path, text)
    return path
