"""Drawing a verification sample of one model's judged rows, and writing its items.

The sample is stratified by (label, the judge's outcome) (``vsb.validation.correct.
verified``) and allocated in proportion to each stratum's weight in the model's global score
(``vsb.validation.correct.sizing.allocation``; largest remainders), drawn with
``numpy.random.default_rng([seed, crc32(model)])``. Each item is one row's question, the
judge's own (``vsb.evaluators.vlm.questions.question_for``), about its frame's picture. What a
person sees is blind, as on the rating page: ``DIR/items.jsonl`` and ``DIR/evaluate.html``
name no model, condition or story; the picture is the run's changed imperceptibly
(``vsb.human.blinding.perturbed``) under an opaque name in ``DIR/rate/``; the item ids are
drawn at random. Which row each item is goes to the run (``RUN/verification/``), never to
``DIR``.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vsb.errors import InputError
from vsb.fsio import atomic_write_bytes, atomic_write_json, atomic_write_text, canonical_json
from vsb.human.blinding import perturbed
from vsb.scores.compute import load_scoring_input
from vsb.scores.inputs import RequirementRows
from vsb.validation.correct.sizing import allocate, allocation
from vsb.validation.correct.verified import (
    SampleItem,
    VerificationSample,
    judged_evaluator,
    judged_single_frame,
    outcome_of,
    population,
    sample_path,
    stratum_key,
)

ITEMS_FILE = "items.jsonl"


@dataclass(frozen=True)
class Plan:
    """The rows a sample may draw from: ``rows`` (the evaluator's), ``index`` per stratum."""

    evaluator: str
    model: str
    rows: RequirementRows
    strata: dict[str, list[int]]


def plan(run_dir: Path, model: str, evaluator: str | None = None) -> Plan:
    """The judged single-frame rows of ``model`` by stratum."""
    inp = load_scoring_input(run_dir)
    label = judged_evaluator(inp, evaluator)
    rows = inp.evaluator_rows(label)
    if model not in set(rows.model):
        known = ", ".join(sorted(set(rows.model)))
        raise InputError(f"--model {model!r} has no rows of {label} (models: {known})")
    strata: dict[str, list[int]] = {}
    for i, ok in enumerate(judged_single_frame(rows, model)):
        if ok:
            key = stratum_key(rows.dimension[i], rows.taxonomy[i], outcome_of(rows.verdict[i]))
            strata.setdefault(key, []).append(i)
    return Plan(label, model, rows, dict(sorted(strata.items())))


def _question(view: object, rows: RequirementRows, i: int) -> tuple[str, str, str]:
    """(req_id, question, expect) of row ``i`` (the judge's own question)."""
    from vsb.evaluators.vlm.questions import judge_view, question_for

    story = view.stories[rows.story_id[i]]  # type: ignore[attr-defined]
    scene = next(s for s in story.scenes if s.index == rows.scene[i])
    req_id = f"s{scene.index}.{rows.subject[i]}.{rows.attribute[i]}"
    req = next((r for r in scene.requirements if r.id == req_id), None)
    if req is None:
        raise InputError(f"no requirement {req_id} in story {rows.story_id[i]}")
    q = question_for(req, judge_view(scene))
    return req_id, q.text, q.expect


def draw_sample(
    run_dir: str | Path,
    model: str,
    n_items: int,
    out: str | Path,
    *,
    seed: int = 0,
    evaluator: str | None = None,
) -> VerificationSample:
    """Draw ``n_items`` of ``model``'s judged rows, write the items into ``out`` and the
    sample into ``RUN/verification/``."""
    from vsb.evaluators.interface import read_run
    from vsb.release.manifest import refuse_frozen

    root, out = Path(run_dir), Path(out)
    refuse_frozen(root, "verification/", "draw the sample from a copy of the release")
    p = plan(root, model, evaluator)
    rng = np.random.default_rng([seed, zlib.crc32(model.encode())])  # a sample per model
    keys = list(p.strata)
    weights = allocation(p.rows, model)
    counts = allocate(np.array([len(p.strata[k]) for k in keys]), n_items,
                      np.array([weights.get(k, 0.0) for k in keys]))  # fmt: skip
    chosen = [
        i
        for k, c in zip(keys, counts, strict=True)
        for i in sorted(rng.choice(p.strata[k], size=c, replace=False).tolist())
    ]
    view = read_run(root, models=[model])
    paths = {(s.condition, s.story_id, k): path for s in view.sequences for k, path in s.images}
    rows, pictures, items = p.rows, {}, []
    for i in [chosen[j] for j in rng.permutation(len(chosen))]:
        frame = (rows.condition[i], rows.story_id[i], rows.scene[i])
        src = paths.get(frame)
        if src is None:
            raise InputError(f"no picture of {model} {frame} in the run's records")
        if frame not in pictures:
            data = Path(src).read_bytes()  # read_run gives paths as usable here
            shown = perturbed(data, rng)
            ext = "jpg" if shown.startswith(b"\xff\xd8") else "png"
            name = f"rate/{rng.bytes(16).hex()}.{ext}"
            atomic_write_bytes(out / name, shown)
            pictures[frame] = (
                name,
                hashlib.sha256(shown).hexdigest(),
                hashlib.sha256(data).hexdigest(),
            )
        name, sha, source = pictures[frame]
        req_id, question, expect = _question(view, rows, i)
        items.append(
            SampleItem(
                item_id=rng.bytes(8).hex(),
                condition=frame[0],
                story_id=frame[1],
                scene=frame[2],
                req_id=req_id,
                dimension=rows.dimension[i],
                taxonomy=rows.taxonomy[i],
                outcome=outcome_of(rows.verdict[i]),
                question=question,
                expect=expect,
                image=name,
                sha256=sha,
                source_sha256=source,
            )
        )
    sample = VerificationSample(
        sample_id=rng.bytes(6).hex(),
        evaluator=p.evaluator,
        judge_model=next(
            j for m, j in zip(rows.model, rows.judge_model, strict=True) if m == model
        ),
        model=model,
        seed=seed,
        population=population(rows, model),
        items=items,
    )
    lines = [
        canonical_json(
            {"item_id": x.item_id, "image": x.image, "sha256": x.sha256, "question": x.question}
        ).decode()
        for x in items
    ]
    atomic_write_text(out / ITEMS_FILE, "".join(line + "\n" for line in lines))
    from vsb.human.verify.page import page_html

    atomic_write_text(out / "evaluate.html", page_html(sample.sample_id, items))
    if sample_path(root, sample.sample_id).exists():
        raise InputError(
            f"sample {sample.sample_id} was drawn before (the same model and seed): choose "
            "another --seed",
            file=sample_path(root, sample.sample_id),
        )
    atomic_write_json(sample_path(root, sample.sample_id), sample.model_dump(mode="json"))
    return sample
