"""OpenAI Images: ``/v1/images/generations``, and ``/v1/images/edits`` for image conditioning.

``openai:MODEL`` names any model of an OpenAI-compatible images endpoint: OpenAI itself
(default), or any other server through ``--base-url URL`` / ``OPENAI_BASE_URL`` (Azure,
OpenRouter, a local server; a loopback server needs no key). A request that carries
reference images (the previous_image condition hands over the previous frame) goes to the
multipart edits endpoint — for gpt-image models only; any other goes to generations as JSON.
The answer's ``data[0]`` holds ``b64_json`` (gpt-image-1 always; dall-e-3 because
``response_format`` asks for it) or, failing that, a ``url`` downloaded without the key.
OpenAI takes no seed. Key: ``OPENAI_API_KEY``. A base URL other than OpenAI's is part of
the adapter's version (so of every cache key): two servers never share an image.
"""

from __future__ import annotations

import os
import time
from functools import partial
from typing import Any

import httpx

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.providers._http import HttpAdapter, b64decode
from vsb.errors import AdapterError, InputError
from vsb.store.calls import is_loopback

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"
API = f"{DEFAULT_BASE_URL}/images"

#: Per-model request parameters (part of every cache key); quality matches the price list.
MODEL_PARAMETERS: dict[str, dict[str, Any]] = {
    "gpt-image-1": {"size": "1024x1024", "quality": "medium"},
    "dall-e-3": {"size": "1024x1024", "quality": "standard", "response_format": "b64_json"},
}
#: Model-name prefixes whose edits endpoint takes a reference image.
IMAGE_INPUT_PREFIXES = ("gpt-image-",)
#: The documented prompt limits, in characters (OpenAI API reference, Images, "Create image"
#: and "Create image edit", ``prompt``: https://platform.openai.com/docs/api-reference/images/create
#: — "32000 characters for the GPT image models, 1000 characters for dall-e-2 and 4000
#: characters for dall-e-3"). By exact name; ``gpt-image-*`` by prefix; others unknown.
PROMPT_LIMITS: dict[str, int] = {"dall-e-2": 1000, "dall-e-3": 4000}
GPT_IMAGE_PROMPT_LIMIT = 32000


class OpenAIImages(HttpAdapter):
    """An OpenAI-compatible Images model (``openai:MODEL``)."""

    provider = "openai"
    env_var = "OPENAI_API_KEY"

    def __init__(self, model: str, *, base_url: str | None = None, **kw: Any) -> None:
        super().__init__(model, **kw)
        base = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        if not base.startswith(("https://", "http://")):
            raise InputError(f"--base-url {base!r}: give an http(s) URL")
        self.api_base = base
        self.key_optional = is_loopback(base)
        if base != DEFAULT_BASE_URL:
            self.version = f"1+{base}"
        self.accepts_reference_image = model.startswith(IMAGE_INPUT_PREFIXES)

    def parameters(self) -> dict[str, Any]:
        return dict(MODEL_PARAMETERS.get(self.model, {"size": "1024x1024"}))

    def prompt_limit(self) -> int | None:
        if self.model.startswith("gpt-image-"):
            return GPT_IMAGE_PROMPT_LIMIT
        return PROMPT_LIMITS.get(self.model)

    def preflight(self) -> None:
        if not self.key_optional:
            self.credential()

    def auth_headers(self) -> dict[str, str]:
        if self.key_optional and not os.environ.get(self.env_var):
            return {}
        return {"Authorization": f"Bearer {self.credential()}"}

    def request_image(self, request: GenerationRequest) -> GenerationResult:
        prompt = request.full_prompt()
        t0 = time.perf_counter()
        if request.reference_images and self.accepts_reference_image:
            fields = {"model": self.model, "prompt": prompt, "n": "1"}
            fields |= {k: str(v) for k, v in request.parameters.items()}
            files = [
                ("image[]", (f"reference_{i}.png", png, "image/png"))
                for i, png in enumerate(request.reference_images)
            ]
            url = f"{self.api_base}/images/edits"
            resp = self.send("POST", url, auth=True, data=fields, files=files)
            endpoint = "edits"
        else:
            body = {"model": self.model, "prompt": prompt, "n": 1, **request.parameters}
            resp = self.send("POST", f"{self.api_base}/images/generations", auth=True, json=body)
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


def OpenAIImageEdits(model: str, **kw: Any) -> OpenAIImages:
    """An OpenAI Images model that accepts a reference image (``/v1/images/edits``)."""
    adapter = OpenAIImages(model, **kw)
    adapter.accepts_reference_image = True
    return adapter


def openai_adapter(model: str, *, client: httpx.Client | None = None, **kw: Any) -> OpenAIImages:
    """``openai:MODEL`` (the registry's pattern): any model of an OpenAI-compatible endpoint."""
    if not model or any(c.isspace() for c in model):
        raise InputError(f"openai:{model}: give a model name (openai:MODEL)")
    return OpenAIImages(model, client=client, **kw)


def pattern_info() -> dict[str, Any]:
    """How ``vsb models`` lists the ``openai:`` family."""
    return {
        "pattern": "openai:MODEL",
        "env_var": OpenAIImages.env_var,
        "image_input": "gpt-image-* models (edits endpoint)",
        "about": "any OpenAI-compatible images endpoint: --base-url URL or OPENAI_BASE_URL "
        "(a loopback server needs no key)",
    }


# the listed models (vsb.adapters.registry.BUILTIN names them by import path)
gpt_image_1 = partial(OpenAIImages, "gpt-image-1")
dall_e_3 = partial(OpenAIImages, "dall-e-3")
