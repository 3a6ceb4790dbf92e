"""The procedural simulators: registered adapters that render a corrupted true state.

A simulator has privileged access to the story (``request.privileged``). On every call it
re-simulates the whole chain from scene 1 (``vsb.adapters.faults.simulate_story``) with a
``numpy.random.Generator`` seeded from sha256 over (model, story id, condition, seed), so
its output is a pure function of (model, story, condition, seed, scene) whatever the cache
holds or the order scenes are asked in. The rendered image uses a jitter seed derived from
(story, scene, seed) only — never the model — so ``procedural-oracle`` reproduces the true
render byte for byte. Under previous_image the simulator decides from the condition, not
from the reference bytes it is handed (the image bonus applies to the facts visible in the
previous frame). The faults of each image travel in ``metadata["faults"]``; the runner
writes them to the sealed oracle file.

The controls of the primary condition (``vsb.conditions``) are simulated on the random
stream of the condition they are compared with (``Condition.stream``: common random
numbers). An ablation draws structured memory's stream, so its images differ from the
structured-memory ones only where a removed fact drew a fault the full memory would have
prevented. The placebo supplies no fact (its facts are another story's and are ignored), so
every memory fact gets ``p_memory`` as without context, and it draws independent's stream:
its images are the independent ones, by design. A predicted memory draws structured memory's
stream too: its images differ from the structured-memory ones only where the extractor read a
fact wrong (drawn as the memory states it) or dropped it (``p_memory``); the oracle does not
follow its context, so its images are the truth under every condition.

==================== ========= =========== =========== ===========
simulator            p_memory  p_adherence image_bonus p_inference
==================== ========= =========== =========== ===========
procedural-oracle    0.00      0.00        —           1.00
procedural-drift-low 0.04      0.01        0.35        0.90
procedural-drift-mid 0.12      0.02        0.35        0.75
procedural-amnesiac  0.35      0.01        0.25        0.80
procedural-sloppy    0.03      0.15        0.60        0.50
==================== ========= =========== =========== ===========

``p_inference`` matters only for a story in the implicit text style: it is the chance the
simulated model infers an effect the text does not state (one draw per causal link, from a
Generator seeded from (model, story id, seed) alone: the same links are missed under every
condition, and the other draws are those of the plain story, so the explicit and implicit
images differ only where an inference was missed).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from functools import partial

import numpy as np

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter, PromptFit
from vsb.adapters.faults import SceneSim, SimulatorParams, infer_links, simulate_story
from vsb.conditions import get_condition
from vsb.errors import AdapterError
from vsb.fsio import canonical_json
from vsb.story.models import Story

#: Bump when the simulation or its rendering changes: it is part of every cache key.
SIMULATOR_VERSION = "3"

SIMULATORS: dict[str, SimulatorParams] = {
    "procedural-oracle": SimulatorParams(p_memory=0.0, p_adherence=0.0, follows_context=False),
    "procedural-drift-low": SimulatorParams(
        p_memory=0.04, p_adherence=0.01, image_bonus=0.35, p_inference=0.90
    ),
    "procedural-drift-mid": SimulatorParams(
        p_memory=0.12, p_adherence=0.02, image_bonus=0.35, p_inference=0.75
    ),
    "procedural-amnesiac": SimulatorParams(
        p_memory=0.35, p_adherence=0.01, image_bonus=0.25, p_inference=0.80
    ),
    "procedural-sloppy": SimulatorParams(
        p_memory=0.03, p_adherence=0.15, image_bonus=0.60, p_inference=0.50
    ),
}

_MEMO_SIZE = 64


def _seed_int(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(canonical_json(list(parts))).digest()[:16], "big")


def jitter_seed(story_id: str, scene: int, seed: int) -> int:
    """The renderer's jitter seed of one frame: from (story, scene, run seed), not the model."""
    return _seed_int("jitter", story_id, scene, seed) >> 65  # 63 bits


def chain_rng(model: str, story_id: str, condition: str, seed: int) -> np.random.Generator:
    """The Generator that drives one (model, story, condition, seed) chain."""
    return np.random.default_rng(_seed_int("chain", model, story_id, condition, seed))


def inference_rng(model: str, story_id: str, seed: int) -> np.random.Generator:
    """The Generator of a model's inferences on one story (the same under every condition)."""
    return np.random.default_rng(_seed_int("inference", model, story_id, seed))


class ProceduralSimulator(ImageModelAdapter):
    """A simulator with fixed corruption probabilities (``SimulatorParams``)."""

    privileged = True
    process_safe = True
    accepts_reference_image = True

    def __init__(self, name: str, params: SimulatorParams) -> None:
        self.name = name
        self.version = SIMULATOR_VERSION
        self.params = params
        self._memo: OrderedDict[tuple[str, str, int], list[SceneSim]] = OrderedDict()

    def simulate(
        self, story: Story, story_sha256: str, condition: str, seed: int
    ) -> list[SceneSim]:
        """Every scene's rendered state and faults (memoised; a pure function of the inputs)."""
        key = (story_sha256, condition, seed)
        sims = self._memo.get(key)
        if sims is None:
            cond = get_condition(condition)
            rng = chain_rng(self.name, story.id, cond.stream, seed)
            inferred = infer_links(story, self.params, inference_rng(self.name, story.id, seed))
            sims = simulate_story(story, cond, self.params, rng, inferred)
            self._memo[key] = sims
            if len(self._memo) > _MEMO_SIZE:
                self._memo.popitem(last=False)
        return sims

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        """The prompt in characters, with no limit: a simulator draws from the story, so
        nothing of the prompt is ever cut."""
        return PromptFit("characters", len(request.full_prompt()), None)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        p = request.privileged
        if p is None:
            raise AdapterError(f"simulator {self.name!r} needs the story (privileged request)")
        if not 1 <= p.scene <= len(p.story.scenes):
            raise AdapterError(f"story {p.story.id} has no scene {p.scene}")
        sim = self.simulate(p.story, p.story_sha256, p.condition, request.seed)[p.scene - 1]
        from vsb.render import render_png

        jitter = jitter_seed(p.story.id, p.scene, request.seed)
        png = render_png(sim.rendered, seed=jitter)
        meta = {"faults": [f.as_json() for f in sim.faults], "jitter_seed": jitter}
        return GenerationResult(png=png, metadata=meta, cost_usd=0.0)


def _simulator(name: str) -> partial[ProceduralSimulator]:
    return partial(ProceduralSimulator, name, SIMULATORS[name])


# one factory per simulator (vsb.adapters.registry.BUILTIN names them by import path)
procedural_oracle = _simulator("procedural-oracle")
procedural_drift_low = _simulator("procedural-drift-low")
procedural_drift_mid = _simulator("procedural-drift-mid")
procedural_amnesiac = _simulator("procedural-amnesiac")
procedural_sloppy = _simulator("procedural-sloppy")
