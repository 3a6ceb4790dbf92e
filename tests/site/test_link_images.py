"""Images reach the release and the site as hard links where the filesystem allows (issue 25),
as copies where it does not, and never by writing through a file already at the destination."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from vsb.fsio import link_or_copy


def test_link_or_copy_links_on_one_filesystem(tmp_path: Path) -> None:
    src = tmp_path / "a.png"
    src.write_bytes(b"png-bytes")
    dest = tmp_path / "b.png"
    link_or_copy(src, dest)
    assert dest.read_bytes() == b"png-bytes"
    assert os.stat(dest).st_ino == os.stat(src).st_ino


def test_link_or_copy_copies_when_linking_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_link(a: object, b: object) -> None:
        raise OSError(errno.EXDEV, "cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    src = tmp_path / "a.png"
    src.write_bytes(b"png-bytes")
    dest = tmp_path / "b.png"
    link_or_copy(src, dest)
    assert dest.read_bytes() == b"png-bytes"
    assert os.stat(dest).st_ino != os.stat(src).st_ino


def test_link_or_copy_replaces_a_link_without_writing_through_it(tmp_path: Path) -> None:
    frozen = tmp_path / "frozen.png"
    frozen.write_bytes(b"frozen")
    dest = tmp_path / "site.png"
    os.link(frozen, dest)  # the destination shares the frozen file's inode
    new = tmp_path / "new.png"
    new.write_bytes(b"new")
    link_or_copy(new, dest)
    assert dest.read_bytes() == b"new"
    assert frozen.read_bytes() == b"frozen"
