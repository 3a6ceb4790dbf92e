"""The simulators on the implicit text style: ``p_inference`` decides, per causal link, whether
an unstated effect is drawn; everything else is the plain story's simulation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vsb.adapters.faults import infer_links, simulate_story
from vsb.adapters.simulators import SIMULATORS, chain_rng, inference_rng
from vsb.conditions import get_condition
from vsb.generator.generate import generate_suite
from vsb.story.models import Story

MODELS = tuple(SIMULATORS)


@pytest.fixture(scope="module")
def pairs(default_suite: list[Story]) -> list[tuple[Story, Story]]:
    """(plain, implicit) of every default story with a causal link."""
    implicit = generate_suite(0, text_style="implicit")
    return [(p, i) for p, i in zip(default_suite, implicit, strict=True) if i.causal_links]


def _sim(story: Story, model: str, cond: str, seed: int = 0, p: float | None = None) -> list:
    params = SIMULATORS[model]
    if p is not None:
        params = dataclasses.replace(params, p_inference=p)
    c = get_condition(cond)
    inferred = infer_links(story, params, inference_rng(model, story.id, seed))
    return simulate_story(story, c, params, chain_rng(model, story.id, c.stream, seed), inferred)


def _missed(sims: list, story: Story) -> list[tuple[int, str]]:
    """(scene, requirement id) of every inferred requirement drawn wrong."""
    out = []
    for sc, sim in zip(story.scenes, sims, strict=True):
        for r in sc.requirements:
            if r.inferred and sim.rendered.objects[r.subject].state != r.expected:
                out.append((sc.index, r.id))
    return out


def test_inference_draws_are_seeded_and_differ_by_model_and_seed(
    pairs: list[tuple[Story, Story]],
) -> None:
    story = next(i for _, i in pairs if len(i.causal_links) >= 2)
    params = SIMULATORS["procedural-sloppy"]
    a = [infer_links(s, params, inference_rng("m", s.id, 0)) for _, s in pairs]
    assert a == [infer_links(s, params, inference_rng("m", s.id, 0)) for _, s in pairs]
    other = [infer_links(s, params, inference_rng("m", s.id, 1)) for _, s in pairs]
    assert a != other
    assert len(infer_links(story, params, np.random.default_rng(0))) == len(story.causal_links)
    # the oracle infers always; p_inference 0 never
    assert all(all(infer_links(s, SIMULATORS["procedural-oracle"], inference_rng("o", s.id, 0)))
               for _, s in pairs)  # fmt: skip
    never = dataclasses.replace(params, p_inference=0.0)
    assert not any(any(infer_links(s, never, inference_rng("m", s.id, 0))) for _, s in pairs)


@pytest.mark.parametrize("model", MODELS)
def test_plain_and_implicit_differ_only_where_an_inference_was_missed(
    pairs: list[tuple[Story, Story]], model: str
) -> None:
    n_missed = 0
    for plain, implicit in pairs:
        for cond in ("independent", "structured_memory"):
            a, b = _sim(plain, model, cond), _sim(implicit, model, cond)
            assert _sim(implicit, model, cond) == b  # a pure function of its inputs
            missed = _missed(b, implicit)
            n_missed += len(missed)
            missed_scenes = {k for k, _ in missed}
            for k, (sa, sb) in enumerate(zip(a, b, strict=True), start=1):
                if k not in missed_scenes:
                    assert sa == sb, (implicit.id, cond, k)
    if model == "procedural-oracle":
        assert n_missed == 0
    else:
        assert n_missed > 0, model


def test_a_missed_link_draws_the_state_before_the_cause_unless_memory_states_it(
    pairs: list[tuple[Story, Story]],
) -> None:
    model = "procedural-oracle"  # no other fault: only the inference shows
    restored = later = 0
    for _, story in pairs:
        ind = _sim(story, model, "independent", p=0.0)
        mem = _sim(story, model, "structured_memory", p=0.0)
        prev = _sim(story, model, "previous_text", p=0.0)
        for sc, si, sm, sp in zip(story.scenes, ind, mem, prev, strict=True):
            for r in sc.requirements:
                if not r.inferred:
                    continue
                link = story.causal_links[r.causal_link]  # type: ignore[index]
                before = story.scenes[link.cause_scene - 2].state.objects[r.subject].state
                assert si.rendered.objects[r.subject].state == before
                assert sp.rendered.objects[r.subject].state == before  # the text never says
                fault = next(f for f in si.faults if f.subject == r.subject)
                assert fault.taxonomy == "causal_break" and fault.rendered_value == before
                assert fault.origin == ("new" if sc.index == link.cause_scene else "sticky")
                drawn = sm.rendered.objects[r.subject].state
                if sc.index == link.cause_scene:
                    assert drawn == before
                else:  # memory states the effect; a drift still persists with ``sticky``
                    later += 1
                    restored += drawn == r.expected
                    assert drawn in (before, r.expected)
        # with p_inference 1 the implicit story is simulated as the plain one
        assert _missed(_sim(story, model, "independent", p=1.0), story) == []
    assert 0 < restored < later


def test_p_inference_orders_the_miss_rate(pairs: list[tuple[Story, Story]]) -> None:
    rates = []
    for p in (0.2, 0.5, 0.9):
        n = sum(
            len(_missed(_sim(i, "procedural-oracle", "independent", seed=s, p=p), i))
            for _, i in pairs
            for s in range(4)
        )
        rates.append(n)
    assert rates[0] > rates[1] > rates[2] > 0
