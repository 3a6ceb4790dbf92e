"""The adapter registry: model name -> factory of an ``ImageModelAdapter``.

Register a provider class (or any zero-argument factory) with ``@register_adapter(name)``;
``get_adapter(name)`` builds one, and an unknown name raises ``UnknownNameError`` listing
the known models. Factories take keyword options (an injected ``httpx.Client`` for HTTP
providers, a fixtures directory for stored samples).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from vsb.adapters.base import ImageModelAdapter
from vsb.errors import InputError
from vsb.registry import Registry

AdapterFactory = Callable[..., ImageModelAdapter]
F = TypeVar("F", bound=AdapterFactory)

ADAPTERS: Registry[AdapterFactory] = Registry("model")


def register_adapter(name: str) -> Callable[[F], F]:
    """Decorator: register an adapter class or factory under the model name ``name``."""

    def deco(factory: F) -> F:
        ADAPTERS.add(name, factory)
        return factory

    return deco


def _load_builtin() -> None:
    # Built-in adapters register themselves on import.
    from vsb.adapters import providers  # noqa: F401  (imports the simulators first)


#: Model-name patterns ``PREFIX:ARGUMENT``: prefix -> "module:function" that builds the adapter
#: from ARGUMENT and keyword options (listed by import path, imported on first use).
PATTERNS: dict[str, str] = {
    "openai": "vsb.adapters.providers.openai:openai_adapter",
    "replicate": "vsb.adapters.providers.replicate:replicate_adapter",
    "stability": "vsb.adapters.providers.stability:stability_adapter",
    "imagen": "vsb.adapters.providers.imagen:imagen_adapter",
    "stored": "vsb.adapters.providers.stored:stored_adapter",
    "diffusers": "vsb.adapters.diffusers:diffusers_adapter",
}


def pattern_factory(name: str) -> AdapterFactory | None:
    """The factory of a ``PREFIX:ARGUMENT`` name (None when no pattern matches)."""
    prefix, sep, rest = name.partition(":")
    target = PATTERNS.get(prefix) if sep and name not in ADAPTERS else None
    if target is None:
        return None
    module, _, attr = target.partition(":")
    build = getattr(importlib.import_module(module), attr)
    return functools.partial(build, rest)


def get_adapter(name: str, **options: Any) -> ImageModelAdapter:
    """A new adapter for model ``name`` (``UnknownNameError`` lists the known models)."""
    _load_builtin()
    factory = pattern_factory(name)
    return (factory or ADAPTERS.get(name))(**options)


def model_names() -> list[str]:
    """Every registered model name, in registration order."""
    _load_builtin()
    return ADAPTERS.names()


def resolve_models(spec: str) -> list[str]:
    """A comma-separated list of model names; unknown names raise. ``all`` means every
    local model (those that need no credential: the simulators), never a paid provider."""
    _load_builtin()
    if spec.strip().lower() == "all":
        return [n for n in ADAPTERS.names() if n.startswith("procedural-")]
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for n in names:
        prefix, sep, _ = n.partition(":")
        if not sep or prefix not in PATTERNS:
            ADAPTERS.get(n)
        elif ".." in n.partition(":")[2].replace("\\", "/").split("/"):
            # the name becomes a folder of RUN/images: no climbing out of it
            raise InputError(f"model {n!r}: no '..' in a model name (give an absolute path)")
    return list(dict.fromkeys(names))
