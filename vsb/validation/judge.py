"""``vsb validate-judge``: the rule checker and every continuous signal against the oracle.

Matching (all within one image = model × condition × story × scene):

* a *fault unit* is one visual fault of ``oracle/faults.jsonl``;
* a *detection unit* groups the rule checker's failed checks by (subject, failure label), so
  an image × subject × root-cause label counts once however many knock-on checks it fails;
* a fault and a detection unit match when they concern the same subject and either the
  fault's attribute is one of the unit's checked attributes or the unit's label is the
  fault's taxonomy (a knock-on failure attributed to that root cause); a unit holding a
  knock-on check (failure label ≠ the requirement's own taxonomy) also matches a fault with
  that taxonomy on another subject (a missing character breaking the left-to-right order).

Recall per taxonomy = matched faults / faults (by the fault's taxonomy); precision =
matched detection units / detection units (by the unit's label). Attribute names are
normalised (``hair_color``/``hair_style`` -> ``hair``, an object's ``color`` -> ``present``,
whose check covers the colour).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.errors import InputError, RunError
from vsb.fsio import atomic_write_json, atomic_write_text, iter_jsonl, sha256_file
from vsb.scores.inputs import (
    REQUIREMENTS_FILE,
    RequirementRows,
    SignalRows,
    load_requirements,
    load_signals,
    release_name,
    require_run_dir,
)
from vsb.scores.write import csv_text
from vsb.story.models import TAXONOMY
from vsb.validation.metrics import auroc, rank_correlations
from vsb.validation.models import (
    RULES_COHERENCE,
    RULES_SIGNAL,
    JudgeIdentity,
    JudgeReport,
    SignalAuroc,
    SignalCorrelation,
    TaxonomyMetrics,
)

FAULTS_FILE = "oracle/faults.jsonl"
VALIDATION_DIR = "validation"
_FAULT_KEYS = ("model", "condition", "story_id", "scene", "subject", "attribute", "taxonomy")
_ALIASES = {"hair_color": "hair", "hair_style": "hair", "color": "present"}

Frame = tuple[str, str, str, int]
"""(model, condition, story_id, scene)."""
Unit = tuple[str, str, str]
"""(model, condition, story_id): one story run."""


def norm_attribute(attribute: str) -> str:
    """The requirement attribute an oracle attribute is checked under."""
    return _ALIASES.get(attribute, attribute)


@dataclass(frozen=True)
class Fault:
    """One injected fault (only the fields matching needs)."""

    frame: Frame
    subject: str
    attribute: str
    taxonomy: str
    visual: bool


@dataclass
class Detection:
    """One detection unit: failed checks of one image × subject × failure label."""

    frame: Frame
    subject: str
    label: str
    attributes: set[str] = field(default_factory=set)
    knock_on: bool = False

    def matches(self, f: Fault) -> bool:
        """Whether this unit detects fault ``f`` (same image assumed)."""
        if f.subject == self.subject and (
            f.attribute in self.attributes or f.taxonomy == self.label
        ):
            return True
        return self.knock_on and f.taxonomy == self.label


def load_faults(run_dir: str | Path) -> list[Fault]:
    """Read the sealed ``RUN/oracle/faults.jsonl``; ``RunError`` if absent."""
    path = require_run_dir(run_dir) / FAULTS_FILE
    if not path.is_file():
        raise RunError("run has no oracle (only simulator runs have one)", file=path)
    out: list[Fault] = []
    for n, obj in iter_jsonl(path):
        missing = [k for k in _FAULT_KEYS if k not in obj]
        if missing:
            raise InputError(
                f"missing field(s) {', '.join(missing)}", file=path, location=f"line {n}"
            )
        out.append(
            Fault(
                frame=(obj["model"], obj["condition"], obj["story_id"], int(obj["scene"])),
                subject=str(obj["subject"]),
                attribute=norm_attribute(str(obj["attribute"])),
                taxonomy=str(obj["taxonomy"]),
                visual=bool(obj.get("visual", True)),
            )
        )
    return out


def _frames(rows: RequirementRows) -> list[Frame]:
    return list(zip(rows.model, rows.condition, rows.story_id, rows.scene, strict=True))


def detections(rows: RequirementRows) -> list[Detection]:
    """Detection units of the rule checker's failed checks, in row order (a check whose
    failure label differs from its requirement's taxonomy is a knock-on failure)."""
    units: dict[tuple[Frame, str, str], Detection] = {}
    frames = _frames(rows)
    for i, ok in enumerate(rows.passed):
        if ok:
            continue
        label = rows.failure[i] or rows.taxonomy[i]
        key = (frames[i], rows.subject[i], label)
        u = units.get(key)
        if u is None:
            u = units[key] = Detection(frames[i], rows.subject[i], label)
        u.attributes.add(rows.attribute[i])
        if label != rows.taxonomy[i]:
            u.knock_on = True
    return list(units.values())


def taxonomy_metrics(
    faults: list[Fault], units: list[Detection], frames: set[Frame]
) -> list[TaxonomyMetrics]:
    """Per-taxonomy recall and precision (TAXONOMY order, then unknown labels, then 'all')."""
    by_frame: dict[Frame, list[Detection]] = defaultdict(list)
    for u in units:
        by_frame[u.frame].append(u)
    faults_by_frame: dict[Frame, list[Fault]] = defaultdict(list)
    for f in faults:
        if f.visual and f.frame in frames:
            faults_by_frame[f.frame].append(f)
    n_f: dict[str, int] = defaultdict(int)
    n_hit: dict[str, int] = defaultdict(int)
    for fr, fs in faults_by_frame.items():
        for f in fs:
            n_f[f.taxonomy] += 1
            n_hit[f.taxonomy] += any(u.matches(f) for u in by_frame.get(fr, ()))
    n_d: dict[str, int] = defaultdict(int)
    n_tp: dict[str, int] = defaultdict(int)
    n_agree: dict[str, int] = defaultdict(int)
    for u in units:
        matched = [f for f in faults_by_frame.get(u.frame, ()) if u.matches(f)]
        n_d[u.label] += 1
        n_tp[u.label] += bool(matched)
        n_agree[u.label] += any(f.taxonomy == u.label for f in matched)
    labels = [t for t in TAXONOMY] + sorted((set(n_f) | set(n_d)) - set(TAXONOMY))

    def row(t: str, nf: int, nh: int, nd: int, ntp: int, na: int) -> TaxonomyMetrics:
        return TaxonomyMetrics(
            taxonomy=t,
            n_faults=nf,
            n_detected=nh,
            recall=nh / nf if nf else None,
            n_detections=nd,
            n_true_detections=ntp,
            precision=ntp / nd if nd else None,
            n_label_agree=na,
        )

    out = [row(t, n_f[t], n_hit[t], n_d[t], n_tp[t], n_agree[t]) for t in labels]
    tot = [sum(d.values()) for d in (n_f, n_hit, n_d, n_tp, n_agree)]
    out.append(row("all", *tot))
    return out


def frame_signals(rows: RequirementRows, signals: SignalRows) -> dict[str, dict[Frame, float]]:
    """signal -> frame -> value; the rule checker's per-frame pass rate comes first."""
    npass: dict[Frame, int] = defaultdict(int)
    ntot: dict[Frame, int] = defaultdict(int)
    for fr, ok in zip(_frames(rows), rows.passed, strict=True):
        ntot[fr] += 1
        npass[fr] += ok
    out: dict[str, dict[Frame, float]] = {RULES_SIGNAL: {f: npass[f] / ntot[f] for f in ntot}}
    sig: dict[str, dict[Frame, float]] = defaultdict(dict)
    for m, c, s, k, name, v in zip(
        signals.model, signals.condition, signals.story_id, signals.scene, signals.signal,
        signals.value, strict=True,
    ):  # fmt: skip
        sig[name][(m, c, s, k)] = v
    for name in sorted(sig):
        if name != RULES_SIGNAL:
            out[name] = sig[name]
    return out


def signal_aurocs(
    per_frame: dict[str, dict[Frame, float]], faulty: set[Frame]
) -> list[SignalAuroc]:
    """AUROC of −signal for 'frame has ≥1 visual fault', per signal."""
    out: list[SignalAuroc] = []
    for name, values in per_frame.items():
        frames = sorted(values)
        labels = [f in faulty for f in frames]
        out.append(
            SignalAuroc(
                signal=name,
                auroc=auroc([-values[f] for f in frames], labels),
                n_frames=len(frames),
                n_faulty=sum(labels),
            )
        )
    return out


def oracle_coherence(rows: RequirementRows, faults: list[Fault]) -> dict[Unit, float]:
    """Per story run: 1 − share of its memory requirements hit by an injected visual fault."""
    hit = {(f.frame, f.subject, f.attribute) for f in faults if f.visual}
    n: dict[Unit, int] = defaultdict(int)
    bad: dict[Unit, int] = defaultdict(int)
    for i, fr in enumerate(_frames(rows)):
        if rows.source[i] != "memory":
            continue
        unit = fr[:3]
        n[unit] += 1
        bad[unit] += (fr, rows.subject[i], rows.attribute[i]) in hit
    return {u: 1.0 - bad[u] / n[u] for u in sorted(n)}


def _story_means(values: dict[Frame, float]) -> dict[Unit, float]:
    tot: dict[Unit, float] = defaultdict(float)
    cnt: dict[Unit, int] = defaultdict(int)
    for fr, v in values.items():
        tot[fr[:3]] += v
        cnt[fr[:3]] += 1
    return {u: tot[u] / cnt[u] for u in tot}


def rules_coherence(rows: RequirementRows) -> dict[Unit, float]:
    """Per story run: the rule checker's pass rate over memory requirements."""
    n: dict[Unit, int] = defaultdict(int)
    ok: dict[Unit, int] = defaultdict(int)
    for i, fr in enumerate(_frames(rows)):
        if rows.source[i] == "memory":
            n[fr[:3]] += 1
            ok[fr[:3]] += rows.passed[i]
    return {u: ok[u] / n[u] for u in n}


def signal_correlations(
    per_frame: dict[str, dict[Frame, float]],
    rules_coh: dict[Unit, float],
    truth: dict[Unit, float],
) -> list[SignalCorrelation]:
    """Story-level Spearman and Kendall between each signal's story mean and oracle coherence."""
    story_level = {name: _story_means(v) for name, v in per_frame.items()}
    story_level = {RULES_COHERENCE: rules_coh, **story_level}
    out: list[SignalCorrelation] = []
    for name, means in story_level.items():
        units = sorted(set(means) & set(truth))
        rho, rho_p, tau, tau_p = rank_correlations(
            [means[u] for u in units], [truth[u] for u in units]
        )
        out.append(
            SignalCorrelation(
                signal=name,
                spearman=rho,
                spearman_p=rho_p,
                kendall=tau,
                kendall_p=tau_p,
                n_units=len(units),
            )
        )
    return out


def validate_run(
    run_dir: str | Path,
    progress: Callable[[str], None] | None = None,
    release: str | None = None,
) -> JudgeReport:
    """Validate a run's rule checker and signals against its sealed oracle; writes nothing."""
    note = progress or (lambda _msg: None)
    root = require_run_dir(run_dir)
    rows = load_requirements(root)
    faults = load_faults(root)
    signals = load_signals(root)
    note("taxonomy recall and precision")
    units = detections(rows)
    frames = set(_frames(rows))
    tax = taxonomy_metrics(faults, units, frames)
    by_model = {
        m: taxonomy_metrics(
            [f for f in faults if f.frame[0] == m],
            [u for u in units if u.frame[0] == m],
            {fr for fr in frames if fr[0] == m},
        )
        for m in sorted({fr[0] for fr in frames})
    }
    note("signal AUROC")
    per_frame = frame_signals(rows, signals)
    faulty = {f.frame for f in faults if f.visual}
    aurocs = signal_aurocs(per_frame, faulty)
    note("story-level correlations")
    corr = signal_correlations(per_frame, rules_coherence(rows), oracle_coherence(rows, faults))
    return JudgeReport(
        run=JudgeIdentity(
            run_dir=root.resolve().name,
            release=release if release is not None else release_name(root),
            requirements_sha256=sha256_file(root / REQUIREMENTS_FILE),
            faults_sha256=sha256_file(root / FAULTS_FILE),
        ),
        n_frames=len(frames),
        n_faulty_frames=len(faulty & frames),
        n_faults=len(faults),
        n_visual_faults=sum(f.visual for f in faults),
        taxonomy=tax,
        taxonomy_by_model=by_model,
        auroc=aurocs,
        correlations=corr,
    )


def _rows(models: list[Any]) -> tuple[list[str], list[list[Any]]]:
    header = list(type(models[0]).model_fields) if models else []
    return header, [[getattr(m, h) for h in header] for m in models]


def write_judge(run_dir: str | Path, report: JudgeReport) -> list[Path]:
    """Write ``judge.json`` and ``taxonomy.csv``, ``auroc.csv``, ``correlations.csv``,
    ``taxonomy_by_model.csv``."""
    out = Path(run_dir) / VALIDATION_DIR
    paths = [out / "judge.json"]
    atomic_write_json(paths[0], report.model_dump(mode="json"))
    for name, items, model in (
        ("taxonomy.csv", report.taxonomy, TaxonomyMetrics),
        ("auroc.csv", report.auroc, SignalAuroc),
        ("correlations.csv", report.correlations, SignalCorrelation),
    ):
        header = list(model.model_fields)
        atomic_write_text(
            out / name, csv_text(header, ([getattr(x, h) for h in header] for x in items))
        )
        paths.append(out / name)
    per_model = [
        [m, *(getattr(t, h) for h in TaxonomyMetrics.model_fields)]
        for m, rows in report.taxonomy_by_model.items()
        for t in rows
    ]
    atomic_write_text(
        out / "taxonomy_by_model.csv",
        csv_text(["model", *TaxonomyMetrics.model_fields], per_model),
    )
    paths.append(out / "taxonomy_by_model.csv")
    return paths
