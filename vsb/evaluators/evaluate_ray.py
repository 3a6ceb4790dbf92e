"""``vsb evaluate RUN --executor ray [--ray-address ADDR]``: evaluation on a Ray cluster.

The same work as the local executor, in the same order, so the rows are the same bytes:

- the per-story evaluators (rules, pairwise…) run as one Ray task per story (its
  sequences under every model and condition, so that each distinct image is decoded and
  extracted once) with one CPU; the driver reads the images and ships their bytes with
  the task (workers need no shared filesystem, and get no on-disk extraction cache), and
  gathers the results in task order;
- the embedding evaluators (clip, dino) load their model once in a Ray actor — one GPU
  when ``--device cuda``, else one CPU — which the driver's embedding loop calls with the
  images and texts its cache lacks; the cache stays on the driver. The worker resolves the
  same ``--clip-model`` / ``--dino-model`` name itself and must find the same weights (the
  same hub snapshot, or a directory of identical contents), else the run stops;
- the VLM judge stays on the driver: it is HTTP calls to a judge server, wherever that runs.

Ray retries a task whose worker dies (``max_retries``); an error in a task (an image that
does not decode) comes back as the same one-line error as locally.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vsb.errors import InputError, VsbError
from vsb.evaluators.embed.cache import EmbeddingCache
from vsb.evaluators.embed.models import Weights, load_encoder, locate_weights
from vsb.story.models import Story

MAX_RETRIES = 3


def _get(ray: Any, ref: Any) -> Any:
    """``ray.get``, with a vsb error raised in a task re-raised as itself."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        cause = getattr(err, "cause", None)
        if isinstance(cause, VsbError):
            raise cause from None
        raise


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read image: {err.strerror or err}", file=path) from None


def run_tasks(
    ray: Any,
    stories: dict[str, Story],
    jobs: Sequence[tuple[Sequence[Any], tuple[Any, ...], str | None]],
    evaluate: Callable[..., Any],
    add: Callable[[Any, Any], None],
) -> None:
    """``evaluate(story, names, tasks, image_bytes, cache_dir)`` of every
    ``(tasks, names, cache_dir)`` job (one story's sequences) on the cluster; ``add``
    receives ``(job, result)`` in job order."""
    remote = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(evaluate)
    sids = dict.fromkeys(ts[0].story_id for ts, _, _ in jobs)
    story_refs = {sid: ray.put(stories[sid]) for sid in sids}
    refs = [
        remote.remote(
            story_refs[ts[0].story_id],
            names,
            ts,
            [[_read(p) for _, p in t.images] for t in ts],
            cache_dir,
        )
        for ts, names, cache_dir in jobs
    ]
    for job, ref in zip(jobs, refs, strict=True):
        add(job, _get(ray, ref))


class EncoderActor:
    """A Ray actor holding one loaded embedding model."""

    def __init__(self, kind: str, name: str, device: str) -> None:
        weights = locate_weights(kind, name)  # type: ignore[arg-type]
        with tempfile.TemporaryDirectory(prefix="vsb-embed-") as tmp, EmbeddingCache(tmp) as c:
            self.encoder = load_encoder(weights, device, c.dir_digest)

    def ident(self) -> str:
        return self.encoder.ident

    def images(self, arrays: list[np.ndarray]) -> np.ndarray:
        return self.encoder.images([Image.fromarray(a) for a in arrays])

    def texts(self, texts: list[str]) -> np.ndarray:
        return self.encoder.texts(texts)


class RemoteEncoder:
    """The driver's side of an ``EncoderActor``: what ``run_embeddings`` calls on an
    encoder. Images travel as RGB arrays (lossless), preprocessed on the worker."""

    def __init__(self, ray: Any, actor: Any, kind: str, ident: str) -> None:
        self.ray, self.actor, self.kind, self.ident = ray, actor, kind, ident

    def image_arrays(self, images: Sequence[Image.Image]) -> list[np.ndarray]:
        return [np.asarray(im.convert("RGB")) for im in images]

    def to_inputs(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        return arrays

    def image_vectors(self, arrays: list[np.ndarray]) -> np.ndarray:
        return np.asarray(_get(self.ray, self.actor.images.remote(arrays)))

    def texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(_get(self.ray, self.actor.texts.remote(list(texts))))


def remote_loader(ray: Any) -> Callable[[Weights, str, Callable[[Path], str]], RemoteEncoder]:
    """An encoder loader for ``run_embeddings`` that loads the model in a Ray actor."""

    def load(weights: Weights, device: str, dir_ident: Callable[[Path], str]) -> RemoteEncoder:
        ident = weights.hub_ident or f"dir:{dir_ident(weights.path)}"
        gpu = device.startswith("cuda")
        actor_cls = ray.remote(EncoderActor).options(
            num_gpus=1 if gpu else 0, num_cpus=0 if gpu else 1, max_restarts=MAX_RETRIES
        )
        actor = actor_cls.remote(weights.kind, weights.name, device)
        theirs = _get(ray, actor.ident.remote())
        if theirs != ident:
            raise InputError(
                f"--executor ray: the worker's {weights.kind} weights for {weights.name!r} "
                f"({theirs}) differ from the driver's ({ident}); give every machine the same"
            )
        return RemoteEncoder(ray, actor, weights.kind, ident)

    return load
