"""The evaluator axis of the scores: which evaluators a run holds, choosing among them,
verdict counts, and the models an evaluator could not judge at all.

An evaluator's scores come from its own rows only (``RequirementRows.evaluator``). A judge
evaluator whose rows name several judge models (two VLMs under the same evaluator name) is
split into one scored evaluator per judge model, ``NAME:JUDGE_MODEL``, so two judges are
never pooled. ``--evaluator NAME`` selects an evaluator by that label or by its base name
(every judge model of it).
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from vsb.errors import InputError
from vsb.scores.inputs import DEFAULT_EVALUATOR, NOT_APPLICABLE, RequirementRows
from vsb.scores.models import NotApplicable
from vsb.tables.reasons import image_name, images_reason

#: The failure label of every check of an image that was not generated (vsb.evaluators.failed).
GENERATION_FAILED = "generation_failed"
#: The failure label of every check of an image that cannot be read (issue #23): its image
#: counts against coverage like a failed generation.
UNREADABLE = "unreadable"

#: The evaluator that judges images which are not renders (what a refusal points to).
JUDGE_EVALUATOR = "vlm"
#: Reason given when not_applicable rows do not say why.
DEFAULT_REASON = "every check was not_applicable"
#: Share of an evaluator's judged checks (not_applicable left out) above which its verdicts
#: are mostly unparsable answers: it is refused rather than ranked (everyone at 0).
MOSTLY_UNPARSABLE = 0.5


def evaluator_labels(rows: RequirementRows) -> list[str]:
    """Per row: its scored evaluator (the evaluator, split by judge model where it has
    several)."""
    models: dict[str, set[str]] = defaultdict(set)
    for e, j in zip(rows.evaluator, rows.judge_model, strict=True):
        models[e].add(j)
    split = {e for e, js in models.items() if len(js) > 1}
    pairs = zip(rows.evaluator, rows.judge_model, strict=True)
    return [f"{e}:{j}" if e in split else e for e, j in pairs]


def ordered_evaluators(labels: Sequence[str]) -> list[str]:
    """The labels present: the rule checker first, then in order of first appearance."""
    seen = list(dict.fromkeys(labels))
    return sorted(seen, key=lambda e: e.split(":", 1)[0] != DEFAULT_EVALUATOR)


def _names(spec: str | Sequence[str]) -> list[str]:
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    return [n.strip() for n in names if n.strip()]


def is_all(spec: str | Sequence[str] | None) -> bool:
    """Whether a selection means every evaluator (None, empty, or "all" in any case)."""
    if spec is None:
        return True
    names = _names(spec)
    return not names or [n.lower() for n in names] == ["all"]


def select_evaluators(present: Sequence[str], spec: str | Sequence[str] | None) -> list[str]:
    """The evaluators ``spec`` names (comma-separated or a list; see ``is_all``); a name
    selects the evaluator of that label or every judge model of that base name.
    ``InputError`` listing the evaluators present for a name that matches none."""
    if is_all(spec):
        return list(present)
    assert spec is not None
    names = _names(spec)
    out: list[str] = []
    for name in names:
        hits = [p for p in present if p == name or p.split(":", 1)[0] == name]
        if not hits:
            bases = list(dict.fromkeys([*present, *(p.split(":", 1)[0] for p in present)]))
            close = difflib.get_close_matches(name, bases, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(
                f"no rows of evaluator {name!r} in this run{hint}; evaluators present: "
                f"{', '.join(present)}"
            )
        out += [h for h in hits if h not in out]
    return out


@dataclass(frozen=True)
class VerdictCounts:
    """Per (model, condition): checks answered unsure, unparsable, and not applicable; and
    the images with rows, and those among them that failed to generate (issue #11)."""

    unsure: Counter[tuple[str, str]]
    parse_failure: Counter[tuple[str, str]]
    not_applicable: Counter[tuple[str, str]]
    images: Counter[tuple[str, str]] = field(default_factory=Counter)
    failed_images: Counter[tuple[str, str]] = field(default_factory=Counter)

    def coverage(self, key: tuple[str, str]) -> float | None:
        """Share of the cell's images that were generated and readable (None: no image)."""
        n = self.images[key]
        return None if n == 0 else (n - self.failed_images[key]) / n


def verdict_counts(rows: RequirementRows) -> VerdictCounts:
    """Count the verdicts that are not a plain pass or fail, per (model, condition)."""
    counts: dict[str, Counter[tuple[str, str]]] = {
        v: Counter() for v in ("unsure", "parse_failure", NOT_APPLICABLE)
    }
    cells = list(zip(rows.model, rows.condition, strict=True))
    for (v, cell), n in Counter(zip(rows.verdict, cells, strict=True)).items():
        if v in counts:
            counts[v][cell] += n
    frames = list(zip(cells, rows.story_id, rows.scene, strict=True))
    images = dict.fromkeys(frames)  # one per image, in order of first appearance
    bad = (GENERATION_FAILED, UNREADABLE)
    failed = dict.fromkeys(fr for fr, f in zip(frames, rows.failure, strict=True) if f in bad)
    return VerdictCounts(
        counts["unsure"], counts["parse_failure"], counts[NOT_APPLICABLE],
        Counter(mc for mc, _s, _k in images), Counter(mc for mc, _s, _k in failed),
    )  # fmt: skip


def not_applicable_models(
    rows: RequirementRows,
    evaluator: str,
    model_order: Sequence[str],
    applied: dict[str, set[str]],
) -> list[NotApplicable]:
    """The models every row of which (under this one evaluator) is not_applicable.

    ``applied`` maps each model to the evaluators that judged at least one of its checks
    (named in ``instead``).
    """
    total: Counter[str] = Counter(rows.model)
    na = Counter(m for m, v in zip(rows.model, rows.verdict, strict=True) if v == NOT_APPLICABLE)
    out: list[NotApplicable] = []
    for model in sorted(total, key=lambda m: (m not in model_order, _index(model_order, m), m)):
        if na[model] != total[model]:
            continue
        idx = [i for i, m in enumerate(rows.model) if m == model]
        images = {(rows.condition[i], rows.story_id[i], rows.scene[i]) for i in idx}
        reasons: dict[str, str] = {}  # one per image, as vsb evaluate's warning counts them
        for i in idx:
            if rows.reason[i]:
                name = image_name(rows.condition[i], rows.story_id[i], rows.scene[i])
                reasons.setdefault(name, rows.reason[i])
        out.append(
            NotApplicable(
                evaluator=evaluator,
                model=model,
                conditions=list(dict.fromkeys(rows.condition[i] for i in idx)),
                n_images=len(images),
                reason=images_reason(reasons) or DEFAULT_REASON,
                instead=sorted(applied.get(model, set()) - {evaluator}),
            )
        )
    return out


def unreadable_cells(
    rows: RequirementRows,
    evaluator: str,
    model_order: Sequence[str],
    applied: dict[str, set[str]],
) -> tuple[list[bool], list[NotApplicable]]:
    """The (model, condition) cells with no readable image (every judged row failed to
    generate or could not be read), which the evaluator cannot rank: its rows to keep (every
    other cell's) and one ``NotApplicable`` per such cell (issue 45, item 8: a model with no
    sample under a condition is not ranked there, never ranked last at 0.000)."""
    bad = (GENERATION_FAILED, UNREADABLE)
    cells = list(zip(rows.model, rows.condition, strict=True))
    judged: Counter[tuple[str, str]] = Counter()
    failed: Counter[tuple[str, str]] = Counter()
    for cell, v, f in zip(cells, rows.verdict, rows.failure, strict=True):
        if v != NOT_APPLICABLE:
            judged[cell] += 1
            failed[cell] += f in bad
    empty = {c for c, n in judged.items() if failed[c] == n}
    if not empty:
        return [True] * len(cells), []
    out: list[NotApplicable] = []
    for model, cond in sorted(empty, key=lambda c: (_index(model_order, c[0]), c)):
        idx = [i for i, c in enumerate(cells) if c == (model, cond)]
        images = {(rows.story_id[i], rows.scene[i]) for i in idx}
        why = f"no readable image under {cond}: its {len(images)} failed to generate or to read"
        out.append(
            NotApplicable(
                evaluator=evaluator, model=model, conditions=[cond], n_images=len(images),
                reason=why, instead=[],
            )
        )  # fmt: skip
    return [c not in empty for c in cells], out


def unparsable_refusal(rows: RequirementRows, evaluator: str, run_dir: str = "RUN") -> str | None:
    """One line refusing an evaluator most of whose judged checks are ``parse_failure`` (its
    judge's answers could not be read: a ranking would only rank the garbage), else None."""
    judged = [v for v in rows.verdict if v != NOT_APPLICABLE]
    bad = sum(v == "parse_failure" for v in judged)
    if not judged or bad / len(judged) <= MOSTLY_UNPARSABLE:
        return None
    base = evaluator.split(":", 1)[0]
    return (
        f"{evaluator} not scored: {bad} of {len(judged)} of its verdicts "
        f"({bad / len(judged):.0%}) are parse_failure (the judge's answers could not be read, "
        f"see {run_dir}/evaluations/judge_calls.jsonl); rerun `vsb evaluate {run_dir} "
        f"--evaluator {base} --judge …` (unparsable answers are asked again) or score other "
        "evaluators with --evaluator"
    )


def _index(order: Sequence[str], x: str) -> int:
    return list(order).index(x) if x in order else len(order)


def _tail(evaluator: str, instead: Sequence[str], run_dir: str) -> str:
    if instead:
        return "; score with " + ", ".join(f"`--evaluator {e}`" for e in instead)
    if evaluator.split(":", 1)[0] == JUDGE_EVALUATOR:
        return "; no evaluator of this run applied to it"
    return (
        f"; judge them with `vsb evaluate {run_dir} --evaluator {JUDGE_EVALUATOR} --judge …`"
        f" and score with `--evaluator {JUDGE_EVALUATOR}`"
    )


def advice(na: NotApplicable, run_dir: str = "RUN") -> str:
    """One line for a model an evaluator could not judge, naming the evaluator to use."""
    head = f"{na.evaluator} did not apply to {na.model} ({na.reason})"
    return head + _tail(na.evaluator, na.instead, run_dir)


def refusal(evaluator: str, nas: Sequence[NotApplicable], run_dir: str = "RUN") -> str:
    """One line for an evaluator that applied to no model at all (``nas``: its models)."""
    reasons = Counter(n.reason for n in nas)
    reason = reasons.most_common(1)[0][0] if reasons else DEFAULT_REASON
    instead = sorted({e for n in nas for e in n.instead})
    head = f"{evaluator} did not apply to any model of this run ({reason})"
    return head + _tail(evaluator, instead, run_dir)
