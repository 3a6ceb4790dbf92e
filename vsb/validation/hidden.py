"""Faults no question of the VLM judge can see, and the faults that hid them.

A question names a person by the cues of a locator (``questions.locator_cues``): the first
tier of cues that someone in the picture shows decides who is meant, and of those who show
it, whoever shows the most of its cues. Laid over what was drawn (the story's state with the
oracle's rendered values, ``vsb.validation.drawn``), a locator may single out no one (every
cue of the person drifted), several people, or someone else (another person drifted into
one of the cues). Then no reader of that question can see the fact it asks about the
person: it is answered of someone else, or UNSURE. The fault on that fact is a *knock-on* of
the faults that hid it (the drift of the person's cues, or of the other person's into them,
``hidden_by``), as a missing person's facts are knock-ons of their absence, and strict
matching credits it when one of those is detected (``matching.taxonomy_metrics``): a judge
that reports the drift that hid a fault has found what a literal reader can find.

Only the questions of the ``vlm`` evaluator locate people so; the rule checker's faults are
matched as they are. A fault hidden this way still counts as a fault of its own label: it is
found through its own detection or its hider's, never dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vsb.evaluators.vlm.questions import Cue, judge_view, question_locators
from vsb.fsio import iter_jsonl, sha256_file
from vsb.render.scene import people_drawn
from vsb.story.io import load_suite
from vsb.story.models import CharacterState, Requirement, Scene, Story
from vsb.validation.drawn import drawn_state
from vsb.validation.matching import FAULTS_FILE, Frame, Hidden

#: The oracle attribute a locator's cue drifts with.
_FAULTED_AS = {"skin": "skin", "hair_color": "hair", "hair_style": "hair", "top": "top",
               "trousers": "trousers"}  # fmt: skip


def singled_out(tiers: Sequence[Sequence[Cue]], people: Sequence[CharacterState]) -> list[int]:
    """The people a locator's words pick in a picture of ``people`` (left to right): of the
    first tier anyone shows a cue of, those who show the most of its cues."""
    for tier in tiers:
        shown = [sum(getattr(p, a) == v for a, v in tier) for p in people]
        if any(shown):
            return [i for i, n in enumerate(shown) if n == max(shown)]
    return []


def hiders(
    tiers: Sequence[Sequence[Cue]],
    name: str,
    drawn: list[tuple[str, CharacterState]],
    faults: dict[tuple[str, str], str],
) -> set[tuple[str, str]] | None:
    """The (subject, taxonomy) of the faults that keep ``tiers`` from singling ``name`` out
    of the people ``drawn``: ``name``'s own drifted cues and the cues others drifted into;
    None when the locator singles ``name`` out (or ``name`` is not drawn: absent, nothing
    is hidden but by the absence)."""
    names = [n for n, _ in drawn]
    if not tiers or name not in names:
        return None
    picked = singled_out(tiers, [c for _, c in drawn])
    if picked == [names.index(name)]:
        return None
    cues = {a for t in tiers for a, _ in t}
    out = {(name, faults[(name, _FAULTED_AS[a])]) for a in cues if (name, _FAULTED_AS[a]) in faults}
    for i in picked:
        other = names[i]
        out |= {(other, faults[(other, _FAULTED_AS[a])]) for a in cues
                if other != name and (other, _FAULTED_AS[a]) in faults}  # fmt: skip
    return out


class _Frame:
    """One frame as drawn: its people left to right and its faults by (subject, attribute)."""

    def __init__(self, scene: Scene, rows: list[dict[str, Any]]) -> None:
        self.scene, self.view = scene, judge_view(scene)
        state = drawn_state(scene.state, rows)
        self.drawn = [(n, state.characters[n]) for n in people_drawn(state)]
        self.faults = {(str(f["subject"]), str(f["attribute"])): str(f["taxonomy"]) for f in rows}

    def hidden_by(self, req: Requirement) -> frozenset[tuple[str, str]]:
        """What hid ``req``'s question: the (subject, taxonomy) of the faults that keep a
        locator of it (``question_locators``) from singling its person out in what was
        drawn; empty when the question can see."""
        out: set[tuple[str, str]] = set()
        for name, tiers in question_locators(req, self.view):
            found = hiders(tiers, name, self.drawn, self.faults)
            if found is not None:
                out |= found
        return frozenset(out)


def hidden_checks(run_dir: str | Path, stories: Iterable[Story] | None = None) -> Hidden:
    """Every check of the ``vlm`` evaluator, on a frame of the run with faults, whose
    question cannot see its person in what was drawn, and the faults that hid it
    (``stories``: the run's suite, read from it when not given). A frame without a fault is
    drawn as told, and every locator singles its person out there.

    Read from the run's own suite, the answer is remembered by the sha256 of the two files it
    comes from: the reference judges' copies of one slice hold the same files, and six
    judges asked it again (~0.4 s each)."""
    root = Path(run_dir)
    if stories is None:
        try:
            key = tuple(sha256_file(root / rel) for rel in ("suite/suite.json", FAULTS_FILE))
        except OSError:
            return _hidden_checks(root, None)
        got = _REMEMBERED.get(key)
        if got is None:
            _REMEMBERED.clear()  # one slice at a time
            got = _REMEMBERED[key] = _hidden_checks(root, None)
        return dict(got)
    return _hidden_checks(root, stories)


#: ``hidden_checks``' last answer, by the sha256 of the files it was read from.
_REMEMBERED: dict[tuple[str, ...], Hidden] = {}


def _hidden_checks(root: Path, stories: Iterable[Story] | None) -> Hidden:
    by_id = {s.id: s for s in (stories if stories is not None else load_suite(root / "suite"))}
    rows: dict[Frame, list[dict[str, Any]]] = defaultdict(list)
    for _, f in iter_jsonl(root / FAULTS_FILE):
        if f.get("visual", True):
            rows[(f["model"], f["condition"], f["story_id"], int(f["scene"]))].append(f)
    out: dict[tuple[Frame, str, str], frozenset[tuple[str, str]]] = {}
    for frame, faults in rows.items():
        story = by_id.get(frame[2])
        if story is None or not 0 < frame[3] <= len(story.scenes):
            continue
        drawn = _Frame(story.scenes[frame[3] - 1], faults)
        for req in drawn.scene.requirements:
            if hid := drawn.hidden_by(req):
                out[(frame, req.subject, req.attribute)] = hid
    return out
