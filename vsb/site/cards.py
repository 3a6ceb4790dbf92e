"""Model cards: what a model is (from the adapter registry and the price list) and what the
release holds of it (coverage and recorded cost, from ``records.jsonl``).

Cost: each record carries the ``cost_usd`` the run's ledger recorded for that image (0 for a
cache hit, the adapter's figure or the list price for a call, null when unknown); the total
is unknown as soon as one record's cost is. The list price and its as-of date come from
``config/pricing.json``; a model the price list does not name has an unknown price, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vsb.errors import UnknownNameError, VsbError
from vsb.run.catalog import ModelInfo, PriceList, describe_model, list_patterns
from vsb.site.data import SiteData


@dataclass(frozen=True)
class Coverage:
    """Images of one condition: expected (every scene of every story), made, failed."""

    condition: str
    expected: int
    made: int
    failed: int
    supported: bool
    """False when the condition hands over a reference image the adapter cannot take."""


@dataclass(frozen=True)
class ModelCard:
    """Everything the model page says about the model itself."""

    name: str
    info: ModelInfo | None
    """None: the registry cannot describe the model here (``about`` says why); only the
    release's data is shown."""
    coverage: list[Coverage]
    images: int
    recorded_cost: float | None
    """Sum of the records' cost_usd (None: some cost is unknown)."""
    unknown_costs: int
    regenerate_cost: float | None
    """List price × images made (None: the price is unknown)."""
    conditions: list[tuple[str, bool, bool]] = field(default_factory=list)
    """Every registered condition: (name, the adapter can take its context, in this release)."""
    about: str = ""
    """Why ``info`` is missing: not registered, or a PREFIX:ARGUMENT family (not built here)."""

    @property
    def parameters(self) -> list[tuple[str, Any]]:
        return sorted((self.info.parameters if self.info else {}).items())


def model_card(data: SiteData, model: str, prices: PriceList | None = None) -> ModelCard:
    """The card of ``model`` (registry description when the model is registered)."""
    from vsb.conditions import CONDITIONS, get_condition, is_condition

    info: ModelInfo | None = None
    about = ""
    family = next(
        (p for p in list_patterns() if model.startswith(p.pattern.split(":", 1)[0] + ":")), None
    )
    from vsb.adapters.registry import model_names

    if model in model_names():  # a registered model of a family: described by the registry
        family = None
    if family is not None:  # never built by the site (it may need weights or extras)
        about = f"a model of the {family.pattern} family: {family.description}"
    else:
        try:
            info = describe_model(model, prices)
        except UnknownNameError:
            about = "not registered in this vsb"
        except VsbError as err:
            about = f"the registry could not describe it here ({err})"
    takes_image = bool(info and info.accepts_reference_image)
    n_scenes = sum(len(s.scenes) for s in data.stories)
    coverage = []
    for cond in data.conditions:
        keys = [k for k in data.images if k[0] == model and k[1] == cond]
        made = sum(1 for k in keys if data.images[k])
        failed = sum(1 for k in keys if k in data.errors)
        needs_image = is_condition(cond) and get_condition(cond).reference_image
        coverage.append(Coverage(cond, n_scenes, made, failed, not needs_image or takes_image))
    conditions = []
    for name in CONDITIONS.names():
        ok = not get_condition(name).reference_image or takes_image
        conditions.append((name, ok, name in data.conditions))
    costs = data.costs.get(model, [])
    unknown = sum(c is None for c in costs)
    recorded = None if unknown or not costs else sum(c for c in costs if c is not None)
    images = sum(c.made for c in coverage)
    price = info.usd_per_image if info else None
    return ModelCard(
        name=model,
        info=info,
        coverage=coverage,
        images=images,
        recorded_cost=recorded,
        unknown_costs=unknown,
        regenerate_cost=None if price is None else price * images,
        conditions=conditions,
        about=about,
    )
