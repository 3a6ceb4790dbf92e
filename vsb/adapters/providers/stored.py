"""Stored samples: images generated elsewhere, served from a samples directory.

``stored:SOURCE`` serves ``<root>/<SOURCE>/<condition>/<story_id>/scene_<kk>.png`` (the run
directory's own ``images/`` layout, so a run's images can be served back as a model);
``--samples DIR`` gives the root, and several sources may run side by side, each named
after the model that made its images (records, scores and the leaderboard say
``stored:SOURCE``). The adapter is privileged — it needs the story id, scene and condition
the request carries — but has no oracle (its images were not simulated). ``source`` and
``sample_sha256`` (the sha256 of the file served) are request parameters, so the cache is
keyed by the sample's bytes: two sources never share an entry, and a new file under an old
name (another ``--samples`` folder) is never served an old image.

A missing file is an ``AdapterError`` naming the path; so is a sample reached through a
link that leads out of the samples directory, one over ``MAX_BYTES``, one that does not
decode in full (``to_png`` decodes every pixel: scrambled data with correct CRCs, a text
file), and an image over the pixel cap or a decompression bomb: per-image errors, never an
aborted run.
One file serves every request that is the same: where ``<condition>/<story>/scene_<kk>.png``
is missing, the sample of the same story and scene under another condition folder of SOURCE is
served if that condition sends the same request (scene 1 under every condition; a context
that equals another's), as ``vsb suite prompts`` marks such rows (``same_as``): an outside
pipeline makes each distinct image once (issue #36).

Serving a sample costs nothing: its records and ledger rows say 0.0, fresh or from the
cache (what the images cost to make elsewhere is not vsb's to know; the price list names no
``stored:`` model, so the model card's regeneration price stays unknown).

``layout="vinabench"`` (``vsb run --layout vinabench``) serves a folder as VinaBench's
inference writes it instead: ``<root>/<SOURCE>/<index>_<tid>.jpg``, ``index`` VinaBench's
index of the sample (``vsb.story.vinabench``; a story imported from VinaBench's files has it
as its id, sanitised), ``tid`` the scene from 0; one image per scene, served under every
condition. ``layout`` is then a request parameter (the cache tells the layouts apart).

Without a directory and a source the model cannot run and is skipped (``CredentialMissing``,
the runner's skip-and-report path). The bare name ``stored`` with ``source=`` is the older
spelling of ``stored:SOURCE``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from vsb.adapters.base import (
    GenerationRequest,
    GenerationResult,
    ImageModelAdapter,
    Privileged,
)
from vsb.adapters.providers._http import MAX_BYTES, to_png
from vsb.conditions import get_condition, is_condition
from vsb.errors import AdapterError, CredentialMissing, InputError
from vsb.fsio import sha256_hex
from vsb.story.models import Story
from vsb.story.vinabench import story_id_of

#: Sample folder layouts: vsb's own (a run's ``images/``) and VinaBench's inference output.
LAYOUTS = ("vsb", "vinabench")
_VINA_FILE = re.compile(r"^(?P<index>.+)_(?P<tid>\d+)\.(?:jpe?g|png|webp)$", re.IGNORECASE)


def check_source(source: str) -> str:
    """``source`` if it is one plain folder name (``InputError`` otherwise)."""
    if not source or source in (".", "..") or any(c in source for c in "/\\\0"):
        raise InputError(f"stored:{source}: SOURCE must be one folder name of --samples DIR")
    return source


class StoredSamples(ImageModelAdapter):
    """Serves ``<root>/<source>/…`` images; ``source`` names the model that made them."""

    privileged = True
    process_safe = True
    oracle = False
    version = "1"

    def __init__(
        self, root: str | Path | None = None, source: str | None = None, layout: str = "vsb"
    ) -> None:
        self.root = Path(root) if root is not None else None
        self.source = check_source(source) if source else None
        self.name = f"stored:{source}" if source else "stored"
        if layout not in LAYOUTS:
            raise InputError(f"unknown samples layout {layout!r}; layouts: {', '.join(LAYOUTS)}")
        self.layout = layout
        self._vina: dict[tuple[str, int], list[Path]] | None = None

    def preflight(self) -> None:
        if self.root is None or not self.source:
            raise CredentialMissing(
                f"model {self.name!r} needs a samples directory (--samples DIR) and a source "
                "(--model stored:SOURCE)"
            )

    def parameters(self) -> dict[str, Any]:
        return {"source": self.source, **({"layout": self.layout} if self.layout != "vsb" else {})}

    def path_for(self, condition: str, story_id: str, scene: int) -> Path:
        """Where the image of one (condition, story, scene) is stored."""
        self.preflight()
        assert self.root is not None and self.source
        if self.layout == "vinabench":
            return self._vinabench_path(story_id, scene)
        return self.root / sample_path(self.source, condition, story_id, scene)

    def _vinabench_path(self, story_id: str, scene: int) -> Path:
        """``<index>_<tid>.jpg`` of the story's index (``story_id_of(index) == story_id``)."""
        assert self.root is not None and self.source
        folder = self.root / self.source
        if self._vina is None:
            found: dict[tuple[str, int], list[Path]] = {}
            names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
            for name in names:
                m = _VINA_FILE.match(name)
                if m is not None:
                    key = (story_id_of(m["index"]), int(m["tid"]))
                    found.setdefault(key, []).append(folder / name)
            self._vina = found
        paths = self._vina.get((story_id, scene - 1), [])
        if len(paths) > 1:
            raise AdapterError(
                f"{self.name}: {', '.join(p.name for p in paths)} all serve story {story_id} "
                f"scene {scene}: keep one"
            )
        return paths[0] if paths else folder / f"{story_id}_{scene - 1}.jpg"

    def serves(self, p: Privileged) -> Path:
        """The file that serves request ``p``: its own path, else the same story and scene
        under another condition folder whose request is the same (``same_request``)."""
        own = self.path_for(p.condition, p.story.id, p.scene)
        if own.exists() or own.is_symlink() or self.layout != "vsb":
            return own
        assert self.root is not None and self.source
        try:
            folders = sorted(d.name for d in (self.root / self.source).iterdir() if d.is_dir())
        except OSError:
            return own
        for other in folders:
            if other == p.condition or not is_condition(other):
                continue
            path = self.path_for(other, p.story.id, p.scene)
            if (path.exists() or path.is_symlink()) and same_request(
                p.story, p.scene, p.condition, other
            ):
                return path
        return own

    def request_parameters(
        self, parameters: dict[str, Any], privileged: Privileged | None
    ) -> dict[str, Any]:
        """``parameters`` plus ``sample_sha256``, the sha256 of the file this request serves
        (None when it cannot be read; ``generate`` then says why): the cache is keyed by the
        sample's bytes, never by its name (issue #22)."""
        if privileged is None:
            return parameters
        path = self.serves(privileged)
        try:
            digest: str | None = sha256_hex(self._read(path))
        except AdapterError:
            digest = None
        return {**parameters, "sample_sha256": digest}

    def _read(self, path: Path) -> bytes:
        """The bytes of the sample at ``path``; ``AdapterError`` if it cannot be served."""
        assert self.root is not None
        try:
            real = path.resolve(strict=True)
            if not real.is_relative_to(self.root.resolve(strict=True)):
                raise AdapterError(
                    f"{self.name}: {path} leads out of the samples directory ({real}): refused"
                )
            if not real.is_file():
                raise AdapterError(f"{self.name}: {path} is not a file")
            if real.stat().st_size > MAX_BYTES:
                raise AdapterError(f"{self.name}: {path} is over {MAX_BYTES} bytes")
            return real.read_bytes()
        except FileNotFoundError as err:
            raise AdapterError(f"{self.name}: no stored sample at {path}") from err
        except (OSError, RuntimeError) as err:  # RuntimeError: a symlink loop
            raise AdapterError(f"{self.name}: cannot read {path}: {err}") from err

    def generate(self, request: GenerationRequest) -> GenerationResult:
        p = request.privileged
        if p is None:
            raise AdapterError(f"{self.name}: needs the story, scene and condition (privileged)")
        t0 = time.perf_counter()
        path = self.serves(p)
        raw = self._read(path)
        want = request.parameters.get("sample_sha256")
        if want is not None and sha256_hex(raw) != want:
            raise AdapterError(f"{self.name}: {path} changed while the run read it; run again")
        meta = {
            "provider": "stored",
            "model": self.source,
            "path": str(path),
            "latency_s": round(time.perf_counter() - t0, 6),
        }
        # to_png decodes every pixel: a file that only looks like an image is refused here,
        # per image, rather than recorded and found by ``vsb evaluate`` (issue #23)
        # Serving a file costs nothing (cost 0.0, as for simulators and Python functions):
        # a record says the same whether its image was served now or came from the cache,
        # so a release rebuilt in place keeps its bytes (issue 45).
        png = to_png(raw, f"{self.name} {path}")
        return GenerationResult(png=png, metadata=meta, cost_usd=0.0)


def sample_path(source: str, condition: str, story_id: str, scene: int) -> str:
    """Where ``stored:SOURCE`` looks for one image, relative to the samples directory."""
    return f"{source}/{condition}/{story_id}/scene_{scene:02d}.png"


def same_request(story: Story, scene: int, a: str, b: str) -> bool:
    """Whether conditions ``a`` and ``b`` send the same request for ``scene`` of ``story``:
    the same context text and JSON, and no previous frame (a frame differs by condition)."""
    try:
        ca, cb = get_condition(a).context(story, scene), get_condition(b).context(story, scene)
    except InputError:
        return False
    if ca.reference_image or cb.reference_image:
        return False
    return (ca.text, ca.data) == (cb.text, cb.data)


def stored_adapter(
    source: str, *, root: str | Path | None = None, layout: str = "vsb"
) -> StoredSamples:
    """``stored:SOURCE`` (the registry's pattern): the samples of ``SOURCE`` under ``root``,
    laid out as a run's ``images/`` or (``layout="vinabench"``) as VinaBench's inference."""
    return StoredSamples(root, check_source(source), layout)


def pattern_info() -> dict[str, Any]:
    """How ``vsb models`` lists the ``stored:`` family."""
    return {
        "pattern": "stored:SOURCE",
        "env_var": None,
        "needs": "--samples DIR",
        "image_input": "no",
        "about": "images made elsewhere: DIR/SOURCE/<condition>/<story>/scene_<kk>.png",
    }
