"""A diffusers pipeline's text budget, and a long prompt encoded whole (issue #44).

``PipelineText`` reads the pipeline's own tokenizers (``tokenizer``, and ``tokenizer_2`` for
SDXL) from its folder, so a request's ``PromptFit`` is known before the pipeline is loaded:
its length in the tokenizer's tokens (start and end included, untruncated) against the
encoder's ``model_max_length`` (77 for the CLIP encoders of Stable Diffusion 1.x/2.x and
SDXL). A pipeline with another text encoder (T5 in SD3, FLUX, …) reads as many tokens as its
call's ``max_sequence_length``, which vsb does not set: its fit is ``unknown``.

A CLIP prompt over the budget is, with ``long_prompt="chunks"`` (the default), encoded whole
with compel (``pip install 'vsb[diffusers]'``): 75-token chunks cut at sentence ends, each
with its start and end tokens, encoded by the pipeline's own text encoder(s) and joined,
handed to the pipeline as ``prompt_embeds`` (with ``pooled_prompt_embeds`` from the first
chunk for SDXL, as SDXL users do). The text goes to compel as one fragment of weight 1, never
through its prompt syntax (``(JSON)``, ``medium-light`` and ``+``/``-`` stay plain words).
With ``long_prompt="truncate"`` the pipeline's encoder reads the first 77 tokens of the scene
text followed by the context, so that what is cut is the context; the result says ``cut``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsb.adapters.base import GenerationRequest, PromptFit
from vsb.errors import InputError

LONG_PROMPT = ("chunks", "truncate")
#: Pipelines compel encodes in chunks: one CLIP encoder, or SDXL's two.
CHUNKED = {"StableDiffusionPipeline": 1, "StableDiffusionXLPipeline": 2}
COMPEL_HINT = "pip install 'vsb[diffusers]' (compel encodes a long prompt in chunks)"


def scene_first(request: GenerationRequest) -> str:
    """The request's text with the scene first, then the context (what a truncating encoder
    should read first is the scene: the context is what it may lose)."""
    full = request.full_prompt()
    tail = "Draw this scene: " + request.prompt
    if full == request.prompt or not full.endswith(tail):
        return full
    return request.prompt + "\n\n" + full[: -len(tail)].rstrip("\n")


@dataclass
class PipelineText:
    """The pipeline's tokenizers, loaded from its folder on first use."""

    path: Path
    pipeline_class: str

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._tokenizers: list[Any] | None = None

    def tokenizers(self) -> list[Any]:
        """``tokenizer`` (and ``tokenizer_2``) as the pipeline loads them."""
        with self._lock:
            if self._tokenizers is None:
                from transformers import AutoTokenizer

                found = [s for s in ("tokenizer", "tokenizer_2") if (self.path / s).is_dir()]
                self._tokenizers = [
                    AutoTokenizer.from_pretrained(self.path, subfolder=s, local_files_only=True)
                    for s in found
                ]
            return self._tokenizers

    def clip(self) -> bool:
        """The pipeline's text encoders are CLIP's alone (a budget vsb knows)."""
        toks = self.tokenizers()
        return bool(toks) and all("CLIP" in type(t).__name__ for t in toks)

    def fit(self, text: str, long_prompt: str) -> PromptFit:
        """How ``text`` fits the pipeline's encoder(s), and how it is encoded."""
        toks = self.tokenizers()
        if not self.clip():
            return PromptFit()
        budget = min(int(t.model_max_length) for t in toks)
        length = max(len(t(text, verbose=False)["input_ids"]) for t in toks)
        if length <= budget:
            return PromptFit("clip tokens", length, budget, False, "whole")
        if long_prompt == "chunks" and self.pipeline_class in CHUNKED:
            return PromptFit("clip tokens", length, budget, False, "chunked")
        return PromptFit("clip tokens", length, budget, True, "truncated")


def require_compel() -> None:
    """``InputError`` naming the extra when compel cannot be imported."""
    import importlib.util

    if importlib.util.find_spec("compel") is None:
        raise InputError(f"--long-prompt chunks needs compel: {COMPEL_HINT}")


def chunked_embeds(pipe: Any, prompts: list[str]) -> dict[str, Any]:
    """The pipeline arguments that encode each of ``prompts`` whole, in chunks: ``prompt_embeds``
    and ``negative_prompt_embeds`` (the empty prompt, as the pipeline's own guidance uses),
    padded to one length; for SDXL also the pooled ones."""
    import torch
    from compel import Compel, ReturnedEmbeddingsType
    from compel.prompt_parser import Conjunction, FlattenedPrompt, Fragment

    sdxl = getattr(pipe, "tokenizer_2", None) is not None and pipe.text_encoder_2 is not None
    kind = (
        ReturnedEmbeddingsType.PENULTIMATE_HIDDEN_STATES_NON_NORMALIZED
        if sdxl
        else ReturnedEmbeddingsType.LAST_HIDDEN_STATES_NORMALIZED
    )
    pairs = [(pipe.tokenizer, pipe.text_encoder)]
    if sdxl:
        pairs.append((pipe.tokenizer_2, pipe.text_encoder_2))
    encoders = [
        Compel(
            tokenizer=tok, text_encoder=enc, truncate_long_prompts=False,
            returned_embeddings_type=kind, requires_pooled=sdxl and i == 1,
            device=str(enc.device),
        )
        for i, (tok, enc) in enumerate(pairs)
    ]  # fmt: skip

    def embed(text: str) -> torch.Tensor:
        parts = []
        for c in encoders:
            plain = Conjunction([FlattenedPrompt([Fragment(text, 1.0)])])
            parts.append(c.build_conditioning_tensor_for_conjunction(plain)[0])
        return torch.cat(parts, dim=-1)

    with torch.no_grad():
        embeds = [embed(p) for p in prompts]
        empty = embed("")
        # shorter ones padded with the empty prompt's chunk, as compel pads
        padded = Compel._pad_conditioning_tensors_to_same_length(
            [*embeds, empty], emptystring_conditioning=empty
        )
        positive = torch.cat(padded[:-1])
        out: dict[str, Any] = {"prompt_embeds": positive}
        zeros = sdxl and bool(getattr(pipe.config, "force_zeros_for_empty_prompt", False))
        negative = padded[-1].expand_as(positive).contiguous()
        out["negative_prompt_embeds"] = torch.zeros_like(positive) if zeros else negative
        if sdxl:
            pooled_of = encoders[1].conditioning_provider.get_pooled_embeddings
            pooled = torch.cat([pooled_of([p], device=encoders[1].device) for p in prompts])
            empty_pooled = pooled_of([""], device=encoders[1].device).expand_as(pooled)
            out["pooled_prompt_embeds"] = pooled
            out["negative_pooled_prompt_embeds"] = (
                torch.zeros_like(pooled) if zeros else empty_pooled.contiguous()
            )
    return out
