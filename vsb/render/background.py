"""Backgrounds: ground colour + a prop per location, sky colour by time of day, weather marks.

Outdoors the sky fills the rows above ``HORIZON``; indoors a wall does, with a window whose
inside shows the sky colour and the weather. Weather: clouds (cloudy), dark clouds and rain
lines (rainy), pale clouds and snow dots (snowy); a clear night shows stars.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vsb.render import layout as L
from vsb.render.palette import INDEX, fx
from vsb.render.shapes import Plane, disc_mask, paste_mask, rect
from vsb.story import vocab

_SUN = disc_mask(36, 36, 18, 18, 18, 18)
_SUN_SMALL = disc_mask(18, 18, 9, 9, 9, 9)
_CLOUD = disc_mask(90, 34, 45, 17, 45, 17)
_CLOUD_SMALL = disc_mask(44, 18, 22, 9, 22, 9)
_CANOPY = disc_mask(80, 80, 40, 40, 40, 40)

#: Sun column/row as fractions of the sky view, by time of day (night shows the moon).
_SUN_AT = {
    "morning": (0.15, 0.45),
    "noon": (0.5, 0.18),
    "afternoon": (0.78, 0.3),
    "evening": (0.88, 0.62),
    "night": (0.8, 0.25),
}


def draw_sky(view: Plane, time: str, weather: str, rng_u: NDArray[np.float64]) -> None:
    """Fill a sky view (the outdoor sky or a window's inside) and draw sun/moon and weather.

    ``rng_u`` holds 160 uniforms in [0, 1) drawn by the caller (positions of marks)."""
    h, w = view.shape
    view[:] = INDEX[f"sky:{time}"]
    small = w < 200
    fx_, fy = _SUN_AT[time]
    sx = int(fx_ * w + (rng_u[0] - 0.5) * w * 0.08)
    sy = int(fy * h)
    sun = _SUN_SMALL if small else _SUN
    r = sun.shape[0] // 2
    if weather in ("clear", "cloudy"):
        if time == "night":
            paste_mask(view, sun, sx - r, sy - r, fx("moon"))
            paste_mask(view, sun, sx - r + r // 2, sy - r - r // 3, INDEX["sky:night"])
        else:
            tone = fx("sunset_sun") if time == "evening" else fx("sun")
            paste_mask(view, sun, sx - r, sy - r, tone)
    if weather == "clear" and time == "night":
        n = 12 if small else 40
        ys = (rng_u[10 : 10 + n] * h * 0.8).astype(np.intp)
        xs = (rng_u[60 : 60 + n] * w).astype(np.intp)
        view[ys, xs] = fx("star")
        view[np.minimum(ys + 1, h - 1), xs] = fx("star")
    if weather == "clear":
        return
    cloud_tone = {"cloudy": "cloud", "rainy": "rain_cloud", "snowy": "snow_cloud"}[weather]
    cloud = _CLOUD_SMALL if small else _CLOUD
    cw = cloud.shape[1]
    n_clouds = 2 if small else 4
    for i in range(n_clouds):
        x = int((i + rng_u[1 + i] * 0.6) * w / n_clouds) - cw // 4
        y = int(rng_u[5 + i] * h * 0.25)
        paste_mask(view, cloud, x, y, fx(cloud_tone))
    if weather == "rainy":
        n = 16 if small else 70
        x0 = (rng_u[10 : 10 + n] * w).astype(np.intp)
        y0 = (0.2 * h + rng_u[90 : 90 + n] * h * 0.65).astype(np.intp)
        t = np.arange(10)
        ys = np.clip(y0[:, None] + t[None, :], 0, h - 1)
        xs = np.clip(x0[:, None] - t[None, :] // 3, 0, w - 1)
        view[ys, xs] = fx("rain")
    elif weather == "snowy":
        n = 16 if small else 70
        ys = (0.15 * h + rng_u[10 : 10 + n] * h * 0.8).astype(np.intp)
        xs = (rng_u[90 : 90 + n] * w).astype(np.intp)
        for dy in (0, 1, 2):
            yy = np.minimum(ys + dy, h - 1)
            view[yy, xs] = fx("snow")
            view[yy, np.minimum(xs + 1, w - 1)] = fx("snow")
            view[yy, np.minimum(xs + 2, w - 1)] = fx("snow")


def _tree(img: Plane, x: int, top: int) -> None:
    rect(img, x - 7, x + 7, top + 60, L.HORIZON + 14, fx("trunk"))
    paste_mask(img, _CANOPY, x - 40, top, fx("foliage"))


def _pine_mask(height: int) -> NDArray[np.bool_]:
    m = np.zeros((height, 48), dtype=bool)
    for i in range(height):
        half = 2 + i * 22 // height
        m[i, 24 - half : 24 + half] = True
    return m


_PINES = {h: _pine_mask(h) for h in (150, 175, 200)}


def _pine(img: Plane, x: int, base: int, height: int) -> None:
    rect(img, x - 4, x + 4, base - 10, base + 6, fx("trunk"))
    paste_mask(img, _PINES[height], x - 24, base - 10 - height, fx("pine"))


def _shelf(img: Plane, x0: int, x1: int, dx: int) -> None:
    rect(img, x0, x1, 40, L.HORIZON, fx("shelf"))
    spines = (fx("spine_a"), fx("spine_b"), fx("spine_c"))
    for row in range(4):
        y = 48 + row * 58
        for j, x in enumerate(range(x0 + 6, x1 - 10, 12)):
            rect(img, x, x + 9, y + (j + row + dx) % 3 * 4, y + 48, spines[(j + row) % 3])


def draw_prop(img: Plane, location: str, dx: int) -> None:
    """The location's prop, shifted by ``dx`` columns (jitter)."""
    match location:
        case "park":
            _tree(img, 34 + dx, 150)
            _tree(img, 478 + dx, 160)
        case "beach":
            rect(img, 0, L.W, L.HORIZON - 34, L.HORIZON, fx("sea"))
            rect(img, 0, L.W, L.HORIZON - 4, L.HORIZON, fx("foam"))
            rect(img, 440 + dx, 500 + dx, L.HORIZON + 10, L.HORIZON + 40, fx("sandcastle"))
            rect(img, 452 + dx, 488 + dx, L.HORIZON - 10, L.HORIZON + 10, fx("sandcastle"))
        case "forest":
            for i, x in enumerate((20, 110, 200, 300, 400, 492)):
                _pine(img, x + dx, L.HORIZON + 4, 150 + (i % 3) * 25)
        case "street":
            rect(img, 0, L.W, L.HORIZON + 20, L.HORIZON + 60, fx("road"))
            for x in range(dx % 60 - 60, L.W, 60):
                rect(img, x, x + 30, L.HORIZON + 38, L.HORIZON + 42, fx("road_line"))
            rect(img, 490 + dx // 2, 498 + dx // 2, 120, L.HORIZON + 20, fx("lamp_post"))
            rect(img, 480 + dx // 2, 508 + dx // 2, 108, 124, fx("lamp_head"))
        case "garden":
            rect(img, 0, L.W, L.HORIZON - 40, L.HORIZON + 4, fx("hedge"))
            for x in range(12 + dx % 40, L.W, 40):
                rect(img, x, x + 8, L.HORIZON - 32, L.HORIZON - 24, fx("bloom"))
        case "kitchen":
            rect(img, 0, 150 + dx, 200, L.HORIZON, fx("counter"))
            rect(img, 20 + dx, 110 + dx, 192, 200, fx("stove"))
            rect(img, 20, 140 + dx, 40, 100, fx("counter"))
        case "library":
            _shelf(img, 0, 120 + dx, dx)
            _shelf(img, 400 + dx, L.W, dx)
        case "classroom":
            rect(img, 340 + dx // 2, 500, 50, 150, fx("blackboard"))
            for i in range(3):
                y = 70 + i * 24
                rect(img, 356 + dx // 2, 470 - i * 30, y, y + 3, fx("chalk"))
        case "studio":
            rect(img, 424 + dx, 430 + dx, 140, L.HORIZON + 30, fx("easel"))
            rect(img, 470 + dx, 476 + dx, 140, L.HORIZON + 30, fx("easel"))
            rect(img, 410 + dx, 492 + dx, 130, 220, fx("canvas"))
        case _:
            raise KeyError(f"unknown location {location!r}")


def draw_background(
    img: Plane, location: str, time: str, weather: str, rng: np.random.Generator
) -> None:
    """Ground/floor, sky or wall with window, weather and the location prop."""
    u = rng.random(160)
    dx = int(rng.integers(-L.JITTER_PROP_X, L.JITTER_PROP_X + 1))
    loc = vocab.LOCATIONS[location]
    img[L.HORIZON :] = INDEX[f"ground:{location}"]
    if loc.indoor:
        img[: L.HORIZON] = fx("wall")
        img[L.HORIZON - 4 : L.HORIZON] = fx("baseboard")
        x0, x1, y0, y1 = L.WINDOW
        img[y0:y1, x0:x1] = fx("window_frame")
        f = L.WINDOW_FRAME
        draw_prop(img, location, dx)
        draw_sky(img[y0 + f : y1 - f, x0 + f : x1 - f], time, weather, u)
        img[y0:y1, (x0 + x1) // 2 - 1 : (x0 + x1) // 2 + 1] = fx("window_frame")
        img[(y0 + y1) // 2 - 1 : (y0 + y1) // 2 + 1, x0:x1] = fx("window_frame")
    else:
        draw_sky(img[: L.HORIZON], time, weather, u)
        draw_prop(img, location, dx)
