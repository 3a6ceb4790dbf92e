"""Stability AI v2beta stable-image: ``POST /v2beta/stable-image/generate/{core|ultra|sd3}``.

``stability:MODEL`` names any v2beta stable-image model: ``core``, ``ultra``, ``sd3`` (the sd3
endpoint's default, sd3-large) or an sd3-endpoint model (``sd3-large``, ``sd3.5-medium``,
``sd3.5-flash``… see ``SD3_MODELS``). The form (multipart) carries prompt, seed, output
format and, on the sd3 endpoint, the model; ``accept: image/*`` makes the answer the image
bytes themselves. A content-filtered image (``finish-reason`` header ``CONTENT_FILTERED``)
is a refusal, not a picture. Key: ``STABILITY_API_KEY``.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import httpx

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.providers._http import HttpAdapter
from vsb.errors import AdapterError, InputError
from vsb.store.calls import Refused

ROOT = "https://api.stability.ai"
API = f"{ROOT}/v2beta/stable-image/generate"
_SEED_LIMIT = 4294967295  # seeds are 0..4294967294
#: The documented prompt limit of every v2beta stable-image generate endpoint, in characters
#: (Stability AI API reference, Generate: https://platform.stability.ai/docs/api-reference#tag/Generate
#: — ``prompt``: string, [1 .. 10000] characters).
PROMPT_LIMIT = 10000
#: Endpoints with no model field.
ENDPOINTS = ("core", "ultra", "sd3")
#: Models of the sd3 endpoint (its ``model`` field).
SD3_MODELS = (
    "sd3-large", "sd3-large-turbo", "sd3-medium",
    "sd3.5-large", "sd3.5-large-turbo", "sd3.5-medium", "sd3.5-flash",
)  # fmt: skip


class StabilityImage(HttpAdapter):
    """A Stable Image endpoint: ``core``, ``ultra``, or ``sd3`` with an sd3 model."""

    provider = "stability"
    env_var = "STABILITY_API_KEY"
    api_base = ROOT

    def __init__(
        self,
        endpoint: str,
        *,
        sd3_model: str = "sd3-large",
        client: httpx.Client | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(endpoint, client=client, **kw)
        self.endpoint = endpoint
        self.sd3_model = sd3_model if endpoint == "sd3" else None

    @property
    def pricing_key(self) -> str:
        return f"{self.provider}/{self.sd3_model or self.endpoint}"

    def prompt_limit(self) -> int | None:
        return PROMPT_LIMIT

    def parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {"aspect_ratio": "1:1", "output_format": "png"}
        if self.sd3_model:
            params["model"] = self.sd3_model
        return params

    def request_image(self, request: GenerationRequest) -> GenerationResult:
        fields = {"prompt": request.full_prompt(), "seed": str(request.seed % _SEED_LIMIT)}
        fields |= {k: str(v) for k, v in request.parameters.items()}
        t0 = time.perf_counter()
        resp = self.send(
            "POST",
            f"{API}/{self.endpoint}",
            auth=True,
            headers={"accept": "image/*"},
            # every field as a file part without a filename: forces multipart/form-data
            files={k: (None, v) for k, v in fields.items()},
        )
        reason = resp.headers.get("finish-reason", "SUCCESS")
        if reason.upper() == "CONTENT_FILTERED":
            raise Refused(f"{self.name}: image withheld by the content filter", billed=True)
        if not resp.headers.get("content-type", "").startswith("image/"):
            raise AdapterError(
                f"{self.name}: expected an image, got {resp.headers.get('content-type')!r}"
            )
        return self.result(resp.content, t0, seed=resp.headers.get("seed"))


def stability_adapter(model: str, **kw: Any) -> StabilityImage:
    """``stability:MODEL`` (the registry's pattern): any v2beta stable-image model."""
    if model in ENDPOINTS:
        return StabilityImage(model, **kw)
    if model in SD3_MODELS:
        adapter = StabilityImage("sd3", sd3_model=model, **kw)
        adapter.name = f"stability:{model}"
        return adapter
    known = ", ".join((*ENDPOINTS, *SD3_MODELS))
    raise InputError(f"stability:{model}: unknown stable-image model (known: {known})")


def pattern_info() -> dict[str, Any]:
    """How ``vsb models`` lists the ``stability:`` family."""
    return {
        "pattern": "stability:MODEL",
        "env_var": StabilityImage.env_var,
        "image_input": "no",
        "about": "v2beta stable-image: " + ", ".join((*ENDPOINTS, *SD3_MODELS)),
    }


# the listed models (vsb.adapters.registry.BUILTIN names them by import path)
core = partial(StabilityImage, "core")
sd3 = partial(StabilityImage, "sd3")
