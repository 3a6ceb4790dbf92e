"""``vsb evaluate``: run evaluators over a run directory (all of it, or some models/conditions).

Reads ``RUN/manifest.json``, ``RUN/records.jsonl``, ``RUN/images/…`` and ``RUN/suite/``
(docs/CONTRACTS.md) and writes ``RUN/evaluations/requirements.parquet``,
``RUN/evaluations/signals.parquet`` (through ``vsb.tables``) and
``RUN/evaluations/manifest.json`` atomically.

The evaluator is an axis of the rows: evaluating some evaluators (and some models and
conditions) replaces exactly those rows and keeps every other evaluator's, so the rule
checker's and a judge's verdicts sit side by side. ``evaluate_run`` is one pass: plan (the
run's view, ``read_run``; the earlier rows it keeps; each evaluator made with its own options
and checked), execute (the one machinery, ``vsb.evaluators.machinery``: every work item by
stage — process pool, judge calls with cache, ledger and budget, batched models — and known
outcomes for images with no picture), write (the kept rows, then the new ones). Evaluators
that read renders only mark images that are not renders ``not_applicable`` (one warning per
model); judge calls are written to ``judge_calls.jsonl``. Progress goes to
``progress(done, total)``, or to one callback per stage.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb.errors import InputError
from vsb.evaluators.failed import LABEL as FAILED_LABEL
from vsb.evaluators.failed import Image
from vsb.evaluators.interface import EvaluateOptions, Evaluator, read_run
from vsb.evaluators.machinery import JudgeSummary, run_evaluators
from vsb.evaluators.registry import DEFAULT_EVALUATORS, evaluator_info, get_evaluator
from vsb.tables.io import EVALUATIONS_DIR, kept_evaluation, row_evaluator, write_evaluation
from vsb.tables.reasons import images_reason

if TYPE_CHECKING:
    from vsb.evaluators.embed.signals import EmbedSummary
    from vsb.evaluators.vlm.transports import VlmTransport
    from vsb.evaluators.vlm_judge import CostPlan, JudgeOptions

EVALUATIONS_FORMAT_VERSION = "2.0"
ProgressFn = Callable[[int, int], None]

TRANSCRIPT_FILE = "judge_calls.jsonl"
#: The evaluator ``--judge`` selects when no evaluator is named.
DEFAULT_JUDGE = "vlm"
__all__ = ["EvaluationResult", "JudgeSummary", "evaluate_run", "plan_judge"]


@dataclass(frozen=True)
class EvaluationResult:
    """What an evaluation wrote (counts cover the rows written by this evaluation)."""

    out_dir: Path
    images: int
    requirements: int
    passed: int
    signals: int
    evaluators: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    not_applicable: int = 0
    judge: JudgeSummary | None = None
    embed: tuple[EmbedSummary, ...] = ()  # what the embedding evaluators computed
    #: What the frames stage decoded and extracted, and what it found done already
    #: (``ExtractionMemo.stats``: decoded, decode_hits, extracted, extract_hits, disk_hits).
    extraction: dict[str, int] = field(default_factory=dict)


def resolve_evaluators(
    evaluators: Sequence[str] | None, judge: VlmTransport | None
) -> tuple[str, ...]:
    """The evaluators to run: the named ones, else the defaults (plus the judge if given)."""
    names = evaluators or (*DEFAULT_EVALUATORS, *((DEFAULT_JUDGE,) if judge else ()))
    names = tuple(names)
    judged = [n for n in names if evaluator_info(n).stage == "calls"]  # unknown names fail
    if judged and judge is None:
        raise InputError(
            f"--evaluator {judged[0]} needs a judge: --judge openai-compatible:MODEL "
            "[--base-url URL], anthropic:MODEL, replay:DIR or mock[:ERROR_RATE]"
        )
    if judge is not None and not judged:
        raise InputError("--judge is only used by the vlm evaluators: add vlm to --evaluator")
    return names


def plan_judge(
    run_dir: str | Path,
    judge: VlmTransport,
    options: JudgeOptions,
    *,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    evaluators: Sequence[str] | None = None,
    own: Mapping[str, Any] | None = None,
) -> CostPlan:
    """The dry run of a judge pass: calls not yet cached and their estimated cost
    (``own``: evaluator name -> its own options, as ``evaluate_run`` takes them)."""
    from vsb.evaluators.vlm_judge import plan_cost

    names = resolve_evaluators(evaluators, judge)
    calls_stage = [n for n in names if evaluator_info(n).stage == "calls"]
    given = with_judge_options({n: options for n in calls_stage}, own, options)
    evs = [get_evaluator(n, options=given[n]) for n in calls_stage]
    view = read_run(run_dir, models, conditions, check_images=True)  # one never sent
    opts = EvaluateOptions(judge=judge)
    calls = [item.payload for ev in evs for item in ev.plan(view, opts)]
    return plan_cost(calls, judge, options)


def with_judge_options(
    of: Mapping[str, Any], own: Mapping[str, Any] | None, judge_options: JudgeOptions | None
) -> dict[str, Any]:
    """Evaluator name -> options: ``of`` (the judge's, per calls-stage evaluator), then each
    evaluator's ``own``; own options that extend the judge's (a subclass of ``JudgeOptions``,
    e.g. the ``vinabench`` evaluator's) take the pass's judge settings for the fields they
    share (one pass: one concurrency, budget, cache and retry policy)."""
    out = {**of, **(own or {})}
    if judge_options is None:
        return out
    shared = {f.name: getattr(judge_options, f.name) for f in fields(judge_options)}
    for name, opts in out.items():
        if name in of and opts is not judge_options and isinstance(opts, type(judge_options)):
            out[name] = replace(opts, **shared)
    return out


def _warnings(
    not_renders: list[tuple[str, str, str]], images: Counter[str], names: tuple[str, ...]
) -> list[str]:
    by_model: dict[str, dict[str, str]] = {}
    for model, image, reason in not_renders:
        by_model.setdefault(model, {})[image] = reason
    render_only = [n for n in names if evaluator_info(n).reads == "renders"]
    out = []
    for model, reasons in sorted(by_model.items()):
        why = images_reason(reasons)  # what scores.json's not_applicable says (one wording)
        out.append(
            f"{model}: {len(reasons)} of {images[model]} images are not renders ({why}); "
            f"{', '.join(render_only)} marked them not_applicable — judge them with "
            "`vsb evaluate RUN --evaluator vlm --judge …`"
        )
    return out


def _unreadable_warnings(unreadable: dict[Image, str], images: Counter[str]) -> list[str]:
    by_model: dict[str, list[str]] = {}
    for (model, *_), why in sorted(unreadable.items()):
        by_model.setdefault(model, []).append(why)
    return [
        f"{model}: {len(whys)} of {images[model]} images cannot be read ({whys[0]}); "
        "their checks are unreadable (they fail, like a failed generation)"
        for model, whys in by_model.items()
    ]


def evaluate_run(
    run_dir: str | Path,
    *,
    progress: ProgressFn | Mapping[str, ProgressFn] | None = None,
    workers: int = 1,
    evaluators: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    judge: VlmTransport | None = None,
    judge_options: JudgeOptions | None = None,
    ledger_path: str | Path | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    extraction_cache: str | Path | None = None,
) -> EvaluationResult:
    """Evaluate the images of a run directory and write ``RUN/evaluations/``. ``options``:
    evaluator name -> its own options (``judge_options``: those of every calls-stage
    evaluator); ``progress``: a callback of the frames stage, or one per stage; judge calls
    are recorded in ``ledger_path`` (default ``RUN/ledger.sqlite``). ``executor="ray"``
    runs the per-story and embedding evaluators on a Ray cluster
    (``vsb.evaluators.evaluate_ray``; same rows). ``extraction_cache``: a directory where
    extractions are kept by image content and extractor code, for evaluations that share
    images (``vsb.evaluators.render.memo``; not used on Ray)."""
    if executor not in ("local", "ray"):
        raise InputError(f"unknown executor {executor!r}; executors: local, ray")
    if ray_address is not None and executor != "ray":
        raise InputError("--ray-address needs --executor ray")
    with ExitStack() as stack:
        ray = None
        if executor == "ray":
            from vsb.run.ray_session import ray_session

            ray = stack.enter_context(ray_session(ray_address))
        names = resolve_evaluators(evaluators, judge)
        of = {n: judge_options for n in names if evaluator_info(n).stage == "calls"}
        opts = EvaluateOptions(
            with_judge_options(of if judge_options else {}, options, judge_options), judge,
            Path(ledger_path) if ledger_path else None, workers, ray,
            Path(extraction_cache) if extraction_cache else None,
            progress if isinstance(progress, Mapping) else {"frames": progress} if progress else {},
        )  # fmt: skip
        return _evaluate_run(run_dir, names, models=models, conditions=conditions, options=opts)


def _evaluate_run(
    run_dir: str | Path,
    names: tuple[str, ...],
    *,
    models: Sequence[str] | None,
    conditions: Sequence[str] | None,
    options: EvaluateOptions,
) -> EvaluationResult:
    # plan: the run's frames, the earlier rows this evaluation keeps, what each evaluator needs
    later = any(evaluator_info(n).stage != "frames" for n in names)
    view = read_run(run_dir, models, conditions, check_images=later)
    images = Counter(s.model for s, _k, _p in view.frames) + Counter(i[0] for i in view.unreadable)
    cells = {(s.model, s.condition) for s in view.sequences}
    judged = any(evaluator_info(n).stage == "calls" for n in names)
    out_dir = view.root / EVALUATIONS_DIR
    kept = kept_evaluation(view.root, names, cells, TRANSCRIPT_FILE if judged else None)
    given = options.of
    chosen: list[Evaluator] = [
        get_evaluator(n, **({"options": given[n]} if n in given else {})) for n in names
    ]
    for ev in chosen:
        ev.check(options)  # what each needs is there, before any work
    # execute: every evaluator's work items, stage by stage (vsb.evaluators.machinery)
    done = run_evaluators(chosen, view, options)
    # write: RUN/evaluations/, the kept rows and then the new ones
    req_rows, sig_rows = done.out.requirements, done.out.signals
    all_req, all_sig = kept.requirements + req_rows, kept.signals + sig_rows
    summary = done.judge
    warnings = _warnings(done.not_renders, images, names)
    warnings += _unreadable_warnings(done.unreadable, images)
    result = EvaluationResult(
        out_dir=out_dir,
        images=sum(images.values()),
        requirements=len(req_rows),
        passed=sum(bool(r["passed"]) for r in req_rows),
        signals=len(sig_rows),
        evaluators=names,
        warnings=tuple(warnings),
        not_applicable=sum(r.get("verdict") == "not_applicable" for r in req_rows),
        judge=summary,
        embed=done.embed,
        extraction=dict(done.extraction),
    )
    present = list(dict.fromkeys(row_evaluator(r) for r in [*all_req, *all_sig]))
    shown = {(r["model"], r["condition"], r["story_id"], r["scene"])  # failed ones left out
             for r in [*all_req, *all_sig] if r.get("failure") != FAILED_LABEL}  # fmt: skip
    manifest = {
        "version": EVALUATIONS_FORMAT_VERSION,
        "evaluators": present,
        "last": {
            "evaluators": list(names),
            "models": sorted({m for m, _ in cells}),
            "conditions": sorted({c for _, c in cells}),
            "judge_model": summary.judge_model if summary else None,
            **({"judge_endpoint": summary.endpoint} if summary and summary.endpoint else {}),
            "warnings": warnings,
            "images": result.images,
        },
        "images": len(shown),  # distinct images of every evaluation (unreadable ones count)
        "requirements": len(all_req),
        "passed": sum(bool(r["passed"]) for r in all_req),
        "signals": len(all_sig),
    }
    calls = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n"
                    for r in kept.calls + done.transcript)  # fmt: skip
    texts = {TRANSCRIPT_FILE: calls} if summary is not None else {}
    write_evaluation(out_dir, all_req, all_sig, manifest, texts)
    return result
