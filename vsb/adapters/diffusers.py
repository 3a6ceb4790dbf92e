"""Open-weights text-to-image models through diffusers (``pip install 'vsb[diffusers]'``).

``--model diffusers:MODEL_ID_OR_DIR`` loads any text-to-image pipeline with
``DiffusionPipeline.from_pretrained``: a directory written by ``save_pretrained``
(``model_index.json`` and one folder per component) or a Hugging Face hub name already in the
local hub cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``).
Weights are found, never downloaded: anything else is one error naming what to download and
where. torch and diffusers are imported when a pipeline is loaded, never at import time.

Parameters (``DiffusersOptions``: device, dtype, steps, guidance, size, batch size, img2img
strength, and on CPU torch's thread count, which changes the bytes) go into every request,
so into the cache key, and ``vsb models`` shows them. The adapter's version names the
weights (``hub:NAME@COMMIT`` or ``dir:SHA256`` over the directory's files) and the diffusers
release, so new weights never reuse old images.

Seeds: each image's initial noise comes from a CPU ``torch.Generator`` seeded from the
request (run seed, prompt, context, reference image — not the device or batch size), so the
same request gives the same image on the same hardware, and a CPU and a GPU run start from
the same noise. Image conditioning (previous_image): when diffusers has an image-to-image
variant of the pipeline's class (``AutoPipelineForImage2Image``: Stable Diffusion 1/2, SDXL,
SD3, FLUX, …), it is built from the same components (no second copy of the weights) and the
model declares ``accepts_reference_image``. Scenes of different stories are generated in
batches of ``batch_size`` (``vsb.adapters.batching``): run with ``--workers`` ≥ the batch size.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import io
import json
import os
import re
import threading
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter
from vsb.adapters.batching import Batcher
from vsb.errors import AdapterError, InputError
from vsb.fsio import canonical_json

PREFIX = "diffusers:"
INSTALL_HINT = "pip install 'vsb[diffusers]'"
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: how long the first request of a batch waits for others (seconds; no effect on the images)
GATHER_S = 0.2
_FILES = (
    "model_index.json and one folder per component (unet/ or transformer/, vae/, "
    "text_encoder/, tokenizer/, scheduler/) as save_pretrained writes them"
)
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_DEVICE = re.compile(r"^(cpu|mps|cuda(:[0-9]+)?)$")


@dataclass(frozen=True)
class DiffusersOptions:
    """Generation parameters of a diffusers model (all of them enter the cache key)."""

    device: str = "cpu"
    """torch device: cpu, cuda, cuda:N or mps."""
    dtype: str = "float32"
    """Weights and activations: float32, float16 or bfloat16."""
    steps: int | None = None
    """Denoising steps (None: the pipeline's default)."""
    guidance: float | None = None
    """Classifier-free guidance scale (None: the pipeline's default)."""
    width: int | None = None
    """Image width in pixels (None: the pipeline's default size)."""
    height: int | None = None
    """Image height in pixels (None: the pipeline's default size)."""
    batch_size: int = 1
    """Images per pipeline call (scenes of different stories with the same parameters)."""
    strength: float = 0.6
    """Image-to-image strength under previous_image (0: copy the frame, 1: ignore it)."""
    threads: int | None = None
    """On CPU, torch's intra-op threads (they change the bytes; None: torch's count when the
    adapter is built). Not used on a GPU."""

    def __post_init__(self) -> None:
        if not _DEVICE.match(self.device):
            raise InputError(f"--device must be cpu, cuda, cuda:N or mps, not {self.device!r}")
        if self.dtype not in DTYPES:
            raise InputError(f"--dtype must be one of {', '.join(DTYPES)}, not {self.dtype!r}")
        if self.steps is not None and self.steps < 1:
            raise InputError(f"--steps must be >= 1, not {self.steps}")
        if self.guidance is not None and self.guidance < 0:
            raise InputError(f"--guidance must be >= 0, not {self.guidance}")
        for what, v in (("width", self.width), ("height", self.height)):
            if v is not None and (v < 8 or v % 8):
                raise InputError(f"--size: the {what} must be a multiple of 8 (>= 8), not {v}")
        if self.batch_size < 1:
            raise InputError(f"--batch-size must be >= 1, not {self.batch_size}")
        if not 0.0 < self.strength <= 1.0:
            raise InputError(f"--strength must be in (0, 1], not {self.strength}")
        if self.threads is not None and self.threads < 1:
            raise InputError(f"threads must be >= 1, not {self.threads}")

    def parameters(self) -> dict[str, Any]:
        """What goes into every request (and the cache key)."""
        return asdict(self)


def parse_size(text: str | None) -> tuple[int | None, int | None]:
    """``--size``: ``N`` (square) or ``WxH``; None keeps the pipeline's default."""
    if text is None or not text.strip():
        return None, None
    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX×]\s*(\d+))?\s*", text)
    if not m:
        raise InputError(f"--size must be N or WIDTHxHEIGHT (e.g. 1024 or 1216x832), not {text!r}")
    w = int(m.group(1))
    return w, int(m.group(2)) if m.group(2) else w


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache as huggingface_hub resolves it (read when called)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg) / "huggingface" / "hub"


@dataclass(frozen=True)
class PipelineWeights:
    """Where a pipeline's files are, what names them, and its pipeline class."""

    source: str
    path: Path
    ident: str
    pipeline_class: str


def locate_pipeline(source: str) -> PipelineWeights:
    """The local files of ``source`` (a directory, or a hub name in the local hub cache)."""
    if not source:
        raise InputError("diffusers: no model given (--model diffusers:MODEL_ID_OR_DIR)")
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir() or not (path / "model_index.json").is_file():
            raise InputError(f"not a diffusers pipeline directory: it needs {_FILES}", file=path)
        path = path.resolve()
        ident = f"dir:{dir_sha256(path)}"
    else:
        cache = hf_hub_cache()
        if not _REPO_ID.match(source):
            raise InputError(
                f"diffusers: no pipeline directory {source!r} (and it is not a hub name OWNER/NAME)"
            )
        snapshot = _cached_snapshot(source, cache)
        if snapshot is None:
            raise InputError(
                f"diffusers weights {source!r} are neither a directory nor in the Hugging Face "
                f"cache ({cache}): download them with `hf download {source}` (huggingface_hub "
                f">= 0.34) into that cache, or save the pipeline to a directory with {_FILES} "
                f"and pass --model diffusers:DIR"
            )
        path, ident = snapshot, f"hub:{source}@{snapshot.name}"
    return PipelineWeights(source, path, ident, _pipeline_class(path))


def _cached_snapshot(repo_id: str, cache: Path) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        raise InputError(f"the diffusers adapter needs huggingface_hub: {INSTALL_HINT}") from None
    try:
        found = try_to_load_from_cache(repo_id, "model_index.json", cache_dir=cache)
    except ValueError:  # not a valid repo id
        return None
    return Path(found).parent if isinstance(found, str) else None


def _pipeline_class(path: Path) -> str:
    index = path / "model_index.json"
    try:
        name = json.loads(index.read_text(encoding="utf-8"))["_class_name"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"unreadable model_index.json ({err})", file=index) from None
    if not isinstance(name, str) or not name:
        raise InputError("model_index.json has no _class_name", file=index)
    return name


_DIR_IDENTS: dict[tuple[Path, tuple[tuple[str, int, int], ...]], str] = {}
_DIR_LOCK = threading.Lock()


def dir_sha256(path: Path) -> str:
    """sha256 over the relative names and contents of every file under ``path`` (memoised
    per process while no file's size or modification time changes)."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and ".cache" not in p.parts)
    stamp = tuple((p.relative_to(path).as_posix(), *_stat(p)) for p in files)
    with _DIR_LOCK:
        known = _DIR_IDENTS.get((path, stamp))
    if known is not None:
        return known
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(path).as_posix().encode() + b"\0")
        with open(p, "rb") as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 22), b""):  # type: ignore[misc]
                h.update(chunk)
        h.update(b"\0")
    ident = h.hexdigest()
    with _DIR_LOCK:
        _DIR_IDENTS[(path, stamp)] = ident
    return ident


def _stat(p: Path) -> tuple[int, int]:
    st = p.stat()
    return st.st_size, st.st_mtime_ns


def img2img_class(pipeline_class: str) -> str | None:
    """The image-to-image pipeline diffusers pairs with ``pipeline_class`` (None: none)."""
    try:
        from diffusers.pipelines import auto_pipeline as ap
    except ImportError:
        return None
    for task, cls in ap.AUTO_TEXT2IMAGE_PIPELINES_MAPPING.items():
        if cls.__name__ == pipeline_class:
            i2i = ap.AUTO_IMAGE2IMAGE_PIPELINES_MAPPING.get(task)
            return None if i2i is None else str(i2i.__name__)
    return None


def require_extra() -> None:
    """``InputError`` with the install hint when torch or diffusers cannot be imported."""
    import importlib.util

    for module in ("torch", "diffusers", "transformers"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise InputError(
                f"diffusers models need torch, diffusers and transformers ({module} is not "
                f"installed): {INSTALL_HINT}"
            )


_QUIET_LOCK = threading.Lock()
_QUIET: list[Any] = []  # [depth, saved settings] while some thread is inside quiet()


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No progress bars or notices from diffusers/transformers (a prompt truncated to the text
    encoder's length, a missing optional package) while loading or generating; the previous
    settings come back when the last thread leaves."""
    from diffusers.utils import logging as dlog
    from transformers.utils import logging as tlog

    with _QUIET_LOCK:
        if not _QUIET:
            saved = [(m, m.get_verbosity(), m.is_progress_bar_enabled()) for m in (dlog, tlog)]
            for m, _, _ in saved:
                m.set_verbosity_error()
                m.disable_progress_bar()
            _QUIET.extend([0, saved])
        _QUIET[0] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET[0] -= 1
            if _QUIET[0] == 0:
                for m, level, bars in _QUIET[1]:
                    m.set_verbosity(level)
                    if bars:
                        m.enable_progress_bar()
                _QUIET.clear()


def noise_seed(request: GenerationRequest) -> int:
    """The 63-bit seed of an image's noise: from what the model is asked (run seed, prompt,
    context, reference images), not from the model, device or batch size."""
    material = request.key_material()
    for k in ("model", "version", "parameters"):
        material.pop(k, None)
    digest = hashlib.sha256(b"diffusers-noise\0" + canonical_json(material)).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class _Item:
    prompt: str
    seed: int
    reference: bytes | None


class DiffusersAdapter(ImageModelAdapter):
    """An open-weights text-to-image pipeline run locally through diffusers."""

    process_safe = False  # a loaded pipeline lives in one process; threads share it
    pricing_key = "diffusers"

    def __init__(
        self, source: str, options: DiffusersOptions | None = None, *, gather_s: float = GATHER_S
    ) -> None:
        require_extra()
        self.options = _resolve_threads(options or DiffusersOptions())
        self.weights = locate_pipeline(source)
        self.name = PREFIX + source
        self.source = source
        import diffusers

        self.version = f"{self.weights.ident};diffusers={diffusers.__version__}"
        #: threads the runner should give this model so that batches fill
        self.concurrency = self.options.batch_size
        self._batcher: Batcher[_Item, bytes] = Batcher(
            self.options.batch_size, self._run_batch, gather_s
        )
        self._load_lock = threading.Lock()
        self._pipe: Any = None
        self._i2i: Any = None

    def parameters(self) -> dict[str, Any]:
        return self.options.parameters()

    @property
    def ray_resources(self) -> dict[str, float]:
        """What a Ray task of this model asks for: one GPU on CUDA, else one CPU."""
        return {"num_gpus": 1} if self.options.device.startswith("cuda") else {"num_cpus": 1}

    def __reduce__(self) -> tuple[Any, ...]:
        # travels as its source and options (a Ray worker loads the pipeline on first use)
        return (_rebuild, (type(self), self.source, self.options, self._batcher.gather_s))

    @property
    def batches(self) -> list[int]:
        """Real images per pipeline call so far (padding excluded)."""
        return list(self._batcher.batches)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        ref = request.reference_images[-1] if request.reference_images else None
        if ref is not None and not self.accepts_reference_image:
            raise AdapterError(f"{self.name}: this pipeline takes no reference image")
        item = _Item(request.full_prompt(), noise_seed(request), ref)
        png = self._batcher.submit(ref is not None, item)
        meta = {
            "noise_seed": item.seed,
            "pipeline": self.weights.pipeline_class,
            "conditioned": ref is not None,
        }
        return GenerationResult(png=png, metadata=meta, cost_usd=0.0)

    # -- the pipeline --------------------------------------------------------------------

    def pipeline(self, conditioned: bool = False) -> Any:
        """The loaded pipeline (text-to-image, or its image-to-image variant)."""
        with self._load_lock:
            if self._pipe is None:
                self._pipe = self._load()
            if conditioned and self._i2i is None:
                from diffusers import AutoPipelineForImage2Image

                with quiet():
                    self._i2i = AutoPipelineForImage2Image.from_pipe(self._pipe)
                self._i2i.set_progress_bar_config(disable=True)
            return self._i2i if conditioned else self._pipe

    def _load(self) -> Any:
        import torch

        dev = torch_device(self.options.device)
        dtype = getattr(torch, self.options.dtype)
        try:
            with quiet():
                from diffusers import DiffusionPipeline
                from diffusers.utils import deprecation_utils

                # diffusers renamed torch_dtype to dtype (the old name warns)
                kw = "dtype" if hasattr(deprecation_utils, "_resolve_dtype") else "torch_dtype"
                pipe = DiffusionPipeline.from_pretrained(
                    str(self.weights.path), local_files_only=True, **{kw: dtype}
                )
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise InputError(
                f"diffusers: cannot load the pipeline: {first}", file=self.weights.path
            ) from None
        pipe.set_progress_bar_config(disable=True)
        return pipe.to(dev)

    def _run_batch(self, conditioned: Hashable, items: Sequence[_Item]) -> list[bytes]:
        import torch
        from PIL import Image

        pipe = self.pipeline(bool(conditioned))
        o = self.options
        kwargs: dict[str, Any] = {
            "prompt": [it.prompt for it in items],
            "generator": [torch.Generator("cpu").manual_seed(it.seed) for it in items],
            "output_type": "pil",
        }
        if o.steps is not None:
            kwargs["num_inference_steps"] = o.steps
        if o.guidance is not None:
            kwargs["guidance_scale"] = o.guidance
        accepted = inspect.signature(pipe.__call__).parameters
        if conditioned:
            refs = [Image.open(io.BytesIO(it.reference or b"")).convert("RGB") for it in items]
            if o.width is not None and o.height is not None:
                refs = [r.resize((o.width, o.height), Image.Resampling.BICUBIC) for r in refs]
            kwargs["image"] = refs
            if "strength" in accepted:
                kwargs["strength"] = o.strength
        if o.width is not None and o.height is not None and "height" in accepted:
            kwargs["height"], kwargs["width"] = o.height, o.width
        try:
            with quiet(), _cpu_threads(o.threads), torch.inference_mode():
                images = pipe(**kwargs).images
        except (RuntimeError, ValueError, TypeError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise AdapterError(f"{self.name}: the pipeline failed: {first}") from None
        return [_png(im) for im in images]


class DiffusersImg2ImgAdapter(DiffusersAdapter):
    """An open-weights pipeline with an image-to-image variant (previous_image conditioning)."""

    accepts_reference_image = True


def _resolve_threads(options: DiffusersOptions) -> DiffusersOptions:
    """Fix the CPU thread count in the options (so it travels with them to a Ray worker,
    whose torch would otherwise use its own count and compute other bytes)."""
    if options.device != "cpu":
        return dataclasses.replace(options, threads=None)
    if options.threads is not None:
        return options
    import torch

    return dataclasses.replace(options, threads=int(torch.get_num_threads()))


_THREADS_LOCK = threading.Lock()


@contextlib.contextmanager
def _cpu_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to ``threads`` while a CPU pipeline runs (one CPU
    pipeline call at a time in this process: the setting is global)."""
    if threads is None:
        yield
        return
    import torch

    with _THREADS_LOCK:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def torch_device(device: str) -> Any:
    """A ``torch.device``; ``InputError`` when torch cannot see it."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"--device {device}: torch sees no CUDA device (use --device cpu)")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise InputError(f"--device {device}: torch sees {torch.cuda.device_count()} CUDA devices")
    if device == "mps" and not torch.backends.mps.is_available():
        raise InputError("--device mps: torch sees no MPS device (use --device cpu)")
    return torch.device(device)


def _png(image: Any) -> bytes:
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG")
    return buf.getvalue()


def _rebuild(
    cls: type[DiffusersAdapter], source: str, options: DiffusersOptions, gather_s: float
) -> DiffusersAdapter:
    return cls(source, options, gather_s=gather_s)


def diffusers_adapter(
    source: str, options: DiffusersOptions | None = None, **kwargs: Any
) -> DiffusersAdapter:
    """The adapter of ``diffusers:SOURCE``: with image conditioning when diffusers has an
    image-to-image variant of its pipeline class."""
    require_extra()
    weights = locate_pipeline(source)
    with quiet():
        i2i = img2img_class(weights.pipeline_class)
    cls = DiffusersImg2ImgAdapter if i2i is not None else DiffusersAdapter
    return cls(source, options, **kwargs)
