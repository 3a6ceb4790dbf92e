"""Releases: freeze a directory into a hashed manifest, verify it, and run the main job."""

from vsb.release.manifest import (
    MANIFEST_NAME,
    FileEntry,
    Manifest,
    freeze,
    load_manifest,
    root_hash,
    verify,
)

__all__ = [
    "MANIFEST_NAME",
    "FileEntry",
    "Manifest",
    "freeze",
    "load_manifest",
    "root_hash",
    "verify",
]
