"""Reference metrics against gold images: FID and CLIP-I, as VinaBench computes them.

VinaBench (``MM-Interleaved/calculate_fid_clipi.py``) pairs each generated image with the gold
image of the same sample and scene, in one list per portion and model, and reports

* **FID**: the Fréchet distance between Gaussians fitted to the Inception pool3 features of all
  gold images and of all generated images (every pair counted, duplicates included; mean and
  ``np.cov`` with n - 1), with pytorch-fid's preprocessing at 64 px (``vsb.evaluators.embed.
  inception``);
* **CLIP-I**: the mean over pairs of the cosine between the CLIP ViT-L/14 image embeddings
  (``get_image_features``: the projected embedding, L2-normalised) of the generated image and
  of its gold image, each through CLIP's own image processor.

Here ``frechet_distance`` / ``fid`` / ``pair_cosines`` work on arrays; ``image_features``,
``inception_features`` and ``clip_i`` take image paths and a loaded encoder, and cache each
distinct image's vector in ``CACHE/embeddings.sqlite`` by (model identity, file sha256);
``reference_scores`` gives both metrics of one list of pairs.

How vsb differs from VinaBench's scripts: see docs/embeddings.md (its torch-fidelity network
for pytorch-fid's torchvision one; ``fid`` of fewer than two images is an error, and
``reference_scores`` gives NaN, where numpy would warn; a singular product is retried with
``eps`` on the diagonals as pytorch-fid does, without its print).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vsb.errors import InputError
from vsb.evaluators.embed.cache import Embedder, EmbeddingCache
from vsb.evaluators.embed.models import load_encoder, locate_weights, require_extra

Array = NDArray[np.float64]
#: the CLIP VinaBench's CLIP-I uses (``calculate_clip_sim_i2i``'s default)
CLIP_I_MODEL = "openai/clip-vit-large-patch14"
#: how far the diagonal of sqrtm(Σ1 Σ2) may be from real before it is an error (pytorch-fid's)
IMAGINARY_TOLERANCE = 1e-3


def frechet_distance(mu1: Any, sigma1: Any, mu2: Any, sigma2: Any, eps: float = 1e-6) -> float:
    """The squared Fréchet distance between N(mu1, sigma1) and N(mu2, sigma2):
    ``|mu1 - mu2|² + Tr(sigma1) + Tr(sigma2) - 2 Tr(sqrtm(sigma1 sigma2))``.

    ``scipy.linalg.sqrtm`` of the product, as the FID tools compute it (its warning about a
    singular product silenced, as their ``disp=False`` did): where the root is not finite,
    ``eps`` is added to both diagonals and it is taken again; an imaginary part from
    rounding is dropped, one on the diagonal over ``IMAGINARY_TOLERANCE`` is a
    ``ValueError``."""
    from scipy import linalg

    m1 = np.atleast_1d(np.asarray(mu1, dtype=np.float64))
    m2 = np.atleast_1d(np.asarray(mu2, dtype=np.float64))
    s1 = np.atleast_2d(np.asarray(sigma1, dtype=np.float64))
    s2 = np.atleast_2d(np.asarray(sigma2, dtype=np.float64))
    if m1.shape != m2.shape or m1.ndim != 1:
        raise ValueError(f"the means differ in shape: {m1.shape} and {m2.shape}")
    if s1.shape != s2.shape or s1.shape != (m1.size, m1.size):
        raise ValueError(f"covariances {s1.shape} and {s2.shape} do not fit means {m1.shape}")
    with warnings.catch_warnings():  # a singular product is handled here, as disp=False did
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        root = linalg.sqrtm(s1 @ s2)
        if not np.isfinite(root).all():
            shift = np.eye(m1.size) * eps
            root = linalg.sqrtm((s1 + shift) @ (s2 + shift))
    if np.iscomplexobj(root):
        if not np.allclose(np.diagonal(root).imag, 0, atol=IMAGINARY_TOLERANCE):
            worst = float(np.max(np.abs(root.imag)))
            raise ValueError(f"sqrtm(Σ1 Σ2) has an imaginary part of {worst:g}")
        root = root.real
    diff = m1 - m2
    return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2.0 * np.trace(root))


def gaussian_stats(features: Any) -> tuple[Array, Array]:
    """Mean and covariance (rows are samples, n - 1 in the denominator) of ``(n, d)``
    features; ``InputError`` with fewer than two rows (no covariance)."""
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be (n, d), not {x.shape}")
    if x.shape[0] < 2:
        raise InputError(f"FID needs at least 2 images on each side, not {x.shape[0]}")
    return x.mean(axis=0), np.cov(x, rowvar=False)


def fid(gen_features: Any, ref_features: Any, eps: float = 1e-6) -> float:
    """FID between generated and reference features (``(n, d)`` each; the gold images' side
    first in the distance, as VinaBench calls it)."""
    mu_ref, sigma_ref = gaussian_stats(ref_features)
    mu_gen, sigma_gen = gaussian_stats(gen_features)
    return frechet_distance(mu_ref, sigma_ref, mu_gen, sigma_gen, eps)


def pair_cosines(gen_vectors: Any, ref_vectors: Any) -> Array:
    """The cosine of each row of ``gen_vectors`` with the same row of ``ref_vectors``."""
    a = np.asarray(gen_vectors, dtype=np.float64)
    b = np.asarray(ref_vectors, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"paired vectors must have one shape (n, d): {a.shape}, {b.shape}")
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.asarray(np.einsum("ij,ij->i", a, b), dtype=np.float64)


def _sha256(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as err:
        raise InputError(f"cannot read image: {err.strerror}", file=path) from None


def image_features(
    paths: Sequence[str | Path],
    encoder: Any,
    cache: EmbeddingCache,
    batch_size: int = 32,
    progress: Callable[[int], None] = lambda _n: None,
) -> NDArray[np.float32]:
    """``(len(paths), d)`` vectors of the images at ``paths``, in order (a repeated image
    repeated): each distinct image computed once by ``encoder`` (an ``InceptionEncoder`` or
    a CLIP ``Encoder``) and cached by (``encoder.ident``, its bytes' sha256)."""
    names = [str(p) for p in paths]
    shas = {p: _sha256(p) for p in dict.fromkeys(names)}
    by_sha = Embedder(encoder, cache, batch_size, progress).images(shas)
    if not names:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([by_sha[shas[p]] for p in names]).astype(np.float32)


def inception_features(
    paths: Sequence[str | Path], encoder: Any, cache: EmbeddingCache, batch_size: int = 50
) -> NDArray[np.float32]:
    """``(n, 2048)`` pool3 features of the images (``encoder`` from ``load_inception``)."""
    return image_features(paths, encoder, cache, batch_size)


def load_clip_i(cache: EmbeddingCache, name: str = CLIP_I_MODEL, device: str = "cpu") -> Any:
    """The CLIP encoder for CLIP-I (a hub name in the local Hugging Face cache or a model
    directory), loaded as the ``clip`` evaluator loads its model (``pip install 'vsb[embed]'``;
    a directory's digest memoized in ``cache``)."""
    require_extra("CLIP-I")
    return load_encoder(locate_weights("clip", name), device, cache.dir_digest)


def clip_i(
    gen_paths: Sequence[str | Path],
    ref_paths: Sequence[str | Path],
    encoder: Any,
    cache: EmbeddingCache,
    batch_size: int = 32,
) -> Array:
    """The cosine of each generated image's CLIP embedding with its gold image's (pairs in
    order; CLIP-I is their mean)."""
    if len(gen_paths) != len(ref_paths):
        raise ValueError(f"{len(gen_paths)} generated images for {len(ref_paths)} gold ones")
    if not gen_paths:
        return np.zeros(0, dtype=np.float64)
    vectors = image_features([*gen_paths, *ref_paths], encoder, cache, batch_size)
    n = len(gen_paths)
    return pair_cosines(vectors[:n], vectors[n:])


@dataclass(frozen=True)
class ReferenceScores:
    """FID and CLIP-I of one list of (generated, gold) pairs."""

    pairs: int  # the number of (generated, gold) pairs
    fid: float  # Fréchet distance of the Inception features (gold first), NaN with < 2 pairs
    clip_i: float  # mean of ``cosines``
    cosines: tuple[float, ...]  # CLIP image cosine of each pair, in order
    inception: str  # the Inception encoder's identity (weights sha256, preprocessing)
    clip: str  # the CLIP encoder's identity


def reference_scores(
    pairs: Sequence[tuple[str | Path, str | Path]],
    inception: Any,
    clip: Any,
    cache: EmbeddingCache,
    batch_size: int = 32,
) -> ReferenceScores:
    """FID and CLIP-I of ``(generated, gold)`` image paths (one portion of one model, as
    VinaBench reports them)."""
    gen = [g for g, _ in pairs]
    ref = [r for _, r in pairs]
    cos = clip_i(gen, ref, clip, cache, batch_size)
    value = float("nan")
    if len(pairs) >= 2:
        feats = image_features([*gen, *ref], inception, cache, batch_size)
        value = fid(feats[: len(gen)], feats[len(gen) :])
    return ReferenceScores(
        pairs=len(pairs), fid=value, clip_i=float(cos.mean()) if len(cos) else float("nan"),
        cosines=tuple(float(c) for c in cos), inception=inception.ident, clip=clip.ident,
    )  # fmt: skip
