"""For the reference metrics' tests: an exact Fréchet distance of two samples, and a
random-weight FID Inception saved as a weight file (no download, no network).

The network is torch-fidelity's own ``FeatureExtractorInceptionV3``, built with its weight
download replaced by nothing (the outside world faked, not the network): its random
initialisation is saved with ``torch.save`` as a state dict, exactly the kind of file the
published weights are, and ``load_inception(path)`` reads it through the real loading code.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np


def from_samples(a: np.ndarray, b: np.ndarray) -> float:
    """The Fréchet distance between the Gaussians fitted to samples ``a`` and ``b`` (rows,
    covariances with n - 1), through the singular values of A Bᵀ (A, B centred): Tr sqrt(Σa Σb)
    is their sum over sqrt((na - 1)(nb - 1)). No covariance is formed, no matrix square root
    taken, so it stays exact where Σa Σb is singular."""
    x, y = a - a.mean(0), b - b.mean(0)
    c1, c2 = len(a) - 1, len(b) - 1
    diff = a.mean(0) - b.mean(0)
    nuclear = np.linalg.svd(x @ y.T, compute_uv=False).sum() / np.sqrt(c1 * c2)
    return float(diff @ diff + (x**2).sum() / c1 + (y**2).sum() / c2 - 2 * nuclear)


def save_random_inception(out: Path, seed: int = 0) -> Path:
    """The FID Inception with random weights (seeded), as a ``.pth`` state dict at ``out``."""
    import torch

    from vsb.evaluators.embed.inception import _fidelity_class

    cls = _fidelity_class()
    module = __import__(cls.__module__, fromlist=["load_state_dict_from_url"])
    torch.manual_seed(seed)
    with (
        mock.patch.object(module, "load_state_dict_from_url", lambda *_a, **_k: {}),
        mock.patch.object(cls, "load_state_dict", lambda self, *_a, **_k: None),
    ):
        net = cls("inception-v3-compat", ["2048"])
    # He initialisation keeps the signal's scale through the ReLU layers (the library's own
    # initialisation lets it fade, so that every image would give the same features)
    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    torch.save(net.state_dict(), out)
    return out
