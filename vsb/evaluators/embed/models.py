"""The embedding models behind the ``clip`` and ``dino`` evaluators (``pip install 'vsb[embed]'``).

torch and transformers are imported inside the functions that need them, never at import
time of this module, so everything else in vsb works without them; a missing extra is one
``InputError`` saying what to install.

Weights are found, never downloaded: ``--clip-model NAME_OR_DIR`` is either a directory
written by ``save_pretrained`` (``config.json``, weights, processor and tokenizer files) or a
Hugging Face hub name already in the local hub cache (``HF_HUB_CACHE``, else
``HF_HOME/hub``, else ``~/.cache/huggingface/hub``). Anything else is one error naming the
files to download and where to put them.

Each loaded model has an ``ident`` that enters every cache key: ``hub:NAME@COMMIT`` for a hub
snapshot, ``dir:SHA256`` (over the names and contents of the directory's files) for a
directory, so new weights never reuse old embeddings.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from vsb.errors import InputError
from vsb.fsio import hf_hub_cache

Kind = Literal["clip", "dino"]
Vectors = NDArray[np.float32]

DEFAULT_MODELS: dict[Kind, str] = {
    "clip": "openai/clip-vit-base-patch32",
    "dino": "facebook/dinov2-small",
}
OPTIONS: dict[Kind, str] = {"clip": "--clip-model", "dino": "--dino-model"}
DEVICES: tuple[str, ...] = ("cpu", "cuda", "mps")
INSTALL_HINT = "pip install 'vsb[embed]'"
_FILES: dict[Kind, str] = {
    "clip": "config.json, model.safetensors, preprocessor_config.json and the tokenizer files "
    "(tokenizer.json or vocab.json + merges.txt, tokenizer_config.json)",
    "dino": "config.json, model.safetensors and preprocessor_config.json",
}
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


def first_missing(modules: Sequence[str]) -> str | None:
    """The first of ``modules`` that cannot be found (without importing it): the lazy
    extras' check, here and in ``inception.py``."""
    for module in modules:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            return module
    return None


def require_extra(evaluator: str) -> None:
    """Raise the one-line install hint when the ``embed`` extra is missing."""
    module = first_missing(("torch", "transformers"))
    if module is not None:
        raise InputError(
            f"the {evaluator} evaluator needs torch and transformers ({module} is not "
            f"installed): {INSTALL_HINT}"
        )


@dataclass(frozen=True)
class Weights:
    """Where a model's files are: a local directory, from a hub snapshot or given as is."""

    kind: Kind
    name: str  # what the user passed
    path: Path
    hub_ident: str | None = None  # "hub:NAME@COMMIT" for a hub snapshot, None for a directory


def locate_weights(kind: Kind, name: str) -> Weights:
    """The local files of ``name`` (a directory, or a hub name in the local hub cache)."""
    option = OPTIONS[kind]
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise InputError(f"{option} must be a model directory, not a file", file=path)
        if not (path / "config.json").is_file():
            raise InputError(
                f"{option}: not a model directory (no config.json); it needs {_FILES[kind]}",
                file=path,
            )
        return Weights(kind, name, path.resolve())
    cache = hf_hub_cache()
    if _REPO_ID.match(name) and not name.endswith((".", "/")):
        snapshot = _cached_snapshot(name, cache)
        if snapshot is not None:
            return Weights(kind, name, snapshot, f"hub:{name}@{snapshot.name}")
        where = (
            f"download them with `hf download {name}` (huggingface_hub >= 0.34) into the "
            f"Hugging Face cache {cache}, or put {_FILES[kind]} in a directory and pass "
            f"{option} DIR"
        )
        raise InputError(
            f"{kind} weights {name!r} are neither a directory nor in the Hugging Face cache "
            f"({cache}): {where}"
        )
    raise InputError(f"{option}: no model directory {name!r} (and it is not a hub name)")


def _cached_snapshot(repo_id: str, cache: Path) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache)
    except ValueError:  # HFValidationError: not a valid repo id
        return None
    return Path(found).parent if isinstance(found, str) else None


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No progress bars or backend notices from transformers while loading (restored after)."""
    from transformers.utils import logging as tlog

    level = tlog.get_verbosity()
    bars = tlog.is_progress_bar_enabled()
    tlog.set_verbosity_error()
    tlog.disable_progress_bar()
    try:
        yield
    finally:
        tlog.set_verbosity(level)
        if bars:
            tlog.enable_progress_bar()


def _torch_device(device: str) -> Any:
    import torch

    if device not in DEVICES:
        raise InputError(f"--device must be one of {', '.join(DEVICES)}, not {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: torch sees no CUDA device (use --device cpu)")
    if device == "mps" and not torch.backends.mps.is_available():
        raise InputError("--device mps: torch sees no MPS device (use --device cpu)")
    return torch.device(device)


def _features(out: Any) -> Any:
    """A ``get_*_features`` result: a tensor (transformers 4) or an output object (5)."""
    import torch

    return out if isinstance(out, torch.Tensor) else out.pooler_output


def _unit(t: Any) -> Vectors:
    v = t.detach().float().cpu().numpy()
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.asarray(v / np.maximum(norms, 1e-12), dtype=np.float32)


class Encoder:
    """A loaded model: unit-norm float32 embeddings of images (and, for CLIP, of texts)."""

    def __init__(
        self,
        kind: Kind,
        ident: str,
        model: Any,
        processor: Any,
        device: Any,
        text_length: int | None = None,
    ) -> None:
        self.kind = kind
        self.ident = ident
        self.model = model
        self.processor = processor
        self.device = device
        self.text_length = text_length

    def image_arrays(self, images: Sequence[Image.Image]) -> NDArray[np.float32]:
        """Preprocessed pixel values of a batch of RGB images, as numpy (no torch call, so
        a prefetching thread never starts a second pool of torch threads)."""
        proc = self.processor.image_processor if self.kind == "clip" else self.processor
        pixels = proc(images=list(images), return_tensors="np")["pixel_values"]
        return np.ascontiguousarray(pixels, dtype=np.float32)

    def to_inputs(self, pixel_values: NDArray[np.float32]) -> dict[str, Any]:
        """Model inputs (on the model's device) from preprocessed pixel values."""
        import torch

        return {"pixel_values": torch.from_numpy(pixel_values).to(self.device)}

    def image_inputs(self, images: Sequence[Image.Image]) -> dict[str, Any]:
        """Preprocessed model inputs of a batch of RGB images (on the model's device)."""
        return self.to_inputs(self.image_arrays(images))

    def image_forward(self, inputs: dict[str, Any]) -> Any:
        """The model's image embedding of preprocessed inputs (a tensor)."""
        import torch

        with torch.inference_mode():
            if self.kind == "clip":
                return _features(self.model.get_image_features(**inputs))
            out = self.model(**inputs)
            pooled = getattr(out, "pooler_output", None)
            return pooled if pooled is not None else out.last_hidden_state[:, 0]

    def image_vectors(self, inputs: dict[str, Any]) -> Vectors:
        """``(n, d)`` unit vectors of preprocessed images."""
        return _unit(self.image_forward(inputs))

    def images(self, images: Sequence[Image.Image]) -> Vectors:
        """``(n, d)`` unit vectors of a batch of RGB images."""
        return self.image_vectors(self.image_inputs(images))

    def text_inputs(self, texts: Sequence[str]) -> dict[str, Any]:
        """Tokenized texts (padded, truncated to the model's context)."""
        tok = self.processor.tokenizer
        batch = tok(
            list(texts), padding=True, truncation=True, max_length=self.text_length,
            return_tensors="pt",
        )  # fmt: skip
        keep = ("input_ids", "attention_mask")
        return {k: batch[k].to(self.device) for k in keep if k in batch}

    def texts(self, texts: Sequence[str]) -> Vectors:
        """``(n, d)`` unit vectors of a batch of texts (CLIP only)."""
        import torch

        if self.kind != "clip":
            raise ValueError("only CLIP embeds texts")
        with torch.inference_mode():
            return _unit(_features(self.model.get_text_features(**self.text_inputs(texts))))


def load_encoder(weights: Weights, device: str, dir_ident: Callable[[Path], str]) -> Encoder:
    """Load the model and its processor from local files; ``dir_ident(path)`` names a
    directory's contents (memoized by the caller's cache)."""
    try:
        from transformers import AutoImageProcessor, AutoModel, AutoProcessor
    except ImportError as err:
        raise InputError(f"cannot import torch/transformers ({err}): {INSTALL_HINT}") from None
    dev = _torch_device(device)
    ident = weights.hub_ident or f"dir:{dir_ident(weights.path)}"
    option = OPTIONS[weights.kind]
    try:
        with _quiet_transformers():
            model = AutoModel.from_pretrained(str(weights.path))
            if weights.kind == "clip":
                processor = AutoProcessor.from_pretrained(str(weights.path))
            else:
                processor = AutoImageProcessor.from_pretrained(str(weights.path))
    except (OSError, ValueError, KeyError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"{option}: cannot load the model: {first}", file=weights.path) from None
    model = model.float().eval().to(dev)
    text_length = None
    if weights.kind == "clip":
        if not hasattr(model, "get_image_features") or not hasattr(processor, "tokenizer"):
            raise InputError(
                f"{option}: not a CLIP-style model (needs get_image_features and a tokenizer)",
                file=weights.path,
            )
        text_cfg = getattr(model.config, "text_config", None)
        text_length = getattr(text_cfg, "max_position_embeddings", None)
    return Encoder(weights.kind, ident, model, processor, dev, text_length)
