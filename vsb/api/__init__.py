"""vsb from Python, for notebooks: the functions behind ``vsb suite``, ``vsb run``,
``vsb evaluate`` and ``vsb score``, and pandas DataFrames of what they wrote (issue #36).

Thin on purpose, in the way ``inspect_ai.eval()`` and ``lm_eval.simple_evaluate()`` present
theirs: each function here calls the library function its command calls, with the same
defaults, and writes the same files (a run directory made here is one ``vsb evaluate`` and
``vsb score`` read, and the other way round)::

    from vsb import api

    suite = api.generate_suite("suite")                      # vsb suite generate --out suite
    rows = api.prompts(suite, ["independent", "structured_memory"])   # vsb suite prompts
    api.run(suite, ["procedural-oracle", my_function], ["independent"], "runs/a")  # vsb run
    api.evaluate("runs/a")                                   # vsb evaluate runs/a
    api.score("runs/a")                                      # vsb score runs/a
    api.scores_frame("runs/a"), api.verdicts_frame("runs/a")  # pandas DataFrames

A model is a name (``vsb models``: ``procedural-oracle``, ``stored:SOURCE`` with
``samples=DIR``, ``python:MODULE:FUNCTION``…) or a Python callable: a function of a
``vsb.adapters.function.FunctionRequest`` that returns a PIL image or PNG bytes, named
``python:MODULE:QUALNAME`` unless given in a ``{name: function}`` mapping. docs/python.md
shows the whole loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb.adapters.base import ImageModelAdapter
from vsb.conditions import resolve_conditions
from vsb.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from vsb.evaluators.evaluate import EvaluationResult
    from vsb.run.prompts import PromptRow
    from vsb.run.runner import RunResult
    from vsb.scores.models import ScoresReport
    from vsb.story.models import Story

__all__ = [
    "Benchmark",
    "benchmark",
    "evaluate",
    "generate_suite",
    "load_suite",
    "prompts",
    "prompts_frame",
    "run",
    "score",
    "scores_frame",
    "verdicts_frame",
    "write_suite",
]

#: What ``models`` may hold: names, callables, or a mapping name -> callable or name.
Models = Iterable[str | Callable[..., Any]] | Mapping[str, str | Callable[..., Any]]


def generate_suite(
    out: str | Path, *, seed: int = 0, per_cell: int | None = None, text_style: Any = None
) -> Path:
    """``vsb suite generate``: write the default suite (or ``per_cell`` stories per category
    × difficulty) into ``out``; returns ``out``."""
    from vsb.generator.generate import generate_suite as generate
    from vsb.generator.generate import write_suite as write

    write(generate(seed, per_cell=per_cell, text_style=text_style), out, seed=seed)
    return Path(out)


def load_suite(suite: str | Path) -> list[Story]:
    """The stories of a suite directory, checked as ``vsb run`` reads them."""
    from vsb.story.io import load_suite as load

    return load(suite)


def write_suite(stories: Sequence[Story], out: str | Path, *, seed: int = 0) -> Path:
    """Write ``stories`` as a suite directory (a subset of a suite, say); returns ``out``."""
    from vsb.generator.generate import write_suite as write

    write(stories, out, seed=seed)
    return Path(out)


def _conditions(conditions: str | Sequence[str]) -> list[str]:
    spec = conditions if isinstance(conditions, str) else ",".join(conditions)
    return resolve_conditions(spec)


def prompts(
    suite: str | Path | Sequence[Story], conditions: str | Sequence[str], *, source: str = "mine"
) -> list[PromptRow]:
    """``vsb suite prompts``: the exact request of every (story, scene, condition)."""
    from vsb.run.prompts import suite_prompts

    return list(suite_prompts(suite, _conditions(conditions), source))


def prompts_frame(
    suite: str | Path | Sequence[Story], conditions: str | Sequence[str], *, source: str = "mine"
) -> pd.DataFrame:
    """``prompts`` as a DataFrame (the columns of ``vsb suite prompts``)."""
    import pandas as pd

    from vsb.run.prompts import COLUMNS

    rows = prompts(suite, conditions, source=source)
    return pd.DataFrame([[getattr(r, c) for c in COLUMNS] for r in rows], columns=list(COLUMNS))


def _adapters(
    models: Models, samples: str | Path | None
) -> tuple[list[str], dict[str, ImageModelAdapter]]:
    """Model names and the adapters built here (callables, stored samples)."""
    from vsb.adapters.function import FunctionModel
    from vsb.adapters.registry import get_adapter, resolve_models

    items: list[tuple[str | None, str | Callable[..., Any]]]
    if isinstance(models, Mapping):
        items = list(models.items())
    elif isinstance(models, str):
        items = [(None, m) for m in resolve_models(models)]
    else:
        items = [(None, m) for m in models]
    names: list[str] = []
    given: dict[str, ImageModelAdapter] = {}
    for name, model in items:
        if callable(model):
            label = name or f"python:{model.__module__}:{model.__qualname__}"
            given[label] = FunctionModel(model, label)
        elif isinstance(model, str):
            label = name or model
            resolve_models(model)  # an unknown name says so, with "did you mean"
            if model.startswith("stored:"):
                given[label] = get_adapter(model, root=samples)
            elif name is not None and name != model:
                given[label] = get_adapter(model)
        else:
            raise InputError(f"model {model!r}: give a name (vsb models) or a function")
        names.append(label)
    if not names:
        raise InputError("no model given")
    return list(dict.fromkeys(names)), given


def run(
    suite: str | Path,
    models: Models,
    conditions: str | Sequence[str],
    out: str | Path,
    *,
    seed: int = 0,
    workers: int = 2,
    cache: str | Path | None = None,
    samples: str | Path | None = None,
    concurrency: int | None = None,
    budget_usd: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """``vsb run``: every (story, scene, model, condition) image into ``out``, through the
    generation cache (``cache``, default ``.vsb-cache``) and the ledger."""
    from vsb.run.runner import RunConfig
    from vsb.run.runner import run as run_suite
    from vsb.store.cache import DEFAULT_CACHE_DIR

    names, given = _adapters(models, samples)
    config = RunConfig(
        suite_dir=Path(suite), models=names, conditions=_conditions(conditions), out=Path(out),
        seed=seed, workers=workers, cache_dir=Path(cache or DEFAULT_CACHE_DIR),
        concurrency=concurrency, budget_usd=budget_usd,
    )  # fmt: skip
    return run_suite(config, progress, adapters=given)


def evaluate(
    run_dir: str | Path,
    *,
    evaluators: str | Sequence[str] | None = None,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> EvaluationResult:
    """``vsb evaluate`` (evaluators that need no judge: rules and pairwise by default)."""
    from vsb.evaluators.evaluate import evaluate_run

    names = evaluators.split(",") if isinstance(evaluators, str) else evaluators
    return evaluate_run(run_dir, progress=progress, workers=workers, evaluators=names)


def score(
    run_dir: str | Path,
    *,
    evaluators: str | Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = 2000,
) -> ScoresReport:
    """``vsb score``: score a run and write ``RUN/scores/``; returns the report."""
    from vsb.scores.compute import Resampling, score_run
    from vsb.scores.write import write_scores

    report = score_run(
        run_dir, evaluators=evaluators, settings=Resampling(seed=seed, n_resamples=resamples)
    )
    write_scores(run_dir, report)
    return report


def scores_frame(run_dir: str | Path) -> pd.DataFrame:
    """The scores ``vsb score`` wrote (``scores/model_scores.csv``): one row per evaluator,
    model, condition and metric, with its 95 % CI and rank."""
    import pandas as pd

    path = Path(run_dir) / "scores" / "model_scores.csv"
    if not path.is_file():
        raise InputError("no scores: run vsb score (or api.score) first", file=path)
    return pd.read_csv(path)


def verdicts_frame(run_dir: str | Path) -> pd.DataFrame:
    """Every requirement check ``vsb evaluate`` wrote (``evaluations/requirements.parquet``):
    one row per (evaluator, model, condition, story, scene, requirement) with its verdict."""
    from vsb.tables.io import read_table, requirements_file

    path = requirements_file(run_dir)
    if not path.is_file():
        raise InputError("no evaluations: run vsb evaluate (or api.evaluate) first", file=path)
    return read_table(path).to_pandas()


@dataclass(frozen=True)
class Benchmark:
    """What ``benchmark`` did: the run, its evaluation and scores, and their DataFrames."""

    run_dir: Path
    run: RunResult
    evaluation: EvaluationResult
    report: ScoresReport
    #: ``scores_frame(run_dir)``: one row per evaluator, model, condition and metric
    scores: pd.DataFrame
    #: ``verdicts_frame(run_dir)``: one row per requirement check
    verdicts: pd.DataFrame


def benchmark(
    suite: str | Path,
    models: Models,
    conditions: str | Sequence[str],
    out: str | Path,
    *,
    evaluators: str | Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = 2000,
    **run_options: Any,
) -> Benchmark:
    """``run``, ``evaluate`` and ``score`` in one call (as ``lm_eval.simple_evaluate`` does):
    ``run_options`` go to ``run`` (workers, cache, samples, concurrency, budget_usd)."""
    result = run(suite, models, conditions, out, seed=seed, **run_options)
    evaluation = evaluate(out, evaluators=evaluators)
    report = score(out, evaluators=evaluators, seed=seed, resamples=resamples)
    return Benchmark(Path(out), result, evaluation, report, scores_frame(out), verdicts_frame(out))
