"""The provider-neutral adapter interface: a ``GenerationRequest`` in, a PNG out.

Every model (HTTP providers, stored samples, procedural simulators) is an
``ImageModelAdapter`` registered by name (``vsb.adapters.registry``). Provider adapters
that come later follow three rules: they take an injected ``httpx.Client`` (tests pass one
built on ``httpx.MockTransport``), they read their credential from the environment at call
time through ``require_env`` (a missing one raises ``CredentialMissing``; the runner skips
and reports the model), and they never print.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from vsb.conditions import ConditionContext
from vsb.errors import CredentialMissing
from vsb.fsio import canonical_json, sha256_hex
from vsb.story.models import Story

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Privileged:
    """What only a simulator may see: the story itself and where the request sits in it."""

    story: Story
    #: sha256 of the story's canonical JSON (so an edited story never hits a stale entry).
    story_sha256: str
    scene: int
    condition: str


@dataclass(frozen=True)
class GenerationRequest:
    """One image request, exactly as sent (its key is the basis of the generation cache)."""

    model: str
    version: str
    prompt: str
    seed: int
    context: ConditionContext
    parameters: Mapping[str, Any] = field(default_factory=dict)
    reference_images: tuple[bytes, ...] = ()
    #: Only set for adapters with ``privileged = True`` (simulators).
    privileged: Privileged | None = None
    #: Where the request sits (every adapter is told; not part of the cache key: scene 1 is
    #: one request under every condition, made once and served from the cache after).
    story_id: str | None = None
    scene: int | None = None
    condition: str | None = None

    def key_material(self) -> dict[str, Any]:
        """The canonical description that is hashed into the cache key."""
        ctx = self.context
        out: dict[str, Any] = {
            "model": self.model,
            "version": self.version,
            "prompt": self.prompt,
            "seed": self.seed,
            "parameters": dict(sorted(self.parameters.items())),
            # what is sent, not the condition's name: scene 1 is one request under every
            # condition (simulators add the condition below)
            "context": {"text": ctx.text, "data": ctx.data},
            "reference_images": [sha256_hex(b) for b in self.reference_images],
        }
        if self.privileged is not None:
            p = self.privileged
            out["story"] = {"sha256": p.story_sha256, "id": p.story.id}
            out["scene"] = p.scene
            out["condition"] = p.condition
        return out

    def key(self) -> str:
        """sha256 over the canonical JSON of ``key_material``."""
        return sha256_hex(canonical_json(self.key_material()))

    @property
    def reference(self) -> bytes | None:
        """The reference image sent along (previous_image: the previous frame), or None."""
        return self.reference_images[0] if self.reference_images else None

    def full_prompt(self) -> str:
        """Context text/JSON followed by the scene text: what a text-only provider sends."""
        parts: list[str] = []
        if self.context.data is not None:
            parts.append("State so far (JSON): " + canonical_json(self.context.data).decode())
        if self.context.text is not None:
            parts.append("Story so far: " + self.context.text)
        parts.append(("Draw this scene: " if parts else "") + self.prompt)
        return "\n\n".join(parts)


#: The units a prompt budget is counted in: a text encoder's tokens (CLIP's BPE, start and
#: end tokens included), a provider's documented character limit, or nothing known.
PromptUnit = Literal["clip tokens", "tokens", "characters", "unknown"]


@dataclass(frozen=True)
class PromptFit:
    """How one request's prompt fits its model's text budget (issue #44): its length and the
    budget in one unit, whether anything of it was not encoded, and how it was encoded.
    Recorded for every request (``records.jsonl``); ``unknown`` is never a guess."""

    unit: PromptUnit = "unknown"
    #: the full prompt's length in ``unit`` (None: vsb cannot count it for this model)
    length: int | None = None
    #: the model's budget in ``unit`` (None: no documented limit, or unknown)
    budget: int | None = None
    #: some of the prompt never reached the model (truncated by its encoder)
    cut: bool = False
    #: ``whole`` (fits), ``chunked`` (a long prompt encoded whole in chunks), ``truncated``
    encoded: Literal["whole", "chunked", "truncated"] = "whole"

    def over(self) -> bool:
        """The prompt is longer than the budget (whether or not it was encoded whole)."""
        return self.length is not None and self.budget is not None and self.length > self.budget


@dataclass(frozen=True)
class GenerationResult:
    """A generated image (PNG bytes), provider metadata, and the cost if the provider says."""

    png: bytes
    metadata: Mapping[str, Any] = field(default_factory=dict)
    cost_usd: float | None = None


class ImageModelAdapter:
    """Base class of every model adapter.

    Subclasses set ``name``/``version`` and implement ``generate``. ``privileged`` adapters
    (simulators) receive ``request.privileged``; ``process_safe`` ones may run in a forked
    worker pool (no open network clients); ``accepts_reference_image`` says whether the
    previous_image condition can hand them the previous frame (a model without it is not
    run under that condition); ``paid`` ones cost money per call (``--budget`` applies);
    ``oracle`` says whether results carry simulator faults for ``RUN/oracle/`` (None: as
    ``privileged``). An adapter may also set ``concurrency`` (requests at a time; HTTP
    providers 8) and ``pricing_key`` (its ``config/pricing.json`` entry).
    """

    name: str = "abstract"
    version: str = "0"
    privileged: ClassVar[bool] = False
    process_safe: ClassVar[bool] = False
    accepts_reference_image: bool = False
    paid: ClassVar[bool] = False
    oracle: ClassVar[bool | None] = None

    def preflight(self) -> None:
        """Check that the adapter can run (credentials present); raises ``CredentialMissing``."""

    def parameters(self) -> dict[str, Any]:
        """Generation parameters that go into every request (and so into the cache key)."""
        return {}

    def request_parameters(
        self, parameters: dict[str, Any], privileged: Privileged | None
    ) -> dict[str, Any]:
        """The parameters of one request: ``parameters`` (this adapter's ``parameters()``)
        plus whatever names that request's own input by content, so that it is part of the
        cache key (stored samples add the sha256 of the file they serve)."""
        return parameters

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        """How ``request``'s prompt fits this model's text budget, known before any call: a
        pipeline counts with its own tokenizer(s), a provider against its documented limit.
        The default knows nothing (``unit`` unknown); a paid adapter whose prompt is over a
        hard limit is refused before any call (``vsb run``)."""
        return PromptFit()

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Produce one image for ``request``; raises ``AdapterError`` on failure."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the adapter opened itself (a network client); it may be used again
        (it reopens on demand). The runner calls it when a run ends."""


def writes_oracle(adapter: ImageModelAdapter) -> bool:
    """Whether ``adapter``'s results carry oracle faults (``RUN/oracle/faults.jsonl``)."""
    return adapter.privileged if adapter.oracle is None else adapter.oracle


def require_env(var: str, model: str) -> str:
    """The value of environment variable ``var``, read now; ``CredentialMissing`` if unset."""
    value = os.environ.get(var)
    if not value:
        raise CredentialMissing(f"model {model!r} needs the environment variable {var}")
    return value
