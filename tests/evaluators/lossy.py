"""Lossy copies of renders and images that are not renders (shared by tests and benchmarks)."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from vsb.render import PALETTE

RGB = NDArray[np.uint8]
_PAL = np.array(PALETTE, dtype=np.uint8)


def to_rgb(indices: NDArray[np.uint8]) -> RGB:
    """A render's RGB pixels."""
    out: RGB = _PAL[indices]
    return out


def _png(rgb: RGB) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def jpeg_q90(rgb: RGB, rng: np.random.Generator) -> bytes:
    """Saved as JPEG at quality 90 (Pillow's default 4:2:0 chroma subsampling)."""
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def upscale_2x(rgb: RGB, rng: np.random.Generator) -> bytes:
    """Upscaled 2× by nearest neighbour (1024×1024 PNG)."""
    h, w = rgb.shape[:2]
    return _png(np.asarray(Image.fromarray(rgb).resize((2 * w, 2 * h), Image.Resampling.NEAREST)))


def downscale_384(rgb: RGB, rng: np.random.Generator) -> bytes:
    """Downscaled to 384×384 with Pillow's default (bicubic) filter."""
    return _png(np.asarray(Image.fromarray(rgb).resize((384, 384))))


def noise_2(rgb: RGB, rng: np.random.Generator) -> bytes:
    """Gaussian noise of σ = 2 on every channel, rounded and clipped."""
    noisy = rgb.astype(np.float64) + rng.normal(0.0, 2.0, rgb.shape)
    return _png(np.clip(np.rint(noisy), 0, 255).astype(np.uint8))


TRANSFORMS: dict[str, Callable[[RGB, np.random.Generator], bytes]] = {
    "jpeg_q90": jpeg_q90,
    "upscale_2x_nearest": upscale_2x,
    "downscale_384": downscale_384,
    "noise_sigma_2": noise_2,
}


# --- images that are not renders ------------------------------------------------------------


def _field(rng: np.random.Generator, cells: int, size: int = 512) -> NDArray[np.float64]:
    """A smooth random colour field: random colours on a coarse grid, bilinearly enlarged."""
    coarse = (rng.random((cells, cells, 3)) * 255).astype(np.uint8)
    img = Image.fromarray(coarse).resize((size, size), Image.Resampling.BILINEAR)
    return np.asarray(img, dtype=np.float64)


def photo_like(kind: str, seed: int) -> RGB:
    """Synthetic stand-ins for photographs (seeded): ``gradient`` (a smooth gradient plus
    noise), ``perlin`` (octaves of smooth noise), ``blurred`` (a blurred random colour field)."""
    rng = np.random.default_rng(seed)
    if kind == "gradient":
        y, x = np.mgrid[0:512, 0:512] / 511.0
        a, b = rng.random(3) * 255, rng.random(3) * 255
        img = a * (1 - x[..., None]) + b * y[..., None] * 0.8 + rng.normal(0, 6, (512, 512, 3))
    elif kind == "perlin":
        img = sum(_field(rng, c) / 2**k for k, c in enumerate((4, 8, 16, 32, 64))) / 1.9375
    elif kind == "blurred":
        img = _field(rng, 24) + rng.normal(0, 3, (512, 512, 3))
    else:
        raise KeyError(kind)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def solid(rgb: tuple[int, int, int]) -> RGB:
    """One colour everywhere."""
    return np.broadcast_to(np.array(rgb, dtype=np.uint8), (512, 512, 3)).copy()


def uniform_noise(seed: int) -> RGB:
    """Uniform random RGB noise."""
    return np.random.default_rng(seed).integers(0, 256, (512, 512, 3), dtype=np.uint8)
