"""Google Imagen through the Gemini API: ``POST …/v1beta/models/{model}:predict?key=…``.

The body is ``{"instances": [{"prompt": …}], "parameters": {"sampleCount": 1, …}}``; the
image comes back as ``predictions[0].bytesBase64Encoded``. An empty ``predictions`` list
means the safety filter withheld the image. Key: ``GOOGLE_API_KEY`` (never echoed in errors).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.providers._http import HttpAdapter, b64decode
from vsb.adapters.registry import ADAPTERS
from vsb.errors import AdapterError

API = "https://generativelanguage.googleapis.com/v1beta/models"

#: Model id -> its price-list entry.
PRICING_KEYS = {
    "imagen-3.0-generate-002": "google/imagen-3",
    "imagen-3.0-fast-generate-001": "google/imagen-3-fast",
}


class ImagenModel(HttpAdapter):
    """An Imagen model served by ``:predict``."""

    provider = "imagen"
    env_var = "GOOGLE_API_KEY"

    @property
    def pricing_key(self) -> str:
        return PRICING_KEYS.get(self.model, f"google/{self.model}")

    def parameters(self) -> dict[str, Any]:
        return {"sampleCount": 1, "aspectRatio": "1:1"}

    def generate(self, request: GenerationRequest) -> GenerationResult:
        key = self.credential()
        body = {
            "instances": [{"prompt": request.full_prompt()}],
            "parameters": dict(request.parameters),
        }
        t0 = time.perf_counter()
        resp = self.send("POST", f"{API}/{self.model}:predict", params={"key": key}, json=body)
        obj = self.json_of(resp)
        preds = obj.get("predictions") if isinstance(obj, dict) else None
        if not preds:
            raise AdapterError(f"{self.name}: no image returned (filtered by safety settings?)")
        data = preds[0].get("bytesBase64Encoded") if isinstance(preds[0], dict) else None
        if not isinstance(data, str):
            raise AdapterError(f"{self.name}: predictions[0] has no bytesBase64Encoded")
        return self.result(b64decode(data, self.name), t0)


for _model in PRICING_KEYS:
    ADAPTERS.add(f"imagen:{_model}", partial(ImagenModel, _model))
