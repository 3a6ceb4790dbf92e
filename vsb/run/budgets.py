"""Prompt budgets in a run (issue #44): what every record says of its prompt's fit, the check
before any paid call, and the count of cut prompts a run reports.

- ``record_fields(fit)``: the ``prompt_*`` fields of a record (``records.jsonl``), taken by
  ``fit_of`` from the result's ``metadata["prompt_fit"]`` where the adapter set it (a
  pipeline that counted with its own tokenizer; a cached result carries the same metadata),
  else from ``adapter.prompt_fit(request)``: the same fields fresh or from the cache.
- ``check_budgets``: every planned request of every paid model, before anything is written
  or sent; a prompt over a provider's hard limit (longer than its documented limit, neither
  cut nor encoded in chunks by the adapter) is one ``InputError`` line naming the model,
  story, scene, condition, length and limit (``vsb run`` and its ``--dry-run`` exit 1).
- ``cut_counts(records)``: per model and condition, prompts cut and prompts in all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from typing import Any

from vsb.adapters.base import (
    GenerationRequest,
    GenerationResult,
    ImageModelAdapter,
    Privileged,
    PromptFit,
)
from vsb.conditions import get_condition
from vsb.errors import InputError
from vsb.story.models import Story

#: The record fields of a request's ``PromptFit``, by its field names.
RECORD_FIELDS: dict[str, str] = {
    "unit": "prompt_unit",
    "length": "prompt_length",
    "budget": "prompt_budget",
    "cut": "prompt_cut",
    "encoded": "prompt_encoded",
}
_FIT_FIELDS = tuple(f.name for f in fields(PromptFit))


def as_fit(value: Any) -> PromptFit | None:
    """``value`` as a ``PromptFit``: one already, or its fields as a mapping (how a result's
    metadata holds it once through the cache's JSON); None for anything else."""
    if isinstance(value, PromptFit):
        return value
    if isinstance(value, Mapping):
        return PromptFit(**{k: value[k] for k in _FIT_FIELDS if k in value})
    return None


def fit_of(
    adapter: ImageModelAdapter, request: GenerationRequest, result: GenerationResult | None
) -> PromptFit:
    """The request's fit: the result's ``metadata["prompt_fit"]`` when the adapter set it,
    else the adapter's ``prompt_fit`` (known before any call)."""
    if result is not None:
        fit = as_fit(result.metadata.get("prompt_fit"))
        if fit is not None:
            return fit
    return adapter.prompt_fit(request)


def record_fields(fit: PromptFit) -> dict[str, Any]:
    """The ``prompt_*`` fields of a record."""
    return {name: getattr(fit, attr) for attr, name in RECORD_FIELDS.items()}


#: The fields of a record whose prompt nobody measured (a request Ray lost).
UNKNOWN_FIELDS = record_fields(PromptFit())


def refused_over(fit: PromptFit) -> bool:
    """Whether a paid model's provider refuses this prompt: over its documented limit, and
    the adapter neither cuts it nor encodes it in chunks."""
    return fit.over() and not fit.cut and fit.encoded == "whole"


def _requests(
    adapter: ImageModelAdapter,
    model: str,
    story: Story,
    sha: str,
    conditions: Sequence[str],
    seed: int,
) -> Iterator[GenerationRequest]:
    """Every request of ``story`` for ``adapter`` as the run builds it (no reference image:
    a prompt does not depend on it)."""
    params = adapter.parameters()
    for cname in conditions:
        cond = get_condition(cname)
        for scene in story.scenes:
            k = scene.index
            priv = Privileged(story, sha, k, cname) if adapter.privileged else None
            yield GenerationRequest(
                model, adapter.version, scene.text, seed, cond.context(story, k),
                adapter.request_parameters(params, priv), (), priv,
                story_id=story.id, scene=k, condition=cname,
            )  # fmt: skip


def check_budgets(
    stories: Sequence[Story],
    shas: Sequence[str],
    adapters: Mapping[str, ImageModelAdapter],
    conditions: Mapping[str, Sequence[str]],
    seed: int,
) -> None:
    """``InputError`` (one line) when a paid model's prompt is over its provider's limit
    (``refused_over``): the first such request, and how many there are in all.
    ``conditions``: the conditions each model runs."""
    for model, adapter in adapters.items():
        if not adapter.paid:
            continue
        over: list[tuple[GenerationRequest, PromptFit]] = []
        for story, sha in zip(stories, shas, strict=True):
            for req in _requests(adapter, model, story, sha, conditions[model], seed):
                fit = adapter.prompt_fit(req)
                if refused_over(fit):
                    over.append((req, fit))
        if over:
            req, fit = over[0]
            more = f" ({len(over)} prompts over it in all)" if len(over) > 1 else ""
            raise InputError(
                f"{model}: the prompt of story {req.story_id}, scene {req.scene}, "
                f"{req.condition} is {fit.length:,} {fit.unit}, over the provider's limit of "
                f"{fit.budget:,}{more}; nothing sent (docs/providers.md: prompt limits)"
            )


def cut_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, tuple[int, int]]]:
    """Per model, per condition (in record order): (prompts cut, prompts in all)."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for r in records:
        by = out.setdefault(str(r["model"]), {})
        n_cut, n = by.get(str(r["condition"]), (0, 0))
        by[str(r["condition"])] = (n_cut + bool(r.get("prompt_cut")), n + 1)
    return out
