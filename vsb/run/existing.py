"""What a run directory already holds, and what a new ``vsb run`` into it keeps.

A run into a directory that holds records of models it does not run adds to that run: the
other models' records, oracle faults and manifest entries stay as they are, and its own
models' records replace theirs (a rerun). That is one run only when both were made the same
way: the same suite (``suite_sha256``), seed, prompt style and conditions. Anything else, or
a directory whose earlier run did not finish (records without a manifest, which says how
they were made), is refused in one line before anything is written; naming every model the
directory holds reruns them all instead (nothing is kept, so nothing needs to match).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.adapters.oracle import ORACLE_FILE
from vsb.errors import InputError

#: The manifest fields that make two runs one (a run keeps another's records only when equal).
SAME = ("suite_sha256", "seed", "prompt_style", "conditions")


@dataclass(frozen=True)
class Earlier:
    """The records, faults and manifest of the run already in a directory."""

    records: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] | None = None

    def listed(self) -> list[str]:
        """Every model the directory holds: the manifest's, then those of its records."""
        known = list((self.manifest or {}).get("models", []))
        for r in self.records:
            if r["model"] not in known:
                known.append(r["model"])
        return known

    def same(self, now: Mapping[str, Any]) -> str | None:
        """None when the earlier run was made as ``now`` says (this run's values of
        ``SAME``), else the first field that differs."""
        old = self.manifest
        if old is None:
            return "manifest"
        for name in SAME:
            theirs, mine = old.get(name), now[name]
            if name == "conditions":
                if not (isinstance(theirs, list) and set(theirs) == set(mine)):
                    return name
            elif theirs != mine:
                return name
        return None

    def kept_rows(
        self, rows: Iterable[dict[str, Any]], keep: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The earlier ``rows`` (records or faults) of the models in ``keep``."""
        return [r for r in rows if r["model"] in keep]

    def merged_manifest(self, manifest: dict[str, Any], keep: Sequence[str]) -> dict[str, Any]:
        """``manifest`` (this run's) with the models ``keep`` kept from the earlier one."""
        if not keep:
            return manifest
        old = self.manifest or {}
        out = dict(manifest)
        out["models"] = [*keep, *manifest["models"]]
        nots = {m: c for m, c in old.get("not_supported", {}).items() if m in keep}
        out["not_supported"] = {**nots, **manifest["not_supported"]}
        oracle = [m for m in old.get("oracle_models", []) if m in keep]
        out["oracle_models"] = [*oracle, *manifest["oracle_models"]]
        return out


def _jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("model"), str):
            raise InputError(
                "not a record of a run; the directory is not one vsb run can add to",
                file=path, location=f"line {n}",
            )  # fmt: skip
        rows.append(row)
    return rows


def read_earlier(run_dir: Path) -> Earlier:
    """What ``run_dir`` holds from an earlier run (nothing for a new directory)."""
    manifest: dict[str, Any] | None = None
    path = run_dir / "manifest.json"
    if path.is_file():
        try:
            loaded = json.loads(path.read_text("utf-8"))
        except ValueError as err:
            raise InputError(f"unreadable run manifest: {err}", file=path) from None
        if not isinstance(loaded, dict):
            raise InputError("unreadable run manifest: not an object", file=path)
        manifest = loaded
    return Earlier(_jsonl(run_dir / "records.jsonl"), _jsonl(run_dir / ORACLE_FILE), manifest)


def check_addable(
    run_dir: Path, earlier: Earlier, models: Sequence[str], now: Mapping[str, Any]
) -> None:
    """Refuse (one line, nothing written) a run that would keep records of the earlier one
    that were made another way (``now``: this run's values of ``SAME``)."""
    others = [m for m in earlier.listed() if m not in models]
    if not others or (why := earlier.same(now)) is None:
        return  # every model the directory holds is run again, or made the same way
    names = ", ".join(others)
    if why == "manifest":
        every = ",".join([*others, *models])
        raise InputError(
            f"holds records of {names} from a run that did not finish (no manifest.json "
            f"says how they were made); run --model {every} to finish it, or choose another "
            "--out",
            file=run_dir,
        )
    theirs = (earlier.manifest or {}).get(why)
    raise InputError(
        f"holds a run of {names} made with another {why.replace('_', ' ')} "
        f"({_show(theirs)}, not {_show(now[why])}); a run adds models to it only with "
        "the same suite, seed, prompt style and conditions: choose another --out",
        file=run_dir,
    )


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, str) and len(value) == 64:
        return value[:12] + "…"
    return str(value)
