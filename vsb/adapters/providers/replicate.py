"""Replicate predictions: any hosted text-to-image model, Kontext-style image conditioning.

``POST /v1/models/{owner}/{name}/predictions`` with ``Prefer: wait`` usually answers with a
finished prediction; otherwise ``urls.get`` is polled (at most ``max_polls`` times, with an
injectable ``sleep``) until it has succeeded, failed or been canceled. The output image URL
(or the first of a list) is downloaded through the same client. Kontext models take the
previous frame as ``input_image`` (a PNG data URI). Key: ``REPLICATE_API_TOKEN``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import httpx

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.providers._http import HttpAdapter, data_uri
from vsb.adapters.registry import ADAPTERS
from vsb.errors import AdapterError

API = "https://api.replicate.com/v1"
_TERMINAL = ("succeeded", "failed", "canceled")
_SEED_LIMIT = 2**31 - 1


class ReplicateModel(HttpAdapter):
    """A Replicate text-to-image model ``owner/name`` (its latest version)."""

    provider = "replicate"
    env_var = "REPLICATE_API_TOKEN"

    def __init__(
        self,
        model: str,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        poll_interval: float = 1.0,
        max_polls: int = 120,
    ) -> None:
        super().__init__(model, client=client)
        self.sleep = sleep
        self.poll_interval = poll_interval
        self.max_polls = max_polls

    @property
    def pricing_key(self) -> str:
        # config/pricing.json names Replicate models without their owner
        return f"{self.provider}/{self.model.rsplit('/', 1)[-1]}"

    def parameters(self) -> dict[str, Any]:
        return {"aspect_ratio": "1:1", "output_format": "png"}

    def input_of(self, request: GenerationRequest) -> dict[str, Any]:
        """The prediction's ``input`` object."""
        return {
            "prompt": request.full_prompt(),
            "seed": request.seed % _SEED_LIMIT,
            **request.parameters,
        }

    def generate(self, request: GenerationRequest) -> GenerationResult:
        token = self.credential()
        auth = {"Authorization": f"Bearer {token}"}
        t0 = time.perf_counter()
        resp = self.send(
            "POST",
            f"{API}/models/{self.model}/predictions",
            headers={**auth, "Prefer": "wait"},
            json={"input": self.input_of(request)},
        )
        pred = self.json_of(resp)
        polls = 0
        while _status(pred) not in _TERMINAL:
            if not isinstance(pred, dict):
                raise AdapterError(f"{self.name}: prediction is not a JSON object")
            if polls >= self.max_polls:
                raise AdapterError(
                    f"{self.name}: prediction {pred.get('id')} still {_status(pred)!r} "
                    f"after {polls} polls"
                )
            url = (pred.get("urls") or {}).get("get")
            if not isinstance(url, str):
                raise AdapterError(f"{self.name}: unfinished prediction has no urls.get")
            self.sleep(self.poll_interval)
            pred = self.json_of(self.send("GET", url, headers=auth))
            polls += 1
        if _status(pred) != "succeeded" or not isinstance(pred, dict):
            raise AdapterError(
                f"{self.name}: prediction {pred.get('id')} {_status(pred)}: {pred.get('error')}"
            )
        out = pred.get("output")
        if isinstance(out, list):
            out = out[0] if out else None
        if not isinstance(out, str):
            raise AdapterError(f"{self.name}: prediction succeeded without an output URL")
        # file URLs on the API host need the token; replicate.delivery ones do not
        raw = self.download(out, headers=auth if out.startswith(API) else None)
        return self.result(raw, t0, prediction_id=pred.get("id"), polls=polls)


class ReplicateKontext(ReplicateModel):
    """A Kontext-style model: the previous frame goes in as ``input_image``."""

    accepts_reference_image: ClassVar[bool] = True

    def input_of(self, request: GenerationRequest) -> dict[str, Any]:
        inp = super().input_of(request)
        if request.reference_images:
            inp["input_image"] = data_uri(request.reference_images[-1])
        return inp


def _status(pred: Any) -> str:
    if not isinstance(pred, dict):
        return "invalid"
    return str(pred.get("status", "unknown"))


ADAPTERS.add(
    "replicate:black-forest-labs/flux-schnell",
    partial(ReplicateModel, "black-forest-labs/flux-schnell"),
)
for _kontext in ("flux-kontext-pro", "flux-kontext-max"):
    ADAPTERS.add(
        f"replicate:black-forest-labs/{_kontext}",
        partial(ReplicateKontext, f"black-forest-labs/{_kontext}"),
    )
