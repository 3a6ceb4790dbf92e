"""``MANIFEST.json``: the SHA-256 of every file of a release, and verification against it.

The manifest lists every file under the release directory (relative POSIX paths, sorted),
except itself and the sealed oracle (any path with an ``oracle`` folder component, i.e.
``**/oracle/**``), which is listed by path under ``excluded`` but not hashed. The root hash
is the sha256 of the canonical JSON of the whole manifest except ``root_hash`` itself: the
file list (``{"path", "sha256", "size"}`` objects as written), the release name, the vsb
version and the exclusions — so editing any field of the manifest breaks it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vsb import __version__
from vsb.errors import ReleaseError
from vsb.fsio import atomic_write_json, canonical_json, sha256_file, sha256_hex

MANIFEST_NAME = "MANIFEST.json"
MANIFEST_FORMAT_VERSION = "1.0"
ORACLE_PATTERN = "**/oracle/**"


class FileEntry(BaseModel):
    """One hashed file of a release."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str = Field(description="Path relative to the release directory, POSIX separators.")
    sha256: str = Field(description="Hex SHA-256 of the file's bytes.")
    size: int = Field(ge=0, description="Size in bytes.")


class Manifest(BaseModel):
    """``MANIFEST.json``: what a frozen release holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: str = Field(default=MANIFEST_FORMAT_VERSION, description="Manifest format version.")
    release: str = Field(description="Release name, e.g. 'v0.1.0'.")
    vsb_version: str = Field(description="Version of the vsb package that froze it.")
    root_hash: str = Field(
        description="sha256 over the canonical JSON of every other field of the manifest."
    )
    files: list[FileEntry] = Field(description="Every hashed file, sorted by path.")
    excluded_pattern: str = Field(
        default=ORACLE_PATTERN, description="Glob of paths left out of the hash (the oracle)."
    )
    excluded: list[str] = Field(description="Paths present but not hashed (sealed oracle).")


def is_excluded(rel: str) -> bool:
    """Whether a relative POSIX path is part of the sealed oracle (``**/oracle/**``)."""
    return "oracle" in PurePosixPath(rel).parts[:-1]


def _walk(root: Path) -> tuple[list[str], list[str]]:
    """(hashed paths, excluded paths) under ``root``, sorted, manifest left out."""
    hashed: list[str] = []
    excluded: list[str] = []
    for p in root.rglob("*"):
        if p.is_dir():
            continue
        rel = p.relative_to(root).as_posix()
        if rel == MANIFEST_NAME:
            continue
        if p.is_symlink() or not p.is_file():
            raise ReleaseError("links and special files are not allowed in a release", file=p)
        (excluded if is_excluded(rel) else hashed).append(rel)
    return sorted(hashed), sorted(excluded)


def root_hash(manifest: Manifest) -> str:
    """The root hash: sha256 over the canonical JSON of the manifest without ``root_hash``."""
    return sha256_hex(canonical_json(manifest.model_dump(mode="json", exclude={"root_hash"})))


def _entries(root: Path, paths: list[str], known: Mapping[str, str]) -> list[FileEntry]:
    return [
        FileEntry(
            path=rel,
            sha256=known.get(rel) or sha256_file(root / rel),
            size=(root / rel).stat().st_size,
        )
        for rel in paths
    ]


def freeze(
    release_dir: str | Path, release: str, *, known: Mapping[str, str] | None = None
) -> Manifest:
    """Hash every file of ``release_dir`` and write ``MANIFEST.json``; returns the manifest.

    ``known`` maps relative paths to SHA-256s the caller has just computed from those very
    bytes (the main job's image copies), so they are not read twice. Deterministic: the same
    files give the same manifest bytes (no timestamps)."""
    root = Path(release_dir)
    if not root.is_dir():
        raise ReleaseError("release directory does not exist", file=root)
    hashed, excluded = _walk(root)
    files = _entries(root, hashed, known or {})
    draft = Manifest(
        release=release, vsb_version=__version__, root_hash="", files=files, excluded=excluded
    )
    manifest = draft.model_copy(update={"root_hash": root_hash(draft)})
    atomic_write_json(root / MANIFEST_NAME, manifest.model_dump(mode="json"))
    return manifest


def load_manifest(release_dir: str | Path) -> Manifest:
    """Read and validate ``MANIFEST.json`` (raises ReleaseError naming the problem)."""
    path = Path(release_dir) / MANIFEST_NAME
    if not path.is_file():
        raise ReleaseError("no MANIFEST.json; run `vsb release freeze` first", file=path)
    try:
        return Manifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ReleaseError(f"manifest is not valid JSON: {err}", file=path) from err
    except ValidationError as err:
        first = err.errors()[0]
        loc = "/" + "/".join(str(x) for x in first["loc"])
        raise ReleaseError(
            f"manifest is malformed: {first['msg']}", file=path, location=loc
        ) from err


def verify(release_dir: str | Path) -> list[str]:
    """Every problem found in a frozen release, one line each; empty when it is intact.

    Reports a manifest whose root hash does not match its file list, then every changed,
    missing and extra file (oracle files are never reported)."""
    root = Path(release_dir)
    manifest = load_manifest(root)
    problems: list[str] = []
    actual_root = root_hash(manifest)
    if actual_root != manifest.root_hash:
        problems.append(
            f"manifest root hash mismatch: {MANIFEST_NAME} says {manifest.root_hash}, "
            f"its contents hash to {actual_root}"
        )
    listed = [f.path for f in manifest.files]
    if listed != sorted(set(listed)):
        problems.append("manifest file list is not sorted and unique")
    hashed, _ = _walk(root)
    on_disk = set(hashed)
    expected = {f.path: f for f in manifest.files}
    for rel in sorted(expected):
        entry = expected[rel]
        if rel not in on_disk:
            problems.append(f"missing: {rel}")
            continue
        size = (root / rel).stat().st_size
        digest = sha256_file(root / rel)
        if digest != entry.sha256 or size != entry.size:
            problems.append(
                f"changed: {rel} (sha256 {digest[:12]}… size {size}, "
                f"manifest {entry.sha256[:12]}… size {entry.size})"
            )
    problems.extend(f"extra: {rel}" for rel in sorted(on_disk - set(expected)))
    return problems


def verify_or_raise(release_dir: str | Path) -> Manifest:
    """Verify and raise ReleaseError listing every problem; returns the manifest if intact."""
    problems = verify(release_dir)
    if problems:
        raise ReleaseError(
            f"release verification failed ({len(problems)} problem(s)): " + "; ".join(problems),
            file=Path(release_dir),
        )
    return load_manifest(release_dir)
