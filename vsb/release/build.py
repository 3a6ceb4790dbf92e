"""The main job, ``vsb release build NAME``: suite → run → evaluate → score → validate →
freeze → site, on a CPU with no API keys (the five procedural simulators, the six main
conditions, the placebo ``random_context`` and ``predicted_memory``). Unless turned off
(``paraphrase``, ``implicit``), it also runs two suite variants and compares them with the
release (``vsb.release.variants``): the reworded suite under ``independent`` (prompt
sensitivity) and the implicit-effect stories under ``independent`` and ``structured_memory``;
both land in the release's ``sensitivity/``.

Layout under ``OUT/NAME/``::

    cache/      generation cache (kept: a rerun regenerates nothing)
    suite/      the default suite
    run/        what ``vsb run`` wrote (ledger.sqlite, records with latencies and cache hits)
    release/    the hashed release: run/ minus its volatile bookkeeping, plus evaluations/,
                scores/, validation/ and MANIFEST.json (the oracle is kept but not hashed)
    site/       the static site, built from release/ (outside it: it names the root hash)
    suite-paraphrase/, run-paraphrase/   the reworded suite and its run (``paraphrase``)
    suite-implicit/, run-implicit/       the implicit-effect stories and their run (``implicit``)
    stages.json what each stage last consumed and produced (lets a rerun skip stages)

The release holds the run's ``records.jsonl`` without ``cache_hit`` and ``latency_s`` and no
``ledger.sqlite``, so the same inputs give the same root hash whether images were generated or
read from the cache. A stage whose inputs (files and the vsb source of the stage) are
unchanged since the last build, and whose outputs are intact, is skipped.

Each stage but freeze and site runs in a process of its own, forked from this one
(``vsb.release.isolate``; score and validate share one, so the evaluation tables are read
once for both): the build process stays small (~60 MiB), the pool workers of run, evaluate
and the suite variants are forked from a child that holds only its own stage, and what a
stage leaves in memory goes back to the system when it ends. The reference judges (part of
validate) start once evaluate is done, in a process of their own, and answer beside the
suite variants (one after another, a worker each): two processes at a time from there on.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb import __version__
from vsb.errors import InputError, ReleaseError
from vsb.fsio import (
    atomic_write_json,
    canonical_json,
    load_json,
    sha256_file,
    sha256_hex,
)
from vsb.release.assemble import assemble
from vsb.release.config import BuildConfig, OpenStages, Progress, Silent
from vsb.release.isolate import CAN_FORK, StageHost, run_isolated, wait_any
from vsb.release.manifest import Manifest, freeze

if TYPE_CHECKING:
    from vsb.scores.inputs import EvaluationTables

STAGES = (
    "suite", "run", "assemble", "evaluate", "paraphrase", "implicit", "score", "validate",
    "freeze", "site",
)  # fmt: skip
_VariantFn = Callable[[Path, Any, list[str], list[str], BuildConfig, Progress], list[str]]
_PKG = Path(__file__).resolve().parents[1]


@dataclass
class BuildResult:
    """What the main job did."""

    root: Path
    release_dir: Path
    site_dir: Path
    manifest: Manifest | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    images: int = 0
    #: Images of the suite variants' runs (paraphrase, implicit), beside ``images``.
    variant_images: int = 0
    generated: int = 0
    cached: int = 0
    unavailable: dict[str, str] = field(default_factory=dict)
    #: ``N failed: MODEL under CONDITION (n), …`` (``RunResult.failed_line``), None if none did
    failed: str | None = None

    @property
    def index(self) -> Path:
        return self.site_dir / "index.html"


def source_hash(*packages: str) -> str:
    """sha256 over the vsb source files of the given subpackages/modules (stage versions)."""
    parts: list[str] = [__version__]
    for pkg in packages:
        path = _PKG / pkg
        files = sorted(path.rglob("*")) if path.is_dir() else [path.with_suffix(".py")]
        for f in files:
            if f.is_file() and f.suffix in (".py", ".html", ".css", ".js", ".txt", ".json"):
                parts.append(f"{f.relative_to(_PKG).as_posix()}:{sha256_file(f)}")
    return sha256_hex(canonical_json(parts))


def _files_hash(root: Path, rels: Iterable[str]) -> str:
    return sha256_hex(
        canonical_json([[r, sha256_file(root / r) if (root / r).is_file() else None] for r in rels])
    )


class _Stages:
    """``stages.json``: per stage, the fingerprint of its inputs, the files it wrote and the
    fingerprint of those files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = load_json(path)
        except (FileNotFoundError, InputError):  # bookkeeping only: unreadable = no stage fresh
            data = {}
        self.data: dict[str, Any] = data if isinstance(data, dict) else {}

    def fresh(self, stage: str, inputs: str, root: Path) -> bool:
        rec = self.data.get(stage)
        if not isinstance(rec, dict) or rec.get("inputs") != inputs:
            return False
        outputs = rec.get("files") or []
        return bool(outputs) and rec.get("outputs") == _files_hash(root, outputs)

    def record(self, stage: str, inputs: str, root: Path, outputs: list[str]) -> None:
        files = sorted(outputs)
        self.data[stage] = {"inputs": inputs, "files": files, "outputs": _files_hash(root, files)}
        atomic_write_json(self.path, self.data)

    def forget(self, stage: str) -> None:
        if self.data.pop(stage, None) is not None:
            atomic_write_json(self.path, self.data)


def _timed(
    progress: Progress, result: BuildResult, stage: str, fn: Callable[[], bool], total: int | None
) -> None:
    progress.start(stage, total)
    t0 = time.perf_counter()
    ran = fn()
    dt = time.perf_counter() - t0
    result.seconds[stage] = dt
    if not ran:
        result.skipped.append(stage)
    progress.finish(stage, dt, not ran)


def build_release(config: BuildConfig, progress: Progress | None = None) -> BuildResult:
    """Run the whole main job (see the module docstring); returns where everything is."""
    from vsb.release import stages as st

    prog = OpenStages(progress or Silent())
    root = config.root
    root.mkdir(parents=True, exist_ok=True)
    rel_dir, site_dir = root / "release", root / "site"
    result = BuildResult(root=root, release_dir=rel_dir, site_dir=site_dir)
    ledger = _Stages(root / "stages.json")

    # The build process imports no more than it must (no numpy, no simulator, no schema):
    # every stage process is forked from it, and the memory bound counts each one's pages.
    def suite(p: Progress) -> tuple[list[str], list[str], list[str]]:
        if config.suite is not None:  # yours (imported, --per-cell N): copied as it is
            st.copy_suite(config.suite, root / "suite")
        else:  # a story left from another suite is not run
            shutil.rmtree(root / "suite", ignore_errors=True)
            st.write_default_suite(root / "suite", config.seed)
        anchors = list(config.models or st.default_models())
        return (
            [*anchors, *(m for m in config.extra_models if m not in anchors)],
            list(config.conditions or st.default_conditions()),
            anchors,
        )

    chosen: list[tuple[list[str], list[str], list[str]]] = []

    def make_suite() -> bool:
        chosen.append(run_isolated(suite, prog))
        return True

    _timed(prog, result, "suite", make_suite, 1)
    models, conditions, anchors = chosen[0]
    if not models or not conditions:
        raise ReleaseError("nothing to build: no model or no condition")

    def run_all(p: Progress) -> tuple[int, int, int, dict[str, str], str | None]:
        rr = st.run_models(
            root / "suite", root / "run", root / "cache", models, conditions, config, p
        )  # plain values: nothing to import here
        return rr.images, rr.calls, rr.hits, dict(rr.skipped), rr.failed_line()

    def run() -> bool:
        counts = run_isolated(run_all, prog)
        result.images, result.generated, result.cached, skipped, result.failed = counts
        result.unavailable = skipped
        return True

    image_hashes: dict[str, str] = {}

    def do_assemble() -> bool:
        image_hashes.update(run_isolated(lambda p: assemble(root / "run", rel_dir), prog))
        return True

    loaded: list[EvaluationTables] = []

    def tables() -> EvaluationTables:
        """The release's evaluation tables, read at the first stage that needs them (after
        evaluate) and handed to the next in memory."""
        if not loaded:
            loaded.append(st.load_tables(rel_dir))
        return loaded[0]

    judging = [config.evaluators, config.judge, config.base_url, config.judge_batch]

    def fingerprint(inputs: list[str], code: tuple[str, ...]) -> str:
        return sha256_hex(
            canonical_json([_files_hash(rel_dir, inputs), source_hash(*code), judging])
        )

    def fresh(stage: str, inputs: list[str], code: tuple[str, ...]) -> bool:
        """Whether ``stage``'s inputs and code are what it last consumed."""
        return ledger.fresh(stage, fingerprint(inputs, code), rel_dir)

    def cached(
        stage: str, inputs: list[str], code: tuple[str, ...], fn: Callable[[], list[str]]
    ) -> None:
        """Run ``stage`` unless its inputs and code are what it last consumed."""
        fp = fingerprint(inputs, code)

        def step() -> bool:
            if ledger.fresh(stage, fp, rel_dir):
                return False
            ledger.forget(stage)
            ledger.record(stage, fp, rel_dir, fn())
            return True

        _timed(prog, result, stage, step, None)

    def evaluate(p: Progress) -> list[str]:
        return st.evaluate(rel_dir, config.workers, p, config, root)

    def evaluate_in(host: StageHost) -> list[str]:
        if host.sent == "preload":
            host.receive("preload", prog)
        out: list[str] = host.call("evaluate", prog)
        return out

    # evaluate's process is forked before the run and imports what it runs meanwhile (~0.5 s
    # that left a core idle at evaluate's start); it forks its workers after, as before
    with StageHost({"preload": lambda _p: st.preload_evaluate(), "evaluate": evaluate}) as ev:
        if CAN_FORK:
            ev.send("preload")
        _timed(prog, result, "run", run, None)
        _timed(prog, result, "assemble", do_assemble, None)
        cached(
            "evaluate", ["records.jsonl", "manifest.json", "suite/suite.json"],
            ("evaluators", "tables"), lambda: evaluate_in(ev),
        )  # fmt: skip

    from vsb.release import variants as vr

    plain = vr.PlainRows(rel_dir)
    variant_fns: dict[str, _VariantFn] = {
        "paraphrase": vr.paraphrase_sensitivity,
        "implicit": vr.implicit_effects,
    }
    variant_code = source_hash(
        "scores", "evaluators", "adapters", "generator", "run", "conditions", "story",
        "release/variants", "tables",
    )  # fmt: skip
    vinputs: str | None = None
    todo: dict[str, str] = {}  # variant -> fingerprint, for those to run
    # The variants reword the default suite: off with your own suite; run on the simulators
    # (your models have no images of the reworded stories).
    for variant in variant_fns:
        vconds = vr.variant_conditions(variant, conditions)
        records = root / f"run-{variant}" / "records.jsonl"
        on = getattr(config, variant) and config.suite is None
        if not on or not vconds:  # off: never freeze a stale comparison
            vr.remove_variant(rel_dir, variant)
            ledger.forget(variant)
            continue
        if vinputs is None:
            vinputs = _files_hash(rel_dir, [*st.EVALUATION_INPUTS, "suite/suite.json"])
        vfp = sha256_hex(canonical_json([vinputs, variant_code, anchors, vconds]))
        if ledger.fresh(variant, vfp, rel_dir) and records.is_file():
            _timed(prog, result, variant, lambda: False, None)
        else:
            ledger.forget(variant)
            todo[variant] = vfp

    def variant_done(variant: str, files: list[str], seconds: float) -> None:
        ledger.record(variant, todo[variant], rel_dir, files)
        result.seconds[variant] = seconds

    scratch = root / "scratch"

    def preload(_p: Progress) -> None:
        st.preload_analysis()
        tables()

    analysis: dict[str, Callable[..., Any]] = {
        "preload": preload,
        "score": lambda p: st.score(rel_dir, p, config.name, tables()),
        "validate": lambda p: st.validate(rel_dir, p, config.name, None, tables()),
        "references": lambda p, judged: st.write_references(rel_dir, judged, tables()),
    }
    checked = (
        [*st.EVALUATION_INPUTS, "oracle/faults.jsonl"],
        ("validation", "evaluators", "tables", "story/vinabench"),
    )
    # with a judge, score also corrects its pass rates against the oracle (issue 39);
    # records.jsonl: the prompts cut per model (scores.json's prompts) come from it
    scored = (
        [*st.EVALUATION_INPUTS, "records.jsonl",
         *(["oracle/faults.jsonl"] if config.judge else [])],
        ("scores", "tables", *(("validation",) if config.judge else ())),
    )  # fmt: skip

    def judges(stack: contextlib.ExitStack) -> StageHost:
        """The reference judges' process, sent its work (without fork: run when received)."""
        served = config.served_judges
        host = stack.enter_context(StageHost({"judge": lambda p: st.judge_references(
            rel_dir, p, scratch, served, plain=True)}))  # fmt: skip
        host.send("judge")
        return host

    with contextlib.ExitStack() as stack:
        refs: StageHost | None = None
        judged: list[Any] = []
        if CAN_FORK and not fresh("validate", *checked):
            # The reference judges (part of validate; ~16 s on one core, the longest piece
            # of the build) answer from here on in a process of their own, forked from this
            # small one (no tables, no statistics library: their answers are validated in
            # the analysis process), beside the suite variants, run one after another with a
            # worker each. Two processes at a time, as the memory bound allows (score's
            # bootstrap beside the judges' process did not): the variants side by side and
            # then the judges beside score and validate left a core idle for ~10 s.
            refs = judges(stack)
        if len(todo) > 1 and CAN_FORK and refs is None:  # side by side, a worker each
            vr.side_by_side(list(todo), root, plain, anchors, conditions, config, prog,
                            variant_done)  # fmt: skip
        elif refs is not None:  # one after another, a worker each, beside the judges
            one = replace(config, workers=1)
            for variant in todo:
                vr.side_by_side([variant], root, plain, anchors, conditions, one, prog,
                                variant_done)  # fmt: skip
        for variant, vfp in todo.items():
            if variant in result.seconds:
                continue
            vfn = variant_fns[variant]

            def vstep(variant: str = variant, fp: str = vfp, fn: _VariantFn = vfn) -> bool:
                files = run_isolated(
                    lambda p: fn(root, plain, anchors, conditions, config, p), prog
                )
                ledger.record(variant, fp, rel_dir, files)
                return True

            _timed(prog, result, variant, vstep, None)
        for variant in variant_fns:
            records = root / f"run-{variant}" / "records.jsonl"
            if variant in result.seconds and records.is_file():
                with records.open("rb") as f:
                    result.variant_images += sum(1 for _ in f)

        # Score and validate share one process: the tables are read once for both.
        host = stack.enter_context(StageHost(analysis))
        if refs is not None:
            # The judges' answers first: score's peak beside their process passes the memory
            # bound. Meanwhile the analysis process imports what it runs and reads the
            # tables (~1.5 s; ~180 MiB beside the judges' ~200).
            if CAN_FORK and not (fresh("score", *scored) and fresh("validate", *checked)):
                host.send("preload")
            judged.append(refs.receive("judge", prog))
            refs.close()  # its memory goes back now
            if host.sent == "preload":
                host.receive("preload", prog)
        if refs is None and not fresh("validate", *checked):  # no fork: judged here, later
            refs = judges(stack)

        def step(name: str, *args: Any) -> Any:
            """Analysis stage ``name``, drawing the reference judges' progress meanwhile."""
            host.send(name, *args)
            while CAN_FORK:
                busy = {"analysis": host, **({"refs": refs} if refs and not judged else {})}
                key, out = wait_any(busy, prog)
                if key == "analysis":
                    return out
                judged.append(out)
                busy["refs"].close()  # its memory goes back now
            return host.receive(name, prog)

        def validate() -> list[str]:
            files: list[str] = step("validate")
            if refs is not None and not judged:
                judged.append(refs.receive("judge", prog))
                refs.close()
            if refs is not None and judged[0] is not None:
                files += step("references", judged[0])
            shutil.rmtree(scratch / "reference", ignore_errors=True)
            return files

        cached("score", *scored, lambda: step("score"))
        cached("validate", *checked, validate)
    loaded.clear()  # without fork they were read here; no later stage reads them

    def do_freeze() -> bool:
        result.manifest = freeze(rel_dir, config.name, known=image_hashes)
        return True

    _timed(prog, result, "freeze", do_freeze, None)

    def site() -> bool:
        assert result.manifest is not None
        fp = sha256_hex(
            canonical_json([result.manifest.root_hash, source_hash("site", "human", "tables")])
        )
        if ledger.fresh("site", fp, site_dir):
            return False
        ledger.forget("site")
        ledger.record("site", fp, site_dir, st.build_site_dir(rel_dir, site_dir, prog))
        return True

    _timed(prog, result, "site", site, None)
    return result
