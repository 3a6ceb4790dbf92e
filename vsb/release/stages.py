"""The main job's stages as calls into the layers below (suite, runner, evaluators, scores,
validation, site); ``vsb.release.build`` orders them, times them and skips fresh ones."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vsb.release.config import BuildConfig, Progress

if TYPE_CHECKING:
    from vsb.run.runner import RunResult
    from vsb.scores.inputs import EvaluationTables
    from vsb.validation.reference import JudgedSlices

#: What scoring and validation read from a release (``vsb.tables``: the tables an evaluation
#: writes; a release built before them held ``.jsonl`` files, which only make the stages stale).
EVALUATION_INPUTS: tuple[str, ...] = (
    "evaluations/requirements.parquet",
    "evaluations/signals.parquet",
)


def _rel(root: Path, paths: list[Path]) -> list[str]:
    return [Path(p).resolve().relative_to(root.resolve()).as_posix() for p in paths]


def _files_under(root: Path, folder: str) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / folder).rglob("*") if p.is_file())


def default_models() -> list[str]:
    """The five procedural simulators and the two readers that see only the prompt (the
    information ceiling of each condition's text, whole and through a 77-token encoder); no
    API key needed."""
    from vsb.adapters.reader import READERS
    from vsb.adapters.simulators import SIMULATORS

    return [*SIMULATORS, *READERS]


def default_conditions() -> list[str]:
    """The six main conditions, the placebo and the predicted memory (the leaderboard and the
    analysis page show structured_memory − random_context and structured_memory −
    predicted_memory beside the memory gain)."""
    from vsb.conditions import PLACEBO_CONDITION, PREDICTED_CONDITION, condition_names

    return [*condition_names(), PLACEBO_CONDITION, PREDICTED_CONDITION]


def write_default_suite(out: Path, seed: int) -> bool:
    """Generate the default suite into ``out`` (deterministic: same seed, same bytes)."""
    from vsb.generator.generate import generate_suite, write_suite

    write_suite(generate_suite(seed), out, seed=seed)
    return True


def copy_suite(source: Path, out: Path) -> bool:
    """Copy the suite at ``source`` (checked as ``vsb run`` reads it) into ``out``."""
    from vsb.run.runner import _copy_suite
    from vsb.story.io import load_suite

    load_suite(source)  # the first problem, one line, before anything is written
    _copy_suite(source, out)
    return True


def run_models(
    suite: Path,
    run_dir: Path,
    cache: Path,
    models: list[str],
    conditions: list[str],
    config: BuildConfig,
    progress: Progress,
) -> RunResult:
    """``vsb run`` over every model and condition, through the generation cache."""
    from vsb.adapters.registry import get_adapter
    from vsb.run.runner import RunConfig, run

    cfg = RunConfig(
        suite_dir=suite,
        models=models,
        conditions=conditions,
        out=run_dir,
        seed=config.seed,
        workers=config.workers,
        cache_dir=cache,
        add=False,  # the release holds the models it is built with, no other
    )
    given = {m: get_adapter(m, root=config.samples, layout=config.samples_layout)
             for m in models if m.startswith("stored:")}  # fmt: skip
    given.update({m: get_adapter(m, root=config.samples)
                  for m in models if m.startswith("vinabench:")})  # fmt: skip
    return run(cfg, lambda done, total: progress.advance("run", done, total), adapters=given)


def evaluate(
    release_dir: Path, workers: int, progress: Progress, config: BuildConfig, root: Path
) -> list[str]:
    """The evaluators over the release's images (writes evaluations/); with a judge, its
    answers are cached in the build's cache and its calls go to the run's ledger."""
    import shutil

    from vsb.evaluators.evaluate import evaluate_run
    from vsb.evaluators.vlm.store import JudgePricing
    from vsb.evaluators.vlm.transports import build_transport
    from vsb.evaluators.vlm_judge import JudgeOptions

    judge, http = None, None
    if config.judge:
        from vsb.evaluators.vlm.transports import default_client

        http = None if config.timeout_s is None else default_client(config.timeout_s)
        judge = build_transport(config.judge, base_url=config.base_url, client=http)
    options = JudgeOptions(
        batch=config.judge_batch,
        concurrency=config.judge_concurrency,
        budget_usd=config.budget_usd,
        cache_dir=root / "cache",
        pricing=JudgePricing.load(),
    )
    shutil.rmtree(release_dir / "evaluations", ignore_errors=True)
    try:
        evaluate_run(
            release_dir,
            workers=workers,
            progress=lambda done, total: progress.advance("evaluate", done, total),
            evaluators=config.evaluators,
            judge=judge,
            judge_options=options,
            ledger_path=root / "run" / "ledger.sqlite",
            extraction_cache=root / "cache",
        )
    finally:
        client = getattr(judge, "client", None) or http
        if client is not None:
            client.close()  # an HTTP judge's keep-alive connections
    return _files_under(release_dir, "evaluations")


def preload_evaluate() -> None:
    """Import what evaluate imports before it forks its workers (no more: a worker's resident
    set counts every page it shares): the main job does it in evaluate's process while the
    run stage generates."""
    import vsb.evaluators.evaluate
    import vsb.evaluators.vlm.store
    import vsb.evaluators.vlm.transports
    import vsb.evaluators.vlm_judge  # noqa: F401
    from vsb.evaluators.registry import DEFAULT_EVALUATORS, get_evaluator

    for name in DEFAULT_EVALUATORS:
        get_evaluator(name)


def preload_analysis() -> None:
    """Import what score and validate run (statistics libraries included): the main job does
    it in the analysis process while the reference judges finish beside it."""
    import scipy.stats  # noqa: F401  (validate's rank correlations)

    import vsb.scores.compute
    import vsb.scores.peer.vinabench
    import vsb.scores.write
    import vsb.validation.correct.apply
    import vsb.validation.judge
    import vsb.validation.reference
    import vsb.validation.vina.validity  # noqa: F401


def load_tables(release_dir: Path) -> EvaluationTables:
    """The release's evaluation tables, read once for the stages that use them."""
    from vsb.scores.inputs import load_tables as load

    return load(release_dir)


def score(
    release_dir: Path,
    progress: Progress,
    release: str | None = None,
    tables: EvaluationTables | None = None,
) -> list[str]:
    """Scores, CIs, comparisons and rank stability (writes scores/); ``tables``: the
    release's evaluation tables already loaded (else read here). A judged evaluator's rows
    are corrected for the judge's error too (``vsb.validation.correct``; scores/judge_error.*
    and scores/corrected_scores.csv): a release without a judge is unchanged."""
    from vsb.scores.compute import Resampling, load_scoring_input, score_input
    from vsb.scores.write import SCORES_DIR, write_scores
    from vsb.validation.correct.apply import correct_report, remove_correction, write_correction

    note = lambda msg: progress.note("score", msg)  # noqa: E731
    inp = load_scoring_input(release_dir, release, tables)
    report = score_input(inp, progress=note)
    report, errors = correct_report(inp, report, Resampling(), progress=note)
    paths = write_scores(release_dir, report)
    peer = ("vinabench", "vinabench_ref")  # VinaBench's table: its VQA metrics, FID, CLIP-I
    if inp.signals is not None and any(e in inp.signals.evaluator for e in peer):
        from vsb.scores.peer.vinabench import write_vinabench

        paths += write_vinabench(release_dir / SCORES_DIR, inp.signals)
    if errors is not None:
        paths += write_correction(release_dir / SCORES_DIR, report, errors)
    else:  # an earlier build's correction must not be frozen with these scores
        remove_correction(release_dir / SCORES_DIR)
    return _rel(release_dir, paths)


def validate(
    release_dir: Path,
    progress: Progress,
    release: str | None = None,
    work: Path | None = None,
    tables: EvaluationTables | None = None,
    served: bool = False,
) -> list[str]:
    """The rule checker and signals against the sealed oracle (writes validation/); with
    ``work`` (a scratch folder), also the reference judges on the drifting simulators under
    independent when the release has those frames (reference_judges.json), asked
    in process (``served``: over HTTP on 127.0.0.1). ``tables``: as for ``score``."""
    from vsb.validation.judge import validate_run, write_judge
    from vsb.validation.vina.validity import VALIDITY_CSV, VALIDITY_JSON

    def note(msg: str) -> None:
        progress.note("validate", msg)

    for stale in (VALIDITY_JSON, VALIDITY_CSV):  # written again with the reference judges
        (release_dir / stale).unlink(missing_ok=True)

    report = validate_run(release_dir, release=release, progress=note, tables=tables)
    paths = _rel(release_dir, write_judge(release_dir, report))
    if work is not None:
        paths += reference_judges(release_dir, progress, work, served)
    return paths


def reference_judges(
    release_dir: Path, progress: Progress, work: Path, served: bool = False
) -> list[str]:
    """The reference judges on the drifting simulators under independent, when the
    release has those frames (writes validation/reference_judges.json; ``work``: a scratch
    folder): ``judge_references``, then ``write_references``. Part of the validate stage."""
    import shutil

    try:
        judged = judge_references(release_dir, progress, work, served)
        return [] if judged is None else write_references(release_dir, judged)
    finally:
        shutil.rmtree(work / "reference", ignore_errors=True)


def judge_references(
    release_dir: Path,
    progress: Progress,
    work: Path,
    served: bool = False,
    *,
    plain: bool = False,
) -> JudgedSlices | dict[str, Any] | None:
    """The reference judges' answers (``vsb.validation.reference.judge_slices``, under
    ``work/reference``) and VinaBench's questions about the simulators under
    structured_memory asked of the literal judge (``vsb.validation.vina.ask``); None when the
    release has neither's frames. Imports no statistics: the main job runs it in a small
    process of its own, beside score. ``plain``: as a dict (the build process then imports
    nothing of vsb.validation to read it)."""
    from vsb.fsio import iter_jsonl
    from vsb.validation.reference import DEFAULT_CONDITION, DEFAULT_MODELS, judge_slices
    from vsb.validation.vina.ask import ask_vinabench

    def note(msg: str) -> None:
        progress.note("validate", msg)

    has_slice = any(
        r["model"] in DEFAULT_MODELS and r["condition"] == DEFAULT_CONDITION
        for _, r in iter_jsonl(release_dir / "records.jsonl")
    )
    judged = judge_slices(release_dir, work / "reference", progress=note, served=served) \
        if has_slice else None  # fmt: skip
    note("VinaBench's questions, literal judge")
    vina = ask_vinabench(release_dir, served=served)
    if judged is None and not vina:
        return None
    if not plain and not vina:
        return judged
    out: dict[str, Any] = {VINABENCH: vina}
    if judged is not None:
        out.update(judged.model_dump(mode="json") if plain else {SLICES: judged})
    return out


#: Keys of ``judge_references``'s dict beside the judged slices' own fields.
VINABENCH, SLICES = "vinabench_answers", "judged_slices"


def write_references(
    release_dir: Path,
    judged: JudgedSlices | dict[str, Any],
    tables: EvaluationTables | None = None,
) -> list[str]:
    """Validate the judged slices (``judge_references``'s, either form) and write
    validation/reference_judges.json; then, from VinaBench's answers and the oracle, which
    faults its metrics catch (validation/vinabench_validity.json and .csv: the rule
    checker's memory coherence from ``tables``, read here when not given)."""
    from vsb.validation.reference import JudgedSlices, reference_report, write_reference

    vina: list[dict[str, Any]] = []
    part: JudgedSlices | dict[str, Any] | None = judged
    if isinstance(judged, dict) and VINABENCH in judged:
        vina = judged[VINABENCH]
        rest = {k: v for k, v in judged.items() if k != VINABENCH}
        part = rest.get(SLICES) or rest or None
    paths: list[Path] = []
    if part is not None:
        slices = part if isinstance(part, JudgedSlices) else JudgedSlices.model_validate(part)
        paths.append(write_reference(release_dir, reference_report(slices)))
    if vina and (release_dir / "oracle" / "faults.jsonl").is_file():
        paths += vinabench_validity(release_dir, vina, tables)
    return _rel(release_dir, paths)


def vinabench_validity(
    release_dir: Path, answers: list[dict[str, Any]], tables: EvaluationTables | None
) -> list[Path]:
    """VinaBench's metrics against the oracle (``vsb.validation.vina.validity``)."""
    from vsb.validation.matching import load_faults
    from vsb.validation.vina.validity import rules_coherence, validity, write_validity

    if tables is None:
        tables = load_tables(release_dir)
    models = sorted({a["model"] for a in answers})
    coherence = rules_coherence(tables.requirements, models)
    return write_validity(release_dir, validity(answers, load_faults(release_dir), coherence))


def build_site_dir(release_dir: Path, site_dir: Path, progress: Progress) -> list[str]:
    """The static site of the frozen release."""
    from vsb.site.build import build_site

    result = build_site(release_dir, site_dir)
    progress.note("site", f"{result.pages} pages, {result.images} images")
    return _site_outputs(site_dir)


def _site_outputs(site_dir: Path) -> list[str]:
    """The pages and assets of a built site (images are checked through the release hash)."""
    out: list[str] = []
    for folder, subdirs, files in os.walk(site_dir):
        rel = Path(folder).relative_to(site_dir)
        if rel == Path("."):
            subdirs[:] = [d for d in subdirs if d != "images"]  # not walked: ~8,000 files
        out += [(rel / f).as_posix() for f in files if os.path.isfile(os.path.join(folder, f))]
    return sorted(out)
