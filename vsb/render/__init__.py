"""The flat-colour renderer: a ``SceneState`` in, a 512×512 palette image out.

``render_indices(state, seed=...)`` gives the palette-index array, ``render_png`` the
indexed PNG, ``PALETTE`` the RGB triple of each index. One renderer serves every simulator.
"""

from __future__ import annotations

from vsb.render.palette import NAMES, PALETTE
from vsb.render.scene import encode_png, render_indices, render_png

__all__ = ["NAMES", "PALETTE", "encode_png", "render_indices", "render_png"]
