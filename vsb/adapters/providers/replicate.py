"""Replicate predictions: any hosted text-to-image model, Kontext-style image conditioning.

``replicate:OWNER/NAME`` runs a model's latest version (``POST /v1/models/{owner}/{name}/
predictions``), ``replicate:OWNER/NAME:VERSION`` a pinned one (``POST /v1/predictions`` with
``version``). With ``Prefer: wait`` the answer is usually a finished prediction; otherwise
``urls.get`` is polled (at most ``max_polls`` times, with an injectable ``sleep``) until it
has succeeded, failed or been canceled — and only while ``urls.get`` is on the API host:
the token never goes anywhere else. The output image URL (or the first of a list) is
downloaded with the token only when it is on the API host (``replicate.delivery`` needs
none). A prediction that failed on the model's safety checker is a refusal (``Refused``).
Kontext models (a name containing ``kontext``) take the previous frame as ``input_image``
(a PNG data URI). Key: ``REPLICATE_API_TOKEN``. A model's prompt budget depends on the
model (its own text encoders) and Replicate documents none for the listed ones: unknown.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.providers._http import HttpAdapter, data_uri
from vsb.errors import AdapterError, InputError
from vsb.store.calls import Refused, classify

API = "https://api.replicate.com/v1"
_TERMINAL = ("succeeded", "failed", "canceled")
_SEED_LIMIT = 2**31 - 1
#: OWNER/NAME[:VERSION] as Replicate spells them.
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(:[0-9a-f]{8,64})?$")


class ReplicateModel(HttpAdapter):
    """A Replicate text-to-image model ``owner/name`` (its latest version, or a pinned one)."""

    provider = "replicate"
    env_var = "REPLICATE_API_TOKEN"
    api_base = API

    def __init__(
        self,
        model: str,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        poll_interval: float = 1.0,
        max_polls: int = 120,
        **kw: Any,
    ) -> None:
        super().__init__(model, client=client, sleep=sleep, **kw)
        self.slug, _, self.pinned = model.partition(":")
        self.poll_interval = poll_interval
        self.max_polls = max_polls
        if "kontext" in self.slug.lower():
            self.accepts_reference_image = True

    @property
    def pricing_key(self) -> str:
        # config/pricing.json names Replicate models without their owner
        return f"{self.provider}/{self.slug.rsplit('/', 1)[-1]}"

    def parameters(self) -> dict[str, Any]:
        return {"aspect_ratio": "1:1", "output_format": "png"}

    def input_of(self, request: GenerationRequest) -> dict[str, Any]:
        """The prediction's ``input`` object."""
        inp = {
            "prompt": request.full_prompt(),
            "seed": request.seed % _SEED_LIMIT,
            **request.parameters,
        }
        if request.reference_images and self.accepts_reference_image:
            inp["input_image"] = data_uri(request.reference_images[-1])
        return inp

    def request_image(self, request: GenerationRequest) -> GenerationResult:
        t0 = time.perf_counter()
        body: dict[str, Any] = {"input": self.input_of(request)}
        if self.pinned:
            url, body["version"] = f"{API}/predictions", self.pinned
        else:
            url = f"{API}/models/{self.slug}/predictions"
        resp = self.send("POST", url, auth=True, headers={"Prefer": "wait"}, json=body)
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
            get = (pred.get("urls") or {}).get("get")
            if not isinstance(get, str):
                raise AdapterError(f"{self.name}: unfinished prediction has no urls.get")
            self.sleep(self.poll_interval)
            pred = self.fetch("GET", get, auth=True)
            polls += 1
        if _status(pred) != "succeeded" or not isinstance(pred, dict):
            detail = pred.get("error") if isinstance(pred, dict) else None
            msg = f"{self.name}: prediction {_field(pred, 'id')} {_status(pred)}: {detail}"
            if _status(pred) == "failed" and classify(400, str(detail)) == "refused":
                raise Refused(msg, billed=True)  # the model ran, then its checker said no
            raise AdapterError(msg)
        out = pred.get("output")
        if isinstance(out, list):
            out = out[0] if out else None
        if not isinstance(out, str):
            raise AdapterError(f"{self.name}: prediction succeeded without an output URL")
        raw = self.download(out, auth=True)  # the token goes along on the API host only
        return self.result(raw, t0, prediction_id=pred.get("id"), polls=polls)


def ReplicateKontext(model: str, **kw: Any) -> ReplicateModel:
    """A Kontext-style model: the previous frame goes in as ``input_image``."""
    adapter = ReplicateModel(model, **kw)
    adapter.accepts_reference_image = True
    return adapter


def _status(pred: Any) -> str:
    if not isinstance(pred, dict):
        return "invalid"
    return str(pred.get("status", "unknown"))


def _field(pred: Any, key: str) -> Any:
    return pred.get(key) if isinstance(pred, dict) else None


def replicate_adapter(model: str, **kw: Any) -> ReplicateModel:
    """``replicate:OWNER/NAME[:VERSION]`` (the registry's pattern): any Replicate model."""
    if not _NAME.match(model):
        raise InputError(
            f"replicate:{model}: give replicate:OWNER/NAME or replicate:OWNER/NAME:VERSION "
            "(VERSION: the version id, hex)"
        )
    return ReplicateModel(model, **kw)


def pattern_info() -> dict[str, Any]:
    """How ``vsb models`` lists the ``replicate:`` family."""
    return {
        "pattern": "replicate:OWNER/NAME[:VERSION]",
        "env_var": ReplicateModel.env_var,
        "image_input": "Kontext models (name contains 'kontext': input_image)",
        "about": "any Replicate text-to-image model, its latest version or a pinned one",
    }


# the listed models (vsb.adapters.registry.BUILTIN names them by import path)
flux_schnell = partial(ReplicateModel, "black-forest-labs/flux-schnell")
flux_kontext_pro = partial(ReplicateModel, "black-forest-labs/flux-kontext-pro")
flux_kontext_max = partial(ReplicateModel, "black-forest-labs/flux-kontext-max")
