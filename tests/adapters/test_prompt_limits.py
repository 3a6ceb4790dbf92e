"""Each provider's prompt budget (issue #44): its documented limit, in its unit, or unknown
(docs/providers.md cites each page). Nothing here is sent: ``prompt_fit`` is known before."""

from __future__ import annotations

import pytest

from vsb.adapters.base import GenerationRequest, PromptFit
from vsb.adapters.providers.imagen import imagen_adapter
from vsb.adapters.providers.openai import openai_adapter
from vsb.adapters.providers.replicate import replicate_adapter
from vsb.adapters.providers.stability import stability_adapter
from vsb.adapters.registry import get_adapter
from vsb.conditions import ConditionContext
from vsb.run.budgets import as_fit, record_fields, refused_over


def _request(prompt: str, context: str | None = None) -> GenerationRequest:
    return GenerationRequest("m", "1", prompt, 0, ConditionContext("test", text=context))


@pytest.mark.parametrize(
    ("adapter", "limit"),
    [
        (openai_adapter("dall-e-2"), 1000),
        (openai_adapter("dall-e-3"), 4000),
        (openai_adapter("gpt-image-1"), 32000),
        (openai_adapter("gpt-image-1-mini"), 32000),
        (stability_adapter("core"), 10000),
        (stability_adapter("ultra"), 10000),
        (stability_adapter("sd3.5-large"), 10000),
    ],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_a_documented_character_limit_counts_the_full_prompt(adapter, limit: int) -> None:
    req = _request("a red fox", context="x" * 50)
    n = len(req.full_prompt())
    assert n > len("a red fox") + 50  # the context and its label count too
    assert adapter.prompt_fit(req) == PromptFit("characters", n, limit)
    long = _request("y" * (limit + 1))
    fit = adapter.prompt_fit(long)
    assert fit.over() and refused_over(fit) and not fit.cut
    assert not refused_over(adapter.prompt_fit(_request("y" * limit)))


def test_imagen_is_480_tokens_it_cannot_count() -> None:
    fit = imagen_adapter("imagen-3.0-generate-002").prompt_fit(_request("z " * 5000))
    assert fit == PromptFit("tokens", None, 480)
    assert not fit.over() and not refused_over(fit)  # never refused on a guess


@pytest.mark.parametrize(
    "adapter",
    [
        replicate_adapter("black-forest-labs/flux-schnell"),
        replicate_adapter("black-forest-labs/flux-kontext-pro"),
        openai_adapter("some-other-model"),
    ],
    ids=lambda a: a.name,
)
def test_an_undocumented_limit_is_unknown(adapter) -> None:
    assert adapter.prompt_fit(_request("w" * 50000)) == PromptFit()


def test_simulators_count_characters_with_no_limit() -> None:
    req = _request("a red fox", context="earlier")
    fit = get_adapter("procedural-oracle").prompt_fit(req)
    assert fit == PromptFit("characters", len(req.full_prompt()), None)
    assert not fit.over()


def test_a_fit_travels_as_a_mapping_and_back() -> None:
    fit = PromptFit("clip tokens", 212, 77, True, "truncated")
    back = as_fit({"unit": "clip tokens", "length": 212, "budget": 77, "cut": True,
                   "encoded": "truncated"})  # fmt: skip
    assert back == fit and as_fit(fit) is fit and as_fit(None) is None
    assert record_fields(fit) == {
        "prompt_unit": "clip tokens", "prompt_length": 212, "prompt_budget": 77,
        "prompt_cut": True, "prompt_encoded": "truncated",
    }  # fmt: skip
    # over, but cut or encoded whole in chunks by the adapter: recorded, not refused
    assert not refused_over(fit)
    assert not refused_over(PromptFit("clip tokens", 212, 77, False, "chunked"))
