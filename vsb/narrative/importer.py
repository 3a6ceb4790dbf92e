"""``vsb suite import``: narratives -> LLM extraction -> replayed, state-checked stories.

The extraction calls go through the VLM judge's call machinery
(``vsb.evaluators.vlm.execute`` over ``vsb.store.paid``: answer cache keyed by content and
endpoint, a ledger row before each attempt, budget, retries, dry run) and its transports
(``--llm`` takes the judge's kinds; ``mock`` is ``ReaderLlm``). A call is text-only: its
answer is cached only if it is used (it parses and builds the story; a rejected one is never
served from the cache). Round 1 asks for every story; an answer that cannot be used (not
JSON, outside the schema or the vocabulary, a contradiction in the replay) is sent back once
with the exact error (round 2). A story whose second answer fails too is rejected: reported
with its scene, nothing written for it; the others go on.

``OUT`` gets the suite (``suite.json`` and one ``<id>.json`` per imported story) and
``OUT/import/``: the report (``report.json``: per story, imported or the error), the
transcript (``calls.jsonl``: every answer received, replayable with
``--llm replay:OUT/import``) and the ledger of the calls (``ledger.sqlite``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from vsb.errors import AdapterError, InputError, TransitionError
from vsb.evaluators.machinery import LedgerRecorder
from vsb.evaluators.vlm.execute import (
    CallOutcome,
    CostPlan,
    JudgeOptions,
    JudgeUnreachable,
    execute_calls,
    plan_cost,
)
from vsb.evaluators.vlm.plan import JudgeCall
from vsb.evaluators.vlm.store import call_key
from vsb.evaluators.vlm.transports import VlmTransport, build_transport, endpoint_of
from vsb.fsio import atomic_write_json, atomic_write_text
from vsb.generator.generate import write_suite
from vsb.narrative.answer import (
    ANSWER_TOKENS,
    SYSTEM_PROMPT,
    AnswerError,
    parse_answer,
    repair_prompt,
    user_prompt,
)
from vsb.narrative.build import build_story
from vsb.narrative.reader import ReaderLlm
from vsb.narrative.sources import Narrative
from vsb.store.ledger import Ledger
from vsb.story.models import Story

#: The import's own files, in ``OUT/import/`` (beside the suite, never mistaken for a story).
IMPORT_DIR = "import"
REPORT_NAME = "report.json"
LEDGER_NAME = "ledger.sqlite"
TRANSCRIPT_NAME = "calls.jsonl"
EVALUATOR = "import"


def build_llm(
    spec: str, *, base_url: str | None = None, client: httpx.Client | None = None
) -> VlmTransport:
    """The extraction model of ``--llm KIND:MODEL``: the judge's transports, and ``mock``
    (the reader of vsb's own sentence shapes)."""
    kind, _, arg = spec.partition(":")
    if kind == "mock":
        if arg:
            raise InputError(f"--llm mock takes no argument (got {spec!r})")
        return ReaderLlm()
    try:
        return build_transport(spec, base_url=base_url, client=client)
    except InputError as err:
        msg = err.message.replace("--judge", "--llm").replace("unknown judge", "unknown LLM")
        raise InputError(msg.replace("mock[:ERROR_RATE]", "mock"), file=err.file) from None


@dataclass
class StoryResult:
    """What became of one narrative: a story, or the error that rejected it."""

    narrative: Narrative
    story: Story | None = None
    error: str | None = None
    scene: int | None = None
    calls: int = 0


@dataclass
class ImportReport:
    """Every narrative's result, and the calls made."""

    results: list[StoryResult] = field(default_factory=list)

    @property
    def imported(self) -> list[Story]:
        return [r.story for r in self.results if r.story is not None]

    @property
    def rejected(self) -> list[StoryResult]:
        return [r for r in self.results if r.story is None]


def _call(n: Narrative, prompt: str, llm: VlmTransport, condition: str) -> JudgeCall:
    return JudgeCall(
        model=EVALUATOR, condition=condition, story_id=n.id, scene=0, image_path="",
        image_sha256="", requirements=(), questions=(), system=SYSTEM_PROMPT, prompt=prompt,
        key=call_key(llm.judge_model, SYSTEM_PROMPT, prompt, "", endpoint_of(llm)),
        evaluator=EVALUATOR, answer_tokens=ANSWER_TOKENS, accepts=_usable(n, llm),
    )  # fmt: skip


def _build(n: Narrative, text: str, llm: VlmTransport) -> Story:
    """The story an answer gives (``AnswerError``, ``TransitionError``)."""
    ext = parse_answer(text, len(n.scenes))
    return build_story(ext, n.scenes, n.id, source=n.source, llm=llm.judge_model)


def _usable(n: Narrative, llm: VlmTransport) -> Callable[[str], bool]:
    """Whether an answer may be cached (and a cached one served): it parses *and* builds
    the story. A rejected answer (outside the vocabulary, a contradiction) is kept for the
    report and the repair round, never stored: a rerun asks again."""

    def check(text: str) -> bool:
        try:
            _build(n, text, llm)
        except (AnswerError, TransitionError):
            return False
        return True

    return check


def plan_import(narratives: Sequence[Narrative], llm: VlmTransport, options: JudgeOptions
                ) -> CostPlan:  # fmt: skip
    """The dry run: the first extraction call of every story (a repair, sent only for an
    answer that fails, is one more call of about the same size)."""
    return plan_cost([_call(n, user_prompt(n.scenes), llm, "extract") for n in narratives],
                     llm, options)  # fmt: skip


def llm_failure(message: str | None) -> str:
    """A failed call's message as the import's: the judge's transports name their request
    a "VLM request"; the importer's is an import LLM request."""
    return (message or "no answer").replace("VLM request", "import LLM request")


def _attempt(result: StoryResult, out: CallOutcome, llm: VlmTransport) -> str | None:
    """Build the story from an answer; the error to send back, or None when it worked."""
    n = result.narrative
    if out.reply is None:
        result.error = f"the LLM call failed: {llm_failure(out.error)}"
        return None
    try:
        result.story = _build(n, out.reply.text, llm)
    except AnswerError as err:
        result.error, result.scene = err.message, err.scene
    except TransitionError as err:
        result.error = f"contradiction in scene {err.scene}, event {err.event}: {err.message}"
        result.scene = err.scene
    else:
        result.error = result.scene = None
        return None
    return result.error


def _run(calls: list[JudgeCall], llm: VlmTransport, options: JudgeOptions, ledger: Ledger
         ) -> list[CallOutcome]:  # fmt: skip
    recorder = LedgerRecorder(ledger, llm.judge_model, role=EVALUATOR)

    def on_done(out: CallOutcome) -> None:
        if out.cache_hit:
            recorder.hit(out)

    try:
        return execute_calls(calls, llm, options, on_done=on_done, recorder=recorder)
    except JudgeUnreachable as err:
        message = err.message.replace("no judge server", "no import LLM server")
        raise JudgeUnreachable(message) from None


def import_narratives(
    narratives: Sequence[Narrative],
    llm: VlmTransport,
    options: JudgeOptions,
    *,
    ledger_path: Path,
    progress: Callable[[str], None] | None = None,
) -> tuple[ImportReport, list[tuple[JudgeCall, CallOutcome]]]:
    """Extract, replay, repair once; the report and every call with its outcome."""
    report = ImportReport([StoryResult(n) for n in narratives])
    transcript: list[tuple[JudgeCall, CallOutcome]] = []
    with Ledger(ledger_path) as ledger:
        ledger.start_session(f"import {llm.judge_model}")
        first = [_call(n, user_prompt(n.scenes), llm, "extract") for n in narratives]
        retry: list[tuple[StoryResult, JudgeCall]] = []
        for result, out in zip(report.results, _run(first, llm, options, ledger), strict=True):
            transcript.append((out.call, out))
            result.calls += 1
            error = _attempt(result, out, llm)
            if error is not None and out.reply is not None:
                n = result.narrative
                prompt = repair_prompt(n.scenes, out.reply.text, error)
                retry.append((result, _call(n, prompt, llm, "repair")))
        if progress and retry:
            progress(f"{len(retry)} answers sent back with their error")
        outs = _run([c for _, c in retry], llm, options, ledger) if retry else []
        for (result, _), out in zip(retry, outs, strict=True):
            transcript.append((out.call, out))
            result.calls += 1
            _attempt(result, out, llm)
    return report, transcript


def _report_doc(report: ImportReport) -> dict[str, Any]:
    return {
        "version": "1.0",
        "imported": len(report.imported),
        "rejected": len(report.rejected),
        "stories": [
            {
                "id": r.narrative.id, "source": r.narrative.source,
                "status": "imported" if r.story is not None else "rejected",
                "scene": r.scene, "error": r.error, "calls": r.calls,
                "requirements": sum(len(s.requirements) for s in r.story.scenes)
                if r.story is not None else 0,
            }
            for r in report.results
        ],
    }  # fmt: skip


def previous_import(out_dir: Path) -> list[str]:
    """The files a previous import wrote into ``out_dir`` (replaced by this one): those its
    report names, and the imported stories and ``suite.json`` of an import killed before it
    wrote its report (``OUT/import/`` exists: the ledger is opened before any call). So the
    same command reruns after a kill at any point. ``InputError`` for a folder that holds
    anything else."""
    if not out_dir.exists():
        return []
    if not out_dir.is_dir():
        raise InputError("the output is not a folder", file=out_dir)
    old = out_dir / IMPORT_DIR / REPORT_NAME
    names: list[str] = []
    if old.is_file():
        try:
            before = json.loads(old.read_text())
            names = [f"{e['id']}.json" for e in before["stories"] if e["status"] == "imported"]
        except (ValueError, OSError, TypeError, KeyError):
            raise InputError("cannot read the previous import's report", file=old) from None
    elif not (out_dir / IMPORT_DIR).is_dir():
        if any(p.name != IMPORT_DIR for p in out_dir.iterdir()):
            raise InputError("the output folder is not empty (nor a previous import)",
                             file=out_dir)  # fmt: skip
        return []
    else:  # killed before its report: what it wrote is recognisable
        for p in sorted(out_dir.iterdir()):
            if p.name != IMPORT_DIR and not _imported_file(p):
                raise InputError(
                    f"the output folder holds {p.name!r}, which no import wrote (an import "
                    "killed before its report leaves only imported stories and suite.json)",
                    file=out_dir,
                )
    found = [p.name for p in sorted(out_dir.iterdir()) if _imported_file(p)]
    return list(dict.fromkeys([*names, *found, "suite.json"]))


def _imported_file(path: Path) -> bool:
    """Whether ``path`` is a file an import writes: ``suite.json``, or a story with an
    ``imported`` section."""
    if path.name == "suite.json":
        return True
    if path.suffix != ".json" or not path.is_file() or path.stat().st_size > 16 * 1024 * 1024:
        return False
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, OSError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get("imported"), dict)


def write_import(
    out_dir: Path,
    report: ImportReport,
    transcript: Sequence[tuple[JudgeCall, CallOutcome]],
    llm: str,
) -> None:
    """The suite of the imported stories in ``out_dir``, the report and the transcript in
    ``out_dir/import/`` (each file written to a temporary file, then renamed). Files a
    previous import wrote there are replaced."""
    for name in previous_import(out_dir):
        (out_dir / name).unlink(missing_ok=True)
    (out_dir / IMPORT_DIR).mkdir(parents=True, exist_ok=True)
    write_suite(sorted(report.imported, key=lambda s: s.id), out_dir)
    lines = [
        json.dumps({
            "story_id": c.story_id, "judge_model": llm,
            "image_sha256": "", "system": c.system, "prompt": c.prompt, "answer": o.reply.text,
        }, ensure_ascii=False, sort_keys=True)
        for c, o in transcript if o.reply is not None
    ]  # fmt: skip
    atomic_write_text(out_dir / IMPORT_DIR / TRANSCRIPT_NAME, "".join(x + "\n" for x in lines))
    atomic_write_json(out_dir / IMPORT_DIR / REPORT_NAME, _report_doc(report))


def check_llm(llm: VlmTransport) -> None:
    """Credentials now rather than at the first call."""
    check = getattr(llm, "check_credentials", None)
    if check is not None:
        try:
            check()
        except AdapterError as err:
            raise InputError(err.message.replace("VLM judge", "LLM")) from None
