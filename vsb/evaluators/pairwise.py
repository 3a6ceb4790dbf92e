"""Pairwise pixel consistency: colour-histogram intersection between consecutive frames.

Globally and on the figure band (the rows where figures stand). Model-agnostic and
deliberately weak: a continuous signal for judge validation, 1.0 = identical histograms.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from vsb.evaluators import style
from vsb.evaluators.decode import load_indices


def _hist(plane: NDArray[np.uint8]) -> NDArray[np.float64]:
    h = np.bincount(plane.ravel(), minlength=256).astype(np.float64)
    total = h.sum()
    return h / total if total else h


def intersection(a: NDArray[np.uint8], b: NDArray[np.uint8]) -> float:
    """Histogram intersection of two index planes, in [0, 1]."""
    return float(np.minimum(_hist(a), _hist(b)).sum())


def pairwise_scores(prev: Any, cur: Any) -> dict[str, float]:
    """``pairwise_global`` and ``pairwise_band`` between two frames (any image input)."""
    a, b = load_indices(prev), load_indices(cur)
    r0, r1 = style.BAND
    return {
        "pairwise_global": intersection(a, b),
        "pairwise_band": intersection(a[r0:r1], b[r0:r1]),
    }
