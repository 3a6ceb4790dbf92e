"""Figures: heads by skin-tone components, then attributes from geometry-anchored samples."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import ndimage

from vsb.evaluators.render import style as S
from vsb.evaluators.render.detected import DetectedPerson, EntityVocabulary

Plane = NDArray[np.uint8]
Box = tuple[int, int, int, int]
_EIGHT = np.ones((3, 3), dtype=bool)


def region_counts(img: Plane, cx: int, y0: int, box: Box) -> NDArray[np.intp]:
    """Pixel count per palette index inside ``box`` (relative to the anchor), clipped."""
    h, w = img.shape
    x0, x1 = max(cx + box[0], 0), min(cx + box[1], w)
    r0, r1 = max(y0 + box[2], 0), min(y0 + box[3], h)
    if x0 >= x1 or r0 >= r1:
        return np.zeros(256, dtype=np.intp)
    return np.bincount(img[r0:r1, x0:x1].ravel(), minlength=256)


def _area(box: Box) -> int:
    return (box[1] - box[0]) * (box[3] - box[2])


def _major(counts: NDArray[np.intp], names: dict[int, str], box: Box, share: float) -> str | None:
    """The class with most pixels among ``names`` if it covers ``share`` of the box."""
    if not names:
        return None
    ids = np.fromiter(names, dtype=np.intp)
    c = counts[ids]
    best = int(np.argmax(c))
    return names[int(ids[best])] if c[best] >= share * _area(box) else None


def _ids(group: str, values: tuple[str, ...]) -> dict[int, str]:
    return {S.INDEX[f"{group}:{v}"]: v for v in values}


def find_heads(
    img: Plane, totals: NDArray[np.intp], voc: EntityVocabulary
) -> list[tuple[int, int, str]]:
    """Anchors ``(cx, y0, skin)`` of every head: skin-tone components in the head rows of a
    head's size that fill at least ``HEAD_FILL`` of their bounding box."""
    r0, r1 = S.HEAD_ROWS
    band = img[r0:r1]
    out: list[tuple[int, int, str]] = []
    for idx, tone in _ids("skin", voc.skin_tones).items():
        if totals[idx] < S.HEAD_W[0] * S.HEAD_H[0] // 2:
            continue
        mask = band == idx
        cols = np.flatnonzero(mask.any(axis=0))
        if cols.size == 0:
            continue
        c0, c1 = int(cols[0]), int(cols[-1]) + 1
        labels, n = ndimage.label(mask[:, c0:c1], structure=_EIGHT)
        sizes = np.bincount(labels.ravel(), minlength=n + 1)
        for i, sl in enumerate(ndimage.find_objects(labels), start=1):
            if sl is None:
                continue
            ys, xs = sl
            w, h = xs.stop - xs.start, ys.stop - ys.start
            # a head is a filled disc; a lossy copy's outline of another tone is not
            full = sizes[i] >= S.HEAD_FILL * w * h
            if S.HEAD_W[0] <= w <= S.HEAD_W[1] and S.HEAD_H[0] <= h <= S.HEAD_H[1] and full:
                cx = c0 + xs.start + S.HEAD_HALF_W
                y0 = r0 + ys.stop - S.HEAD_HEIGHT
                out.append((cx, y0, tone))
    return sorted(out)


def read_person(img: Plane, cx: int, y0: int, skin: str, voc: EntityVocabulary) -> DetectedPerson:
    """Read one figure's attributes around its anchor."""
    hair_ids = _ids("hair", voc.hair_colors)
    cloth_ids = _ids("cloth", voc.clothing_colors)
    hair = _major(region_counts(img, cx, y0, S.HAIR), hair_ids, S.HAIR, 0.5)
    style = None
    if hair is not None:
        h = S.INDEX[f"hair:{hair}"]

        def has(box: Box) -> bool:
            return bool(region_counts(img, cx, y0, box)[h] >= 0.5 * _area(box))

        if all(has(b) for b in S.LONG):
            style = "long"
        elif has(S.PONYTAIL):
            style = "ponytail"
        elif has(S.BUN):
            style = "bun"
        else:
            style = "short"
        if style not in voc.hair_styles:
            style = None
    top = _major(region_counts(img, cx, y0, S.TOP), cloth_ids, S.TOP, 0.5)
    trousers = _major(region_counts(img, cx, y0, S.TROUSERS), cloth_ids, S.TROUSERS, 0.5)
    return DetectedPerson(
        x=float(cx),
        skin=skin,
        hair_color=hair,
        hair_style=style,
        top=top,
        trousers=trousers,
        accessory=_accessory(img, cx, y0, voc),
        pose=_pose(img, cx, y0, top, trousers, voc),
    )


def _share(img: Plane, cx: int, y0: int, box: Box, name: str | None, group: str) -> float:
    if name is None:
        return 0.0
    return float(region_counts(img, cx, y0, box)[S.INDEX[f"{group}:{name}"]]) / _area(box)


def _pose(
    img: Plane, cx: int, y0: int, top: str | None, trousers: str | None, voc: EntityVocabulary
) -> str | None:
    pose: str | None = None
    if _share(img, cx, y0, S.LEGS_SITTING, trousers, "cloth") > 0.5:
        pose = "sitting"
    else:
        left = _share(img, cx, y0, S.ARM_UP_LEFT, top, "cloth") > 0.5
        right = _share(img, cx, y0, S.ARM_UP_RIGHT, top, "cloth") > 0.5
        if left and right:
            pose = "cheering"
        elif left:
            pose = "waving"
        elif _share(img, cx, y0, S.LEGS_STRAIGHT, trousers, "cloth") > 0.5:
            pose = "standing"
    return pose if pose in voc.poses else None


def _accessory(img: Plane, cx: int, y0: int, voc: EntityVocabulary) -> str | None:
    best, best_n = "none", 0
    for name, box in S.ACCESSORY.items():
        if name not in voc.accessories:
            continue
        n = int(region_counts(img, cx, y0, box)[S.INDEX[f"acc:{name}"]])
        if n > best_n:
            best, best_n = name, n
    if best_n < 30:
        best = "none"
    return best if best in voc.accessories else None
