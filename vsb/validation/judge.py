"""``vsb validate-judge``: every evaluator and continuous signal against the sealed oracle.

One section per requirement evaluator (the rows' ``evaluator``: ``rules``, ``vlm``…; the
rule checker first, then by name), each with:

* per-taxonomy recall and precision, overall and per model, **strict** (same image, subject
  and label) with Wilson 95% intervals, and the lenient **root-cause** view beside it
  (``vsb.validation.matching`` defines both);
* its verdict counts: the UNSURE and parse-failure rates (over its checks) and how many
  rows were ``not_applicable``;
* the AUROC of its per-frame pass rate for "frame has ≥1 injected visual fault" (the
  evaluator's own ``*_pass_rate`` signal rows when it wrote some, e.g. ``vlm_pass_rate``;
  else computed from its rows, e.g. ``rules_pass_rate``);
* Spearman and Kendall between its story-level memory pass rate and oracle coherence.

Every other signal (``pairwise``, ``clip``…) gets its AUROC and correlations, grouped by
its evaluator.

Verdicts: ``not_applicable`` rows are excluded from every figure but their count.
``unsure`` and ``parse_failure`` rows are failed checks, i.e. detections: scoring counts
them as not passed, so a judge unsure about a true fact makes a false violation (it lowers
precision) and one unsure about a fault still flags it (recall). An ``unsure`` row carries
its failure label (its own taxonomy, or the knock-on root cause the evaluator gave it, e.g.
``character_missing`` for a question about someone the judge said is not there); a
``parse_failure`` row its own taxonomy. Their rates are reported apart so that an
evaluator that hedges is visible as such, not only through lower precision.

Frames of models without an oracle (stored images, providers: ``models_with_oracle``) are
left out of every figure and counted (``n_frames_without_oracle``): their faults are
unknown, not absent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from vsb.errors import RunError, select_present
from vsb.evaluators.vlm.plan import EVALUATOR_NAME as VLM
from vsb.fsio import sha256_file
from vsb.scores.inputs import (
    EvaluationTables,
    RequirementRows,
    load_tables,
    release_name,
    require_run_dir,
)
from vsb.tables import requirements_file
from vsb.validation.hidden import hidden_checks
from vsb.validation.matching import (
    FAULTS_FILE,
    Fault,
    Frame,
    Hidden,
    detections,
    frames_of,
    load_faults,
    taxonomy_metrics,
)
from vsb.validation.models import (
    RULES_EVALUATOR,
    EvaluatorValidation,
    JudgeIdentity,
    JudgeReport,
    SignalAuroc,
    SignalCorrelation,
    VerdictCounts,
    coherence_signal,
    pass_rate_signal,
)
from vsb.validation.signals import (
    SignalTable,
    correlation,
    memory_coherence,
    oracle_coherence,
    pass_rates,
    signal_auroc,
    signal_table,
    story_means,
)
from vsb.validation.truth import PAIR_ATTRIBUTES, PairTruth, oracle_agreement
from vsb.validation.write import VALIDATION_DIR, write_judge

__all__ = ["VALIDATION_DIR", "present_evaluators", "validate_run", "write_judge"]

_NOT_APPLICABLE = "not_applicable"


def _ordered(names: set[str]) -> list[str]:
    return sorted(names, key=lambda e: (e != RULES_EVALUATOR, e))


def present_evaluators(rows: RequirementRows, signals: SignalTable) -> list[str]:
    """Requirement evaluators (rules first, then by name), then signal-only evaluators."""
    req = _ordered(set(rows.evaluator))
    return req + sorted({ev for ev, _ in signals} - set(req))


def _select(present: list[str], wanted: Sequence[str] | None) -> set[str]:
    return select_present(
        wanted,
        present,
        lambda unknown, hint: (
            f"unknown evaluator {unknown[0]!r}{hint}; present in this run: {', '.join(present)}"
        ),
    )


def verdict_counts(rows: RequirementRows) -> VerdictCounts:
    """How ``rows`` split by verdict; rates over the rows that are not not_applicable."""
    return _counted(Counter(rows.verdict))


def _counted(counts: Counter[str]) -> VerdictCounts:
    n = {v: 0 for v in ("passed", "failed", "unsure", "parse_failure", _NOT_APPLICABLE)}
    n.update(counts)
    total = counts.total()
    checks = total - n[_NOT_APPLICABLE]
    return VerdictCounts(
        n_rows=total,
        n_checks=checks,
        n_passed=n["passed"],
        n_failed=n["failed"],
        n_unsure=n["unsure"],
        n_parse_failure=n["parse_failure"],
        n_not_applicable=n[_NOT_APPLICABLE],
        unsure_rate=n["unsure"] / checks if checks else None,
        parse_failure_rate=n["parse_failure"] / checks if checks else None,
    )


def _pass_rate(
    name: str, rows: RequirementRows, table: SignalTable
) -> tuple[tuple[str, str], dict[Frame, float]]:
    """The evaluator's pass-rate signal: its own ``*_pass_rate`` rows, else from ``rows``."""
    own = [k for k in table if k[0] == name and k[1].endswith("_pass_rate")]
    if own:
        key = (name, pass_rate_signal(name))
        key = key if key in own else own[0]
        return key, table[key]
    return (name, pass_rate_signal(name)), pass_rates(rows)


def _section(
    name: str,
    rows: RequirementRows,
    faults: list[Fault],
    table: SignalTable,
    truth: dict[tuple[str, str, str], float],
    pairs: PairTruth | None = None,
    hidden: Hidden | None = None,
) -> tuple[EvaluatorValidation, dict[Frame, float]]:
    """One evaluator's section and the per-frame values of its pass-rate signal (``hidden``:
    its checks no question can see, ``vsb.validation.hidden``)."""
    applicable = rows.view([v != _NOT_APPLICABLE for v in rows.verdict])
    units = detections(applicable)
    frames = set(frames_of(applicable))
    faulty = {f.frame for f in faults if f.visual}
    models = sorted(set(rows.model))
    by_verdict = Counter(zip(rows.model, rows.verdict, strict=True))
    by_model = {
        m: taxonomy_metrics(
            [f for f in faults if f.frame[0] == m],
            [u for u in units if u.frame[0] == m],
            {fr for fr in frames if fr[0] == m},
            hidden,
        )
        for m in models
    }
    (ev, signal), values = _pass_rate(name, applicable, table)
    judges = sorted({j for j in rows.judge_model if j})
    section = EvaluatorValidation(
        evaluator=name,
        judge_model=", ".join(judges),
        n_frames=len(frames),
        n_faulty_frames=len(frames & faulty),
        verdicts=verdict_counts(rows),
        verdicts_by_model={
            m: _counted(Counter({v: n for (x, v), n in by_verdict.items() if x == m}))
            for m in models
        },
        taxonomy=taxonomy_metrics(faults, units, frames, hidden),
        taxonomy_by_model=by_model,
        pass_rate=signal_auroc(ev, signal, values, faulty),
        coherence=correlation(name, coherence_signal(name), memory_coherence(applicable), truth),
        agreement=oracle_agreement(applicable, faults, pairs),
    )
    return section, values


def _pair_truth(root: Path) -> PairTruth:
    """What every frame rendered (the run's suite with the oracle laid over it)."""
    from vsb.fsio import iter_jsonl
    from vsb.story.io import load_suite

    return PairTruth(load_suite(root / "suite"), (f for _, f in iter_jsonl(root / FAULTS_FILE)))


def models_with_oracle(root: Path, models: set[str]) -> set[str]:
    """The models whose frames the oracle covers: the run manifest's ``oracle_models``; for
    runs written before it, every model but a known adapter that writes no oracle (stored
    images, providers). Other frames' faults are unknown, not absent."""
    import functools
    import json

    manifest = root / "manifest.json"
    try:
        listed = json.loads(manifest.read_text(encoding="utf-8")).get("oracle_models")
    except (OSError, ValueError, AttributeError):
        listed = None
    if isinstance(listed, list):
        return models & {str(m) for m in listed}
    from vsb.adapters.registry import PATTERNS, get_factory, model_names

    known = set(model_names())
    out = set()
    for m in models:
        if m not in known:
            if m.partition(":")[0] not in PATTERNS:
                out.add(m)  # not a known adapter (a plug-in simulator, a synthetic run)
            continue
        factory = get_factory(m)
        cls = factory.func if isinstance(factory, functools.partial) else factory
        oracle = getattr(cls, "oracle", None)
        if bool(getattr(cls, "privileged", False) if oracle is None else oracle):
            out.add(m)
    return out


def validate_run(
    run_dir: str | Path,
    progress: Callable[[str], None] | None = None,
    release: str | None = None,
    evaluators: Sequence[str] | None = None,
    tables: EvaluationTables | None = None,
) -> JudgeReport:
    """Validate a run's evaluators and signals against its sealed oracle; writes nothing.

    ``evaluators`` keeps only those (requirement or signal evaluators); an unknown name
    raises ``InputError`` listing the ones present. ``tables``: the run's evaluation tables
    already loaded (``vsb release build`` loads them once for every stage), else read here.
    """
    note = progress or (lambda _msg: None)
    root = require_run_dir(run_dir)
    tables = tables if tables is not None else load_tables(root)
    rows = tables.requirements
    faults = load_faults(root)
    table = signal_table(tables.signals)
    # Frames of models without an oracle are unknown, not fault-free: left out, counted.
    with_oracle = models_with_oracle(root, set(rows.model))
    blind = sorted(set(rows.model) - with_oracle)
    n_blind = len({fr for fr in frames_of(rows) if fr[0] in blind}) if blind else 0
    if blind:
        note(f"left out {n_blind} frames of models without an oracle: {', '.join(blind)}")
        rows = rows.subset([m in with_oracle for m in rows.model])
        table = {
            k: {f: v for f, v in vals.items() if f[0] in with_oracle} for k, vals in table.items()
        }
        if not len(rows):
            raise RunError(
                f"no frame has an oracle (models {', '.join(blind)} have none): nothing to "
                "validate against",
                file=root / FAULTS_FILE,
            )
    present = present_evaluators(rows, table)
    keep = _select(present, evaluators)
    faulty = {f.frame for f in faults if f.visual}
    verdicts = rows.verdict
    all_frames = {
        fr for fr, v in zip(frames_of(rows), verdicts, strict=True) if v != _NOT_APPLICABLE
    }
    chosen = rows.view([e in keep for e in rows.evaluator])
    truth = oracle_coherence(chosen, faults)
    pairs = _pair_truth(root) if any(a in PAIR_ATTRIBUTES for a in chosen.attribute) else None

    sections: list[EvaluatorValidation] = []
    values: dict[tuple[str, str], dict[Frame, float]] = {}
    # the judge's questions locate people by cues: what none of them can see in what was
    # drawn is a knock-on of the faults that hid it (vsb.validation.hidden)
    hidden = hidden_checks(root) if VLM in keep and (root / "suite").is_dir() else None
    for name in _ordered(keep & set(rows.evaluator)):
        note(f"{name}: recall and precision")
        sec, vals = _section(
            name, rows.view([e == name for e in rows.evaluator]), faults, table, truth, pairs,
            hidden if name == VLM else None,
        )  # fmt: skip
        sections.append(sec)
        values[(sec.pass_rate.evaluator, sec.pass_rate.signal)] = vals
    note("signal AUROC and story-level correlations")
    aurocs: list[SignalAuroc] = [s.pass_rate for s in sections]
    for key, vals in table.items():
        if key[0] in keep and key not in values:
            values[key] = vals
            aurocs.append(signal_auroc(key[0], key[1], vals, faulty))
    corr: list[SignalCorrelation] = [s.coherence for s in sections]
    corr += [
        correlation(a.evaluator, a.signal, story_means(values[(a.evaluator, a.signal)]), truth)
        for a in aurocs
    ]
    return JudgeReport(
        run=JudgeIdentity(
            run_dir=root.resolve().name,
            release=release if release is not None else release_name(root),
            requirements_sha256=sha256_file(requirements_file(root)),
            faults_sha256=sha256_file(root / FAULTS_FILE),
        ),
        n_frames=len(all_frames),
        n_faulty_frames=len(faulty & all_frames),
        n_faults=len(faults),
        n_visual_faults=sum(f.visual for f in faults),
        n_frames_without_oracle=n_blind,
        models_without_oracle=blind,
        evaluators=sections,
        auroc=aurocs,
        correlations=corr,
    )
