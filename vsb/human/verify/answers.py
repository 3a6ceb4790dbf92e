"""``vsb human verify-import RUN FILE…``: people's answers to a verification sample, checked
against it and stored beside it (``RUN/verification/<sample_id>.answers.json``).

A file is JSON lines, ``{"item_id": …, "answer": "YES" | "NO" | "UNSURE"}`` (``sha256``, the
picture's hash, optional), or the verification page's export (``{"kind": "vsb-verify-
answers", "answers": [...]}``). Every answer must name an item of one sample of this run,
carry that item's picture hash when it carries one, and agree with any earlier answer to
the same item; the run's picture must still be the one sampled and the run's verdicts the
ones it was drawn from. The first answer that is not is refused in one line naming the file
and the item; nothing is written then.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from vsb.errors import InputError
from vsb.fsio import atomic_write_json, load_model
from vsb.release.manifest import refuse_frozen
from vsb.validation.correct.verified import (
    VERIFY_DIR,
    SampleItem,
    VerificationSample,
    VerifiedAnswer,
    VerifiedAnswers,
    answers_path,
    population,
)

ANSWERS = ("YES", "NO", "UNSURE")


def _records(path: Path) -> list[tuple[str, Any]]:
    """(location, record) of each answer in ``path``."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read answers: {err}", file=path) from err
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and ("kind" in whole or "answers" in whole):
        if whole.get("kind") != "vsb-verify-answers" or not isinstance(whole.get("answers"), list):
            raise InputError("not a verification page export (kind vsb-verify-answers)", file=path)
        return [(f"answers[{n}]", a) for n, a in enumerate(whole["answers"])]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((f"line {n}", json.loads(line)))
            except ValueError as err:
                raise InputError(f"not JSON: {err}", file=path, location=f"line {n}") from err
    return out


def _samples(root: Path) -> dict[str, tuple[VerificationSample, SampleItem]]:
    out = {}
    for p in sorted((root / VERIFY_DIR).glob("*.sample.json")):
        sample = load_model(p, VerificationSample, "verification sample")
        out.update({i.item_id: (sample, i) for i in sample.items})
    return out


def import_answers(run_dir: str | Path, files: list[Path]) -> list[VerifiedAnswers]:
    """Check every answer in ``files`` and store them per sample (merged with earlier ones)."""
    from vsb.scores.compute import load_scoring_input

    root = Path(run_dir)
    refuse_frozen(root, "verification/", "import into a copy of the release")
    items = _samples(root)
    if not items:
        raise InputError(
            "the run has no verification sample (draw one with vsb human verify)",
            file=root / VERIFY_DIR,
        )
    got: dict[str, dict[str, str]] = {}
    for path in files:
        for where, rec in _records(path):
            item_id = rec.get("item_id") if isinstance(rec, dict) else None
            if not isinstance(item_id, str) or item_id not in items:
                raise InputError(
                    f"item {item_id!r} belongs to no verification sample of this run",
                    file=path,
                    location=where,
                )
            sample, item = items[item_id]
            answer = str(rec.get("answer", "")).upper()
            if answer not in ANSWERS:
                raise InputError(
                    f"item {item_id}: answer {rec.get('answer')!r} is not YES, NO or UNSURE",
                    file=path,
                    location=where,
                )
            sha = rec.get("sha256")
            if sha is not None and sha != item.sha256:
                raise InputError(
                    f"item {item_id}: image hash {str(sha)[:12]}… is not the "
                    f"sample's ({item.sha256[:12]}…)",
                    file=path,
                    location=where,
                )
            mine = got.setdefault(sample.sample_id, {})
            if mine.get(item_id, answer) != answer:
                raise InputError(
                    f"item {item_id}: answered {mine[item_id]} and {answer}",
                    file=path,
                    location=where,
                )
            mine[item_id] = answer
    inp = load_scoring_input(root)
    samples = {s.sample_id: s for s, _ in items.values()}
    out = []
    for sample_id, answers in sorted(got.items()):
        sample = samples[sample_id]
        rows = inp.evaluator_rows(sample.evaluator)
        if population(rows, sample.model) != sample.population:
            raise InputError(
                f"sample {sample_id} of {sample.model} was drawn from other verdicts "
                "than the run holds now (judged again since?)"
            )
        _check_pictures(root, sample, set(answers))
        stored = answers_path(root, sample_id)
        before: dict[str, str] = {}
        names: list[str] = []
        if stored.is_file():
            old = load_model(stored, VerifiedAnswers, "verified answers")
            before, names = {a.item_id: a.answer for a in old.answers}, old.files
        for item_id, answer in answers.items():
            if before.get(item_id, answer) != answer:
                raise InputError(
                    f"item {item_id}: answered {answer}, but {before[item_id]} was imported before",
                    file=stored,
                )
        merged = before | answers
        order = [i.item_id for i in sample.items if i.item_id in merged]
        result = VerifiedAnswers(
            sample_id=sample_id,
            files=sorted({*names, *(str(f) for f in files)}),
            answers=[VerifiedAnswer(item_id=i, answer=merged[i]) for i in order],
        )
        out.append(result)
    for result in out:  # every check passed: write
        atomic_write_json(answers_path(root, result.sample_id), result.model_dump(mode="json"))
    return out


def _check_pictures(root: Path, sample: VerificationSample, answered: set[str]) -> None:
    """The run's pictures the answered items show are still the ones sampled."""
    from vsb.evaluators.interface import read_run

    view = read_run(root, models=[sample.model])
    paths = {(s.condition, s.story_id, k): p for s in view.sequences for k, p in s.images}
    for item in sample.items:
        if item.item_id not in answered:
            continue
        src = paths.get((item.condition, item.story_id, item.scene))
        sha = hashlib.sha256(Path(src).read_bytes()).hexdigest() if src else None
        if sha != item.source_sha256:
            raise InputError(
                f"item {item.item_id}: the run's picture changed since the sample "
                "was drawn (its hash differs)",
                file=Path(src) if src else root / "records.jsonl",
            )
