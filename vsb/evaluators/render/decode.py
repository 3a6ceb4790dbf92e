"""Decode an image (PNG bytes, a path, a PIL image, an index or RGB array) to palette indices.

Renders are indexed PNGs whose palette is the canonical one (``style.PALETTE``), so decoding
is ``np.asarray(Image.open(...))`` with no per-pixel work. Other palettes are remapped
through a 256-entry table, and RGB input is first matched exactly against the canonical
colours. Anything else — a render saved as JPEG, resized, or with noise — goes through
``vsb.evaluators.render.robust``: the size is normalised to the render size (block means for
larger images, nearest-neighbour scaling of the labels of smaller ones) and colours are
snapped to the palette with a tolerance, edges resolved from their neighbours.

``decode_render`` also says whether the image is a render at all: the extractor, the rules
and pairwise consistency apply to renders only. An image is a render when at least
``RENDER_SHARE`` of its pixels lie within the tolerance of a palette colour and at least
``MIN_COLOURS`` palette colours each cover ``MIN_COLOUR_SHARE`` of it (a solid palette
colour is no render).

An image that cannot be read — not an image, data that does not decode, more than the
adapters' pixel cap (``MAX_PIXELS``, checked from the header before decoding) — raises
``InputError``; ``vsb evaluate`` turns it into ``unreadable`` rows.
"""

from __future__ import annotations

import io
import os
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image, UnidentifiedImageError

from vsb.errors import InputError
from vsb.evaluators.render import robust, style
from vsb.fsio import MAX_PIXELS
from vsb.tables.reasons import off_palette

Plane = NDArray[np.uint8]
#: Index of pixels whose colour is not in the canonical palette.
UNKNOWN = robust.UNKNOWN

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


#: The render size (indices are always returned at this size, except for index planes).
SIZE = 512
#: Smallest side of an image that can be read as a render.
MIN_SIDE = 128
#: Share of pixels on the palette (within the tolerance) of a render.
RENDER_SHARE = 0.6
#: A render shows at least this many palette colours ...
MIN_COLOURS = 3
#: ... each covering at least this share of it.
MIN_COLOUR_SHARE = 0.005


@dataclass(frozen=True)
class DecodedImage:
    """An image read as a render, or the reason it is not one."""

    indices: Plane | None
    """Canonical palette indices at the render size (512×512); None when not a render."""
    is_render: bool
    """Whether the image is a (possibly lossy) render that the extractor can read."""
    palette_share: float
    """Share of pixels within the tolerance of a palette colour, after size normalisation."""
    reason: str
    """Empty when a render, else why not ("42% of pixels are off the palette")."""
    counts: NDArray[np.intp] | None = None
    """Pixels per index (length 256) when a render: the extractor and pairwise reuse it."""
    band_counts: NDArray[np.intp] | None = None
    """The same, of the figure band's rows only (``style.BAND``): pairwise reuses it."""


def _canonical(im: Image.Image) -> Plane | None:
    """The index plane of an indexed image in the canonical palette (no per-pixel work)."""
    if im.mode != "P":
        return None
    raw = bytes(im.getpalette() or [])
    arr = np.asarray(im)
    if raw[: len(_CANONICAL_BYTES)] == _CANONICAL_BYTES:
        return arr
    out = _remap(raw)[arr]
    return None if bool((out == UNKNOWN).any()) else out


def _rgb(im: Image.Image) -> NDArray[np.uint8]:
    return np.asarray(im.convert("RGB"))


def _resize(rgb: NDArray[Any]) -> NDArray[Any]:
    """RGB larger than the render size brought to it: block means for exact multiples, else
    a box filter (both keep flat regions flat)."""
    h, w = rgb.shape[:2]
    if h % SIZE == 0 and w % SIZE == 0:
        blocks = rgb[..., :3].reshape(SIZE, h // SIZE, SIZE, w // SIZE, 3)
        return blocks.mean(axis=(1, 3), dtype=np.float32)
    im = Image.fromarray(np.ascontiguousarray(rgb[..., :3], dtype=np.uint8))
    return np.asarray(im.resize((SIZE, SIZE), Image.Resampling.BOX), dtype=np.float32)


def _from_rgb(rgb: NDArray[Any]) -> tuple[Plane, float]:
    """Indices at the render size and the palette share of an RGB array."""
    h, w = rgb.shape[:2]
    if (h, w) == (SIZE, SIZE) and rgb.dtype == np.uint8:
        exact = rgb_to_indices(rgb)
        if not bool((exact == UNKNOWN).any()):
            return exact, 1.0
    big = h > SIZE or w > SIZE
    labels = robust.label_rgb(_resize(rgb) if big else rgb[..., :3], min_share=RENDER_SHARE)
    out = labels.indices
    if out.shape != (SIZE, SIZE):
        out = np.asarray(Image.fromarray(out).resize((SIZE, SIZE), Image.Resampling.NEAREST))
    return out, labels.palette_share


def _read(image: bytes | str | Path | Image.Image | NDArray[Any]) -> tuple[Plane, float, str]:
    """(indices, palette share, size note) of any image input; index planes pass through."""
    if isinstance(image, np.ndarray):
        if image.ndim == 2:
            plane = image.astype(np.uint8, copy=False)
            return plane, float((plane < len(style.PALETTE)).mean()), ""
        if image.ndim == 3 and image.shape[2] in (3, 4):
            return (*_from_rgb(image), _small(image.shape[1], image.shape[0]))
        raise InputError(f"cannot read an image array of shape {image.shape}")
    if isinstance(image, Image.Image):
        return _from_image(image)
    file = None if isinstance(image, bytes | bytearray) else image
    source = io.BytesIO(image) if isinstance(image, bytes | bytearray) else image
    try:
        with _open(source) as im:
            return _from_image(im)
    except _UNREADABLE as err:
        raise InputError(_why(err), file=file) from None


class _OverCap(Exception):
    """An image whose header declares more than ``MAX_PIXELS`` pixels."""


#: What reading an image that cannot be read raises.
_UNREADABLE = (_OverCap, Image.DecompressionBombError, OSError, ValueError, SyntaxError, EOFError)


def _open(source: Any) -> Image.Image:
    """``Image.open`` under the pixel cap (checked from the header, before any decoding)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        im = Image.open(source)
    w, h = im.size
    if w * h > MAX_PIXELS:
        im.close()
        side = int(MAX_PIXELS**0.5)
        raise _OverCap(f"the image is {w}×{h} pixels, over the {side}×{side} cap")
    return im


def _why(err: BaseException) -> str:
    """The reason an image cannot be read (never naming the file: rows carry it)."""
    if isinstance(err, _OverCap):
        return str(err)
    if isinstance(err, Image.DecompressionBombError):
        return f"refused a decompression bomb ({err})"
    if isinstance(err, UnidentifiedImageError):
        return "not an image file (no known image format)"
    return f"cannot decode image: {err}"


def image_problem(path: str | Path) -> str:
    """Why the image file at ``path`` cannot be read ('' when it can): the same checks as
    decoding it (pixel cap from the header, then every pixel decoded), without the rest.
    Remembered per file version (device, inode, size, modification time: a hard link is the
    same file), so a process asked about the same file again (the reference judges, one
    pass each) decodes it once."""
    try:
        st = os.stat(path)
    except OSError:
        return _problem(path)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    why = _PROBLEMS.get(key)
    if why is None:
        if len(_PROBLEMS) >= _PROBLEMS_KEPT:
            _PROBLEMS.clear()
        why = _PROBLEMS[key] = _problem(path)
    return why


#: ``image_problem``'s answers by file version, and how many it keeps.
_PROBLEMS: dict[tuple[int, int, int, int], str] = {}
_PROBLEMS_KEPT = 65_536


def _problem(path: str | Path) -> str:
    try:
        with _open(path) as im:
            im.load()
    except _UNREADABLE as err:
        return _why(err)
    return ""


def open_rgb(path: str | Path) -> Image.Image:
    """The image at ``path`` decoded as RGB under the pixel cap; ``InputError`` (naming the
    file and why) if it cannot be read."""
    try:
        with _open(path) as im:
            return im.convert("RGB")
    except _UNREADABLE as err:
        raise InputError(_why(err), file=path) from None


def _small(w: int, h: int) -> str:
    return f"{w}×{h} is too small to read" if min(w, h) < MIN_SIDE else ""


def _from_image(im: Image.Image) -> tuple[Plane, float, str]:
    if im.size == (SIZE, SIZE):
        plane = _canonical(im)
        if plane is not None:
            return plane, 1.0, ""
    return (*_from_rgb(_rgb(im)), _small(*im.size))


def index_counts(plane: Plane) -> NDArray[np.intp]:
    """Pixels per index value (length 256) of an index plane: Pillow's histogram of it as an
    8-bit image (one C pass over the bytes; ``np.bincount`` first widens every pixel to a
    machine integer, twice as slow on a 512×512 plane, and this runs once per image and
    per band)."""
    if plane.ndim != 2 or plane.dtype != np.uint8:
        return np.bincount(plane.ravel(), minlength=256)
    return np.asarray(Image.fromarray(plane).histogram(), dtype=np.intp)


def load_indices(image: bytes | str | Path | Image.Image | NDArray[Any]) -> Plane:
    """The image as a 2-D array of canonical palette indices (``UNKNOWN`` off the palette).

    Exact renders take the fast path; other images are read as lossy renders whether they
    are renders or not (``decode_render`` says which). An index plane is returned as it
    is (no palette share to count)."""
    if isinstance(image, np.ndarray) and image.ndim == 2:
        return image.astype(np.uint8, copy=False)
    return _read(image)[0]


def decode_render(image: bytes | str | Path | Image.Image | NDArray[Any]) -> DecodedImage:
    """Read an image as a render, or say why it is not one (see the module docstring)."""
    plane, share, small = _read(image)
    reason = small
    counts = band = None
    if not reason and share < RENDER_SHARE:
        reason = off_palette(share)
    if not reason:  # counted a band at a time: the figure band's counts come with the whole's
        r0, r1 = style.BAND
        band = index_counts(plane[r0:r1])
        counts = band + index_counts(plane[:r0]) + index_counts(plane[r1:])
        colours = int((counts[: len(style.PALETTE)] >= MIN_COLOUR_SHARE * plane.size).sum())
        if colours < MIN_COLOURS:
            reason = f"only {colours} palette colour(s) (a render shows at least {MIN_COLOURS})"
    if reason:
        return DecodedImage(indices=None, is_render=False, palette_share=share, reason=reason)
    return DecodedImage(
        indices=plane, is_render=True, palette_share=share, reason="", counts=counts,
        band_counts=band,
    )  # fmt: skip
