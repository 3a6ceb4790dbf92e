"""Read a lossy copy of a render (JPEG, resized, noisy) back to canonical palette indices.

Works on an RGB array at the render size (or smaller: the labels are scaled up by nearest
neighbour afterwards). Colours are compared in a luma-weighted YCbCr space, because JPEG keeps
luma sharp and blurs chroma. Steps:

1. an edge-preserving 3×3 mean (each pixel averages the neighbours within ``SIGMA_RANGE`` of
   its own colour) removes sensor-like noise without mixing regions;
2. every pixel is snapped to its nearest palette colour; pixels within ``TOLERANCE`` of it in
   a flat neighbourhood are *confident*;
3. every other pixel (edges, thin details, colours off the palette) is explained from the
   confident labels of its neighbourhood (``RADIUS``): as one of them, or a mix of two of them (a
   resampled or JPEG-blurred edge), which gives it the majority label; failing that as a thin
   detail — a palette colour mixed with the background (a one-pixel rain line after a
   downscale); failing that it keeps its own nearest colour if within the tolerance, else it
   becomes ``UNKNOWN``;
4. an unconfident island of one or two pixels whose label no other neighbour shares (a JPEG
   edge ringing into a detail colour) takes the neighbouring label nearest to its colour.

A mixed edge pixel therefore never takes a third colour that happens to lie between its two
sides (a red top against the sky never leaves an object-red outline). ``palette_share`` — the
share of pixels within the tolerance of a palette colour after the denoising step — is what
``vsb.evaluators.render.decode`` uses to tell renders from other images.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.spatial import cKDTree

from vsb.evaluators.render import style

Plane = NDArray[np.uint8]
Floats = NDArray[np.float32]
UNKNOWN = 255

#: RGB -> (Y, Cb, Cr) without offsets (JPEG's full-range BT.601).
_YCC = np.array(
    [[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]],
    dtype=np.float32,
)
#: Luma weight of the colour distance (JPEG keeps luma; chroma is subsampled and blurred).
LUMA_WEIGHT = 1.5
_SCALE = np.array([LUMA_WEIGHT, 1.0, 1.0], dtype=np.float32)

#: A neighbour takes part in the edge-preserving mean when this close (colour distance).
SIGMA_RANGE = 12.0
#: The renderer keeps every two palette colours at least this far apart in this space
#: (tests/evaluators/test_robust_decode.py checks it), about three times a JPEG q90 error on
#: a flat region, so the nearest colour of a flat pixel is its own.
MIN_SEPARATION = 16.0
#: A pixel this close to a palette colour is on the palette.
TOLERANCE = 10.0
#: A pixel this close to a palette colour keeps it even where no neighbour explains it.
EXACT = 4.0
#: A pixel whose 3×3 neighbourhood spans more than this is on an edge.
FLAT_RANGE = 12.0
#: Largest residual of a pixel explained as a mix of two neighbouring labels.
MIX_RESIDUAL = 6.0
#: Largest residual of a thin detail (palette colour mixed with the background) ...
THIN_RESIDUAL = 8.0
#: ... which must cover at least this share of the pixel ...
THIN_MIN_SHARE = 0.45
#: ... and explain it better than the neighbours by this margin.
THIN_MARGIN = 4.0
#: Share of a pixel's chroma that may come from a neighbour (JPEG chroma blur).
CHROMA_BLEED = 0.7
#: Largest distance at which an edge pixel still takes its nearest neighbouring label.
FALLBACK = 3 * MIX_RESIDUAL
#: Whether a thin detail inside an object colour must be one of the objects' detail colours.
DETAILS_IN_OBJECTS = True
#: Chebyshev radius of the neighbourhood an unconfident pixel is explained from.
RADIUS = 4
#: Pixels processed at once in the per-pixel steps (bounds the memory of the palette tables).
_CHUNK = 8192


def to_space(rgb: NDArray[Any]) -> Floats:
    """RGB (..., 3) to the luma-weighted YCbCr space the distances are measured in."""
    out: Floats = (np.asarray(rgb, dtype=np.float32) @ _YCC.T) * _SCALE
    return out


_PAL: Floats = to_space(np.array(style.PALETTE, dtype=np.float32))
_N = len(_PAL)
#: Palette in the distance space, padded to 256 entries (UNKNOWN and unused ones far away).
_PAL256: Floats = np.vstack([_PAL, np.full((256 - _N, 3), 1e4, dtype=np.float32)])
_TREE = cKDTree(_PAL)
#: Object colours, and the palette colours a thin detail inside one may take (its details).
_IS_OBJECT = np.zeros(256, dtype=bool)
_IS_OBJECT[[i for i, n in enumerate(style.NAMES) if n.startswith("obj:")]] = True
_NOT_DETAIL = np.ones(_N, dtype=bool)
_NOT_DETAIL[[style.INDEX[f"fx:{n}"] for n in style.DETAIL_KIND]] = False


@dataclass(frozen=True)
class Labels:
    """Result of labelling one image."""

    indices: Plane
    palette_share: float


def _shifted(a: NDArray[Any], r: int) -> Iterator[NDArray[Any]]:
    """Every neighbour view of ``a`` within Chebyshev radius ``r`` (edges replicated)."""
    h, w = a.shape[:2]
    pad = [(r, r), (r, r)] + [(0, 0)] * (a.ndim - 2)
    p = np.pad(a, pad, mode="edge")
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            if dy or dx:
                yield p[r + dy : r + dy + h, r + dx : r + dx + w]


def _denoise(c: Floats) -> tuple[Floats, NDArray[np.bool_]]:
    """Edge-preserving 3×3 mean and the mask of edge pixels."""
    acc = c.copy()
    n = np.ones(c.shape[:2], dtype=np.float32)
    spread = np.zeros(c.shape[:2], dtype=np.float32)
    near2 = np.float32(SIGMA_RANGE * SIGMA_RANGE)
    for s in _shifted(c, 1):
        diff = s - c
        d2 = np.einsum("ijk,ijk->ij", diff, diff)
        np.maximum(spread, d2, out=spread)
        w = (d2 <= near2).astype(np.float32)
        acc += s * w[..., None]
        n += w
    out: Floats = acc / n[..., None]
    return out, spread > FLAT_RANGE * FLAT_RANGE


def _nearest(c: Floats) -> tuple[Plane, Floats]:
    """Nearest palette index and distance per pixel (distinct colours looked up once)."""
    q = np.rint(c * 2).astype(np.int64) + 1024  # half-unit grid, positive
    key = (q[..., 0] << 24) | (q[..., 1] << 12) | q[..., 2]
    _, first, inv = np.unique(key.ravel(), return_index=True, return_inverse=True)
    d, i = _TREE.query(c.reshape(-1, 3)[first], k=1)
    shape = c.shape[:2]
    return (
        np.asarray(i, dtype=np.uint8)[inv].reshape(shape),
        np.asarray(d, dtype=np.float32)[inv].reshape(shape),
    )


def _dot(a: Floats, b: Floats) -> Floats:
    """Dot product over the last axis (broadcasting; faster than ``(a * b).sum(-1)``)."""
    a, b = np.broadcast_arrays(a, b)
    out: Floats = np.einsum("...k,...k->...", a, b)
    return out


def _mix_residual(ce: Floats, pa: Floats, cols: Floats) -> Floats:
    """Squared residual of pixels ``ce`` (n,3) as label ``pa`` (n,3), the majority, mixed with
    each neighbour colour ``cols`` (n,k,3): a linear mix (resampling) or the same luma with
    chroma bled in from the neighbour (JPEG)."""
    w = (ce - pa)[:, None]
    v = cols - pa[:, None]
    t = np.clip(_dot(v, w) / np.maximum(_dot(v, v), 1e-6), 0.0, 0.6)
    e = w - t[..., None] * v
    lin = _dot(e, e)
    vc, wc = v[..., 1:], w[..., 1:]
    g = np.clip(_dot(vc, wc) / np.maximum(_dot(vc, vc), 1e-6), 0.0, CHROMA_BLEED)
    ec = wc - g[..., None] * vc
    jpeg = w[..., 0] ** 2 + _dot(ec, ec)
    out: Floats = np.minimum(lin, jpeg)
    return out


def _thin(ce: Floats, b: NDArray[np.uint8]) -> tuple[NDArray[np.intp], Floats]:
    """Best palette colour F explaining ``ce`` as F over background label ``b``: F covers a
    share in [THIN_MIN_SHARE, 1] of the pixel (linear), or F's luma with chroma bled from the
    background. Inside an object colour F is one of the objects' detail colours."""
    pb = _PAL256[b]
    w = (ce - pb)[:, None]  # (n,1,3)
    v = _PAL[None] - pb[:, None]  # (n,N,3)
    vv = _dot(v, v)
    t = np.clip(_dot(v, w) / np.maximum(vv, 1e-6), THIN_MIN_SHARE, 1.2)
    e = w - t[..., None] * v
    lin = _dot(e, e)
    vc, wc = v[..., 1:], w[..., 1:]
    g = np.clip(_dot(vc, wc) / np.maximum(_dot(vc, vc), 1e-6), 1.0 - CHROMA_BLEED, 1.0)
    ec = wc - g[..., None] * vc
    jpeg = (w[..., 0] - v[..., 0]) ** 2 + _dot(ec, ec)
    r = np.minimum(lin, jpeg)
    r[vv < 1.0] = np.inf
    if DETAILS_IN_OBJECTS:
        r[np.ix_(_IS_OBJECT[b], _NOT_DETAIL)] = np.inf
    best = r.argmin(1)
    return best, r[np.arange(len(best)), best]


def _resolve(
    c: Floats, out: Plane, own: Plane, dist: Floats, ey: NDArray[np.intp], ex: NDArray[np.intp]
) -> Plane:
    """Labels of the unconfident pixels ``(ey, ex)`` from the confident labels in ``out``."""
    rad = RADIUS
    pad = np.pad(out, rad, mode="edge")
    span = range(-rad, rad + 1)
    offsets = [(dy, dx) for dy in span for dx in span if dy or dx]
    nb = np.stack([pad[ey + rad + dy, ex + rad + dx] for dy, dx in offsets], 1)
    ce = c[ey, ex]
    cols = _PAL256[nb]
    diff = cols - ce[:, None]
    dn = _dot(diff, diff)
    rows = np.arange(len(ey))
    j = dn.argmin(1)
    near = nb[rows, j]
    best = dn[rows, j]
    r = _mix_residual(ce, _PAL256[near], cols)
    r[(nb == UNKNOWN) | (nb == near[:, None])] = np.inf
    best = np.minimum(best, r.min(1))
    labels = near.copy()
    todo = np.flatnonzero(best > MIX_RESIDUAL**2)
    if todo.size:
        f, rf = _thin(ce[todo], near[todo])
        d_own = dist[ey[todo], ex[todo]] ** 2
        exact = d_own <= EXACT**2
        use_thin = ~exact & (rf + THIN_MARGIN**2 < best[todo]) & (rf <= THIN_RESIDUAL**2)
        use_own = ~use_thin & (d_own <= TOLERANCE**2) & (d_own < best[todo])
        keep = best[todo] <= FALLBACK**2
        labels[todo] = np.where(
            use_thin,
            f,
            np.where(use_own, own[ey[todo], ex[todo]], np.where(keep, near[todo], UNKNOWN)),
        )
    return labels.astype(np.uint8)


def label_rgb(rgb: NDArray[Any], min_share: float = 0.0) -> Labels:
    """Canonical palette indices of an RGB image (H, W, 3) of a possibly lossy render.

    When less than ``min_share`` of the pixels are on the palette the image is no render:
    only its confident pixels are labelled (the rest ``UNKNOWN``), which is fast."""
    c, edge = _denoise(to_space(rgb[..., :3]))
    own, dist = _nearest(c)
    on_palette = dist <= TOLERANCE
    share = float(on_palette.mean())
    confident = on_palette & ~edge
    base = np.where(confident, own, UNKNOWN).astype(np.uint8)
    if share < min_share:
        return Labels(indices=base, palette_share=share)
    out = base.copy()
    ey, ex = np.nonzero(~confident)
    for k in range(0, len(ey), _CHUNK):
        sl = slice(k, k + _CHUNK)
        out[ey[sl], ex[sl]] = _resolve(c, base, own, dist, ey[sl], ex[sl])
    _merge_islands(c, out, ~confident)
    return Labels(indices=out, palette_share=share)


def _merge_islands(c: Floats, out: Plane, loose: NDArray[np.bool_]) -> None:
    """Relabel, in place, unconfident islands of one or two pixels (8-connected) that share
    their label with no other neighbour: each takes the label among its other neighbours
    whose colour is nearest to its own (it stays when every neighbour is ``UNKNOWN``)."""
    same = np.zeros(out.shape, dtype=np.int8)
    for s in _shifted(out, 1):
        same += s == out
    paired = np.zeros(out.shape, dtype=bool)
    for s, t in zip(_shifted(out, 1), _shifted(same, 1), strict=True):
        paired |= (s == out) & (t == 1)
    island = loose & (out != UNKNOWN) & ((same == 0) | ((same == 1) & paired))
    ey, ex = np.nonzero(island)
    if not ey.size:
        return
    pad = np.pad(out, 1, mode="edge")
    nb = np.stack(
        [pad[ey + 1 + dy, ex + 1 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx], 1
    )
    own = out[ey, ex]
    diff = _PAL256[nb] - c[ey, ex][:, None]
    d = _dot(diff, diff)
    d[(nb == UNKNOWN) | (nb == own[:, None])] = np.inf
    j = d.argmin(1)
    rows = np.arange(len(ey))
    out[ey, ex] = np.where(np.isfinite(d[rows, j]), nb[rows, j], own)
