"""``vsb evaluate``: run evaluators over a run directory (all of it, or some models/conditions).

Reads ``RUN/manifest.json``, ``RUN/records.jsonl``, ``RUN/images/…`` and ``RUN/suite/``
(docs/CONTRACTS.md) and writes ``RUN/evaluations/requirements.parquet``,
``RUN/evaluations/signals.parquet`` (through ``vsb.tables``) and
``RUN/evaluations/manifest.json`` atomically.

The evaluator is an axis of the rows: evaluating some evaluators (and some models and
conditions) replaces exactly those rows and keeps every other evaluator's, so the rule
checker's and a judge's verdicts sit side by side. ``evaluate_run`` selects the evaluators
(registry), builds the run's view (``RunView``), and hands them to the one machinery
(``vsb.evaluators.machinery``: plan, then run every work item by stage — process pool,
judge calls with cache, ledger and budget, batched models — and known outcomes for images
with no picture); then it merges the rows by evaluator and writes them. Evaluators that read
renders only mark images that are not renders ``not_applicable`` (one warning per model);
judge calls are written to ``judge_calls.jsonl``. Progress goes to ``progress(done, total)``,
``judge_progress`` and ``embed_progress``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb.errors import InputError, RunError, select_present
from vsb.evaluators.failed import LABEL as FAILED_LABEL
from vsb.evaluators.failed import Image
from vsb.evaluators.interface import (
    EvaluateOptions,
    Evaluator,
    FrameSequence,
    RunView,
)
from vsb.evaluators.machinery import JudgeSummary, run_evaluators, unreadable_images, without
from vsb.evaluators.registry import DEFAULT_EVALUATORS, evaluator_info, get_evaluator
from vsb.fsio import UniqueKeys, atomic_write_json, atomic_write_text, iter_jsonl
from vsb.story.io import load_suite
from vsb.story.models import Story
from vsb.tables import (
    iter_rows,
    requirements_file,
    signals_file,
    unit,
    write_requirements,
    write_signals,
)

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


def _read_records(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "records.jsonl"
    if not path.is_file():
        raise RunError("run has no records (run `vsb run` first)", file=path)
    records = []
    for n, rec in iter_jsonl(path):
        missing = [k for k in ("model", "condition", "story_id", "scene") if k not in rec]
        if missing:
            raise InputError(
                f"missing field(s) {', '.join(missing)}", file=path, location=f"line {n}"
            )
        records.append(rec)
    if not records:
        raise RunError("run has no records (records.jsonl is empty)", file=path)
    return records


def _select(records: list[dict[str, Any]], key: str, wanted: Sequence[str] | None) -> set[str]:
    present = list(dict.fromkeys(str(r[key]) for r in records))
    return select_present(
        wanted,
        present,
        lambda unknown, hint: (
            f"{key} {', '.join(map(repr, unknown))} is not in this run{hint} "
            f"(it has: {', '.join(present)})"
        ),
    )


def _tasks(
    run_dir: Path, records: list[dict[str, Any]], stories: dict[str, Story]
) -> list[FrameSequence]:
    groups: dict[tuple[str, str, str], list[tuple[int, str | None]]] = {}
    for rec in records:
        sid = rec["story_id"]
        if sid not in stories:
            raise RunError(
                f"record names story {sid!r}, which is not in the run's suite",
                file=run_dir / "suite",
            )
        path: str | None = None
        if rec.get("error") is None:
            p = run_dir / str(rec.get("path", ""))
            if not rec.get("path") or not p.is_file():
                raise RunError("image listed in records.jsonl is missing", file=p)
            path = str(p)
        groups.setdefault((rec["model"], rec["condition"], sid), []).append(
            (int(rec["scene"]), path)
        )
    return [
        FrameSequence(m, c, s, tuple(sorted(images)))
        for (m, c, s), images in sorted(groups.items())
    ]


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)


def _images(*tables: Sequence[dict[str, Any]]) -> int:
    """Distinct images (model, condition, story, scene) that rows evaluated, across every
    evaluation of the run (rows of images that failed to generate left out; unreadable
    images count: they exist)."""
    seen = {
        (r["model"], r["condition"], r["story_id"], r["scene"])
        for rows in tables
        for r in rows
        if r.get("failure") != FAILED_LABEL
    }
    return len(seen)


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


def _prepare(
    run_dir: str | Path, models: Sequence[str] | None, conditions: Sequence[str] | None
) -> RunView:
    root = Path(run_dir)
    if not root.is_dir():
        raise RunError("run directory not found", file=root)
    if not (root / "manifest.json").is_file():
        raise RunError("run is incomplete (no manifest.json)", file=root / "manifest.json")
    suite_dir = root / "suite"
    if not suite_dir.is_dir():
        raise RunError("run has no copy of its suite", file=suite_dir)
    stories = {s.id: s for s in load_suite(suite_dir)}
    records = _read_records(root)
    keep_m = _select(records, "model", models)
    keep_c = _select(records, "condition", conditions)
    records = [r for r in records if r["model"] in keep_m and r["condition"] in keep_c]
    tasks = _tasks(root, records, stories)

    def everything() -> list[FrameSequence]:
        return _tasks(root, _read_records(root), stories)

    return RunView(root, stories, tuple(tasks), everything)


def _cells(view: RunView) -> set[tuple[str, str]]:
    return {(s.model, s.condition) for s in view.sequences}


def plan_judge(
    run_dir: str | Path,
    judge: VlmTransport,
    options: JudgeOptions,
    *,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    evaluators: Sequence[str] | None = None,
) -> CostPlan:
    """The dry run of a judge pass: calls not yet cached and their estimated cost."""
    from vsb.evaluators.vlm_judge import plan_cost

    names = resolve_evaluators(evaluators, judge)
    evs = [get_evaluator(n, options=options) for n in names if evaluator_info(n).stage == "calls"]
    view = _prepare(run_dir, models, conditions)
    view = without(view, unreadable_images(view))  # an unreadable image is never sent
    opts = EvaluateOptions(judge=judge)
    calls = [item.payload for ev in evs for item in ev.plan(view, opts)]
    return plan_cost(calls, judge, options)


def _existing(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) of an earlier evaluation's JSON-lines file ([] when there is none)."""
    return list(iter_jsonl(path)) if path.is_file() else []


def _existing_table(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line or row, row) of an earlier evaluation's table, Parquet or JSON lines ([] when
    there is none)."""
    return list(iter_rows(path)) if path.is_file() else []


#: The fields that identify a requirement row / a signal row of an evaluation (each key
#: appears once in its file; ``vsb.scores.inputs`` refuses a file where one repeats).
REQUIREMENT_KEY = (
    "model", "condition", "story_id", "scene", "req_id", "evaluator", "judge_model",
)  # fmt: skip
SIGNAL_KEY = ("model", "condition", "story_id", "scene", "signal", "evaluator")


def _row_evaluator(row: dict[str, Any]) -> str:
    ev = row.get("evaluator")
    if ev:
        return str(ev)
    sig = str(row.get("signal", ""))
    return sig.split("_", 1)[0] if sig else "rules"


def _merge(
    old: list[tuple[int, dict[str, Any]]],
    new: list[dict[str, Any]],
    names: tuple[str, ...],
    cells: set[tuple[str, str]],
    path: Path,
    key: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """Old rows (read from ``path``) not replaced by this evaluation, then the new rows;
    with ``key``, an ``InputError`` names the first old row that is kept and repeats the key
    of an earlier one (issue #23: a duplicate verdict is never carried forward)."""
    kept = [
        (n, r) for n, r in old
        if not (_row_evaluator(r) in names and (r.get("model"), r.get("condition")) in cells)
    ]  # fmt: skip
    if key is not None:
        unique = UniqueKeys(path, key, "row", unit(path))
        for n, r in kept:
            unique.add(tuple(_key_value(r, f) for f in key), n)
    return [r for _, r in kept] + new


def _key_value(row: dict[str, Any], name: str) -> Any:
    if name == "evaluator":
        return _row_evaluator(row)
    if name == "judge_model":
        return str(row.get("judge_model") or "")
    return row.get(name)


#: The files an evaluation wrote before the tables were Parquet (replaced when it rewrites them).
LEGACY_FILES = ("requirements.jsonl", "requirements.csv", "signals.jsonl", "signals.csv")


def _drop_legacy(out_dir: Path) -> None:
    """Remove the JSON-lines and CSV tables of an older evaluation, now carried into the
    Parquet files (two copies of the rows could disagree)."""
    for name in LEGACY_FILES:
        (out_dir / name).unlink(missing_ok=True)


def _warnings(
    not_renders: list[tuple[str, str]], images: Counter[str], names: tuple[str, ...]
) -> list[str]:
    by_model: dict[str, list[str]] = {}
    for model, reason in not_renders:
        by_model.setdefault(model, []).append(reason)
    render_only = [n for n in names if evaluator_info(n).reads == "renders"]
    out = []
    for model, reasons in sorted(by_model.items()):
        common = Counter(reasons).most_common(1)[0][0]
        out.append(
            f"{model}: {len(reasons)} of {images[model]} images are not renders ({common}); "
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
            {**(of if judge_options else {}), **(options or {})}, judge,
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
    view = _prepare(run_dir, models, conditions)
    cells = _cells(view)
    given = options.of
    chosen: list[Evaluator] = [
        get_evaluator(n, **({"options": given[n]} if n in given else {})) for n in names
    ]
    for ev in chosen:
        ev.check(options)  # what each needs is there, before any work
    done = run_evaluators(chosen, view, options)
    req_rows, sig_rows = done.out.requirements, done.out.signals
    out_dir = view.root / "evaluations"
    req_file, sig_file = requirements_file(view.root), signals_file(view.root)
    all_req = _merge(_existing_table(req_file), req_rows, names, cells, req_file, REQUIREMENT_KEY)
    all_sig = _merge(_existing_table(sig_file), sig_rows, names, cells, sig_file, SIGNAL_KEY)
    write_requirements(out_dir / "requirements.parquet", all_req)
    write_signals(out_dir / "signals.parquet", all_sig)
    _drop_legacy(out_dir)
    summary = done.judge
    if summary is not None:
        path = out_dir / TRANSCRIPT_FILE
        old = _existing(path)
        atomic_write_text(path, _jsonl(_merge(old, done.transcript, names, cells, path)))
    images = Counter(s.model for s, _k, _p in view.frames())  # unreadable ones too
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
    present = list(dict.fromkeys(_row_evaluator(r) for r in [*all_req, *all_sig]))
    atomic_write_json(
        out_dir / "manifest.json",
        {
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
            "images": _images(all_req, all_sig),
            "requirements": len(all_req),
            "passed": sum(bool(r["passed"]) for r in all_req),
            "signals": len(all_sig),
        },
    )
    return result
