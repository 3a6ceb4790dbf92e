"""Decode an image (PNG bytes, a path, a PIL image, an index or RGB array) to palette indices.

Renders are indexed PNGs whose palette is the canonical one (``style.PALETTE``), so decoding
is ``np.asarray(Image.open(...))`` with no per-pixel work. Other palettes are remapped
through a 256-entry table; RGB input is matched exactly against the canonical colours
(unknown colours become ``UNKNOWN``).
"""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from vsb.errors import InputError
from vsb.evaluators import style

Plane = NDArray[np.uint8]
#: Index of pixels whose colour is not in the canonical palette.
UNKNOWN = 255

_CANONICAL_BYTES = bytes(v for rgb in style.PALETTE for v in rgb)
_KEYS = np.array([(r << 16) | (g << 8) | b for r, g, b in style.PALETTE], dtype=np.int64)
_ORDER = np.argsort(_KEYS)
_SORTED = _KEYS[_ORDER]


@lru_cache(maxsize=64)
def _remap(palette: bytes) -> Plane:
    lut = np.full(256, UNKNOWN, dtype=np.uint8)
    for i in range(min(len(palette) // 3, 256)):
        rgb = (palette[3 * i], palette[3 * i + 1], palette[3 * i + 2])
        lut[i] = style.BY_RGB.get(rgb, UNKNOWN)
    return lut


def rgb_to_indices(rgb: NDArray[Any]) -> Plane:
    """Exact match of every pixel against the canonical palette."""
    a = rgb[..., :3].astype(np.int64)
    key = (a[..., 0] << 16) | (a[..., 1] << 8) | a[..., 2]
    pos = np.clip(np.searchsorted(_SORTED, key), 0, len(_SORTED) - 1)
    out = _ORDER[pos].astype(np.uint8)
    out[_SORTED[pos] != key] = UNKNOWN
    return out


def _from_pil(im: Image.Image) -> Plane:
    if im.mode == "P":
        arr = np.asarray(im)
        pal = im.getpalette() or []
        raw = bytes(pal)
        if raw[: len(_CANONICAL_BYTES)] == _CANONICAL_BYTES:
            return arr
        return _remap(raw)[arr]
    return rgb_to_indices(np.asarray(im.convert("RGB")))


def load_indices(image: bytes | str | Path | Image.Image | NDArray[Any]) -> Plane:
    """The image as a 2-D array of canonical palette indices."""
    if isinstance(image, np.ndarray):
        if image.ndim == 2:
            return image.astype(np.uint8, copy=False)
        if image.ndim == 3 and image.shape[2] in (3, 4):
            return rgb_to_indices(image)
        raise InputError(f"cannot read an image array of shape {image.shape}")
    if isinstance(image, Image.Image):
        return _from_pil(image)
    try:
        if isinstance(image, bytes | bytearray):
            with Image.open(io.BytesIO(image)) as im:
                return _from_pil(im)
        with Image.open(image) as im:
            return _from_pil(im)
    except OSError as err:
        raise InputError(
            f"cannot decode image: {err}",
            file=None if isinstance(image, bytes | bytearray) else image,
        ) from err
