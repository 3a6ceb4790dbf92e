"""Stability AI v2beta: ``POST /v2beta/stable-image/generate/{core|sd3}`` (multipart).

The form carries prompt, seed, output format and (for sd3) the model; ``accept: image/*``
makes the answer the image bytes themselves. A content-filtered image (``finish-reason``
header ``CONTENT_FILTERED``) is an error, not a picture. Key: ``STABILITY_API_KEY``.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import httpx

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.providers._http import HttpAdapter
from vsb.adapters.registry import ADAPTERS
from vsb.errors import AdapterError

API = "https://api.stability.ai/v2beta/stable-image/generate"
_SEED_LIMIT = 4294967295  # seeds are 0..4294967294


class StabilityImage(HttpAdapter):
    """A Stable Image endpoint: ``core``, or ``sd3`` with an sd3 model (default sd3-large)."""

    provider = "stability"
    env_var = "STABILITY_API_KEY"

    def __init__(
        self, endpoint: str, *, sd3_model: str = "sd3-large", client: httpx.Client | None = None
    ) -> None:
        super().__init__(endpoint, client=client)
        self.endpoint = endpoint
        self.sd3_model = sd3_model if endpoint == "sd3" else None

    @property
    def pricing_key(self) -> str:
        return f"{self.provider}/{self.sd3_model or self.endpoint}"

    def parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {"aspect_ratio": "1:1", "output_format": "png"}
        if self.sd3_model:
            params["model"] = self.sd3_model
        return params

    def generate(self, request: GenerationRequest) -> GenerationResult:
        key = self.credential()
        fields = {"prompt": request.full_prompt(), "seed": str(request.seed % _SEED_LIMIT)}
        fields |= {k: str(v) for k, v in request.parameters.items()}
        t0 = time.perf_counter()
        resp = self.send(
            "POST",
            f"{API}/{self.endpoint}",
            headers={"Authorization": f"Bearer {key}", "accept": "image/*"},
            # every field as a file part without a filename: forces multipart/form-data
            files={k: (None, v) for k, v in fields.items()},
        )
        reason = resp.headers.get("finish-reason", "SUCCESS")
        if reason.upper() == "CONTENT_FILTERED":
            raise AdapterError(f"{self.name}: image withheld by the content filter")
        if not resp.headers.get("content-type", "").startswith("image/"):
            raise AdapterError(
                f"{self.name}: expected an image, got {resp.headers.get('content-type')!r}"
            )
        return self.result(resp.content, t0, seed=resp.headers.get("seed"))


ADAPTERS.add("stability:core", partial(StabilityImage, "core"))
ADAPTERS.add("stability:sd3", partial(StabilityImage, "sd3"))
