"""Small drawing primitives on index arrays: clipped rectangles, discs and sprite pastes."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Plane = NDArray[np.uint8]
#: Sprite cells: -1 = transparent, OBJ = the object's colour, otherwise a palette index.
OBJ = -2


def rect(img: NDArray[np.generic], x0: int, x1: int, y0: int, y1: int, v: int) -> None:
    """Fill the half-open box [x0, x1) × [y0, y1), clipped to ``img``."""
    h, w = img.shape[:2]
    x0, x1 = max(x0, 0), min(x1, w)
    y0, y1 = max(y0, 0), min(y1, h)
    if x0 < x1 and y0 < y1:
        img[y0:y1, x0:x1] = v


def disc_mask(w: int, h: int, cx: float, cy: float, rx: float, ry: float) -> NDArray[np.bool_]:
    """Boolean mask of an axis-aligned ellipse in a ``h``×``w`` grid (pixel centres)."""
    yy, xx = np.mgrid[0:h, 0:w]
    return ((xx + 0.5 - cx) / rx) ** 2 + ((yy + 0.5 - cy) / ry) ** 2 <= 1.0


def _clipped(
    img: Plane, shape: tuple[int, ...], x: int, y: int
) -> tuple[Plane, tuple[slice, slice]] | None:
    """The part of ``img`` a ``shape``-sized patch at ``x, y`` covers, and the patch's part
    that lands there (None when nothing does)."""
    h, w = shape
    H, W = img.shape
    sx0, sy0 = max(0, -x), max(0, -y)
    sx1, sy1 = min(w, W - x), min(h, H - y)
    if sx0 >= sx1 or sy0 >= sy1:
        return None
    return img[y + sy0 : y + sy1, x + sx0 : x + sx1], (slice(sy0, sy1), slice(sx0, sx1))


def paste_mask(img: Plane, mask: NDArray[np.bool_], x: int, y: int, v: int) -> None:
    """Set the pixels of ``mask`` (top-left at ``x, y``) to ``v``, clipped to ``img``."""
    clipped = _clipped(img, mask.shape, x, y)
    if clipped is not None:
        view, part = clipped
        view[mask[part]] = v


def paste_sprite(img: Plane, spr: Plane, mask: NDArray[np.bool_], x: int, y: int) -> None:
    """Copy the opaque pixels of a coloured sprite (top-left at ``x, y``), clipped."""
    clipped = _clipped(img, spr.shape, x, y)
    if clipped is not None:
        view, part = clipped
        np.copyto(view, spr[part], where=mask[part])
