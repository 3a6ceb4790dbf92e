"""The site's images and per-requirement downloads are written by a helper process forked
before the release's data is read (vsb.site.build._release_files), beside the pages: the
site is the same byte for byte as one built in a single process, and a failure in the
helper is the site's failure."""

from __future__ import annotations

from pathlib import Path

import pytest

import vsb.release.isolate as isolate
import vsb.site.build as site_build
from vsb.errors import InputError
from vsb.site.build import build_site


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.skipif(not isolate.CAN_FORK, reason="needs fork")
def test_the_helper_writes_the_files_in_another_process_and_the_site_is_the_same(
    synth_release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    real_link = site_build.link_or_copy
    monkeypatch.setattr(
        site_build, "link_or_copy", lambda s, d: calls.append(Path(d)) or real_link(s, d)
    )
    forked = build_site(synth_release, tmp_path / "forked")
    images = tmp_path / "forked" / "images"
    assert not [d for d in calls if d.is_relative_to(images)]  # linked by the helper, not here
    monkeypatch.setattr(isolate, "CAN_FORK", False)
    alone = build_site(synth_release, tmp_path / "alone")
    assert [d for d in calls if d.is_relative_to(tmp_path / "alone" / "images")]  # here
    assert _files(tmp_path / "forked") == _files(tmp_path / "alone")
    assert forked.images == alone.images > 0 and forked.pages == alone.pages
    assert (tmp_path / "forked" / "data" / "requirements.csv").is_file()


def test_a_failure_in_the_helper_fails_the_site(
    synth_release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(progress: object, root: Path, out: Path) -> dict[str, str]:
        raise InputError("not a readable Parquet file", file="requirements.parquet")

    monkeypatch.setattr(site_build, "_release_files", broken)
    with pytest.raises(InputError, match="not a readable Parquet file"):
        build_site(synth_release, tmp_path / "site")
