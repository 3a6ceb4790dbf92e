"""The blind structured-state extractor: an image and class names in, a ``DetectedState`` out.

``extract(image, vocab)`` never sees an expected state: it is told only which classes could
appear (``EntityVocabulary.from_world(world)``). It finds heads by skin-tone components,
reads hair colour/style, top, trousers, accessory and pose from geometry-anchored samples
(``vsb.evaluators.render.people``), classifies objects by colour plus shape signature and counts
small components (``vsb.evaluators.render.objects``), and reads location and time of day from
ground and sky colours and the weather from the tone of the clouds. One ``np.bincount``
over the index plane gives every colour's presence; connected components are labelled only
inside each colour's bounding box.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image
from scipy import ndimage

from vsb.evaluators.render import style as S
from vsb.evaluators.render.decode import index_counts, load_indices
from vsb.evaluators.render.detected import DetectedState, EntityVocabulary
from vsb.evaluators.render.objects import find_objects
from vsb.evaluators.render.people import find_heads, read_person

ImageInput = bytes | str | Path | Image.Image | NDArray[Any]
Plane = NDArray[np.uint8]
_EIGHT = np.ones((3, 3), dtype=bool)


def _argmax(
    totals: NDArray[np.intp], group: str, values: tuple[str, ...], least: int
) -> str | None:
    best, best_n = None, least - 1
    for v in values:
        n = int(totals[S.INDEX[f"{group}:{v}"]])
        if n > best_n:
            best, best_n = v, n
    return best


def _core(img: Plane, idx: int) -> int:
    """Pixels of colour ``idx`` whose 3×3 neighbourhood is all that colour."""
    mask = img == idx
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    crop = mask[int(rows[0]) : int(rows[-1]) + 1, int(cols[0]) : int(cols[-1]) + 1]
    return int(ndimage.binary_erosion(crop, structure=_EIGHT).sum())


def _weather(img: Plane, totals: NDArray[np.intp], voc: EntityVocabulary) -> str | None:
    """The weather from the tone of the clouds (each weather but clear has its own), counted
    by core pixels so that a lossy copy's stray edge pixels do not make a cloud."""
    best, best_n = "clear", S.MIN_CLOUD - 1
    for weather, tone in S.CLOUD_TONE.items():
        idx = S.INDEX[f"fx:{tone}"]
        if totals[idx] > best_n:
            n = _core(img, idx)
            if n > best_n:
                best, best_n = weather, n
    return best if best in voc.weathers else None


def extract(
    image: ImageInput, vocab: EntityVocabulary, counts: NDArray[np.intp] | None = None
) -> DetectedState:
    """Read people, objects and environment from one image (see the module docstring).
    ``counts``: the index plane's pixels per index when the caller has them already."""
    img = load_indices(image)
    totals = index_counts(img) if counts is None else counts
    people = [
        read_person(img, cx, y0, skin, vocab) for cx, y0, skin in find_heads(img, totals, vocab)
    ]
    objects = find_objects(img, totals, people, vocab)
    return DetectedState(
        people=tuple(people),
        objects=tuple(objects),
        location=_argmax(totals, "ground", vocab.locations, 1000),
        time=_argmax(totals, "sky", vocab.times, 100),
        weather=_weather(img, totals, vocab),
    )
