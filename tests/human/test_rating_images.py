"""Issue 45, item 10: a rater cannot de-blind a rating picture by its pixels. Each picture under
``rate/`` is its release picture changed imperceptibly (±1 on a few colour values, drawn from a
generator seeded by the release's blinding key) and re-encoded: neither its bytes nor its
decoded pixels equal any picture of the site (or the release) under a model's name."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from site_synth import HOSTILE_MODEL, make_release

from vsb.human.blinding import PERTURBED_SHARE, Blinding, release_blinding
from vsb.human.models import CONTROL_BAD, CONTROL_GOOD
from vsb.site.build import build_site

_IMAGES = (".png", ".jpg", ".jpeg", ".webp")


@pytest.fixture(scope="module")
def release_and_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("rating-images")
    release = make_release(root / "release", models=(CONTROL_GOOD, CONTROL_BAD, HOSTILE_MODEL))
    build_site(release, root / "site")
    return release, root / "site"


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.array(im.convert("RGBA"))


def _key(a: np.ndarray) -> str:
    return hashlib.sha256(repr(a.shape).encode() + a.tobytes()).hexdigest()


def test_no_rating_picture_matches_a_named_picture_by_bytes_or_pixels(
    release_and_site: tuple[Path, Path],
) -> None:
    release, site = release_and_site
    named = [
        p
        for folder in (site, release)
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in _IMAGES
        and not p.relative_to(folder).as_posix().startswith("rate/")
    ]  # fmt: skip
    assert named
    named_bytes = {hashlib.sha256(p.read_bytes()).hexdigest() for p in named}
    named_pixels = {_key(_pixels(p.read_bytes())) for p in named}
    rated = sorted((site / "rate").iterdir())
    assert len(rated) >= 20
    blinding = release_blinding(release)
    source = {blinding.image_name(p): p for s in blinding.strips.values() for p in s.images}
    for f in rated:
        data = f.read_bytes()
        assert hashlib.sha256(data).hexdigest() not in named_bytes, f.name
        pixels = _pixels(data)
        assert _key(pixels) not in named_pixels, f"{f.name}: the pixels of a named picture"
        # imperceptible: the same size, every value within 1, a few values moved
        original = _pixels((release / source[f"rate/{f.name}"]).read_bytes())
        assert pixels.shape == original.shape
        diff = np.abs(pixels.astype(int) - original.astype(int))
        assert diff.max() == 1
        assert 0 < (diff > 0).mean() <= PERTURBED_SHARE


def test_rating_pictures_differ_per_release(release_and_site: tuple[Path, Path]) -> None:
    release, _ = release_and_site
    blinding = release_blinding(release)
    rel = next(iter(blinding.strips.values())).images[0]
    data = (release / rel).read_bytes()
    other = Blinding(b"another release's key", blinding.condition, {}, {})
    mine, theirs = blinding.rater_bytes(rel, data), other.rater_bytes(rel, data)
    assert mine == blinding.rater_bytes(rel, data)  # the same release: the same bytes
    assert not np.array_equal(_pixels(mine), _pixels(theirs))
