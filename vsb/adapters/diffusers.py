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
import re
import threading
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter, PromptFit
from vsb.adapters.batching import Batcher
from vsb.adapters.long_prompts import (
    LONG_PROMPT,
    PipelineText,
    chunked_embeds,
    require_compel,
    scene_first,
)
from vsb.adapters.weights import INSTALL_HINT, locate_pipeline
from vsb.errors import AdapterError, InputError
from vsb.fsio import canonical_json

PREFIX = "diffusers:"
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: how long the first request of a batch waits for others (seconds; no effect on the images)
GATHER_S = 0.2
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
    long_prompt: str = "chunks"
    """A prompt over the CLIP encoder's 77 tokens: ``chunks`` (encoded whole in chunks with
    compel) or ``truncate`` (the scene text first, the encoder cuts the context)."""

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
        if self.long_prompt not in LONG_PROMPT:
            raise InputError(
                f"--long-prompt must be one of {', '.join(LONG_PROMPT)}, not {self.long_prompt!r}"
            )

    def parameters(self) -> dict[str, Any]:
        """What goes into every request (and the cache key)."""
        return asdict(self)


def pattern_parameters() -> dict[str, Any]:
    """The parameters of a ``diffusers:`` model and their defaults (listed by ``vsb models``;
    threads None = torch's count on CPU)."""
    return DiffusersOptions().parameters()


def parse_size(text: str | None) -> tuple[int | None, int | None]:
    """``--size``: ``N`` (square) or ``WxH``; None keeps the pipeline's default."""
    if text is None or not text.strip():
        return None, None
    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX×]\s*(\d+))?\s*", text)
    if not m:
        raise InputError(f"--size must be N or WIDTHxHEIGHT (e.g. 1024 or 1216x832), not {text!r}")
    w = int(m.group(1))
    return w, int(m.group(2)) if m.group(2) else w


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
    """No progress bars, and no notices from diffusers/transformers while a pipeline is loaded
    or built (a missing optional package, a component's default config: noise about the
    install, never about a request); the previous settings come back when the last thread
    leaves. Generation runs with ``bars_off`` alone: a prompt truncated to the text encoder's
    length is said (and recorded as ``cut``, issue #44)."""
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


@contextlib.contextmanager
def bars_off() -> Iterator[None]:
    """No progress bars from diffusers/transformers; their notices stay on."""
    from diffusers.utils import logging as dlog
    from transformers.utils import logging as tlog

    with _QUIET_LOCK:
        saved = [(m, m.is_progress_bar_enabled()) for m in (dlog, tlog)]
        for m, _ in saved:
            m.disable_progress_bar()
    try:
        yield
    finally:
        with _QUIET_LOCK:
            for m, bars in saved:
                if bars and not _QUIET:
                    m.enable_progress_bar()


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
    #: encoded whole in chunks (a batch holds only chunked or only plain prompts)
    chunked: bool = False


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
        self.text = PipelineText(self.weights.path, self.weights.pipeline_class)

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

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        """The full prompt against the pipeline's own tokenizer(s) (``long_prompts``)."""
        return self.text.fit(request.full_prompt(), self.options.long_prompt)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        ref = request.reference_images[-1] if request.reference_images else None
        if ref is not None and not self.accepts_reference_image:
            raise AdapterError(f"{self.name}: this pipeline takes no reference image")
        fit = self.prompt_fit(request)
        chunked = fit.encoded == "chunked"
        if chunked:
            require_compel()
        text = scene_first(request) if fit.cut else request.full_prompt()
        item = _Item(text, noise_seed(request), ref, chunked)
        png = self._batcher.submit((ref is not None, chunked), item)
        meta = {
            "noise_seed": item.seed,
            "pipeline": self.weights.pipeline_class,
            "conditioned": ref is not None,
            "prompt_fit": asdict(fit),
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

    def _run_batch(self, key: Hashable, items: Sequence[_Item]) -> list[bytes]:
        import torch
        from PIL import Image

        conditioned, chunked = bool(key[0]), bool(key[1])  # type: ignore[index]
        pipe = self.pipeline(bool(conditioned))
        o = self.options
        kwargs: dict[str, Any] = {
            "generator": [torch.Generator("cpu").manual_seed(it.seed) for it in items],
            "output_type": "pil",
        }
        if not chunked:
            kwargs["prompt"] = [it.prompt for it in items]
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
            with bars_off(), _cpu_threads(o.threads), torch.inference_mode():
                if chunked:  # the whole prompt, encoded by the pipeline's encoder(s)
                    kwargs |= chunked_embeds(pipe, [it.prompt for it in items])
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
