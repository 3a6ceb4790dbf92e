"""A Python function as a model: ``--model python:MODULE:FUNCTION`` (issue #36).

``MODULE`` is imported from the Python path (as ``uvicorn module:app`` does: the current
folder, ``PYTHONPATH``), ``FUNCTION`` is called once per request with a ``FunctionRequest``
and returns the image: a PIL image, PNG bytes (any format Pillow reads is converted), or a
``GenerationResult`` (to report a cost). It runs through the same machinery as every adapter
(``vsb.run.tasks``): the generation cache (a rerun calls it for nothing already made), the
ledger (a row per call, cost 0 unless the function reports one) and ``--concurrency``
(threads; one request at a time unless the function sets ``fn.concurrency = N`` or the
run gives ``--concurrency N``).

The cache key holds the model name and a version, which is ``fn.version`` where the
function sets one, else the SHA-256 of its module's source file (of the function's own
source where it has no file, as in a notebook): edit the code and nothing old is served.

In a notebook, ``vsb.api.run(..., models={"mine": fn})`` wraps a callable the same way
(``FunctionModel(fn, name)``).
"""

from __future__ import annotations

import importlib
import inspect
import io
import marshal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter
from vsb.errors import AdapterError, InputError
from vsb.fsio import canonical_json, sha256_hex

#: The model-name prefix of this family.
PREFIX = "python"


@dataclass(frozen=True)
class FunctionRequest:
    """What a model function is called with: the request exactly as vsb sends it."""

    #: the exact text a text-only model is sent: context, then scene (``vsb suite prompts``)
    prompt: str
    #: the scene text alone
    scene_text: str
    #: the condition's context as text (previous_text, summarized_state…), or None
    context: str | None
    #: the condition's context as JSON data (structured_memory), or None
    context_data: dict[str, Any] | None
    #: previous_image: the previous frame (PNG bytes) this model made; else None
    reference: bytes | None
    story_id: str | None
    #: 1-based scene index
    scene: int | None
    condition: str | None
    seed: int


def as_function_request(request: GenerationRequest) -> FunctionRequest:
    """The ``FunctionRequest`` of one ``GenerationRequest``."""
    ctx = request.context
    return FunctionRequest(
        prompt=request.full_prompt(),
        scene_text=request.prompt,
        context=ctx.text,
        context_data=ctx.data,
        reference=request.reference,
        story_id=request.story_id,
        scene=request.scene,
        condition=request.condition,
        seed=request.seed,
    )


def code_version(fn: Callable[..., Any]) -> str:
    """``fn.version`` if set, else the SHA-256 of its module's file (or its own source)."""
    own = getattr(fn, "version", None)
    if own is not None:
        return str(own)
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    file = getattr(module, "__file__", None)
    try:
        if file and Path(file).is_file():
            return sha256_hex(Path(file).read_bytes())[:16]
        return sha256_hex(inspect.getsource(fn).encode())[:16]
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        if code is None:  # a callable object without source: its type's qualified name
            return sha256_hex(canonical_json(type(fn).__qualname__))[:16]
        return sha256_hex(marshal.dumps(code))[:16]


def to_png(image: Any, where: str) -> bytes:
    """PNG bytes of what a model function returned (``AdapterError`` if it is no image)."""
    from PIL import Image

    from vsb.adapters.providers._http import to_png as decode

    if isinstance(image, Image.Image):
        if image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
            image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return decode(buf.getvalue(), where)  # the pixel cap of every served image
    if isinstance(image, bytes | bytearray | memoryview):
        return decode(bytes(image), where)
    raise AdapterError(
        f"{where}: returned {type(image).__name__}; expected a PIL image or PNG bytes"
    )


class FunctionModel(ImageModelAdapter):
    """An adapter that calls a Python function (see the module docstring)."""

    accepts_reference_image = True
    #: requests at a time (a pipeline on one GPU is rarely thread-safe): ``fn.concurrency``
    #: or ``--concurrency`` raise it
    concurrency = 1

    def __init__(self, fn: Callable[[FunctionRequest], Any], name: str) -> None:
        if not callable(fn):
            raise InputError(f"model {name!r}: {fn!r} is not callable")
        self.fn = fn
        self.name = name
        self.version = code_version(fn)
        own = getattr(fn, "concurrency", None)
        if own is not None:
            self.concurrency = int(own)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        try:
            out = self.fn(as_function_request(request))
        except AdapterError:
            raise
        except Exception as err:  # the function's own failure: this image's error
            raise AdapterError(f"{self.name}: {type(err).__name__}: {err}") from err
        if isinstance(out, GenerationResult):
            cost = 0.0 if out.cost_usd is None else out.cost_usd
            return GenerationResult(to_png(out.png, self.name), out.metadata, cost)
        return GenerationResult(to_png(out, self.name), {"provider": PREFIX}, 0.0)


def load_function(target: str) -> Callable[..., Any]:
    """The function ``MODULE:FUNCTION`` names (``InputError`` naming what is missing)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"model python:{target}: expected python:MODULE:FUNCTION")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, "")  # as `python -m`: the current folder first
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # a user's module may raise anything on import
        raise InputError(
            f"model python:{target}: cannot import {module_name!r} "
            f"({type(err).__name__}: {err}); is it on PYTHONPATH?"
        ) from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise InputError(f"model python:{target}: {module_name} has no {attr!r}")
    if not callable(fn):
        raise InputError(f"model python:{target}: {attr!r} is not callable")
    return fn


def function_adapter(target: str) -> FunctionModel:
    """``python:MODULE:FUNCTION`` (the registry's pattern)."""
    return FunctionModel(load_function(target), f"{PREFIX}:{target}")


def pattern_info() -> dict[str, Any]:
    """How ``vsb models`` lists the ``python:`` family."""
    return {
        "pattern": "python:MODULE:FUNCTION",
        "env_var": None,
        "needs": "MODULE on PYTHONPATH",
        "image_input": "yes",
        "about": "a Python function of a request, returning a PIL image or PNG bytes",
    }
