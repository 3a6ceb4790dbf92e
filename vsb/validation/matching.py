"""Matching an evaluator's failed checks to the oracle's injected faults.

All within one image (model × condition × story × scene):

* a *fault unit* is one visual fault of ``oracle/faults.jsonl``;
* a *detection unit* groups one evaluator's failed checks by (subject, failure label), so
  an image × subject × root-cause label counts once however many knock-on checks it fails.
  A check *fails* when its verdict is ``failed``, ``unsure`` or ``parse_failure`` (the last
  two are "not passed" in scoring, so a judge unsure about a true fact makes a false
  violation; their label is the requirement's own taxonomy, and their rates are reported
  apart, see ``vsb.validation.judge``); ``not_applicable`` rows are left out entirely, and
  so are ``unreadable`` ones (an image that could not be read got no answer).

**Strict** (the headline): a detection unit is true only when a fault has the same image,
subject and taxonomy label; a fault is detected only by such a unit. A scene-level
knock-on unit (subject ``scene``, every check carrying a root-cause label that is not its
own taxonomy, e.g. the left-to-right order failing as ``character_missing``) names no
subject of its own: it is folded into the image's units with that label on a character or
object, and stands alone (a false detection) only when there is none.

**Root cause** (secondary view; the matcher of judge.json 1.x): a fault and a unit match
when they concern the same subject and either the fault's attribute is one of the unit's
checked attributes or the unit's label is the fault's taxonomy; a unit holding a knock-on
check also matches a fault with that taxonomy on another subject. It credits a fault found
under another label (or, through a knock-on, on another subject). Attribute names are
normalised (``hair_color``/``hair_style`` -> ``hair``, an object's ``color`` -> ``present``,
whose check covers the colour).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vsb.errors import InputError, RunError
from vsb.fsio import iter_jsonl, sha256_file
from vsb.scores.inputs import RequirementRows, require_run_dir
from vsb.story.models import TAXONOMY
from vsb.validation.metrics import wilson_interval
from vsb.validation.models import TaxonomyMetrics

FAULTS_FILE = "oracle/faults.jsonl"
#: The subject of scene-level requirements (location, weather, time, order).
SCENE_SUBJECT = "scene"
#: Verdicts that count as a failed check (a detection); ``not_applicable`` is skipped.
FAILED_VERDICTS = frozenset({"failed", "unsure", "parse_failure"})
_FAULT_KEYS = ("model", "condition", "story_id", "scene", "subject", "attribute", "taxonomy")
_ALIASES = {"hair_color": "hair", "hair_style": "hair", "color": "present"}

Frame = tuple[str, str, str, int]
"""(model, condition, story_id, scene)."""
Key = tuple[Frame, str, str]
"""(frame, subject, taxonomy label): what strict matching compares."""
Hidden = Mapping[tuple[Frame, str, str], frozenset[tuple[str, str]]]
"""(frame, subject, attribute) of a check whose question cannot see its subject in what was
drawn -> (subject, taxonomy) of the faults that hid it (``vsb.validation.hidden``)."""


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
    recolour: bool = False
    """An object drawn in another colour (oracle attribute ``color``; ``attribute`` is then
    the normalised ``present``)."""

    @property
    def key(self) -> Key:
        return (self.frame, self.subject, self.taxonomy)


@dataclass
class Detection:
    """One detection unit: failed checks of one image × subject × failure label."""

    frame: Frame
    subject: str
    label: str
    attributes: set[str] = field(default_factory=set)
    knock_on: bool = False
    """Holds a check whose label is not its requirement's own taxonomy."""
    direct: bool = False
    """Holds a check whose label is its requirement's own taxonomy."""

    @property
    def key(self) -> Key:
        return (self.frame, self.subject, self.label)

    def matches_root_cause(self, f: Fault) -> bool:
        """Whether this unit detects fault ``f`` in the root-cause view (same image assumed)."""
        if f.subject == self.subject and (
            f.attribute in self.attributes or f.taxonomy == self.label
        ):
            return True
        return self.knock_on and f.taxonomy == self.label


def load_faults(run_dir: str | Path) -> list[Fault]:
    """Read the sealed ``RUN/oracle/faults.jsonl``; ``RunError`` if absent. The faults of
    the last file read are remembered by the sha256 of its bytes (hashing is ~50× cheaper
    than parsing): the reference judges' copies of one slice hold the same oracle."""
    path = require_run_dir(run_dir) / FAULTS_FILE
    if not path.is_file():
        raise RunError("run has no oracle (only simulator runs have one)", file=path)
    key = sha256_file(path)
    if key not in _LAST_FAULTS:
        _LAST_FAULTS.clear()
        _LAST_FAULTS[key] = _read_faults(path)
    return list(_LAST_FAULTS[key])


#: ``load_faults``' last file's faults, by the sha256 of its bytes.
_LAST_FAULTS: dict[str, list[Fault]] = {}


def _read_faults(path: Path) -> list[Fault]:
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
                recolour=str(obj["attribute"]) == "color",
            )
        )
    return out


def frames_of(rows: RequirementRows) -> list[Frame]:
    """The frame of every row, in row order."""
    return list(zip(rows.model, rows.condition, rows.story_id, rows.scene, strict=True))


def detections(rows: RequirementRows) -> list[Detection]:
    """Detection units of the failed checks of ``rows`` (one evaluator), in row order.

    A ``failed`` or ``unsure`` check carries its failure label (its taxonomy if blank: an
    evaluator writes a knock-on label, e.g. ``character_missing`` for a question about
    someone it said is not there); a ``parse_failure`` check carries its requirement's
    taxonomy.
    """
    units: dict[Key, Detection] = {}
    for i, fr in enumerate(frames_of(rows)):
        verdict = rows.verdict[i]
        if verdict not in FAILED_VERDICTS:
            continue
        own = rows.taxonomy[i]
        label = (rows.failure[i] or own) if verdict != "parse_failure" else own
        key = (fr, rows.subject[i], label)
        u = units.get(key)
        if u is None:
            u = units[key] = Detection(fr, rows.subject[i], label)
        u.attributes.add(rows.attribute[i])
        if label == own:
            u.direct = True
        else:
            u.knock_on = True
    return list(units.values())


#: Root causes of a person's knock-on failures: a check on another subject (the order of
#: the scene, the holder of an object) failing as one names no subject of its own.
PERSON_CAUSES = frozenset({"character_missing", "identity_drift", "clothing_change"})


def strict_units(units: list[Detection]) -> list[Detection]:
    """The units strict matching counts: scene-level knock-on units are folded into the
    image's units with the same label on a character or object, when there are any; so is
    an object's holder check failing with a person's root cause (``PERSON_CAUSES``: its
    holder could not be told apart), into that label's unit on another subject."""
    named = {(u.frame, u.label) for u in units if u.subject != SCENE_SUBJECT}
    by_other: dict[tuple[Frame, str], set[str]] = defaultdict(set)
    for u in units:
        if u.label in PERSON_CAUSES:
            by_other[(u.frame, u.label)].add(u.subject)

    def folded(u: Detection) -> bool:
        if u.direct:
            return False
        if u.subject == SCENE_SUBJECT:
            return (u.frame, u.label) in named
        if u.attributes != {"holder"} or u.label not in PERSON_CAUSES:
            return False  # a character's own knock-on unit is never folded
        return bool(by_other[(u.frame, u.label)] - {u.subject})

    return [u for u in units if not folded(u)]


def _ratio(k: int, n: int) -> float | None:
    return k / n if n else None


def _hidden_unit(u: Detection, hidden: Hidden) -> bool:
    """Whether every check of ``u`` is one no question can see (``hidden``), or ``u`` fails
    with its subject's presence check and that is one (the person is there, every cue of
    the presence question drifted: whatever fails with it is their knock-on)."""
    if "present" in u.attributes and (u.frame, u.subject, "present") in hidden:
        return True
    return all((u.frame, u.subject, a) in hidden for a in u.attributes)


def taxonomy_metrics(
    faults: list[Fault], units: list[Detection], frames: set[Frame], hidden: Hidden | None = None
) -> list[TaxonomyMetrics]:
    """Per-taxonomy strict and root-cause recall and precision of one evaluator's units
    against the visual faults on ``frames`` (TAXONOMY order, then unknown labels, 'all').

    ``hidden`` (a judge's checks whose question cannot see its subject in what was drawn,
    and the faults that hid them): a fault on such a check is their knock-on, detected
    (strict) when a unit of one of them is; a unit whose every check is such, or that fails
    with such a presence check, is their knock-on: a true detection (the faults that hid it
    are real)."""
    visual = [f for f in faults if f.visual and f.frame in frames]
    strict = strict_units(units)
    unit_keys = {u.key for u in strict}
    fault_keys = {f.key for f in visual}
    by_frame: dict[Frame, list[Detection]] = defaultdict(list)
    for u in units:
        by_frame[u.frame].append(u)
    faults_by_frame: dict[Frame, list[Fault]] = defaultdict(list)
    for f in visual:
        faults_by_frame[f.frame].append(f)

    c: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for f in visual:
        c["n_faults"][f.taxonomy] += 1
        hid = hidden.get((f.frame, f.subject, f.attribute), ()) if hidden else ()
        c["hit"][f.taxonomy] += f.key in unit_keys or any((f.frame, *k) in unit_keys for k in hid)
        c["hit_rc"][f.taxonomy] += any(u.matches_root_cause(f) for u in by_frame[f.frame])
    for u in strict:
        c["nd"][u.label] += 1
        c["tp"][u.label] += u.key in fault_keys or (hidden is not None and _hidden_unit(u, hidden))
    for u in units:
        matched = [f for f in faults_by_frame.get(u.frame, ()) if u.matches_root_cause(f)]
        c["nd_rc"][u.label] += 1
        c["tp_rc"][u.label] += bool(matched)
        c["agree"][u.label] += any(f.taxonomy == u.label for f in matched)
    seen = set(c["n_faults"]) | set(c["nd"]) | set(c["nd_rc"])
    labels = [*TAXONOMY, *sorted(seen - set(TAXONOMY))]

    def row(t: str, n: dict[str, int]) -> TaxonomyMetrics:
        r_lo, r_hi = wilson_interval(n["hit"], n["n_faults"])
        p_lo, p_hi = wilson_interval(n["tp"], n["nd"])
        return TaxonomyMetrics(
            taxonomy=t,
            n_faults=n["n_faults"],
            n_detected=n["hit"],
            recall=_ratio(n["hit"], n["n_faults"]),
            recall_ci_low=r_lo,
            recall_ci_high=r_hi,
            n_detections=n["nd"],
            n_true_detections=n["tp"],
            precision=_ratio(n["tp"], n["nd"]),
            precision_ci_low=p_lo,
            precision_ci_high=p_hi,
            n_detected_root_cause=n["hit_rc"],
            recall_root_cause=_ratio(n["hit_rc"], n["n_faults"]),
            n_detections_root_cause=n["nd_rc"],
            n_true_detections_root_cause=n["tp_rc"],
            precision_root_cause=_ratio(n["tp_rc"], n["nd_rc"]),
            n_label_agree=n["agree"],
        )

    names = ("n_faults", "hit", "hit_rc", "nd", "tp", "nd_rc", "tp_rc", "agree")
    out = [row(t, {k: c[k].get(t, 0) for k in names}) for t in labels]
    out.append(row("all", {k: sum(c[k].values()) for k in names}))
    return out
