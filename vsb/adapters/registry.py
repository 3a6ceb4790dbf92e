"""The adapter registry: model name -> factory of an ``ImageModelAdapter``, by import path.

Models come from three places, and none is imported before its model is asked for:

- ``BUILTIN``: vsb's own models, ``name -> "module:attr"`` (one table, so this module
  imports none of its members and they never import it: no registration circle);
- plug-ins: the entry points of group ``vsb.adapters`` of the installed distributions
  (``pyproject.toml``: ``[project.entry-points."vsb.adapters"]`` ``my-model = "pkg.mod:Cls"``),
  found through ``importlib.metadata`` the way pytest finds its ``pytest11`` plug-ins;
- ``register_adapter(name)``: a factory registered at run time (tests, notebooks).

A factory is any callable taking keyword options (an injected ``httpx.Client`` for HTTP
providers, a fixtures directory for stored samples…) and returning an adapter.
``get_adapter(name)`` builds one; an unknown name raises ``UnknownNameError`` listing the
known models (did you mean …). Families named ``PREFIX:ARGUMENT`` (``replicate:OWNER/NAME``,
``diffusers:MODEL``, ``python:MODULE:FUNCTION``) are built by the ``PATTERNS`` factories from
their argument.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any, TypeVar

from vsb.adapters.base import ImageModelAdapter
from vsb.errors import InputError, UnknownNameError
from vsb.registry import plugin_entries

AdapterFactory = Callable[..., ImageModelAdapter]
F = TypeVar("F", bound=AdapterFactory)

#: The entry-point group of model adapter plug-ins.
GROUP = "vsb.adapters"

#: vsb's own models, in the order ``vsb models`` lists them (simulators first): name ->
#: "module:attr" of a factory. Declared the way a plug-in declares its entry points.
BUILTIN: dict[str, str] = {
    "procedural-oracle": "vsb.adapters.simulators:procedural_oracle",
    "procedural-drift-low": "vsb.adapters.simulators:procedural_drift_low",
    "procedural-drift-mid": "vsb.adapters.simulators:procedural_drift_mid",
    "procedural-amnesiac": "vsb.adapters.simulators:procedural_amnesiac",
    "procedural-sloppy": "vsb.adapters.simulators:procedural_sloppy",
    "procedural-reader": "vsb.adapters.reader:procedural_reader",
    "procedural-reader-77": "vsb.adapters.reader:procedural_reader_77",
    "imagen:imagen-3.0-generate-002": "vsb.adapters.providers.imagen:imagen_3_0_generate_002",
    "imagen:imagen-3.0-fast-generate-001": (
        "vsb.adapters.providers.imagen:imagen_3_0_fast_generate_001"
    ),
    "openai:gpt-image-1": "vsb.adapters.providers.openai:gpt_image_1",
    "openai:dall-e-3": "vsb.adapters.providers.openai:dall_e_3",
    "replicate:black-forest-labs/flux-schnell": "vsb.adapters.providers.replicate:flux_schnell",
    "replicate:black-forest-labs/flux-kontext-pro": (
        "vsb.adapters.providers.replicate:flux_kontext_pro"
    ),
    "replicate:black-forest-labs/flux-kontext-max": (
        "vsb.adapters.providers.replicate:flux_kontext_max"
    ),
    "stability:core": "vsb.adapters.providers.stability:core",
    "stability:sd3": "vsb.adapters.providers.stability:sd3",
    "stored": "vsb.adapters.providers.stored:StoredSamples",
}

#: Model-name patterns ``PREFIX:ARGUMENT``: prefix -> "module:function" that builds the adapter
#: from ARGUMENT and keyword options (listed by import path, imported on first use).
PATTERNS: dict[str, str] = {
    "openai": "vsb.adapters.providers.openai:openai_adapter",
    "replicate": "vsb.adapters.providers.replicate:replicate_adapter",
    "stability": "vsb.adapters.providers.stability:stability_adapter",
    "imagen": "vsb.adapters.providers.imagen:imagen_adapter",
    "stored": "vsb.adapters.providers.stored:stored_adapter",
    "diffusers": "vsb.adapters.diffusers:diffusers_adapter",
    "python": "vsb.adapters.function:function_adapter",
    "vinabench": "vsb.adapters.providers.vinabench_gold:gold_adapter",
}

_REGISTERED: dict[str, AdapterFactory] = {}


@dataclass(frozen=True)
class AdapterEntry:
    """Where a model's factory lives."""

    name: str
    target: str
    """``module:attr`` of its factory."""
    source: str
    """``vsb`` for a built-in, else the plug-in distribution that declares it."""

    def load(self) -> AdapterFactory:
        """The factory (its module imported now); a plug-in that fails to load raises a
        one-line ``InputError`` naming the distribution and the entry point."""
        point = EntryPoint(self.name, self.target, GROUP)
        if self.source == "vsb":
            return point.load()
        try:
            factory = point.load()
        except Exception as exc:  # a plug-in's import can raise anything
            raise InputError(
                f"model {self.name!r}: {self.source} entry point {self.target!r} "
                f"(group {GROUP}) failed to load: {type(exc).__name__}: {exc}"
            ) from None
        if not callable(factory):
            raise InputError(
                f"model {self.name!r}: {self.source} entry point {self.target!r} is not a "
                "class or function"
            )
        return factory


def register_adapter(name: str) -> Callable[[F], F]:
    """Decorator: register an adapter class or factory under the model name ``name`` in this
    process (a distribution should declare an entry point instead)."""

    def deco(factory: F) -> F:
        if name in _entries():
            raise ValueError(f"model {name!r} registered twice")
        _REGISTERED[name] = factory
        return factory

    return deco


@functools.lru_cache(maxsize=4)
def _plugins(path: tuple[str, ...]) -> dict[str, AdapterEntry]:
    """The ``vsb.adapters`` entry points of the distributions on ``path`` (sys.path)."""
    del path  # the cache key: a distribution added to sys.path is seen at once
    found = plugin_entries(GROUP, BUILTIN, "a model")
    return {n: AdapterEntry(n, t, src) for n, (t, src) in found.items()}


def _entries() -> dict[str, AdapterEntry | AdapterFactory]:
    """Every model name -> its entry (built-ins, then plug-ins, then run-time ones)."""
    out: dict[str, AdapterEntry | AdapterFactory] = {
        n: AdapterEntry(n, t, "vsb") for n, t in BUILTIN.items()
    }
    out.update(_plugins(tuple(sys.path)))
    out.update(_REGISTERED)
    return out


def adapter_entry(name: str) -> AdapterEntry | None:
    """Where the factory of model ``name`` lives (None: registered at run time or unknown)."""
    entry = _entries().get(name)
    return entry if isinstance(entry, AdapterEntry) else None


def _pattern_factory(name: str) -> AdapterFactory | None:
    """The factory of a ``PREFIX:ARGUMENT`` name (None when no pattern matches)."""
    prefix, sep, rest = name.partition(":")
    if not sep or prefix not in PATTERNS:
        return None
    build = AdapterEntry(f"{prefix}:*", PATTERNS[prefix], "vsb").load()
    return functools.partial(build, rest)


def get_factory(name: str) -> AdapterFactory:
    """The factory of model ``name`` (``UnknownNameError`` lists the known models)."""
    known = _entries()
    entry = known.get(name)
    if entry is None:
        factory = _pattern_factory(name)
        if factory is None:
            raise UnknownNameError("model", name, known)
        return factory
    return entry.load() if isinstance(entry, AdapterEntry) else entry


def get_adapter(name: str, **options: Any) -> ImageModelAdapter:
    """A new adapter for model ``name`` (``UnknownNameError`` lists the known models)."""
    adapter = get_factory(name)(**options)
    if not isinstance(adapter, ImageModelAdapter):
        raise InputError(
            f"model {name!r}: its factory returned {type(adapter).__name__}, not an "
            "ImageModelAdapter (vsb.adapters.base)"
        )
    return adapter


def model_names() -> list[str]:
    """Every model name: built-ins (simulators first), plug-ins, then run-time ones."""
    return list(_entries())


def resolve_models(spec: str) -> list[str]:
    """A comma-separated list of model names; unknown names raise. ``all`` means every
    local model (those that need no credential: the simulators), never a paid provider."""
    known = _entries()
    if spec.strip().lower() == "all":
        return [n for n in BUILTIN if n.startswith("procedural-")]
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for n in names:
        prefix, sep, _ = n.partition(":")
        if ".." in n.replace("\\", "/").replace(":", "/").split("/"):
            # the name becomes a folder of RUN/images: no climbing out of it
            raise InputError(f"model {n!r}: no '..' in a model name (give an absolute path)")
        if n not in known and (not sep or prefix not in PATTERNS):
            raise UnknownNameError("model", n, known)
    return list(dict.fromkeys(names))
