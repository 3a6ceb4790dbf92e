"""The simulators under the placebo and the field ablations (no pixels): a fact an ablation
removes gets the memory fault rate again, nothing else changes, and the placebo is no context."""

from __future__ import annotations

import pytest
from test_faults import _check, eligible
from test_simulators import _request

from vsb.adapters.faults import Fault, SceneSim, fact_probability, simulate_story
from vsb.adapters.registry import get_adapter
from vsb.adapters.simulators import SIMULATORS, chain_rng
from vsb.conditions import ABLATIONS, PRIMARY_CONDITION, fact_group, get_condition
from vsb.story.models import Story

NOISY = [m for m in SIMULATORS if m != "procedural-oracle"]


def _sims(model: str, cname: str, suite: list[Story]) -> list[list[SceneSim]]:
    cond = get_condition(cname)
    return [
        simulate_story(s, cond, SIMULATORS[model], chain_rng(model, s.id, cond.stream, 0))
        for s in suite
    ]


def _group(f: Fault) -> str | None:
    return fact_group(f.subject, "present" if f.attribute == "color" else f.attribute)


def _faults(runs: list[list[SceneSim]], keep: set[str | None]) -> list[tuple[object, ...]]:
    return [
        (i, f.scene, f.subject, f.attribute, f.rendered_value, f.origin)
        for i, ss in enumerate(runs)
        for sim in ss
        for f in sim.faults
        if _group(f) in keep
    ]


@pytest.mark.parametrize("model", NOISY)
def test_ablation_changes_only_its_group(model: str, default_suite: list[Story]) -> None:
    full = _sims(model, PRIMARY_CONDITION, default_suite)
    groups = {None, *ABLATIONS.values()}
    for name, group in ABLATIONS.items():
        abl = _sims(model, name, default_suite)
        others = groups - {group}
        # common random numbers: every fault outside the removed group is the same fault
        assert _faults(abl, others) == _faults(full, others), name
        mine_full, mine_abl = _faults(full, {group}), _faults(abl, {group})
        p = SIMULATORS[model]
        if p.p_memory > p.p_adherence:
            assert len(mine_abl) > len(mine_full), (name, len(mine_abl), len(mine_full))
        else:  # sloppy follows its context worse than it remembers: removing it helps
            assert len(mine_abl) < len(mine_full), (name, len(mine_abl), len(mine_full))


@pytest.mark.parametrize("model", ["procedural-drift-mid", "procedural-amnesiac"])
def test_removed_facts_get_the_memory_rate(model: str, default_suite: list[Story]) -> None:
    params = SIMULATORS[model]
    for name, group in ABLATIONS.items():
        cond = get_condition(name)
        n = hits = 0
        expected = 0.0
        for story, ss in zip(default_suite, _sims(model, name, default_suite), strict=True):
            for k, r, hit in eligible(story, ss):
                if k > 1 and r.source == "memory" and fact_group(r.subject, r.attribute) == group:
                    p = fact_probability(params, cond, story, k, r)
                    assert p == params.p_memory, (name, story.id, r.id)
                    n += 1
                    hits += hit
                    expected += p
        assert n > 150, (name, n)
        _check(hits / n, expected / n, n)


@pytest.mark.parametrize("model", NOISY)
def test_placebo_is_no_context_for_a_simulator(model: str, default_suite: list[Story]) -> None:
    params, placebo = SIMULATORS[model], get_condition("random_context")
    for story in default_suite[:8]:
        for scene in story.scenes:
            for r in scene.requirements:
                assert fact_probability(params, placebo, story, scene.index, r) == (
                    fact_probability(params, get_condition("independent"), story, scene.index, r)
                )
    placebo_runs = _sims(model, "random_context", default_suite)
    assert placebo_runs == _sims(model, "independent", default_suite)
    assert _faults(placebo_runs, {None, *ABLATIONS.values()})


def test_placebo_images_are_the_independent_ones(default_suite: list[Story]) -> None:
    """Through the adapter (cache keys differ, pixels do not): a placebo gain on simulators
    can only come from the pipeline."""
    model = "procedural-amnesiac"
    adapter = get_adapter(model)
    story = next(s for s in default_suite if len(s.scenes) == 5)
    for k in range(1, 6):
        placebo = _request(model, story, k, "random_context")
        plain = _request(model, story, k, "independent")
        assert placebo.key() != plain.key()
        assert adapter.generate(placebo).png == adapter.generate(plain).png
