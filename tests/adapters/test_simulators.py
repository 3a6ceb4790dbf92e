"""The simulators as adapters: pure in (model, story, condition, seed, scene), oracle = truth."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from vsb.adapters.base import GenerationRequest, Privileged
from vsb.adapters.faults import simulate_story
from vsb.adapters.registry import get_adapter
from vsb.adapters.simulators import SIMULATORS, chain_rng, jitter_seed
from vsb.conditions import condition_names, get_condition
from vsb.errors import AdapterError
from vsb.render import render_png
from vsb.run.runner import story_sha256
from vsb.store.cache import GenerationCache
from vsb.story.models import Story


def _request(model: str, story: Story, k: int, cname: str, seed: int = 0) -> GenerationRequest:
    return GenerationRequest(
        model=model,
        version=get_adapter(model).version,
        prompt=story.scenes[k - 1].text,
        seed=seed,
        context=get_condition(cname).context(story, k),
        privileged=Privileged(story, story_sha256(story), k, cname),
    )


@pytest.fixture(scope="module")
def stories(default_suite: list[Story]) -> list[Story]:
    """Three stories with 3, 5 and 8 scenes."""
    return [next(s for s in default_suite if len(s.scenes) == n) for n in (3, 5, 8)]


def test_oracle_is_the_true_render(stories: list[Story]) -> None:
    oracle = get_adapter("procedural-oracle")
    for story in stories:
        for cname in ("independent", "previous_image"):
            for scene in story.scenes:
                res = oracle.generate(_request("procedural-oracle", story, scene.index, cname, 5))
                truth = render_png(scene.state, seed=jitter_seed(story.id, scene.index, 5))
                assert res.png == truth
                assert res.metadata["faults"] == [] and res.cost_usd == 0.0


def test_jitter_depends_on_frame_not_model() -> None:
    a = jitter_seed("s", 1, 0)
    assert a == jitter_seed("s", 1, 0) and 0 <= a < 2**63
    assert len({a, jitter_seed("s", 2, 0), jitter_seed("t", 1, 0), jitter_seed("s", 1, 1)}) == 4


@pytest.mark.parametrize("model", ["procedural-drift-mid", "procedural-amnesiac"])
def test_order_and_cache_do_not_matter(model: str, stories: list[Story], tmp_path: Path) -> None:
    frames = [
        (s, k, c) for s in stories for c in condition_names() for k in range(1, len(s.scenes) + 1)
    ]
    in_order = {
        (s.id, k, c): get_adapter(model).generate(_request(model, s, k, c)).png
        for s, k, c in frames
    }
    shuffled = list(frames)
    random.Random(7).shuffle(shuffled)
    fresh = get_adapter(model)
    for s, k, c in shuffled:
        assert fresh.generate(_request(model, s, k, c)).png == in_order[s.id, k, c]
    cache, adapter = GenerationCache(tmp_path), get_adapter(model)
    calls = 0

    def gen(req: GenerationRequest):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return adapter.generate(req)

    for warm in (False, True):
        for s, k, c in shuffled[: len(shuffled) // 2] if not warm else shuffled:
            req = _request(model, s, k, c)
            res, hit = cache.get(req.key(), lambda req=req: gen(req))
            assert res.png == in_order[s.id, k, c]
            assert hit == (warm and (s, k, c) in shuffled[: len(shuffled) // 2])
    assert calls == len(shuffled)
    drifted = sum(
        in_order[s.id, k, c] != render_png(s.scenes[k - 1].state, seed=jitter_seed(s.id, k, 0))
        for s, k, c in frames
    )
    assert drifted > 0


def test_faults_in_metadata_match_the_simulation(stories: list[Story]) -> None:
    model, story, cname = "procedural-sloppy", stories[2], "full_context"
    sims = simulate_story(
        story, get_condition(cname), SIMULATORS[model], chain_rng(model, story.id, cname, 0)
    )
    adapter = get_adapter(model)
    for scene, sim in zip(story.scenes, sims, strict=True):
        res = adapter.generate(_request(model, story, scene.index, cname))
        assert res.metadata["faults"] == [f.as_json() for f in sim.faults]
        assert res.png == render_png(sim.rendered, seed=jitter_seed(story.id, scene.index, 0))


def test_simulator_needs_privileged_access(stories: list[Story]) -> None:
    req = _request("procedural-oracle", stories[0], 1, "independent")
    plain = GenerationRequest(req.model, req.version, req.prompt, req.seed, req.context)
    with pytest.raises(AdapterError, match="privileged"):
        get_adapter("procedural-oracle").generate(plain)
