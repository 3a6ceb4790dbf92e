"""``vsb evaluate``: run evaluators over a run directory (all of it, or some models/conditions).

Reads ``RUN/manifest.json``, ``RUN/records.jsonl``, ``RUN/images/…`` and ``RUN/suite/``
(docs/CONTRACTS.md) and writes ``RUN/evaluations/requirements.{jsonl,csv}``,
``RUN/evaluations/signals.{jsonl,csv}`` and ``RUN/evaluations/manifest.json`` atomically.

The evaluator is an axis of the rows: evaluating some evaluators (and some models and
conditions) replaces exactly those rows and keeps every other evaluator's, so the rule
checker's and a judge's verdicts sit side by side. Local evaluators run per (model,
condition, story) sequence, in a fork process pool when ``workers > 1``; evaluators that
read renders only mark images that are not renders ``not_applicable`` (one warning per
model). The VLM judge runs as one call per scene through vlm_judge.py (cache, ledger,
concurrency, retries, budget), and its calls are written to ``judge_calls.jsonl``.
Progress goes to ``progress(done, total)`` and ``judge_progress(done, total)``.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import multiprocessing
import os
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.errors import InputError, RunError
from vsb.evaluators.decode import decode_render
from vsb.evaluators.embed import (
    EMBED_EVALUATORS,
    EmbedOptions,
    EmbedSummary,
    check_embeddings,
    run_embeddings,
)
from vsb.evaluators.failed import LABEL as FAILED_LABEL
from vsb.evaluators.failed import replace_failed
from vsb.evaluators.registry import (
    DEFAULT_EVALUATORS,
    EvaluatorOutput,
    Frame,
    evaluator_info,
    get_evaluator,
)
from vsb.evaluators.vlm_judge import (
    EVALUATOR_NAME as JUDGE,
)
from vsb.evaluators.vlm_judge import (
    PAIRS_EVALUATOR as PAIRS,
)
from vsb.evaluators.vlm_judge import (
    CallOutcome,
    CostPlan,
    JudgeCall,
    JudgeOptions,
    execute_calls,
    failed_calls_error,
    plan_calls,
    plan_cost,
    plan_pair_calls,
    rows_from_outcomes,
    transcript_row,
)
from vsb.evaluators.vlm_transports import VlmTransport, endpoint_of
from vsb.fsio import atomic_write_json, atomic_write_text, iter_jsonl
from vsb.locks import die_with_parent
from vsb.story.io import load_suite
from vsb.story.models import Story

EVALUATIONS_FORMAT_VERSION = "2.0"
ProgressFn = Callable[[int, int], None]

REQUIREMENT_COLUMNS: tuple[str, ...] = (
    "model", "condition", "story_id", "scene", "req_id", "dimension", "taxonomy", "source",
    "subject", "attribute", "expected", "observed", "passed", "failure", "evaluator",
    "verdict", "judge_model",
)  # fmt: skip
SIGNAL_COLUMNS: tuple[str, ...] = (
    "model", "condition", "story_id", "scene", "signal", "value", "evaluator",
)  # fmt: skip
TRANSCRIPT_FILE = "judge_calls.jsonl"
#: Evaluators that run through the VLM judge (per frame; per pair of consecutive frames).
JUDGES: tuple[str, ...] = (JUDGE, PAIRS)


@dataclass(frozen=True)
class _Task:
    model: str
    condition: str
    story_id: str
    images: tuple[tuple[int, str | None], ...]  # (scene, absolute path or None if failed)


@dataclass(frozen=True)
class JudgeSummary:
    """What a judge pass did."""

    judge_model: str
    calls: int
    cache_hits: int
    cost_usd: float | None
    verdicts: dict[str, int]
    #: the judge's normalised base URL (None: no server, e.g. mock or replay)
    endpoint: str | None = None

    @property
    def parse_failure_share(self) -> float:
        """Share of the judged questions whose answer could not be parsed (0 if none)."""
        n = sum(v for k, v in self.verdicts.items() if k != "not_applicable")
        return self.verdicts.get("parse_failure", 0) / n if n else 0.0


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


@dataclass
class _Local:
    out: EvaluatorOutput = field(default_factory=EvaluatorOutput)
    not_renders: list[tuple[str, str]] = field(default_factory=list)  # (model, reason)


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
    if wanted is None:
        return set(present)
    unknown = [w for w in wanted if w not in present]
    if unknown:
        close = difflib.get_close_matches(unknown[0], present, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(
            f"{key} {', '.join(map(repr, unknown))} is not in this run{hint} "
            f"(it has: {', '.join(present)})"
        )
    return set(wanted)


def _tasks(run_dir: Path, records: list[dict[str, Any]], stories: dict[str, Story]) -> list[_Task]:
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
    return [_Task(m, c, s, tuple(sorted(images))) for (m, c, s), images in sorted(groups.items())]


# Shared with forked workers (set before the pool starts; never pickled).
_SHARED: tuple[dict[str, Story], tuple[str, ...]] | None = None


def _frame(task: _Task, scene: int, path: str | None, data: bytes | None = None) -> Frame:
    """The frame of ``scene``: its image read from ``path`` (or given as ``data``: the bytes
    of that file, as Ray workers get them; ``path`` then only names it)."""
    if path is None:
        return Frame(task.model, task.condition, task.story_id, scene, None)
    try:
        d = decode_render(path if data is None else data)
    except InputError as err:
        raise InputError(err.message, file=path, location=err.location) from None
    return Frame(
        task.model, task.condition, task.story_id, scene, d.indices if d.is_render else None,
        path=path, is_render=d.is_render, reason=d.reason, counts=d.counts,
    )  # fmt: skip


def evaluate_task(
    story: Story, names: Sequence[str], task: _Task, data: Sequence[bytes | None] | None = None
) -> _Local:
    """Run the per-story evaluators ``names`` over one (model, condition, story) sequence;
    ``data``: the images' bytes, in ``task.images`` order (None: read them from disk)."""
    blobs = data if data is not None else [None] * len(task.images)
    frames = [_frame(task, k, p, b) for (k, p), b in zip(task.images, blobs, strict=True)]
    res = _Local(not_renders=[(f.model, f.reason) for f in frames if f.path and not f.is_render])
    for name in names:
        part = get_evaluator(name).evaluate_story(story, frames)
        res.out.requirements += part.requirements
        res.out.signals += part.signals
    return res


def _run_task(task: _Task) -> _Local:
    assert _SHARED is not None
    stories, names = _SHARED
    return evaluate_task(stories[task.story_id], names, task)


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)


def _images(*tables: Sequence[dict[str, Any]]) -> int:
    """Distinct images (model, condition, story, scene) that rows evaluated, across every
    evaluation of the run (rows of images that failed to generate left out)."""
    seen = {
        (r["model"], r["condition"], r["story_id"], r["scene"])
        for rows in tables
        for r in rows
        if r.get("failure") != FAILED_LABEL
    }
    return len(seen)


def _csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def resolve_evaluators(
    evaluators: Sequence[str] | None, judge: VlmTransport | None
) -> tuple[str, ...]:
    """The evaluators to run: the named ones, else the defaults (plus the judge if given)."""
    names = tuple(evaluators) if evaluators else (*DEFAULT_EVALUATORS, *((JUDGE,) if judge else ()))
    for name in names:
        evaluator_info(name)  # unknown names fail before any work
    judged = [n for n in names if n in JUDGES]
    if judged and judge is None:
        raise InputError(
            f"--evaluator {judged[0]} needs a judge: --judge openai-compatible:MODEL "
            "[--base-url URL], anthropic:MODEL, replay:DIR or mock[:ERROR_RATE]"
        )
    if judge is not None and not judged:
        raise InputError("--judge is only used by the vlm evaluators: add vlm to --evaluator")
    return names


@dataclass(frozen=True)
class _Selection:
    root: Path
    stories: dict[str, Story]
    tasks: list[_Task]
    cells: set[tuple[str, str]]


def _prepare(
    run_dir: str | Path, models: Sequence[str] | None, conditions: Sequence[str] | None
) -> _Selection:
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
    return _Selection(root, stories, tasks, {(t.model, t.condition) for t in tasks})


def _reference_tasks(sel: _Selection, model: str) -> list[_Task]:
    """The reference model's frames in the run, whatever models were selected (the
    reference images of clip_image_rr)."""
    records = [r for r in _read_records(sel.root) if r["model"] == model]
    return _tasks(sel.root, records, sel.stories)


def _judge_calls(
    sel: _Selection,
    judge: VlmTransport,
    options: JudgeOptions,
    names: Sequence[str] = (JUDGE,),
) -> list[JudgeCall]:
    calls: list[JudgeCall] = []
    if JUDGE in names:
        frames = [
            (t.model, t.condition, t.story_id, k, p, sel.stories[t.story_id].scenes[k - 1])
            for t in sel.tasks
            for k, p in t.images
            if p is not None
        ]
        calls += plan_calls(frames, judge.judge_model, options.batch, endpoint_of(judge))
    if PAIRS in names:
        seqs = [
            (t.model, t.condition, t.story_id, list(t.images), sel.stories[t.story_id].scenes)
            for t in sel.tasks
        ]
        calls += plan_pair_calls(seqs, judge.judge_model, endpoint_of(judge))
    return calls


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
    names = [n for n in resolve_evaluators(evaluators, judge) if n in JUDGES]
    sel = _prepare(run_dir, models, conditions)
    return plan_cost(_judge_calls(sel, judge, options, names), judge, options)


def _run_local(
    sel: _Selection,
    names: tuple[str, ...],
    workers: int,
    progress: ProgressFn | None,
    ray: Any = None,
) -> _Local:
    global _SHARED
    total = sum(len(t.images) for t in sel.tasks)
    done = 0
    acc = _Local()
    _SHARED = (sel.stories, names)

    def add(task: _Task, res: _Local) -> None:
        nonlocal done
        acc.out.requirements += res.out.requirements
        acc.out.signals += res.out.signals
        acc.not_renders += res.not_renders
        done += len(task.images)
        if progress:
            progress(done, total)

    try:
        if ray is not None:
            from vsb.evaluators.evaluate_ray import run_tasks

            run_tasks(ray, sel.stories, sel.tasks, names, evaluate_task, add)
        elif workers > 1 and len(sel.tasks) > 1:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(workers, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
                for task, res in zip(sel.tasks, pool.imap(_run_task, sel.tasks), strict=True):
                    add(task, res)
        else:
            for task in sel.tasks:
                add(task, _run_task(task))
    finally:
        _SHARED = None
    return acc


class _LedgerRecorder:
    """Judge calls in the ledger: a row before each call is sent, completed after it; cache
    hits get a completed row of their own (like generation)."""

    def __init__(self, ledger: Any, judge_model: str) -> None:
        self.ledger = ledger
        self.model = f"judge:{judge_model}"

    def begin(self, call: JudgeCall, estimate_usd: float | None) -> int:
        row = self.ledger.begin(
            call.key, self.model, condition=call.condition, story_id=call.story_id,
            scene=call.scene, cost_usd=estimate_usd,
        )  # fmt: skip
        return int(row)

    def finish(self, row: int, out: CallOutcome) -> None:
        reply = out.reply
        self.ledger.finish(
            row, latency_s=out.latency_s, success=reply is not None,
            cost_usd=out.cost_usd, error=out.error,
            input_tokens=None if reply is None else reply.input_tokens,
            output_tokens=None if reply is None else reply.output_tokens,
        )  # fmt: skip

    def hit(self, out: CallOutcome) -> None:
        from vsb.ledger import LedgerEntry

        c = out.call
        self.ledger.record_many([LedgerEntry(
            key=c.key, model=self.model, latency_s=0.0, success=True, cache_hit=True,
            cost_usd=0.0, condition=c.condition, story_id=c.story_id, scene=c.scene,
        )])  # fmt: skip


def _run_judge(
    sel: _Selection,
    judge: VlmTransport,
    options: JudgeOptions,
    progress: ProgressFn | None,
    ledger_path: Path,
    names: Sequence[str],
) -> tuple[list[CallOutcome], list[dict[str, Any]], list[dict[str, Any]]]:
    from vsb.ledger import Ledger

    check = getattr(judge, "check_credentials", None)
    if check is not None:
        check()
    calls = _judge_calls(sel, judge, options, names)
    done = 0
    with Ledger(ledger_path) as ledger:
        where = endpoint_of(judge)
        label = f"evaluate {JUDGE} {judge.judge_model}" + (f" at {where}" if where else "")
        ledger.start_session(label)

        recorder = _LedgerRecorder(ledger, judge.judge_model)

        def on_done(out: CallOutcome) -> None:
            nonlocal done
            if out.cache_hit:
                recorder.hit(out)
            done += 1
            if progress:
                progress(done, len(calls))

        outcomes = execute_calls(calls, judge, options, on_done=on_done, recorder=recorder)
    err = failed_calls_error(outcomes)
    if err is not None:
        raise err
    reqs, sigs = rows_from_outcomes(outcomes, judge.judge_model)
    return outcomes, reqs, sigs


def _existing(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in iter_jsonl(path)] if path.is_file() else []


def _row_evaluator(row: dict[str, Any]) -> str:
    ev = row.get("evaluator")
    if ev:
        return str(ev)
    sig = str(row.get("signal", ""))
    return sig.split("_", 1)[0] if sig else "rules"


def _merge(
    old: list[dict[str, Any]],
    new: list[dict[str, Any]],
    names: tuple[str, ...],
    cells: set[tuple[str, str]],
) -> list[dict[str, Any]]:
    """Old rows not replaced by this evaluation, then the new rows."""
    kept = [
        r for r in old
        if not (_row_evaluator(r) in names and (r.get("model"), r.get("condition")) in cells)
    ]  # fmt: skip
    return kept + new


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


def evaluate_run(
    run_dir: str | Path,
    *,
    progress: ProgressFn | None = None,
    workers: int = 1,
    evaluators: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    judge: VlmTransport | None = None,
    judge_options: JudgeOptions | None = None,
    judge_progress: ProgressFn | None = None,
    ledger_path: str | Path | None = None,
    embed_options: EmbedOptions | None = None,
    embed_progress: ProgressFn | None = None,
    executor: str = "local",
    ray_address: str | None = None,
) -> EvaluationResult:
    """Evaluate the images of a run directory and write ``RUN/evaluations/``; judge calls
    are recorded in ``ledger_path`` (default ``RUN/ledger.sqlite``). ``executor="ray"``
    runs the per-story and embedding evaluators on a Ray cluster
    (``vsb.evaluators.evaluate_ray``; same rows)."""
    if executor not in ("local", "ray"):
        raise InputError(f"unknown executor {executor!r}; executors: local, ray")
    if ray_address is not None and executor != "ray":
        raise InputError("--ray-address needs --executor ray")
    with ExitStack() as stack:
        ray = None
        if executor == "ray":
            from vsb.ray_session import ray_session

            ray = stack.enter_context(ray_session(ray_address))
        return _evaluate_run(
            run_dir, progress=progress, workers=workers, evaluators=evaluators, models=models,
            conditions=conditions, judge=judge, judge_options=judge_options,
            judge_progress=judge_progress, ledger_path=ledger_path,
            embed_options=embed_options, embed_progress=embed_progress, ray=ray,
        )  # fmt: skip


def _evaluate_run(
    run_dir: str | Path,
    *,
    progress: ProgressFn | None,
    workers: int,
    evaluators: Sequence[str] | None,
    models: Sequence[str] | None,
    conditions: Sequence[str] | None,
    judge: VlmTransport | None,
    judge_options: JudgeOptions | None,
    judge_progress: ProgressFn | None,
    ledger_path: str | Path | None,
    embed_options: EmbedOptions | None,
    embed_progress: ProgressFn | None,
    ray: Any,
) -> EvaluationResult:
    names = resolve_evaluators(evaluators, judge)
    sel = _prepare(run_dir, models, conditions)
    # Embedding evaluators (clip, dino) run in their own phase below, never in the fork pool.
    embed_names = tuple(n for n in names if n in EMBED_EVALUATORS)
    eopts = embed_options or EmbedOptions()
    if embed_names:
        check_embeddings(embed_names, eopts)  # extra and weights present, before any work
    local_names = tuple(n for n in names if n not in JUDGES and n not in EMBED_EVALUATORS)
    local = _Local()
    if local_names:
        local = _run_local(sel, local_names, workers, progress, ray)
    req_rows, sig_rows = local.out.requirements, local.out.signals
    summary: JudgeSummary | None = None
    transcript: list[dict[str, Any]] = []
    if judge is not None:
        opts = judge_options or JudgeOptions()
        ledger = Path(ledger_path) if ledger_path else sel.root / "ledger.sqlite"
        judged = [n for n in names if n in JUDGES]
        outcomes, jreq, jsig = _run_judge(sel, judge, opts, judge_progress, ledger, judged)
        req_rows, sig_rows = req_rows + jreq, sig_rows + jsig
        transcript = [transcript_row(o, judge.judge_model, endpoint_of(judge)) for o in outcomes]
        costs = [o.cost_usd for o in outcomes]
        summary = JudgeSummary(
            judge_model=judge.judge_model,
            calls=sum(not o.cache_hit for o in outcomes),
            cache_hits=sum(o.cache_hit for o in outcomes),
            cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
            verdicts=dict(Counter(str(r["verdict"]) for r in jreq)),
            endpoint=endpoint_of(judge),
        )
    embed_summary: list[EmbedSummary] = []
    if embed_names:
        load = None
        if ray is not None:
            from vsb.evaluators.evaluate_ray import remote_loader

            load = remote_loader(ray)
        refs = _reference_tasks(sel, eopts.reference_model) if "clip" in embed_names else []
        esig, embed_summary = run_embeddings(
            sel.stories, sel.tasks, embed_names, eopts, embed_progress, load, refs
        )
        sig_rows = sig_rows + esig
    # Issue #11: an image that failed to generate fails every requirement of its scene,
    # once per verdict evaluator (vsb/evaluators/failed.py).
    failed = [(t.model, t.condition, t.story_id, k) for t in sel.tasks for k, p in t.images
              if p is None]  # fmt: skip
    if failed:
        jm = judge.judge_model if judge is not None else ""
        req_rows = replace_failed(req_rows, failed, sel.stories, names, jm)
    out_dir = sel.root / "evaluations"
    all_req = _merge(_existing(out_dir / "requirements.jsonl"), req_rows, names, sel.cells)
    all_sig = _merge(_existing(out_dir / "signals.jsonl"), sig_rows, names, sel.cells)
    atomic_write_text(out_dir / "requirements.jsonl", _jsonl(all_req))
    atomic_write_text(out_dir / "requirements.csv", _csv(all_req, REQUIREMENT_COLUMNS))
    atomic_write_text(out_dir / "signals.jsonl", _jsonl(all_sig))
    atomic_write_text(out_dir / "signals.csv", _csv(all_sig, SIGNAL_COLUMNS))
    if judge is not None:
        old = _existing(out_dir / TRANSCRIPT_FILE)
        atomic_write_text(
            out_dir / TRANSCRIPT_FILE, _jsonl(_merge(old, transcript, names, sel.cells))
        )
    images = Counter(t.model for t in sel.tasks for _, p in t.images if p is not None)
    warnings = _warnings(local.not_renders, images, local_names) if local_names else []
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
        embed=tuple(embed_summary),
    )
    present = list(dict.fromkeys(_row_evaluator(r) for r in [*all_req, *all_sig]))
    atomic_write_json(
        out_dir / "manifest.json",
        {
            "version": EVALUATIONS_FORMAT_VERSION,
            "evaluators": present,
            "last": {
                "evaluators": list(names),
                "models": sorted({m for m, _ in sel.cells}),
                "conditions": sorted({c for _, c in sel.cells}),
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
