"""Where things go on the 512×512 canvas (the drawing conventions the extractor is trained on).

All figure offsets are relative to a figure's anchor ``(cx, y0)``: ``cx`` is the head's
centre column and ``y0`` the head's top row. Boxes are half-open ``(x0, x1, y0, y1)``.
"""

from __future__ import annotations

W = H = 512
#: First row of the ground (outdoors) or the floor (indoors).
HORIZON = 280
#: Rows where figures stand (the figure band used by the pairwise signal).
BAND = (168, 450)
#: Ground objects lie in rows [ZONE_TOP, H).
ZONE_TOP = 452
#: Bottom row (exclusive) of a ground object's sprite.
ZONE_BASE = 506

#: Feet row (exclusive) of every figure; head-top rows follow from the pose.
FEET_Y = 444
STANDING_HEIGHT = 196
SITTING_HEIGHT = 176

#: Jitter ranges (inclusive) drawn per scene from the seed.
JITTER_X = 8
JITTER_Y = 3
JITTER_OBJ_X = 6
JITTER_PROP_X = 12

#: Indoor window (frame outside, sky inside).
WINDOW = (196, 316, 36, 156)
WINDOW_FRAME = 6

# --- figure geometry (relative to the anchor) -----------------------------------------------
HEAD = (-20, 20, 0, 44)
HAIR_CAP_TOP = (-16, 16, -8, -4)
HAIR_CAP = (-22, 22, -4, 8)
BUN = (-9, 9, -22, -4)
LONG_LEFT = (-27, -20, 0, 64)
LONG_RIGHT = (20, 27, 0, 64)
PONY_TIE = (22, 30, 4, 12)
PONY_TAIL = (26, 36, 10, 54)
EYES = ((-11, -6, 18, 23), (6, 11, 18, 23))
MOUTH = (-5, 5, 33, 35)
GLASSES = ((-14, -3, 15, 26), (3, 14, 15, 26), (-3, 3, 18, 20))
HAT_BRIM = (-28, 28, -14, -8)
HAT_CROWN = (-16, 16, -32, -14)
#: Hat lift over a bun (the hat sits on top of it).
HAT_LIFT_BUN = 12
SCARF = ((-22, 22, 42, 52), (6, 16, 52, 86))
BAG = ((-56, -36, 84, 112), (-54, -50, 70, 84), (-42, -38, 70, 84), (-54, -38, 66, 70))
TORSO = (-24, 24, 44, 120)
ARM_DOWN_LEFT = (-34, -24, 48, 112)
ARM_DOWN_RIGHT = (24, 34, 48, 112)
ARM_UP_LEFT = ((-48, -38, -20, 56), (-38, -24, 46, 56))
ARM_UP_RIGHT = ((38, 48, -20, 56), (24, 38, 46, 56))
HIPS = (-20, 20, 120, 130)
LEGS = ((-20, -3, 120, 190), (3, 20, 120, 190))
SHOES = ((-22, -2, 190, 196), (2, 22, 190, 196))
STOOL = ((-26, 18, 136, 144), (-24, -20, 144, 176), (12, 16, 144, 176))
THIGHS = (-20, 44, 120, 138)
SHINS = (28, 44, 138, 170)
SIT_SHOES = (28, 50, 170, 176)
#: Centre of a held object: arms down (standing, sitting, waving) / raised (cheering).
HAND_DOWN = (50, 100)
HAND_UP = (43, -52)
#: Side of the square box a held or ground object is drawn in.
OBJECT_BOX = 44
#: Width of one counted item and the spacing between item centres.
ITEM_W = 14
ITEM_H = 20
ITEM_STEP = 20


def figure_centres(n: int) -> list[float]:
    """Un-jittered centre columns of ``n`` figures standing left to right."""
    return [W * (i + 0.5) / n for i in range(n)]


def object_slots(n: int) -> list[float]:
    """Un-jittered centre columns of the ground-object slots of a world with ``n`` objects."""
    return [W * (i + 0.5) / n for i in range(n)]
