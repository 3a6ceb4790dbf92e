"""Google Imagen through the Gemini API: ``POST …/v1beta/models/{model}:predict``.

``imagen:MODEL`` names any Imagen model of the API. The body is ``{"instances": [{"prompt":
…}], "parameters": {"sampleCount": 1, …}}``; the image comes back as
``predictions[0].bytesBase64Encoded``. An empty ``predictions`` list means the safety filter
withheld the image: a refusal. Key: ``GOOGLE_API_KEY``, sent in the ``x-goog-api-key``
header — never in the URL, where any log line or error quoting the URL would carry it.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from vsb.adapters.base import GenerationRequest, GenerationResult, PromptFit
from vsb.adapters.providers._http import HttpAdapter, b64decode
from vsb.errors import AdapterError, InputError
from vsb.store.calls import Refused

ROOT = "https://generativelanguage.googleapis.com"
API = f"{ROOT}/v1beta/models"

#: The documented prompt limit, in Imagen's own tokens (Gemini API, "Generate images using
#: Imagen", Imagen prompt guide: https://ai.google.dev/gemini-api/docs/imagen — "Maximum prompt
#: length is 480 tokens"). vsb has no Imagen tokenizer: the length stays unknown, never guessed.
PROMPT_TOKENS = 480

#: Model id -> its price-list entry.
PRICING_KEYS = {
    "imagen-3.0-generate-002": "google/imagen-3",
    "imagen-3.0-fast-generate-001": "google/imagen-3-fast",
}


class ImagenModel(HttpAdapter):
    """An Imagen model served by ``:predict``."""

    provider = "imagen"
    env_var = "GOOGLE_API_KEY"
    api_base = ROOT

    @property
    def pricing_key(self) -> str:
        return PRICING_KEYS.get(self.model, f"google/{self.model}")

    def parameters(self) -> dict[str, Any]:
        return {"sampleCount": 1, "aspectRatio": "1:1"}

    def auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.credential()}

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        """480 of Imagen's tokens, which vsb cannot count: the length is unknown (so no
        prompt is refused before the call)."""
        return PromptFit("tokens", None, PROMPT_TOKENS)

    def request_image(self, request: GenerationRequest) -> GenerationResult:
        body = {
            "instances": [{"prompt": request.full_prompt()}],
            "parameters": dict(request.parameters),
        }
        t0 = time.perf_counter()
        resp = self.send("POST", f"{API}/{self.model}:predict", auth=True, json=body)
        obj = self.json_of(resp)
        preds = obj.get("predictions") if isinstance(obj, dict) else None
        if not preds:
            raise Refused(f"{self.name}: no image returned (withheld by the safety filter)")
        data = preds[0].get("bytesBase64Encoded") if isinstance(preds[0], dict) else None
        if not isinstance(data, str):
            raise AdapterError(f"{self.name}: predictions[0] has no bytesBase64Encoded")
        return self.result(b64decode(data, self.name), t0)


def imagen_adapter(model: str, **kw: Any) -> ImagenModel:
    """``imagen:MODEL`` (the registry's pattern): any Imagen model of the Gemini API."""
    if not model or not all(c.isalnum() or c in ".-_" for c in model):
        raise InputError(f"imagen:{model}: give a model id (e.g. imagen-3.0-generate-002)")
    return ImagenModel(model, **kw)


def pattern_info() -> dict[str, Any]:
    """How ``vsb models`` lists the ``imagen:`` family."""
    return {
        "pattern": "imagen:MODEL",
        "env_var": ImagenModel.env_var,
        "image_input": "no",
        "about": "any Imagen model of the Gemini API (:predict)",
    }


# the listed models (vsb.adapters.registry.BUILTIN names them by import path)
imagen_3_0_generate_002 = partial(ImagenModel, "imagen-3.0-generate-002")
imagen_3_0_fast_generate_001 = partial(ImagenModel, "imagen-3.0-fast-generate-001")
