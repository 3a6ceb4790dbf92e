"""What ``vsb models`` and ``vsb conditions`` list, and what the site's model cards show:
every registered adapter and condition, described from the registries themselves.

Nothing here is typed in per model: a model's kind, adapter class, version, parameters,
credential variable and reference-image support are read from the adapter the registry
builds; its price and the price's as-of date from ``config/pricing.json`` (an unlisted
model's price is unknown, never zero). A credential is reported as present or absent,
never shown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.errors import ConfigError, InputError
from vsb.fsio import load_json
from vsb.store.ledger import DEFAULT_PRICING


@dataclass(frozen=True)
class PriceList:
    """``config/pricing.json``: per pricing key, USD per image and its as-of date."""

    as_of: str | None
    currency: str
    prices: dict[str, tuple[float | None, str | None]]
    source: str | None = None

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceList:
        """Read a pricing file (default ``config/pricing.json``; absent default = unknown)."""
        p = Path(path) if path is not None else DEFAULT_PRICING
        if path is None and not p.is_file():
            return cls(None, "USD", {})
        try:
            obj = load_json(p)
            prices: dict[str, tuple[float | None, str | None]] = {}
            for key, e in obj.get("models", {}).items():
                usd = e.get("usd_per_image")
                as_of = e.get("as_of", obj.get("as_of"))
                prices[str(key)] = (
                    None if usd is None else float(usd),
                    None if as_of is None else str(as_of),
                )
        except FileNotFoundError as err:
            raise ConfigError("pricing file not found", file=p) from err
        except InputError as err:
            raise ConfigError(f"malformed pricing file: {err.message}", file=p) from None
        except (AttributeError, TypeError, ValueError) as err:
            raise ConfigError(f"malformed pricing file: {err}", file=p) from err
        return cls(obj.get("as_of"), str(obj.get("currency", "USD")), prices, str(p))

    def price(self, key: str) -> tuple[float | None, str | None]:
        """(USD per image, as-of date); (None, None) when the price list does not name it."""
        return self.prices.get(key, (None, None))


@dataclass(frozen=True)
class ModelInfo:
    """One registered model as the registry describes it."""

    name: str
    kind: str
    """'simulator' (privileged, renders the story), 'stored' (serves images made elsewhere)
    or 'provider' (a hosted API)."""
    adapter: str
    """The adapter class."""
    description: str
    """First line of the adapter's docstring (simulators: their corruption parameters)."""
    version: str
    parameters: dict[str, Any]
    env_var: str | None
    """The credential's environment variable (None: no credential)."""
    credential_present: bool | None
    """Whether that variable is set now (None: no credential needed)."""
    accepts_reference_image: bool
    pricing_key: str
    usd_per_image: float | None
    """List price per image (None: unknown)."""
    price_as_of: str | None
    simulator_parameters: dict[str, float | None] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        """Whether ``vsb run`` can call it as is (credential present or none needed)."""
        return self.kind != "stored" and self.credential_present is not False


def _first_line(doc: str | None) -> str:
    text = (doc or "").strip()
    return text.splitlines()[0].strip().replace("``", "") if text else ""


def describe_model(name: str, prices: PriceList | None = None) -> ModelInfo:
    """The registry's description of model ``name`` (``UnknownNameError`` if unknown)."""
    from vsb.adapters.registry import get_adapter

    prices = prices or PriceList.load()
    adapter = get_adapter(name)
    env_var = getattr(adapter, "env_var", "") or None
    sim: dict[str, float | None] = {}
    params = getattr(adapter, "params", None)
    if adapter.privileged and params is not None and hasattr(params, "p_memory"):
        kind = "simulator"
        sim = {
            k: getattr(params, k, None)
            for k in ("p_memory", "p_adherence", "image_bonus", "sticky")
        }
        description = (
            f"procedural simulator: p_memory {params.p_memory:g}, p_adherence "
            f"{params.p_adherence:g}, image bonus {params.image_bonus:g}"
        )
    elif adapter.privileged:
        kind, description = "stored", _first_line(type(adapter).__doc__)
    else:
        kind, description = "provider", _first_line(type(adapter).__doc__)
    key = str(getattr(adapter, "pricing_key", name))
    usd, as_of = prices.price(key)
    if usd is None and key != name:
        usd, as_of = prices.price(name)
    return ModelInfo(
        name=name,
        kind=kind,
        adapter=type(adapter).__name__,
        description=description,
        version=str(adapter.version),
        parameters=dict(adapter.parameters()),
        env_var=env_var,
        credential_present=None if env_var is None else bool(os.environ.get(env_var)),
        accepts_reference_image=bool(adapter.accepts_reference_image),
        pricing_key=key,
        usd_per_image=usd,
        price_as_of=as_of,
        simulator_parameters=sim,
    )


def list_models(prices: PriceList | None = None) -> list[ModelInfo]:
    """Every registered model, in registration order (simulators first)."""
    from vsb.adapters.registry import model_names

    prices = prices or PriceList.load()
    return [describe_model(n, prices) for n in model_names()]


@dataclass(frozen=True)
class PatternInfo:
    """A family of models named ``PREFIX:ARGUMENT`` (built on first use, not listed one by
    one), e.g. ``replicate:OWNER/NAME[:VERSION]``, ``diffusers:MODEL_ID_OR_DIR``."""

    pattern: str
    description: str
    """What the family is (the module's ``pattern_info()``, else its first line)."""
    parameters: dict[str, Any] = field(default_factory=dict)
    """Their parameters and defaults (the module's ``pattern_parameters()``; cache key)."""
    env_var: str | None = None
    """The credential's environment variable (None: none needed)."""
    credential_present: bool | None = None
    """Whether that variable is set now (never its value; None: no credential)."""
    image_input: str = ""
    """Which models of the family take a reference image (previous_image)."""
    needs: str = ""
    """What else a run needs (``--samples DIR``, an extra…)."""
    prices: dict[str, tuple[float | None, str | None]] = field(default_factory=dict)
    """Prices the price list has for this family: pricing key -> (USD per image, as of)."""


def list_patterns(prices: PriceList | None = None) -> list[PatternInfo]:
    """Every model-name pattern of the adapter registry (credential present or not, image
    input, and the family's entries in the price list)."""
    import importlib

    from vsb.adapters import registry

    prices = prices or PriceList.load()
    out: list[PatternInfo] = []
    for prefix, target in getattr(registry, "PATTERNS", {}).items():
        module = importlib.import_module(target.partition(":")[0])
        params: dict[str, Any] = getattr(module, "pattern_parameters", dict)()
        info: dict[str, Any] = getattr(module, "pattern_info", dict)()
        env_var = info.get("env_var")
        family = {prefix, {"imagen": "google"}.get(prefix, prefix)}
        out.append(
            PatternInfo(
                pattern=str(info.get("pattern") or f"{prefix}:ARGUMENT"),
                description=str(info.get("about") or _first_line(module.__doc__)),
                parameters=params,
                env_var=env_var,
                credential_present=None if env_var is None else bool(os.environ.get(env_var)),
                image_input=str(info.get("image_input", "")),
                needs=str(info.get("needs", "")),
                prices={
                    k: v for k, v in sorted(prices.prices.items()) if k.split("/")[0] in family
                },
            )
        )
    return out


@dataclass(frozen=True)
class ConditionInfo:
    """One registered prompting condition."""

    name: str
    description: str
    primary: bool
    context: str
    """What the context carries: 'none', 'text', 'JSON' or 'reference image'."""
    context_factor: float | None
    reference_image: bool
    kind: str = "main"
    """'main', or a control of the primary condition ('placebo', 'ablation')."""


def list_conditions() -> list[ConditionInfo]:
    """Every registered condition, in registration order; what its context carries is read
    off the context it builds for scene 2 of a small generated story."""
    from vsb.conditions import CONDITIONS, PRIMARY_CONDITION, get_condition
    from vsb.generator.generate import generate_story

    probe = generate_story("counting", "easy", "probe", seed=0)
    out: list[ConditionInfo] = []
    for name in CONDITIONS.names():
        c = get_condition(name)
        ctx = c.context(probe, 2)
        carried = [
            what
            for what, has in (
                ("JSON", ctx.data is not None),
                ("text", ctx.text is not None),
                ("reference image", ctx.reference_image),
            )
            if has
        ]
        out.append(
            ConditionInfo(
                name=name,
                description=c.description,
                primary=name == PRIMARY_CONDITION,
                context=" + ".join(carried) or "none",
                context_factor=c.context_factor,
                reference_image=c.reference_image,
                kind=str(getattr(c, "kind", "main")),
            )
        )
    return out
