"""The main job's suite variants: the same stories worded otherwise, run like the release and
compared with it story by story (written into the release's ``sensitivity/``).

* **paraphrase** (prompt sensitivity, methodology section 3): the default suite reworded
  (``suite-paraphrase/``), every model under ``independent`` (``run-paraphrase/``), compared
  with the release by ``vsb.scores.sensitivity.compare_inputs`` →
  ``sensitivity/prompt_sensitivity.{json,csv}``.
* **implicit** (implicit effects): the stories of the default suite that have a causal link,
  in the implicit text style (``suite-implicit/``), every model under ``independent`` and
  ``structured_memory`` (``run-implicit/``), compared on the inferred requirements by
  ``vsb.scores.implicit.compare_implicit`` → ``sensitivity/implicit_effects.{json,csv}``.

Both reuse the release's generation cache (``OUT/NAME/cache``) and the runner and evaluator
machinery, and judge with the rule checker only. The release's own rows are loaded once and
handed to both comparisons (``PlainRows``).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from vsb.release.config import BuildConfig, Progress

if TYPE_CHECKING:
    from vsb.scores.compute import ScoringInput
    from vsb.story.models import PromptStyle, Story

#: The conditions each variant runs (those of the release's conditions).
VARIANT_CONDITIONS: dict[str, tuple[str, ...]] = {
    "paraphrase": ("independent",),
    "implicit": ("independent", "structured_memory"),
}
#: The release files each variant writes.
VARIANT_FILES: dict[str, tuple[str, ...]] = {
    "paraphrase": ("sensitivity/prompt_sensitivity.json", "sensitivity/prompt_sensitivity.csv"),
    "implicit": ("sensitivity/implicit_effects.json", "sensitivity/implicit_effects.csv"),
}


@dataclass
class PlainRows:
    """The release's requirement rows, read on first use and then shared."""

    release_dir: Path
    _input: ScoringInput | None = field(default=None, repr=False)

    def get(self) -> ScoringInput:
        if self._input is None:
            from vsb.scores.compute import load_scoring_input

            self._input = load_scoring_input(self.release_dir)
        return self._input


def variant_conditions(variant: str, conditions: list[str]) -> list[str]:
    """The conditions ``variant`` runs in a release of ``conditions`` (may be empty)."""
    return [c for c in VARIANT_CONDITIONS[variant] if c in conditions]


def remove_variant(release_dir: Path, variant: str) -> None:
    """Delete what ``variant`` wrote into the release (it is off: never freeze a stale one)."""
    for rel in VARIANT_FILES[variant]:
        (release_dir / rel).unlink(missing_ok=True)
    folder = release_dir / "sensitivity"
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _variant_suite(seed: int, style: PromptStyle) -> list[Story]:
    from vsb.generator.generate import generate_suite

    stories = generate_suite(seed, text_style=style)
    if style == "implicit":  # only the stories with an effect to infer
        stories = [s for s in stories if any(r.inferred for c in s.scenes for r in c.requirements)]
    return stories


def run_variant(
    root: Path,
    style: PromptStyle,
    models: list[str],
    conditions: list[str],
    config: BuildConfig,
    progress: Progress,
) -> Path:
    """Write ``suite-STYLE/``, run it into ``run-STYLE/`` through the release's cache and
    evaluate it with the rule checker; returns the run directory."""
    from vsb.evaluators.evaluate import evaluate_run
    from vsb.generator.generate import write_suite
    from vsb.run.runner import RunConfig, run

    suite, run_dir = root / f"suite-{style}", root / f"run-{style}"
    shutil.rmtree(suite, ignore_errors=True)  # a story left from another build is not run
    write_suite(_variant_suite(config.seed, style), suite, seed=config.seed)
    cfg = RunConfig(
        suite_dir=suite, models=models, conditions=conditions, out=run_dir, seed=config.seed,
        workers=config.workers, cache_dir=root / "cache", add=False,
    )  # fmt: skip
    run(cfg, lambda done, total: progress.advance(style, done, total))
    shutil.rmtree(run_dir / "evaluations", ignore_errors=True)
    progress.note(style, "evaluating (rules)")
    evaluate_run(
        run_dir, workers=config.workers, evaluators=("rules",),
        extraction_cache=root / "cache",
    )  # fmt: skip
    return run_dir


def _rel(root: Path, paths: list[Path]) -> list[str]:
    return [p.resolve().relative_to(root.resolve()).as_posix() for p in paths]


#: What the progress line says while each variant is compared with the plain run.
_COMPARING = {
    "paraphrase": "comparing with the plain run",
    "implicit": "comparing inferred effects with the plain run",
}


def variant_images(
    style: PromptStyle,
    root: Path,
    plain: PlainRows,
    models: list[str],
    conditions: list[str],
    config: BuildConfig,
    progress: Progress,
) -> Path:
    """The first step of a variant: its suite, run and evaluation (``run_variant``), checked
    to hold the release's stories; returns its run directory."""
    from vsb.scores.sensitivity import check_same_stories

    conds = variant_conditions(style, conditions)
    run_dir = run_variant(root, style, models, conds, config, progress)
    check_same_stories(plain.release_dir, run_dir, subset=style == "implicit")
    return run_dir


def variant_comparison(
    style: PromptStyle, root: Path, plain: PlainRows, conditions: list[str], progress: Progress
) -> list[str]:
    """The second step: the ``style`` run compared with the release, the paraphrase on every
    check, the implicit stories (a subset) on their inferred checks. It holds the release's
    rows (``plain``): the build runs it in a new process (``side_by_side``). Returns the
    files written."""
    from vsb.scores.compute import load_scoring_input
    from vsb.scores.sensitivity import SENSITIVITY_DIR

    conds = variant_conditions(style, conditions)
    progress.note(style, _COMPARING[style])
    variant = load_scoring_input(root / f"run-{style}")
    out = plain.release_dir / SENSITIVITY_DIR
    if style == "implicit":
        from vsb.scores.implicit import compare_implicit, write_implicit

        report = compare_implicit(plain.get(), variant, evaluator="rules", conditions=conds)
        return _rel(plain.release_dir, write_implicit(out, report))
    from vsb.scores.sensitivity import compare_inputs, write_sensitivity

    sens = compare_inputs(plain.get(), variant, evaluator="rules", conditions=conds)
    return _rel(plain.release_dir, write_sensitivity(out, sens))


def compare_variant(
    style: PromptStyle,
    root: Path,
    plain: PlainRows,
    models: list[str],
    conditions: list[str],
    config: BuildConfig,
    progress: Progress,
) -> list[str]:
    """Run the ``style`` variant (module docstring) and compare it with the release: both
    steps, one after the other. Returns the release files it wrote."""
    variant_images(style, root, plain, models, conditions, config, progress)
    return variant_comparison(style, root, plain, conditions, progress)


def side_by_side(
    styles: list[str],
    root: Path,
    plain: PlainRows,
    models: list[str],
    conditions: list[str],
    config: BuildConfig,
    progress: Progress,
    done: Callable[[str, list[str], float], None],
) -> None:
    """Run the variants ``styles`` at once, each in a process of its own with its share of
    the workers (the main job's two variants: one each, so neither forks a pool), then
    each one's comparison in a new process, forked from the small build process: the
    images step's leftovers are gone before a comparison loads the release's rows (~100
    MiB; the build's memory bound counts every process: ~400 MiB here at most).
    ``done(style, files, seconds)`` as each ends; the first error is raised here, after the
    other variants' processes are stopped. Needs fork (``vsb.release.isolate.CAN_FORK``)."""
    from contextlib import ExitStack

    from vsb.release.isolate import StageHost, wait_any

    share = replace(config, workers=max(1, config.workers // max(1, len(styles))))
    started: dict[str, float] = {}
    with ExitStack() as stack:

        def host(step: str, fn: Callable[[Progress], Any]) -> StageHost:
            return stack.enter_context(StageHost({step: fn}))

        busy: dict[str, StageHost] = {}  # style -> the process of the step it is in
        for style in styles:
            kind = cast("PromptStyle", style)
            progress.start(style, None)
            started[style] = time.perf_counter()
            busy[style] = host(
                "images", partial(variant_images, kind, root, plain, models, conditions, share)
            )
            busy[style].send("images")
        comparing: set[str] = set()
        while busy:
            style, out = wait_any(busy, progress)
            busy.pop(style).close()  # a process per step: its memory goes back now
            if style in comparing:
                seconds = time.perf_counter() - started[style]
                done(style, out, seconds)
                progress.finish(style, seconds, False)
                continue
            comparing.add(style)
            kind = cast("PromptStyle", style)
            busy[style] = host(
                "compare", partial(variant_comparison, kind, root, plain, conditions)
            )
            busy[style].send("compare")


#: The two variants as the release build calls them.
paraphrase_sensitivity = partial(compare_variant, "paraphrase")
implicit_effects = partial(compare_variant, "implicit")
