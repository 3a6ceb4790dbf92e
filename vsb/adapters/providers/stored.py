"""Stored samples: images generated elsewhere, served from a fixtures directory.

Layout: ``<root>/<source>/<condition>/<story_id>/scene_<kk>.png`` (the run directory's own
``images/`` layout, so a run's images can be served back as a model). The adapter is
privileged — it needs the story id, scene and condition the request carries — and its
``source`` is a request parameter, so two sources never share a cache entry. A missing
file raises ``AdapterError`` naming the path. Without a directory and source the model
cannot run and is skipped (``CredentialMissing``, the runner's skip-and-report path).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter
from vsb.adapters.providers._http import to_png
from vsb.adapters.registry import ADAPTERS
from vsb.errors import AdapterError, CredentialMissing


class StoredSamples(ImageModelAdapter):
    """Serves ``<root>/<source>/…`` images; ``source`` names the model that made them."""

    privileged = True
    process_safe = True
    version = "1"

    def __init__(self, root: str | Path | None = None, source: str | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self.source = source
        self.name = f"stored:{source}" if source else "stored"

    def preflight(self) -> None:
        if self.root is None or not self.source:
            raise CredentialMissing(
                "model 'stored' needs a samples directory and a source model "
                "(get_adapter('stored', root=DIR, source=MODEL))"
            )

    def parameters(self) -> dict[str, Any]:
        return {"source": self.source}

    def path_for(self, condition: str, story_id: str, scene: int) -> Path:
        """Where the image of one (condition, story, scene) is stored."""
        self.preflight()
        assert self.root is not None and self.source
        return self.root / self.source / condition / story_id / f"scene_{scene:02d}.png"

    def generate(self, request: GenerationRequest) -> GenerationResult:
        p = request.privileged
        if p is None:
            raise AdapterError(f"{self.name}: needs the story, scene and condition (privileged)")
        t0 = time.perf_counter()
        path = self.path_for(p.condition, p.story.id, p.scene)
        try:
            raw = path.read_bytes()
        except FileNotFoundError as err:
            raise AdapterError(f"{self.name}: no stored sample at {path}") from err
        except OSError as err:
            raise AdapterError(f"{self.name}: cannot read {path}: {err}") from err
        meta = {
            "provider": "stored",
            "model": self.source,
            "path": str(path),
            "latency_s": round(time.perf_counter() - t0, 6),
        }
        return GenerationResult(png=to_png(raw, f"{self.name} {path}"), metadata=meta)


ADAPTERS.add("stored", StoredSamples)
