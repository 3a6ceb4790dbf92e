"""``vsb run --dry-run``: what a run would send, and what it would cost, before paying.

``plan_run(config, adapters)`` walks every request of the run exactly as the runner builds
it, without calling any adapter and without writing anything: a request whose key is in the
generation cache costs nothing; a request refused before in the run directory is not sent
again; under previous_image, a scene whose previous frame is not cached cannot have its
request known yet (its reference image does not exist), so it and the rest of its chain
count as to be sent. A paid model's prompt over its provider's limit is refused as the run
refuses it (``vsb.run.budgets``: one line, exit 1). Costs come from ``config/pricing.json``
(``vsb.run.catalog.PriceList``, with the price's as-of date); a model whose price is
unknown has an unknown estimate — never zero — unless it is not a paid adapter
(simulators, stored samples, local models).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter, Privileged
from vsb.adapters.registry import get_adapter
from vsb.conditions import get_condition
from vsb.errors import CredentialMissing
from vsb.run.budgets import check_budgets
from vsb.run.catalog import PriceList
from vsb.run.runner import REFUSED_PREFIX, RunConfig, not_supported, story_sha256
from vsb.store.cache import INDEX_NAME, GenerationCache
from vsb.store.ledger import LEDGER_NAME, Ledger
from vsb.story.io import load_suite
from vsb.story.models import Story


@dataclass
class ModelPlan:
    """One model's share of a run: requests in all, cached, to send, and their cost."""

    model: str
    requests: int = 0
    cached: int = 0
    #: requests refused before in this run directory (not sent again)
    refused: int = 0
    to_send: int = 0
    usd_per_image: float | None = None
    price_as_of: str | None = None
    #: ``to_send`` × the price (None: unknown price)
    estimate_usd: float | None = None
    #: why the model would be skipped now (no credential…); None when it would run
    skipped: str | None = None
    not_supported: list[str] = field(default_factory=list)


@dataclass
class RunPlan:
    """Every model's plan (skipped ones too: what they would cost) and the total (None
    when any model's price is unknown)."""

    models: list[ModelPlan]
    total_usd: float | None
    pricing: str | None


class _Miss(Exception):
    pass


def _raise_miss() -> GenerationResult:
    raise _Miss


def plan_run(config: RunConfig, adapters: Mapping[str, ImageModelAdapter] | None = None) -> RunPlan:
    """The dry run of ``config`` (see the module docstring); nothing is written."""
    stories = load_suite(Path(config.suite_dir))
    for c in config.conditions:
        get_condition(c)
    given = adapters or {}
    prices = PriceList.load(config.pricing)
    cache_dir = Path(config.cache_dir)
    cache = GenerationCache(cache_dir) if (cache_dir / INDEX_NAME).is_file() else None
    ledger_path = Path(config.out) / LEDGER_NAME
    refused: set[str] = set()
    if ledger_path.is_file():
        with Ledger(ledger_path) as led:
            refused = {k for k, _ in led.errors(REFUSED_PREFIX)}
    shas = [story_sha256(s) for s in stories]
    plans: list[ModelPlan] = []
    try:
        for model in config.models:
            plan = ModelPlan(model)
            plans.append(plan)
            adapter = given[model] if model in given else get_adapter(model)
            try:
                adapter.preflight()
            except CredentialMissing as err:
                plan.skipped = str(err)  # planned all the same: what it would cost
            plan.not_supported = not_supported(adapter, config.conditions)
            runs = [c for c in config.conditions if c not in plan.not_supported]
            check_budgets(stories, shas, {model: adapter}, {model: runs}, config.seed)
            seen: set[str] = set()
            for i, story in enumerate(stories):
                for cname in config.conditions:
                    if cname in plan.not_supported:
                        continue
                    _walk(plan, adapter, config, story, shas[i], cname, cache, refused, seen)
            key = str(getattr(adapter, "pricing_key", model))
            usd, as_of = prices.price(key)
            if usd is None and key != model:
                usd, as_of = prices.price(model)
            if usd is None and not adapter.paid:
                usd = 0.0
            plan.usd_per_image, plan.price_as_of = usd, as_of
            plan.estimate_usd = None if usd is None else round(usd * plan.to_send, 6)
    finally:
        if cache is not None:
            cache.close()
    costs = [p.estimate_usd for p in plans]
    total = None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6)
    return RunPlan(plans, total, prices.source)


def _walk(
    plan: ModelPlan,
    adapter: ImageModelAdapter,
    config: RunConfig,
    story: Story,
    sha: str,
    cname: str,
    cache: GenerationCache | None,
    refused: set[str],
    seen: set[str],
) -> None:
    """Count the requests of one (story, condition) into ``plan``."""
    cond = get_condition(cname)
    params = adapter.parameters()
    prev: bytes | None = None
    known = True  # False once a previous frame the chain needs is not cached
    for scene in story.scenes:
        k = scene.index
        ctx = cond.context(story, k)
        plan.requests += 1
        if not known:
            plan.to_send += 1
            continue
        refs = (prev,) if ctx.reference_image and prev is not None else ()
        priv = Privileged(story, sha, k, cname) if adapter.privileged else None
        req = GenerationRequest(
            plan.model, adapter.version, scene.text, config.seed, ctx,
            adapter.request_parameters(params, priv), refs, priv,
            story_id=story.id, scene=k, condition=cname,
        )  # fmt: skip
        key = req.key()
        if key in seen:  # the same request twice in one run (scene 1): made once
            plan.cached += 1
            prev = _cached(cache, key)
            known = prev is not None or not cond.reference_image
            continue
        seen.add(key)
        if key in refused:
            plan.refused += 1
            prev = None
            continue
        prev = _cached(cache, key)
        if prev is not None:
            plan.cached += 1
        else:
            plan.to_send += 1
            known = not cond.reference_image


def _cached(cache: GenerationCache | None, key: str) -> bytes | None:
    if cache is None or key not in cache:
        return None
    try:
        return cache.get(key, _raise_miss)[0].png
    except _Miss:
        return None
