"""Continuous signals against the oracle: per-frame AUROC and story-level rank correlations.

An evaluator's own signals are its per-frame pass rate and its per-story memory pass rate
(coherence), both over its checks (``not_applicable`` rows left out; ``unsure`` and
``parse_failure`` count as not passed, as in scoring).
"""

from __future__ import annotations

from collections import defaultdict

from vsb.scores.inputs import RequirementRows, SignalRows
from vsb.validation.matching import Fault, Frame, frames_of
from vsb.validation.metrics import auroc
from vsb.validation.models import SignalAuroc, SignalCorrelation

Unit = tuple[str, str, str]
"""(model, condition, story_id): one story run."""
#: A named signal: (evaluator, signal name) -> frame -> value.
SignalTable = dict[tuple[str, str], dict[Frame, float]]

_NOT_APPLICABLE = "not_applicable"


def pass_rates(rows: RequirementRows) -> dict[Frame, float]:
    """Per frame: the share of its checks that passed (frames with no check are left out)."""
    npass: dict[Frame, int] = defaultdict(int)
    ntot: dict[Frame, int] = defaultdict(int)
    for fr, ok, v in zip(frames_of(rows), rows.passed, rows.verdict, strict=True):
        if v == _NOT_APPLICABLE:
            continue
        ntot[fr] += 1
        npass[fr] += ok
    return {f: npass[f] / ntot[f] for f in ntot}


def signal_table(signals: SignalRows) -> SignalTable:
    """(evaluator, signal) -> frame -> value, keys sorted."""
    sig: SignalTable = defaultdict(dict)
    for m, c, s, k, name, v, ev in zip(
        signals.model, signals.condition, signals.story_id, signals.scene, signals.signal,
        signals.value, signals.evaluator, strict=True,
    ):  # fmt: skip
        sig[(ev, name)][(m, c, s, k)] = v
    return {key: sig[key] for key in sorted(sig)}


def signal_auroc(
    evaluator: str, name: str, values: dict[Frame, float], faulty: set[Frame]
) -> SignalAuroc:
    """AUROC of −signal for 'frame has ≥1 visual fault'."""
    frames = sorted(values)
    labels = [f in faulty for f in frames]
    return SignalAuroc(
        evaluator=evaluator,
        signal=name,
        auroc=auroc([-values[f] for f in frames], labels),
        n_frames=len(frames),
        n_faulty=sum(labels),
    )


def oracle_coherence(rows: RequirementRows, faults: list[Fault]) -> dict[Unit, float]:
    """Per story run: 1 − share of its memory requirements hit by an injected visual fault.

    Each (image, subject, attribute) requirement counts once however many evaluators judged
    it; ``not_applicable`` rows do not count.
    """
    hit = {(f.frame, f.subject, f.attribute) for f in faults if f.visual}
    seen: set[tuple[Frame, str, str]] = set()
    n: dict[Unit, int] = defaultdict(int)
    bad: dict[Unit, int] = defaultdict(int)
    for i, fr in enumerate(frames_of(rows)):
        if rows.source[i] != "memory" or rows.verdict[i] == _NOT_APPLICABLE:
            continue
        key = (fr, rows.subject[i], rows.attribute[i])
        if key in seen:
            continue
        seen.add(key)
        n[fr[:3]] += 1
        bad[fr[:3]] += key in hit
    return {u: 1.0 - bad[u] / n[u] for u in sorted(n)}


def memory_coherence(rows: RequirementRows) -> dict[Unit, float]:
    """Per story run: the pass rate over memory checks (one evaluator's rows)."""
    n: dict[Unit, int] = defaultdict(int)
    ok: dict[Unit, int] = defaultdict(int)
    for i, fr in enumerate(frames_of(rows)):
        if rows.source[i] == "memory" and rows.verdict[i] != _NOT_APPLICABLE:
            n[fr[:3]] += 1
            ok[fr[:3]] += rows.passed[i]
    return {u: ok[u] / n[u] for u in n}


def story_means(values: dict[Frame, float]) -> dict[Unit, float]:
    """Per story run: the mean of a per-frame signal."""
    tot: dict[Unit, float] = defaultdict(float)
    cnt: dict[Unit, int] = defaultdict(int)
    for fr, v in values.items():
        tot[fr[:3]] += v
        cnt[fr[:3]] += 1
    return {u: tot[u] / cnt[u] for u in tot}


def correlation(
    evaluator: str, name: str, means: dict[Unit, float], truth: dict[Unit, float]
) -> SignalCorrelation:
    """Spearman and Kendall between story-level values and oracle coherence."""
    units = sorted(set(means) & set(truth))
    return SignalCorrelation.between(
        [means[u] for u in units], [truth[u] for u in units], evaluator=evaluator, signal=name
    )
