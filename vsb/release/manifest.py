"""``MANIFEST.json``: the SHA-256 of every file of a release, and verification against it.

The manifest lists every file under the release directory (relative POSIX paths, sorted)
except the run's sealed oracle — the top-level ``oracle/`` folder of the release, and only
that one (``scores/oracle/x.json`` is hashed like any other file) — which is listed by path
under ``excluded`` but not hashed. Three top-level files are not hashed either, because they
are made from the manifest or after it: ``MANIFEST.json`` itself, ``README.md`` (release
name, root hash, how to verify; written by :func:`freeze`) and ``MANIFEST.json.sig`` (a
detached Ed25519 signature, :mod:`vsb.release.signing`). The root hash is the sha256 of the
canonical JSON of the whole manifest except ``root_hash`` itself: the file list
(``{"path", "sha256", "size"}`` objects as written), the release name, the vsb version and
the exclusions and the oracle commitment — so editing any field of the manifest breaks it.

The oracle commitment (``oracle_sha256``, format 1.2) is the SHA-256 of the canonical JSON
of ``[[path, sha256], ...]`` over every file of ``oracle/`` (paths relative to that folder,
sorted): the oracle's contents stay out of the file list, but the root hash commits to them,
so an oracle published later can be checked against the release
(:func:`verify_oracle`, ``vsb release verify RELEASE --oracle DIR``). A manifest without a
commitment (format 1.1) hashes exactly as before.

What :func:`verify` proves is internal consistency only: whoever changes a file can
recompute the manifest and its root hash. ``expect_root`` adds "this is the release whose
root hash the reader was given"; a signature (:mod:`vsb.release.signing`) adds "the holder
of this key signed it".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field, ValidationError

from vsb import __version__
from vsb.errors import InputError, ReleaseError
from vsb.fsio import (
    STRICT,
    atomic_write_json,
    atomic_write_text,
    canonical_json,
    load_json,
    sha256_file,
    sha256_hex,
)

MANIFEST_NAME = "MANIFEST.json"


def refuse_frozen(directory: str | Path, writes: str, hint: str = "") -> None:
    """``InputError`` when ``directory`` is a frozen release (it holds ``MANIFEST.json``):
    writing ``writes`` into it would make ``vsb release verify`` fail."""
    if (Path(directory) / MANIFEST_NAME).is_file():
        more = f"; {hint}" if hint else ""
        raise InputError(
            f"a frozen release ({MANIFEST_NAME}): writing {writes} into it would make "
            f"`vsb release verify` fail{more}",
            file=directory,
        )


README_NAME = "README.md"
SIGNATURE_NAME = "MANIFEST.json.sig"
UNHASHED = (MANIFEST_NAME, README_NAME, SIGNATURE_NAME)
"""Top-level files that are never hashed (made from the manifest or after it)."""
MANIFEST_FORMAT_VERSION = "1.2"
ORACLE_DIR = "oracle"
ORACLE_PATTERN = "oracle/**"
README_MARKER = "<!-- written by vsb release freeze from MANIFEST.json; not hashed -->"
_HEX64 = re.compile(r"[0-9a-f]{64}")
COVERAGE = (
    "The root hash covers every file of the release except the sealed oracle/ folder; the "
    "oracle commitment (oracle_sha256 in MANIFEST.json, itself covered by the root hash) is a "
    "SHA-256 over the oracle's file paths and contents, so vsb release verify RELEASE --oracle "
    "DIR shows whether an oracle published later is the one sealed with this release."
)
"""The one sentence on what the hashes cover: the same in the project README, every release
README and the site's methodology page (a test holds them equal)."""


class FileEntry(BaseModel):
    """One hashed file of a release."""

    model_config = STRICT
    path: str = Field(description="Path relative to the release directory, POSIX separators.")
    sha256: str = Field(description="Hex SHA-256 of the file's bytes.")
    size: int = Field(ge=0, description="Size in bytes.")


class Manifest(BaseModel):
    """``MANIFEST.json``: what a frozen release holds."""

    model_config = STRICT
    version: str = Field(default=MANIFEST_FORMAT_VERSION, description="Manifest format version.")
    release: str = Field(description="Release name, e.g. 'v0.1.0'.")
    vsb_version: str = Field(description="Version of the vsb package that froze it.")
    root_hash: str = Field(
        description="sha256 over the canonical JSON of every other field of the manifest."
    )
    files: list[FileEntry] = Field(description="Every hashed file, sorted by path.")
    excluded_pattern: str = Field(
        default=ORACLE_PATTERN,
        description="Paths left out of the hash: the top-level sealed oracle folder only.",
    )
    excluded: list[str] = Field(description="Paths present but not hashed (sealed oracle).")
    oracle_sha256: str | None = Field(
        default=None,
        description="Commitment to the sealed oracle: sha256 over the canonical JSON of "
        "[[path relative to oracle/, sha256], ...] sorted by path; None when the release has "
        "no oracle (and in format 1.1).",
    )


def is_excluded(rel: str) -> bool:
    """Whether a relative POSIX path lies in the release's sealed oracle (top-level
    ``oracle/``); an ``oracle`` folder anywhere else is ordinary, hashed content."""
    parts = PurePosixPath(rel).parts
    return len(parts) > 1 and parts[0] == ORACLE_DIR


def _walk(root: Path) -> tuple[list[str], list[str]]:
    """(hashed paths, excluded paths) under ``root``, sorted, unhashed top-level files left out."""
    hashed: list[str] = []
    excluded: list[str] = []
    for p in root.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            continue
        rel = p.relative_to(root).as_posix()
        if rel in UNHASHED:
            continue
        if p.is_symlink() or not p.is_file():
            raise ReleaseError("links and special files are not allowed in a release", file=p)
        (excluded if is_excluded(rel) else hashed).append(rel)
    return sorted(hashed), sorted(excluded)


def root_hash(manifest: Manifest) -> str:
    """The root hash: sha256 over the canonical JSON of the manifest without ``root_hash``
    (and without ``oracle_sha256`` when there is none, so format 1.1 hashes as it did)."""
    leave_out = {"root_hash"} | ({"oracle_sha256"} if manifest.oracle_sha256 is None else set())
    return sha256_hex(canonical_json(manifest.model_dump(mode="json", exclude=leave_out)))


def oracle_commitment(oracle_dir: str | Path) -> str | None:
    """The commitment to an oracle folder: sha256 over the canonical JSON of
    ``[[relative path, sha256 of its bytes], ...]`` sorted by path; None when the folder is
    absent or holds no file. Links and special files are refused."""
    root = Path(oracle_dir)
    if not root.is_dir():
        return None
    pairs: list[list[str]] = []
    for p in sorted(root.rglob("*")):
        if p.is_dir() and not p.is_symlink():
            continue
        if p.is_symlink() or not p.is_file():
            raise ReleaseError("links and special files are not allowed in an oracle", file=p)
        pairs.append([p.relative_to(root).as_posix(), sha256_file(p)])
    pairs.sort()
    return sha256_hex(canonical_json(pairs)) if pairs else None


def verify_oracle(release_dir: str | Path, oracle_dir: str | Path) -> list[str]:
    """Problems found checking ``oracle_dir`` against the release's oracle commitment (one
    line each; empty when it is the oracle sealed with the release). The manifest must hold
    together first: a commitment is only as good as the root hash covering it."""
    manifest = load_manifest(release_dir)
    if root_hash(manifest) != manifest.root_hash:
        return ["the manifest does not hash to its root hash; its oracle commitment is void"]
    if manifest.oracle_sha256 is None:
        return [
            f"{MANIFEST_NAME} holds no oracle commitment (made before format 1.2, or no oracle)"
        ]
    if not Path(oracle_dir).is_dir():
        return [f"oracle folder not found: {oracle_dir}"]
    actual = oracle_commitment(oracle_dir)
    if actual != manifest.oracle_sha256:
        return [
            f"not the sealed oracle: {oracle_dir} hashes to {actual or 'nothing (no files)'}, "
            f"the release committed to {manifest.oracle_sha256}"
        ]
    return []


def parse_root_hash(text: str) -> str:
    """A root hash as a reader types it (64 hex digits, any case) -> lower-case hex."""
    value = text.strip().lower()
    if not _HEX64.fullmatch(value):
        raise InputError(f"a root hash is 64 hex digits (a SHA-256); got {text!r}")
    return value


def readme_text(manifest: Manifest) -> str:
    """The release's ``README.md``: name, root hash, how to verify and what that proves."""
    name, root = manifest.release, manifest.root_hash
    return f"""# VSB release {name}

{README_MARKER}

Release: **{name}**

Root hash (SHA-256): `{root}`

This directory is a frozen release of the Visual Story Benchmark, made by vsb \
{manifest.vsb_version}. `MANIFEST.json` lists the SHA-256 and size of each of its \
{len(manifest.files)} hashed files; the root hash is the SHA-256 of the canonical JSON \
(sorted keys, no whitespace) of the manifest without its `root_hash` field. The sealed \
oracle (the top-level `oracle/` folder, {len(manifest.excluded)} file(s)) is present but \
not hashed; this README and `MANIFEST.json.sig` are not hashed either.

{COVERAGE}

Oracle commitment (SHA-256): `{manifest.oracle_sha256 or "none (this release has no oracle)"}`

## How to verify

Compare the root hash with one you got from a source you trust (the announcement, the \
site's footer, the signer) — not with this file, which whoever edits the release can edit:

    vsb release verify RELEASE_DIR --expect-root {root}

If the release is signed (`MANIFEST.json.sig` next to `MANIFEST.json`), check the signature \
with the publisher's public key:

    vsb release verify RELEASE_DIR --expect-root {root} --key PUBLIC.pem

The signature is a raw 64-byte Ed25519 signature of the bytes of `MANIFEST.json`; without \
vsb: `openssl pkeyutl -verify -pubin -inkey PUBLIC.pem -rawin -in MANIFEST.json \
-sigfile MANIFEST.json.sig`.

## What verification proves

- `vsb release verify RELEASE_DIR`: every file outside `oracle/` is listed in \
`MANIFEST.json` with its size and SHA-256, none is missing or extra, and the manifest \
hashes to its own root hash. That is internal consistency only: whoever changes a file and \
recomputes the manifest passes it.
- `--expect-root HASH`: also that this is the release whose root hash you were given.
- `--key PUBLIC.pem`: also that the holder of the private key matching `PUBLIC.pem` signed \
this manifest (as trustworthy as the way you got `PUBLIC.pem`).
- `--oracle DIR`: also that the oracle folder `DIR` (published later, or this release's own \
`oracle/`) is the one this release committed to.
- None of the others covers the sealed oracle's contents, and none proves that the numbers \
are right — only that they are the ones that were published.
"""


def _check_readme_is_ours(root: Path) -> None:
    """Refuse to overwrite a README.md that freeze did not write (nothing is corrupted)."""
    path = root / README_NAME
    if path.exists() and (
        not path.is_file() or README_MARKER not in path.read_text("utf-8", errors="replace")
    ):
        raise ReleaseError(
            "README.md exists and was not written by vsb release freeze; move it away "
            "(the release README is generated from the manifest)",
            file=path,
        )


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
    """Hash every file of ``release_dir``, write ``MANIFEST.json`` and ``README.md``.

    ``known`` maps relative paths to SHA-256s the caller has just computed from those very
    bytes (the main job's image copies), so they are not read twice. Deterministic: the same
    files give the same manifest bytes (no timestamps). A signature of an earlier, different
    manifest is removed (it would no longer match); one of identical bytes is kept."""
    root = Path(release_dir)
    if not root.is_dir():
        raise ReleaseError("release directory does not exist", file=root)
    _check_readme_is_ours(root)
    hashed, excluded = _walk(root)
    files = _entries(root, hashed, known or {})
    draft = Manifest(
        release=release, vsb_version=__version__, root_hash="", files=files, excluded=excluded,
        oracle_sha256=oracle_commitment(root / ORACLE_DIR),
    )  # fmt: skip
    manifest = draft.model_copy(update={"root_hash": root_hash(draft)})
    path = root / MANIFEST_NAME
    old = path.read_bytes() if path.is_file() else None
    atomic_write_json(path, manifest.model_dump(mode="json"))
    if old != path.read_bytes():
        (root / SIGNATURE_NAME).unlink(missing_ok=True)
    atomic_write_text(root / README_NAME, readme_text(manifest))
    return manifest


def load_manifest(release_dir: str | Path) -> Manifest:
    """Read and validate ``MANIFEST.json`` (raises ReleaseError naming the problem)."""
    path = Path(release_dir) / MANIFEST_NAME
    if not Path(release_dir).is_dir():
        raise ReleaseError("no such release folder (check the path)", file=release_dir)
    if not path.is_file():
        raise ReleaseError("no MANIFEST.json; run `vsb release freeze` first", file=path)
    try:
        return Manifest.model_validate(load_json(path))
    except InputError as err:
        raise ReleaseError(
            f"manifest is not valid JSON: {err.message}", file=path, location=err.location
        ) from None
    except ValidationError as err:
        first = err.errors()[0]
        loc = "/" + "/".join(str(x) for x in first["loc"])
        raise ReleaseError(
            f"manifest is malformed: {first['msg']}", file=path, location=loc
        ) from err


def verify(release_dir: str | Path, *, expect_root: str | None = None) -> list[str]:
    """Every problem found in a frozen release, one line each; empty when it is intact.

    Reports a manifest whose root hash does not match its contents, a root hash other than
    ``expect_root`` (when given), then every changed, missing and extra file — every file
    outside the top-level ``oracle/`` counts, whatever the manifest's ``excluded_pattern``
    says — and a ``README.md`` that does not state the root hash. An empty list proves
    internal consistency; only ``expect_root`` (or a signature) ties it to a release the
    reader was told about."""
    root = Path(release_dir)
    expected_root = parse_root_hash(expect_root) if expect_root is not None else None
    manifest = load_manifest(root)
    problems: list[str] = []
    actual_root = root_hash(manifest)
    if actual_root != manifest.root_hash:
        problems.append(
            f"manifest root hash mismatch: {MANIFEST_NAME} says {manifest.root_hash}, "
            f"its contents hash to {actual_root}"
        )
    if expected_root is not None and actual_root != expected_root:
        problems.append(
            f"not the expected release: expected root hash {expected_root}, "
            f"{MANIFEST_NAME} hashes to {actual_root}"
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
    readme = root / README_NAME  # checked once the manifest itself holds together
    consistent = actual_root == manifest.root_hash
    if consistent and readme.is_file() and actual_root not in readme.read_text("utf-8", "replace"):
        problems.append(f"{README_NAME} does not state the root hash {actual_root}")
    return problems


def verify_or_raise(release_dir: str | Path, *, expect_root: str | None = None) -> Manifest:
    """Verify and raise ReleaseError listing every problem; returns the manifest if intact."""
    problems = verify(release_dir, expect_root=expect_root)
    if problems:
        raise ReleaseError(
            f"release verification failed ({len(problems)} problem(s)): " + "; ".join(problems),
            file=Path(release_dir),
        )
    return load_manifest(release_dir)
