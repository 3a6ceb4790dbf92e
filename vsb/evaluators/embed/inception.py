"""The Inception network FID is measured with (``pip install 'vsb[fid]'``), found and loaded.

The network is torch-fidelity's ``FeatureExtractorInceptionV3``: the TensorFlow FID graph's
InceptionV3 (``inception-2015-12-05``) written in plain torch, with the same patched blocks and
the same ported weights as pytorch-fid's ``InceptionV3`` (the file ending ``-6726825d.pth``,
published under two names, below). pytorch-fid, which VinaBench's ``fid_score.py`` copies,
builds its network from torchvision's Inception blocks, and torchvision does not import beside
vsb's torch; torch-fidelity's module needs only torch. Its package ``__init__`` imports
torchvision for other metrics, so ``_fidelity_class`` imports the one module without running
that ``__init__`` (torchvision is never imported).

Preprocessing is VinaBench's (pytorch-fid's ``get_activations`` as VinaBench calls it): the
image resized, shorter side to ``image_size`` (64 there, bicubic) and centre-cropped square,
then scaled to [0, 1], resized to 299 × 299 with torch's bilinear interpolation and mapped to
[-1, 1]; the pool3 features (2048) are the output of the last average pool. ``resize=
"tensorflow"`` takes torch-fidelity's own input path instead (TensorFlow 1's bilinear resize
of the uint8 image, ``(x - 128) / 128``), which reproduces the original TensorFlow FID.

Weights are found, never downloaded: a file given as ``weights``, else one of the published
names in torch's hub cache (``torch.hub.get_dir()/checkpoints``, where torch-fidelity and
pytorch-fid put them), its sha256 checked against the prefix in its name.
"""

from __future__ import annotations

import importlib
import importlib.util
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from vsb.errors import InputError
from vsb.evaluators.embed.models import _torch_device, first_missing
from vsb.fsio import sha256_file

Resize = Literal["pytorch-fid", "tensorflow"]
INSTALL_HINT = (
    "pip install 'vsb[fid]' (or, to keep the torch you have, pip install --no-deps torch-fidelity)"
)
#: the published weight files (the same bytes under two names), name -> where to get it
WEIGHT_FILES: dict[str, str] = {
    "weights-inception-2015-12-05-6726825d.pth": "https://github.com/toshas/torch-fidelity/"
    "releases/download/v0.2.0/weights-inception-2015-12-05-6726825d.pth",
    "pt_inception-2015-12-05-6726825d.pth": "https://github.com/mseitzer/pytorch-fid/"
    "releases/download/fid_weights/pt_inception-2015-12-05-6726825d.pth",
}
SHA256_PREFIX = "6726825d"
VINABENCH_IMAGE_SIZE = 64  # get_activations' default, which VinaBench's FID keeps
INPUT_SIZE = 299
FEATURES = 2048
#: the network's layers from the input to the pool3 features, in torch-fidelity's order
LAYERS = (
    "Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "MaxPool_1", "Conv2d_3b_1x1",
    "Conv2d_4a_3x3", "MaxPool_2", "Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a", "Mixed_6b",
    "Mixed_6c", "Mixed_6d", "Mixed_6e", "Mixed_7a", "Mixed_7b", "Mixed_7c", "AvgPool",
)  # fmt: skip
_MODULE = "torch_fidelity.feature_extractor_inceptionv3"


def require_extra() -> None:
    """Raise the one-line install hint when the ``fid`` extra is missing."""
    module = first_missing(("torch", "torch_fidelity"))
    if module is not None:
        raise InputError(
            f"FID needs torch and torch-fidelity ({module} is not installed): {INSTALL_HINT}"
        )


def _fidelity_class() -> Any:
    """torch-fidelity's ``FeatureExtractorInceptionV3``, imported without the package's
    ``__init__`` (which imports torchvision): the package is registered as a bare module
    whose ``__path__`` finds the submodules."""
    require_extra()
    if _MODULE not in sys.modules and "torch_fidelity" not in sys.modules:
        spec = importlib.util.find_spec("torch_fidelity")
        if spec is None or not spec.submodule_search_locations:
            raise InputError(f"torch-fidelity is not an importable package: {INSTALL_HINT}")
        sys.modules["torch_fidelity"] = importlib.util.module_from_spec(spec)
    try:
        module = importlib.import_module(_MODULE)
    except ImportError as err:
        raise InputError(f"cannot import {_MODULE} ({err}): {INSTALL_HINT}") from None
    return module.FeatureExtractorInceptionV3


def hub_checkpoints() -> Path:
    """Where torch's hub keeps downloaded weights (``$TORCH_HOME/hub/checkpoints``)."""
    require_extra()
    import torch.hub

    return Path(torch.hub.get_dir()) / "checkpoints"


def locate_inception(weights: str | Path | None = None) -> Path:
    """The weight file: ``weights`` as given, else a published one in torch's hub cache."""
    if weights is not None:
        path = Path(weights).expanduser()
        if not path.is_file():
            raise InputError("Inception weights: no such file", file=path)
        return path.resolve()
    where = hub_checkpoints()
    for name in WEIGHT_FILES:
        path = where / name
        if path.is_file():
            digest = sha256_file(path)
            if not digest.startswith(SHA256_PREFIX):
                raise InputError(
                    f"Inception weights: sha256 {digest[:16]}… does not begin {SHA256_PREFIX} "
                    "as the file's name says (a damaged download?)",
                    file=path,
                )
            return path
    name, url = next(iter(WEIGHT_FILES.items()))
    raise InputError(
        f"the FID Inception weights are not in torch's hub cache ({where}): download {url} "
        f"(or pytorch-fid's {list(WEIGHT_FILES)[1]}, the same file) into it, "
        f"or pass the file's path"
    )


def fid_pixels(image: Image.Image, image_size: int | None = VINABENCH_IMAGE_SIZE) -> Any:
    """``(H, W, 3)`` uint8 RGB pixels as the FID input: with ``image_size``, the shorter side
    resized to it (bicubic, the longer side ``int(size * long / short)``) and the centre
    square kept (offsets rounded), as torchvision's ``Resize(size)`` + ``CenterCrop(size)``
    do on a PIL image; without it, the image as it is."""
    image = image.convert("RGB")
    if image_size is not None:
        w, h = image.size
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(image_size * long / short)
        size = (image_size, new_long) if w <= h else (new_long, image_size)
        if size != image.size:
            image = image.resize(size, Image.Resampling.BICUBIC)
        left = round((size[0] - image_size) / 2)  # half to even, as torchvision rounds
        top = round((size[1] - image_size) / 2)
        image = image.crop((left, top, left + image_size, top + image_size))
    return np.array(image, dtype=np.uint8)  # a writable copy (torch.from_numpy wants one)


@dataclass(frozen=True, eq=False)
class InceptionEncoder:
    """A loaded FID Inception: pool3 features (2048, not normalised) of images.

    It has the interface ``cache.Embedder`` drives (``ident``, ``image_arrays``,
    ``to_inputs``, ``image_vectors``), so its features are cached by (ident, image sha256)
    beside the CLIP and DINOv2 embeddings."""

    net: Any
    ident: str
    device: Any
    image_size: int | None
    resize: Resize

    def image_arrays(self, images: Sequence[Image.Image]) -> list[Any]:
        """Each image's uint8 pixels (numpy only: no torch call in a prefetching thread)."""
        return [fid_pixels(im, self.image_size) for im in images]

    def to_inputs(self, pixels: list[Any]) -> Any:
        """The network's input, ``(n, 3, 299, 299)`` on its device."""
        import torch
        import torch.nn.functional as F

        out = []
        for px in pixels:
            x = torch.from_numpy(np.ascontiguousarray(px)).permute(2, 0, 1)[None]
            if self.resize == "tensorflow":
                out.append(x)  # uint8; the network resizes and normalises it itself
                continue
            x = x.to(torch.float32) / 255.0
            x = F.interpolate(x, size=(INPUT_SIZE, INPUT_SIZE), mode="bilinear",
                              align_corners=False)  # fmt: skip
            out.append(2.0 * x - 1.0)
        if self.resize == "tensorflow" and len({tuple(t.shape) for t in out}) > 1:
            return [t.to(self.device) for t in out]  # sizes differ: one image at a time
        return torch.cat(out).to(self.device)

    def image_forward(self, inputs: Any) -> Any:
        """``(n, 2048)`` pool3 features (a tensor)."""
        import torch

        with torch.inference_mode():
            if isinstance(inputs, list):
                return torch.cat([self.image_forward(x) for x in inputs])
            if self.resize == "tensorflow":
                return self.net(inputs)[0]
            x = inputs
            for name in LAYERS:
                x = getattr(self.net, name)(x)
            return torch.flatten(x, 1)

    def image_vectors(self, inputs: Any) -> NDArray[np.float32]:
        """``(n, 2048)`` float32 features of prepared inputs."""
        return np.asarray(self.image_forward(inputs).float().cpu().numpy(), dtype=np.float32)

    def images(self, images: Sequence[Image.Image]) -> NDArray[np.float32]:
        """``(n, 2048)`` features of RGB images."""
        return self.image_vectors(self.to_inputs(self.image_arrays(images)))


def load_inception(
    path: Path,
    device: str = "cpu",
    image_size: int | None = VINABENCH_IMAGE_SIZE,
    resize: Resize = "pytorch-fid",
) -> InceptionEncoder:
    """The network with the weights of ``path`` (see ``locate_inception``), in eval mode."""
    cls = _fidelity_class()
    if resize not in ("pytorch-fid", "tensorflow"):
        raise InputError(f"FID resize must be pytorch-fid or tensorflow, not {resize!r}")
    if image_size is not None and image_size < 1:
        raise InputError(f"FID image size must be positive, not {image_size}")
    dev = _torch_device(device)
    try:
        net = cls("inception-v3-compat", [str(FEATURES)], feature_extractor_weights_path=str(path))
    except (OSError, RuntimeError, KeyError, ValueError, EOFError, pickle.UnpicklingError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"cannot load the Inception weights: {first}", file=path) from None
    size = "full" if image_size is None else str(image_size)
    ident = f"fid-inception:sha256:{sha256_file(path)}:size={size}:resize={resize}"
    return InceptionEncoder(net.to(dev).eval(), ident, dev, image_size, resize)
