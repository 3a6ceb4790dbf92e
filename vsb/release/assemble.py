"""The release's copy of a run (the main job's assemble stage): its records without volatile
bookkeeping, its suite, manifest and oracle, and its images hard-linked where the filesystem
allows, each checked against the sha256 the run recorded."""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection
from pathlib import Path

from vsb.fsio import atomic_write_text, iter_jsonl, link_or_copy, sha256_file
from vsb.release.manifest import MANIFEST_NAME

#: What a release copies from its run besides records and images.
RUN_COPY = ("manifest.json", "suite", "oracle")
#: Record fields that change from run to run with the same images (left out of the release).
VOLATILE_RECORD_FIELDS = ("cache_hit", "latency_s")


def _sync_tree(src: Path, dest: Path) -> None:
    """Make ``dest`` a copy of ``src`` (files whose size and bytes match are left alone)."""
    want = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    _prune(dest, dest, want)
    for rel in sorted(want):
        s, d = src / rel, dest / rel
        if d.is_file() and d.stat().st_size == s.stat().st_size and _same(s, d):
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(s, d)


def _prune(tree: Path, base: Path, keep: Collection[str]) -> None:
    """Remove the files under ``tree`` whose path relative to ``base`` is not in ``keep``,
    then the folders left empty (deepest first)."""
    if not tree.exists():
        return
    for p in sorted(tree.rglob("*"), reverse=True):
        if p.is_file() and p.relative_to(base).as_posix() not in keep:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


def _same(a: Path, b: Path) -> bool:
    return a.read_bytes() == b.read_bytes()


def assemble(run_dir: Path, release_dir: Path) -> dict[str, str]:
    """Copy a run into the release directory, without volatile bookkeeping; returns the
    SHA-256 of every image as it now lies in the release (read from those bytes). Any
    MANIFEST.json there is removed (it is stale until the next freeze)."""
    release_dir.mkdir(parents=True, exist_ok=True)
    (release_dir / MANIFEST_NAME).unlink(missing_ok=True)
    records = []
    for _, rec in iter_jsonl(run_dir / "records.jsonl"):
        for k in VOLATILE_RECORD_FIELDS:
            rec.pop(k, None)
        records.append(rec)
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    if (
        not (release_dir / "records.jsonl").is_file()
        or (release_dir / "records.jsonl").read_text(encoding="utf-8") != text
    ):
        atomic_write_text(release_dir / "records.jsonl", text)
    for name in RUN_COPY:
        src = run_dir / name
        if src.is_dir():
            _sync_tree(src, release_dir / name)
        elif src.is_file():
            shutil.copyfile(src, release_dir / name)
    # images: copy by the sha256 the run recorded; skip those already in place
    wanted = {r["path"]: r["sha256"] for r in records if r.get("path")}
    _prune(release_dir / "images", release_dir, wanted.keys())
    hashes: dict[str, str] = {}
    for rel, sha in sorted(wanted.items()):
        d = release_dir / rel
        if d.is_file() and (have := sha256_file(d)) == sha:
            hashes[rel] = have
            continue
        try:
            link_or_copy(run_dir / rel, d)
        except FileNotFoundError:  # its folder is new (a link first: no check per image)
            d.parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(run_dir / rel, d)
        hashes[rel] = sha256_file(d)
    return hashes
