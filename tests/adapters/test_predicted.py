"""The simulators under predicted_memory (no pixels but one check): a wrong memory misleads,
structured memory's stream and images do not move, and the oracle renders the truth."""

from __future__ import annotations

import hashlib
import json

import pytest
from test_simulators import _request

from vsb.adapters.faults import SceneSim, simulate_story
from vsb.adapters.registry import get_adapter
from vsb.adapters.simulators import SIMULATORS, chain_rng
from vsb.conditions import PREDICTED_CONDITION, PRIMARY_CONDITION, get_condition
from vsb.story.models import Story

NOISY = [m for m in SIMULATORS if m != "procedural-oracle"]
#: sha256 of every simulator's structured-memory scenes (faults, rendered state) over the
#: default suite, as computed at 1f15d64, before predicted_memory existed.
STRUCTURED_DIGEST = "07872c0c6524ffd800256ee7a7c21a13d17c5c045f54304e5f80db11961c9ded"


def _sims(model: str, cname: str, suite: list[Story]) -> list[list[SceneSim]]:
    cond = get_condition(cname)
    return [
        simulate_story(s, cond, SIMULATORS[model], chain_rng(model, s.id, cond.stream, 0))
        for s in suite
    ]


def test_structured_memory_is_unchanged(default_suite: list[Story]) -> None:
    h = hashlib.sha256()
    for model in SIMULATORS:
        for story_sims in _sims(model, PRIMARY_CONDITION, default_suite):
            for sim in story_sims:
                h.update(json.dumps([f.as_json() for f in sim.faults], sort_keys=True).encode())
                h.update(sim.rendered.model_dump_json().encode())
    assert h.hexdigest() == STRUCTURED_DIGEST


@pytest.mark.parametrize("model", NOISY)
def test_a_perfect_extractor_is_structured_memory(model: str, default_suite: list[Story]) -> None:
    """Common random numbers: at 0 % errors the images are structured memory's."""
    err00 = _sims(model, f"{PREDICTED_CONDITION}-err00", default_suite)
    assert err00 == _sims(model, PRIMARY_CONDITION, default_suite)


@pytest.mark.parametrize("model", NOISY)
def test_a_wrong_memory_is_drawn_as_it_says(model: str, default_suite: list[Story]) -> None:
    cond = get_condition(PREDICTED_CONDITION)
    assert cond.misleads is not None
    misled = 0
    runs = _sims(model, PREDICTED_CONDITION, default_suite)
    for story, sims in zip(default_suite, runs, strict=True):
        for scene, sim in zip(story.scenes, sims, strict=True):
            k = scene.index
            reqs = {(r.subject, r.attribute): r for r in scene.requirements}
            for f in sim.faults:
                if f.origin != "context":
                    continue
                misled += 1
                attr = "present" if f.attribute == "color" else f.attribute
                req = reqs[f.subject, attr]
                # the oracle row keeps the truth; the image shows what the memory said
                assert req.source == "memory" and f.true_value != f.rendered_value
                told = cond.misleads(story, k, req)
                assert told == (f.attribute, f.rendered_value), (story.id, k, f)
                if f.attribute != "color":
                    assert f.true_value == req.expected
    assert misled > 100


def _memory_faults(model: str, cname: str, suite: list[Story]) -> int:
    return sum(
        1
        for sims in _sims(model, cname, suite)
        for sim in sims
        for f in sim.faults
        if f.source == "memory"
    )


@pytest.mark.parametrize("model", ["procedural-drift-mid", "procedural-amnesiac"])
def test_more_extraction_errors_more_memory_faults(model: str, default_suite: list[Story]) -> None:
    n = [
        _memory_faults(model, f"{PREDICTED_CONDITION}-err{p:02d}", default_suite)
        for p in (0, 10, 30)
    ]
    assert n[0] == _memory_faults(model, PRIMARY_CONDITION, default_suite)
    assert n[0] < n[1] < n[2], n


def test_the_oracle_is_not_misled(default_suite: list[Story]) -> None:
    for cname in (PREDICTED_CONDITION, f"{PREDICTED_CONDITION}-err50"):
        sims = _sims("procedural-oracle", cname, default_suite)
        for story, story_sims in zip(default_suite, sims, strict=True):
            for scene, sim in zip(story.scenes, story_sims, strict=True):
                assert sim.faults == [] and sim.rendered == scene.state
    adapter = get_adapter("procedural-oracle")
    story = next(s for s in default_suite if len(s.scenes) == 5)
    for k in range(1, 6):
        predicted = _request("procedural-oracle", story, k, PREDICTED_CONDITION)
        plain = _request("procedural-oracle", story, k, "independent")
        assert adapter.generate(predicted).png == adapter.generate(plain).png
