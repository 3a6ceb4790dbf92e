"""OpenAI Images: ``/v1/images/generations``, and ``/v1/images/edits`` for image conditioning.

A request that carries reference images (the previous_image condition hands over the
previous frame) goes to the multipart edits endpoint; any other goes to generations as
JSON. The answer's ``data[0]`` holds ``b64_json`` (gpt-image-1 always; dall-e-3 because
``response_format`` asks for it) or, failing that, a ``url`` fetched through the same
client. OpenAI takes no seed. Key: ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, ClassVar

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.providers._http import HttpAdapter, b64decode
from vsb.adapters.registry import ADAPTERS
from vsb.errors import AdapterError

API = "https://api.openai.com/v1/images"

#: Per-model request parameters (part of every cache key); quality matches the price list.
MODEL_PARAMETERS: dict[str, dict[str, Any]] = {
    "gpt-image-1": {"size": "1024x1024", "quality": "medium"},
    "dall-e-3": {"size": "1024x1024", "quality": "standard", "response_format": "b64_json"},
}


class OpenAIImages(HttpAdapter):
    """An OpenAI Images model (text only: dall-e-3 has no edits endpoint)."""

    provider = "openai"
    env_var = "OPENAI_API_KEY"

    def parameters(self) -> dict[str, Any]:
        return dict(MODEL_PARAMETERS.get(self.model, {"size": "1024x1024"}))

    def generate(self, request: GenerationRequest) -> GenerationResult:
        key = self.credential()
        headers = {"Authorization": f"Bearer {key}"}
        prompt = request.full_prompt()
        t0 = time.perf_counter()
        if request.reference_images and self.accepts_reference_image:
            fields = {"model": self.model, "prompt": prompt, "n": "1"}
            fields |= {k: str(v) for k, v in request.parameters.items()}
            files = [
                ("image[]", (f"reference_{i}.png", png, "image/png"))
                for i, png in enumerate(request.reference_images)
            ]
            resp = self.send("POST", f"{API}/edits", headers=headers, data=fields, files=files)
            endpoint = "edits"
        else:
            body = {"model": self.model, "prompt": prompt, "n": 1, **request.parameters}
            resp = self.send("POST", f"{API}/generations", headers=headers, json=body)
            endpoint = "generations"
        raw = self._image_of(self.json_of(resp))
        return self.result(raw, t0, endpoint=endpoint)

    def _image_of(self, obj: Any) -> bytes:
        try:
            item = obj["data"][0]
        except (KeyError, IndexError, TypeError) as err:
            raise AdapterError(f"{self.name}: response has no data[0]") from err
        if isinstance(item, dict) and isinstance(item.get("b64_json"), str):
            return b64decode(item["b64_json"], self.name)
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            return self.download(item["url"])
        raise AdapterError(f"{self.name}: data[0] has neither b64_json nor url")


class OpenAIImageEdits(OpenAIImages):
    """An OpenAI Images model that also accepts a reference image (``/v1/images/edits``)."""

    accepts_reference_image: ClassVar[bool] = True


ADAPTERS.add("openai:gpt-image-1", partial(OpenAIImageEdits, "gpt-image-1"))
ADAPTERS.add("openai:dall-e-3", partial(OpenAIImages, "dall-e-3"))
