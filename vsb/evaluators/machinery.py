"""The one machinery that runs every evaluator's work items and returns their rows.

``run_evaluators(evaluators, run, options)`` plans every evaluator's items
(``Evaluator.plan``), before any work, then runs them by stage (vsb.evaluators.interface):

1. ``frames``: one task per story: its (model, condition) sequences, each decoded and run
   through every frames evaluator planned on it, with one ``ExtractionMemo`` so that each
   distinct image of the story is decoded and extracted once (and, given
   ``EvaluateOptions.extraction_cache``, extracted once across evaluations); rows come back
   in the sequences' order; in a fork process pool when ``workers > 1`` (or on Ray:
   ``vsb.evaluators.evaluate_ray``);
2. ``calls``: every evaluator's judge calls in one pass of the call machinery
   (``vsb.evaluators.vlm_judge.execute_calls``: answer cache, a ledger row before each attempt,
   concurrency, retries, budget), recorded in the ledger, then ``rows(outcomes)`` per
   evaluator; the calls go to ``judge_calls.jsonl``;
3. ``models``: the embedding passes (``vsb.evaluators.embed.signals.run_embeddings``), cached per
   image and text by content, and the evaluators that run their own (``run_models``: FID and
   CLIP-I, ``vsb.evaluators.vina.reference``);
4. known outcomes: images with no picture get ``generation_failed`` rows, and images that
   cannot be read (found by ``read_run(check_images=True)`` when a later stage runs, else by
   the frames stage's decoding) ``unreadable`` rows (``vsb.evaluators.failed``), from every
   ``verdicts`` evaluator.

Rows come back in that order, so an evaluation writes the same bytes whichever evaluators
share it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb.errors import InputError, RunError
from vsb.evaluators.failed import replace_failed
from vsb.evaluators.interface import (
    EvaluateOptions,
    Evaluator,
    EvaluatorOutput,
    Frame,
    FrameSequence,
    Image,
    RunView,
    WorkItem,
    by_stage,
)
from vsb.evaluators.pooled import pooled
from vsb.evaluators.registry import get_evaluator
from vsb.evaluators.render.decode import decode_render
from vsb.evaluators.render.memo import ExtractionMemo
from vsb.story.models import Story
from vsb.tables.reasons import image_name

if TYPE_CHECKING:  # the judge and the embeddings are imported when they run
    from vsb.evaluators.embed.signals import EmbedSummary
    from vsb.evaluators.vlm_judge import CallOutcome, JudgeCall


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
    #: cached answers that failed their check (not their key's) and were asked again
    failed_checks: int = 0
    #: repeats of another call of the pass (the same image and questions): judged once,
    #: counted neither as calls nor as cached
    duplicates: int = 0

    @property
    def parse_failure_share(self) -> float:
        """Share of the judged questions whose answer could not be parsed (0 if none)."""
        n = sum(v for k, v in self.verdicts.items() if k != "not_applicable")
        return self.verdicts.get("parse_failure", 0) / n if n else 0.0


@dataclass
class Outputs:
    """What the machinery returns: rows, the judge's transcript and what each stage did."""

    out: EvaluatorOutput = field(default_factory=EvaluatorOutput)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    judge: JudgeSummary | None = None
    embed: tuple[EmbedSummary, ...] = ()
    #: (model, image as ``vsb.tables.reasons.image_name`` names it, why it is no render)
    not_renders: list[tuple[str, str, str]] = field(default_factory=list)
    unreadable: dict[Image, str] = field(default_factory=dict)  # image -> why
    #: What the frames stage's memos did (``ExtractionMemo.stats``, summed).
    extraction: Counter[str] = field(default_factory=Counter)


# ---- frames: local work per sequence, in a process pool ---------------------------------


def _frame(
    task: FrameSequence,
    scene: int,
    path: str | None,
    data: bytes | None = None,
    memo: ExtractionMemo | None = None,
) -> Frame:
    """The frame of ``scene``: its image read from ``path`` (or given as ``data``: the bytes
    of that file, as Ray workers get them; ``path`` then only names it). An image that
    cannot be read is a frame without a path whose ``unreadable`` says why. With a ``memo``
    the bytes are decoded once per content and the frame carries their sha256."""
    if path is None:
        return Frame(task.model, task.condition, task.story_id, scene, None)
    sha = ""
    if memo is not None and data is None:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = None  # decode_render(path) says why
    try:
        if memo is not None and data is not None:
            sha = hashlib.sha256(data).hexdigest()
            d = memo.decode(data, sha)
        else:
            d = decode_render(path if data is None else data)
    except InputError as err:  # unreadable: a frame without a picture that says why
        return Frame(task.model, task.condition, task.story_id, scene, None, unreadable=err.message)
    return Frame(
        task.model, task.condition, task.story_id, scene, d.indices if d.is_render else None,
        path=path, is_render=d.is_render, reason=d.reason, counts=d.counts, sha256=sha,
        band_counts=d.band_counts,
        memo=memo,
    )  # fmt: skip


def evaluate_task(
    story: Story,
    names: Sequence[str | Evaluator],
    task: FrameSequence,
    data: Sequence[bytes | None] | None = None,
    memo: ExtractionMemo | None = None,
) -> Outputs:
    """Run the frames evaluators ``names`` (or instances) over one sequence;
    ``data``: the images' bytes, in ``task.images`` order (None: read them from disk);
    ``memo``: decodings and extractions shared with other sequences (None: none)."""
    blobs = data if data is not None else [None] * len(task.images)
    frames = [_frame(task, k, p, b, memo) for (k, p), b in zip(task.images, blobs, strict=True)]
    res = Outputs(
        not_renders=[
            (f.model, image_name(f.condition, f.story_id, f.scene), f.reason)
            for f in frames
            if f.path and not f.is_render
        ],
        unreadable={
            (f.model, f.condition, f.story_id, f.scene): f.unreadable
            for f in frames
            if f.unreadable
        },
    )
    for ev in names:
        ev = get_evaluator(ev) if isinstance(ev, str) else ev
        part = ev.evaluate_story(story, frames)  # type: ignore[attr-defined]
        res.out.requirements += part.requirements
        res.out.signals += part.signals
    return res


def evaluate_group(
    story: Story,
    names: Sequence[str | Evaluator],
    tasks: Sequence[FrameSequence],
    data: Sequence[Sequence[bytes | None]] | None = None,
    cache_dir: str | None = None,
) -> tuple[list[Outputs], Counter[str]]:
    """``evaluate_task`` of every sequence of one story (every model and condition) with
    one ``ExtractionMemo``, so that each distinct image of the story is decoded and
    extracted once (``cache_dir``: its on-disk extraction cache); the outputs in ``tasks``
    order and what the memo did."""
    blobs = data if data is not None else [None] * len(tasks)
    with ExtractionMemo(cache_dir) as memo:
        outs = [evaluate_task(story, names, t, b, memo) for t, b in zip(tasks, blobs, strict=True)]
    text: dict[str, str] = {}
    for res in outs:  # equal text one str: pickled once, and held once where it is received
        share_text(res.out.requirements, text)
        share_text(res.out.signals, text)
    return outs, memo.stats


def share_text(rows: list[dict[str, Any]], text: dict[str, str]) -> list[dict[str, Any]]:
    """``rows`` with each text value replaced by the first equal one seen (``text`` holds
    them). Done where the rows are made (``evaluate_group``, in the worker): pickle writes a
    shared str once, so a story's rows arrive in the evaluating process sharing their text;
    a run's ~162k requirement rows hold a few thousand distinct values."""
    for row in rows:
        for k, v in row.items():
            if type(v) is str:
                row[k] = text.setdefault(v, v)
    return rows


# Shared with forked workers (set before the pool starts; never pickled).
_SHARED: dict[str, Story] | None = None

#: One frames job: a story's sequences, the evaluators to run on them, the cache directory.
Job = tuple[tuple[FrameSequence, ...], tuple[Evaluator, ...], str | None]


def _run_job(job: Job) -> tuple[list[Outputs], Counter[str]]:
    assert _SHARED is not None
    tasks, names, cache_dir = job
    return evaluate_group(_SHARED[tasks[0].story_id], names, tasks, None, cache_dir)


def _jobs(
    evaluators: list[Evaluator], items: list[WorkItem], cache_dir: str | None
) -> tuple[list[FrameSequence], list[Job]]:
    """The sequences in plan order, and one job per (story, evaluators): a story's images
    under every model and condition share a memo (most repeats are within a story)."""
    names_of: dict[FrameSequence, list[str]] = {}
    for it in items:
        names_of.setdefault(it.payload, []).append(it.evaluator)
    groups: dict[tuple[str, tuple[str, ...]], list[FrameSequence]] = {}
    for seq, names in names_of.items():
        groups.setdefault((seq.story_id, tuple(names)), []).append(seq)
    by_name = {ev.name: ev for ev in evaluators}
    return list(names_of), [
        (tuple(seqs), tuple(by_name[n] for n in names), cache_dir)
        for (_sid, names), seqs in groups.items()
    ]


def _frames_stage(
    evaluators: list[Evaluator], items: list[WorkItem], run: RunView,
    options: EvaluateOptions, acc: Outputs,
) -> None:  # fmt: skip
    global _SHARED
    cache_dir = None if options.extraction_cache is None else str(options.extraction_cache)
    order, jobs = _jobs(evaluators, items, None if options.ray is not None else cache_dir)
    progress = options.progress.get("frames")
    total = sum(len(seq.images) for seq in order)
    done = 0
    pending: dict[FrameSequence, Outputs] = {}
    nxt = 0

    def add(job: Job, result: tuple[list[Outputs], Counter[str]]) -> None:
        """Rows are added in plan order (whatever order the jobs finish in)."""
        nonlocal nxt
        outs, stats = result
        acc.extraction.update(stats)
        pending.update(zip(job[0], outs, strict=True))
        while nxt < len(order) and order[nxt] in pending:
            res = pending.pop(order[nxt])
            nxt += 1
            acc.out.requirements += res.out.requirements
            acc.out.signals += res.out.signals
            acc.not_renders += res.not_renders
            acc.unreadable.update(res.unreadable)

    def tick(job: Job) -> None:
        nonlocal done
        done += sum(len(t.images) for t in job[0])
        if progress:
            progress(done, total)

    _SHARED = run.stories
    try:
        if options.ray is not None:
            from vsb.evaluators.evaluate_ray import run_tasks

            def both(job: Job, res: tuple[list[Outputs], Counter[str]]) -> None:
                add(job, res)
                tick(job)

            run_tasks(options.ray, run.stories, jobs, evaluate_group, both)
        elif options.workers > 1 and len(jobs) > 1:
            for job, res in pooled(_run_job, jobs, options.workers, tick):
                add(job, res)
        else:
            for job in jobs:
                add(job, _run_job(job))
                tick(job)
    finally:
        _SHARED = None


# ---- calls: paid or slow judge calls through the call machinery --------------------------


class LedgerRecorder:
    """Judge calls in the ledger: a row before each attempt is sent, completed after it; cache
    hits get a completed row of their own (like generation). ``role`` prefixes the model
    (``judge:…``; the narrative importer's ``import:…``)."""

    def __init__(self, ledger: Any, judge_model: str, role: str = "judge") -> None:
        self.ledger = ledger
        self.model = f"{role}:{judge_model}"

    def rows(self, call: JudgeCall, estimate_usd: float | None, priced: bool) -> Any:
        """The ledger rows of one call's attempts (``vsb.store.paid.LedgerRows``)."""
        from vsb.store.paid import LedgerRows

        return LedgerRows(
            self.ledger, call.key, self.model, condition=call.condition,
            story_id=call.story_id, scene=call.scene, estimate=estimate_usd, priced=priced,
        )  # fmt: skip

    def reconcile(self, cache: Any) -> int:
        """Rows a killed pass left whose answer the cache stored: paid once, not again."""
        from vsb.store.paid import reconcile

        return reconcile(self.ledger, cache.attempts)

    def hit(self, out: CallOutcome) -> None:
        from vsb.store.ledger import LedgerEntry

        c = out.call
        self.ledger.record_many([LedgerEntry(
            key=c.key, model=self.model, latency_s=0.0, success=True, cache_hit=True,
            cost_usd=0.0, condition=c.condition, story_id=c.story_id, scene=c.scene,
        )])  # fmt: skip


def _calls_stage(
    evaluators: list[Evaluator], items: list[WorkItem], run: RunView,
    options: EvaluateOptions, acc: Outputs,
) -> None:  # fmt: skip
    from vsb.evaluators.vlm.store import failed_checks_in
    from vsb.evaluators.vlm.transports import endpoint_of
    from vsb.evaluators.vlm_judge import execute_calls, failed_calls_error, transcript_row
    from vsb.store.ledger import Ledger

    judge, progress = options.judge, options.progress.get("calls")
    if judge is None:
        raise InputError(f"--evaluator {evaluators[0].name} needs a judge: give --judge")
    opts = evaluators[0].options  # type: ignore[attr-defined]  # one pass: the first's options
    calls = [it.payload for it in items]
    done = 0
    where = endpoint_of(judge)
    with Ledger(options.ledger_path or run.root / "ledger.sqlite") as ledger:
        label = f"evaluate vlm {judge.judge_model}" + (f" at {where}" if where else "")
        ledger.start_session(label)
        recorder = LedgerRecorder(ledger, judge.judge_model)

        def on_done(out: CallOutcome) -> None:
            nonlocal done
            if out.cache_hit:
                recorder.hit(out)
            done += 1
            if progress:
                progress(done, len(calls))

        checks = failed_checks_in(opts.cache_dir if judge.paid else None)
        outcomes = execute_calls(calls, judge, opts, on_done=on_done, recorder=recorder)
        checks = failed_checks_in(opts.cache_dir if judge.paid else None) - checks
    err = failed_calls_error(outcomes)
    if err is not None:
        raise err
    verdicts: Counter[str] = Counter()
    for ev in evaluators:
        mine = [o for o in outcomes if o.call.evaluator == ev.name]
        part: EvaluatorOutput = ev.rows(mine, judge.judge_model)  # type: ignore[attr-defined]
        acc.out.requirements += part.requirements
        acc.out.signals += part.signals
        verdicts.update(str(r["verdict"]) for r in part.requirements)
    acc.transcript = [transcript_row(o, judge.judge_model, where) for o in outcomes]
    costs = [o.cost_usd for o in outcomes]
    acc.judge = JudgeSummary(
        judge_model=judge.judge_model,
        calls=sum(not o.cache_hit for o in outcomes),
        cache_hits=sum(o.cache_hit and not o.duplicate for o in outcomes),
        duplicates=sum(o.duplicate for o in outcomes),
        cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        verdicts=dict(verdicts),
        endpoint=where,
        failed_checks=checks,
    )


# ---- models: batched embedding passes -----------------------------------------------------


def _models_stage(
    evaluators: list[Evaluator], items: list[WorkItem], run: RunView,
    options: EvaluateOptions, acc: Outputs,
) -> None:  # fmt: skip
    from vsb.evaluators.embed.signals import run_embeddings

    load = None
    if options.ray is not None:
        from vsb.evaluators.evaluate_ray import remote_loader

        load = remote_loader(options.ray)
    own = [ev for ev in evaluators if hasattr(ev, "run_models")]  # e.g. vinabench_ref
    embed = [ev for ev in evaluators if ev not in own]
    summaries: list[EmbedSummary] = []
    if embed:
        refs = next((list(it.payload) for it in items
                     if it.evaluator in {ev.name for ev in embed} and it.payload), [])  # fmt: skip
        mine = {ev.name: ev.options for ev in embed}  # type: ignore[attr-defined]
        sigs, summaries = run_embeddings(
            run.stories, run.sequences, mine, options.progress.get("models"), load, refs
        )
        acc.out.signals += sigs
    for ev in own:  # in this process, never on Ray
        sigs, more = ev.run_models(
            [it for it in items if it.evaluator == ev.name], options.progress.get("models")
        )
        acc.out.signals += sigs
        summaries += more
    acc.embed = tuple(summaries)


# ---- the machinery -------------------------------------------------------------------------


def run_evaluators(
    evaluators: Sequence[Evaluator], run: RunView, options: EvaluateOptions
) -> Outputs:
    """Plan every evaluator's items, before any work, then run them stage by stage; their
    rows, in stage order. ``run`` was read with ``check_images`` when any evaluator runs
    after the frames stage (no later stage sees an unreadable image)."""
    acc = Outputs(unreadable=dict(run.unreadable))
    failed = [(s.model, s.condition, s.story_id, k) for s in run.sequences
              for k, p in s.images if p is None]  # fmt: skip
    failed = [i for i in failed if i not in run.unreadable]  # unreadable: rows of their own
    stages = {"frames": _frames_stage, "calls": _calls_stage, "models": _models_stage}
    plans = [(execute, evs, [it for ev in evs for it in ev.plan(run, options)])
             for stage, execute in stages.items() if (evs := by_stage(evaluators, stage))]  # type: ignore[arg-type]  # fmt: skip
    for execute, evs, items in plans:
        execute(evs, items, run, options, acc)
    if failed or acc.unreadable:
        jm = options.judge.judge_model if options.judge is not None else ""
        acc.out.requirements = replace_failed(
            acc.out.requirements, failed, run.stories, list(evaluators), jm, acc.unreadable
        )
    return acc


__all__ = ["JudgeSummary", "Outputs", "Path", "RunError", "evaluate_task", "run_evaluators"]
