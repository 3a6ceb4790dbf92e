"""The ``vinabench`` evaluator asked of the simulators' frames through a literal reference
judge: every VinaBench question of vsb's own stories, with its answer.

vsb's stories go into VinaBench's annotation form (``vsb.story.vinabench.sample_of_story``:
profiles in words, who is present and how many, time, location, the objects one can see as
linked entities) and are handed to the evaluator (``VinaBenchOptions.annotations``); the
judge (``vsb.validation.vina.judge``: ``literal`` reads the picture with vsb's blind
extractor, ``literal-drawn`` as drawn) is served as an OpenAI-compatible endpoint, in this
process (an httpx transport running the server's own handler) or, with ``served``, over HTTP
on 127.0.0.1, and asked through the evaluator's own calls and the judge machinery (no cache,
no ledger: a local simulation costs nothing). ``vsb.evaluators.vinabench.answers`` gives
every question with its answer and VinaBench's value of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vsb.fsio import iter_jsonl
from vsb.story.models import IMPORTED
from vsb.story.vinabench import sample_of_story
from vsb.validation.reference import DEFAULT_MODELS as DRIFTING

#: The simulators asked by default: the oracle (true renders: what a metric says of a clean
#: frame) and the four that drift.
DEFAULT_MODELS = ("procedural-oracle", *DRIFTING)
#: The condition asked by default (the main one: where memory is given).
DEFAULT_CONDITIONS = ("structured_memory",)


def cells_present(
    run_dir: str | Path, models: Sequence[str], conditions: Sequence[str]
) -> tuple[list[str], list[str]]:
    """Those of ``models`` and ``conditions`` the run has frames of (in the given order)."""
    have = {(r["model"], r["condition"]) for _, r in iter_jsonl(Path(run_dir) / "records.jsonl")}
    ms = [m for m in models if any((m, c) in have for c in conditions)]
    cs = [c for c in conditions if any((m, c) in have for m in models)]
    return ms, cs


def ask_vinabench(
    run_dir: str | Path,
    *,
    models: Sequence[str] = DEFAULT_MODELS,
    conditions: Sequence[str] = DEFAULT_CONDITIONS,
    judge: str = "literal",
    served: bool = False,
) -> list[dict[str, Any]]:
    """Every VinaBench question of the run's own stories (not imported ones) about the frames
    of ``models`` under ``conditions``, asked of the reference judge ``judge``; one dict per
    question (``vsb.evaluators.vinabench.answers``: model, condition, story_id, metric,
    unit, scenes, subject, prompt, answer, value). Empty when the run has none of them."""
    from vsb.evaluators.interface import read_run
    from vsb.evaluators.vinabench import VinaBenchEvaluator, VinaBenchOptions, answers
    from vsb.evaluators.vlm.execute import execute_calls, failed_calls_error
    from vsb.evaluators.vlm.transports import build_transport, default_client
    from vsb.validation.sim_judge import JudgeEndpoint, JudgeServer
    from vsb.validation.vina.judge import VINA_JUDGES

    ms, cs = cells_present(run_dir, models, conditions)
    if not ms:
        return []
    view = read_run(run_dir, ms, cs)
    samples = {sid: sample_of_story(s) for sid, s in view.stories.items()
               if s.category != IMPORTED}  # fmt: skip
    if not samples:
        return []
    options = VinaBenchOptions(cache_dir=None, concurrency=4 if served else 1,
                               annotations=samples)  # fmt: skip
    ev = VinaBenchEvaluator(options=options)
    made = VINA_JUDGES[judge](Path(run_dir))
    with (JudgeServer if served else JudgeEndpoint)(made, keep_bodies=False) as endpoint:
        client = default_client() if served else endpoint.direct_client()
        with client:
            transport = build_transport(
                f"openai-compatible:{judge}", base_url=endpoint.url, client=client
            )
            outcomes = execute_calls(ev.calls(view, transport, options), transport, options)
    err = failed_calls_error(outcomes)
    if err is not None:
        raise err
    return answers(ev, outcomes)
