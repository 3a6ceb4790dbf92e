"""A story in VinaBench's evaluation form: what VinaBench's evaluation scripts read of a sample.

VinaBench (Silin159/VinaBench, ``evaluation/minicpm_vqa_*.py``) asks its questions from a
sample's annotations: per scene its ``linked_entities`` (one ``"; "``-joined string), the
number of characters present (``scene_characters[tid]["num_present"]``) and their names
(``["present"]``), ``time`` and ``location``; per sample the characters' profiles
(``global_profile``) and ``style``. ``VinaSample`` holds exactly that, so the ``vinabench``
evaluator (``vsb.evaluators.vinabench``) asks the same questions of a sample read from one of
VinaBench's files (``read_samples``) or of any story expressed in this form (vsb's own
stories, for instance, to measure VinaBench's metrics against the oracle).

VinaBench names a sample's images ``<index>_<tid>.jpg`` (``tid`` from 0), ``index`` being
``scene_full_id + "_" + str(story_id)`` (VWP), ``movie_id + "_" + str(global_id)``
(Storyboard20K) or ``portion + "_" + sid`` (StorySalon); a story imported by ``vsb suite
import`` has that index as its id, sanitised (``story_id_of``: lower case, other characters
``-``, as ``vsb.narrative.sources.story_id``), and a sample of more than 16 scenes is split
as ``vsb.narrative.vinabench`` splits it (``split_sizes``; the parts' indexes end ``_0``,
``_1``… as in VinaBench's ``salon_short`` files). The gold images are the portion's
``image_links`` (VWP), ``key_frames`` (Storyboard20K) or ``image_paths`` (StorySalon), found
under VinaBench's ``annotations`` folder as its ``prepare_mrr_rank_clip.py`` finds them
(``gold_file``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.errors import InputError
from vsb.fsio import iter_jsonl, load_json
from vsb.story import vocab, words
from vsb.story.models import ObjectState, SceneState, Story

#: VinaBench's portions by their id keys: (portion, first key, second key).
ID_KEYS: tuple[tuple[str, str, str], ...] = (
    ("vwp", "scene_full_id", "story_id"),
    ("sb20k", "movie_id", "global_id"),
    ("salon", "portion", "sid"),
)
#: Where each portion lists its gold images (``prepare_mrr_rank_clip.py``).
GOLD_FIELD = {"vwp": "image_links", "sb20k": "key_frames", "salon": "image_paths",
              "salon_short": "image_paths"}  # fmt: skip
#: The times of day VinaBench's time alignment asks about (other times are not asked).
TIMES = ("early morning", "morning", "noon", "afternoon", "evening", "night")
#: Scenes of an imported story at most; a longer sample is split (``vsb.narrative``).
MAX_SCENES = 16
SPLIT_SCENES = 10
#: The portion vsb's own stories report under, and the style they are all drawn in (the
#: procedural renderer's; VinaBench's style consistency does not read it).
VSB_PORTION = "vsb"
VSB_STYLE = "flat procedural illustration"
#: The clothes a profile names, each only when it holds in every scene (a global profile
#: describes the lasting look).
_CLOTHES = ("top", "trousers", "accessory")
_ID = re.compile(r"[^a-z0-9_\-]+")
_PORTION = re.compile(r"^[a-z0-9_]+$")


@dataclass(frozen=True)
class VinaScene:
    """One scene's annotations as VinaBench's scripts read them (None: not annotated; the
    metrics that need it are not asked of the scene)."""

    #: ``linked_entities[tid]``: VinaBench's ``"; "``-joined string of linked entities.
    linked_entities: str | None = None
    #: ``scene_characters[tid]["num_present"]`` as annotated (VinaBench ``int()``s it).
    num_present: int | str | None = None
    #: ``scene_characters[tid]["present"]``: the names of the characters present.
    present: tuple[str, ...] | None = None
    #: ``time[tid]`` (asked only when one of ``TIMES``).
    time: str | None = None
    #: ``location[tid]``.
    location: str | None = None


@dataclass(frozen=True)
class VinaSample:
    """One story in VinaBench's evaluation form."""

    #: vsb's story id (the run's ``story_id``).
    story_id: str
    #: VinaBench's index: its images are ``<index>_<tid>.jpg``.
    index: str
    #: The portion its score is reported under (vwp, sb20k, salon_short, salon, or any other
    #: lower-case name for stories not from VinaBench).
    portion: str
    scenes: tuple[VinaScene, ...]
    #: ``global_profile``: (name, description) per character, in the file's order.
    profiles: tuple[tuple[str, str], ...] = ()
    #: ``style`` (VinaBench's style consistency does not read it).
    style: str | None = None
    #: The gold images as annotated (``GOLD_FIELD``), one per scene (empty: none given).
    gold: tuple[Any, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not _PORTION.match(self.portion):
            raise InputError(f"portion {self.portion!r}: lower-case letters, digits and _ only")

    @property
    def profile(self) -> dict[str, str]:
        """Character name -> description."""
        return dict(self.profiles)


def story_id_of(raw: str) -> str:
    """A story id from a VinaBench index, as ``vsb suite import`` makes it (lower case, runs
    of other characters ``-``, at most 100 characters)."""
    return _ID.sub("-", raw.strip().lower()).strip("-")[:100]


def split_sizes(n: int) -> list[int]:
    """Part sizes of a sample of ``n`` scenes (``vsb.narrative.vinabench.split_sizes``)."""
    if n <= MAX_SCENES:
        return [n]
    parts = math.ceil(n / SPLIT_SCENES)
    base, extra = divmod(n, parts)
    return [base + (i < extra) for i in range(parts)]


def index_of(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """(portion, VinaBench's index) of a sample, built as its scripts build it (None: no id
    keys)."""
    for portion, a, b in ID_KEYS:
        if a in item and b in item:
            return portion, f"{item[a]}_{item[b]}"
    return None


def gold_file(portion: str, link: str) -> str:
    """Where VinaBench finds a gold image under its ``annotations`` folder
    (``prepare_mrr_rank_clip.py``'s ``link_to_file``), relative to it."""
    if portion == "vwp":
        parts = link.split("/")
        return "/".join(["images", *parts[-2:]])
    if portion == "sb20k":
        return f"storyboard20k/{link}"
    return "Image_inpainted/" + "/".join(link.split("/")[2:])


def _per_scene(item: Mapping[str, Any], key: str, n: int, file: Path, where: str) -> list[Any]:
    value = item.get(key)
    if value is None:
        return [None] * n
    if not isinstance(value, list) or len(value) != n:
        got = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise InputError(
            f"expected {key}: one entry per scene ({n}), got {got}", file=file, location=where
        )
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _scene(entities: Any, chars: Any, time: Any, location: Any) -> VinaScene:
    if isinstance(entities, list):  # a list of entities: VinaBench's string, joined
        entities = "; ".join(str(e) for e in entities)
    present = chars.get("present") if isinstance(chars, dict) else None
    num = chars.get("num_present") if isinstance(chars, dict) else None
    return VinaScene(
        linked_entities=_text(entities),
        num_present=num if isinstance(num, int | str) and not isinstance(num, bool) else None,
        present=tuple(str(p) for p in present) if isinstance(present, list) else None,
        time=_text(time),
        location=_text(location),
    )


def sample_of(
    item: Mapping[str, Any], file: Path, where: str, portion: str = ""
) -> list[VinaSample]:
    """The stories of one VinaBench sample (one, or its parts when it is split); ``portion``
    overrides the one its id keys name (``salon_short``)."""
    found = index_of(item)
    if found is None:
        raise InputError("expected a VinaBench sample with its id keys", file=file, location=where)
    own, index = found
    scenes = item.get("narrative")
    if not isinstance(scenes, list) or not scenes:
        raise InputError("expected narrative: a list of scene texts", file=file, location=where)
    n = len(scenes)
    cols = [_per_scene(item, k, n, file, f"{where}/{k}")
            for k in ("linked_entities", "scene_characters", "time", "location")]  # fmt: skip
    gold_key = GOLD_FIELD[own]
    gold = item.get(gold_key)
    gold = gold if isinstance(gold, list) and len(gold) == n else []
    profile = item.get("global_profile")
    profiles = (
        tuple((str(k), f"{v}") for k, v in profile.items()) if isinstance(profile, dict) else ()
    )
    style = _text(item.get("style"))
    out, lo = [], 0
    sizes = split_sizes(n)
    for part, size in enumerate(sizes):
        hi = lo + size
        idx = index if len(sizes) == 1 else f"{index}_{part}"
        out.append(VinaSample(
            story_id=story_id_of(idx), index=idx, portion=portion or own,
            scenes=tuple(_scene(*row) for row in zip(*(c[lo:hi] for c in cols), strict=True)),
            profiles=profiles, style=style, gold=tuple(gold[lo:hi]),
        ))  # fmt: skip
        lo = hi
    return out


def portion_of_file(path: Path) -> str:
    """The portion a StorySalon file reports under: ``salon_short`` for VinaBench's split
    files (``salon_short_*.json``), else ``salon``."""
    return "salon_short" if path.name.startswith("salon_short") else ""


def iter_samples(path: str | Path) -> Iterator[VinaSample]:
    """Every story of a VinaBench annotation file (``.json``: a list of samples; ``.jsonl``:
    one per line), or ``InputError`` naming the file and the sample."""
    file = Path(path)
    salon = portion_of_file(file)
    if file.suffix.lower() == ".jsonl":
        rows: Iterator[tuple[str, Any]] = ((f"line {n}", r) for n, r in iter_jsonl(file))
    else:
        doc = load_json(file, max_bytes=1 << 30)
        if not isinstance(doc, list):
            raise InputError("expected a VinaBench file: a list of samples", file=file)
        rows = ((f"/{i}", r) for i, r in enumerate(doc))
    for where, item in rows:
        if not isinstance(item, dict):
            raise InputError("expected a sample (a JSON object)", file=file, location=where)
        own = index_of(item)
        yield from sample_of(item, file, where, salon if own and own[0] == "salon" else "")


def read_samples(paths: str | Path | list[str | Path]) -> dict[str, VinaSample]:
    """Story id -> its sample, of every VinaBench file given; an id twice is refused."""
    out: dict[str, VinaSample] = {}
    for path in [paths] if isinstance(paths, str | Path) else paths:
        for s in iter_samples(path):
            if s.story_id in out:
                raise InputError(
                    f"two samples are story {s.story_id!r} ({out[s.story_id].index}, {s.index})",
                    file=Path(path),
                )
            out[s.story_id] = s
    return out


# --- vsb's own stories in VinaBench's form -------------------------------------------------


def entity_words(kind: str, obj: ObjectState) -> str:
    """An object as one of VinaBench's linked entities, lower case: its state (for a kind of
    more than one state), colour and kind, counted in words for a counted kind (``open red
    umbrella``, ``three fresh pink flowers``, ``one yellow coin``)."""
    known = vocab.OBJECT_KINDS.get(kind)
    adjectives = [obj.state] if known is not None and len(known.states) > 1 else []
    adjectives.append(obj.color)
    if known is not None and known.counted and obj.count is not None:
        one, many = (" ".join([*adjectives, n]) for n in (known.name, known.plural))
        return words.count(one, many, obj.count).lower()
    return " ".join([*adjectives, kind]).lower()


def profile_words(story: Story, name: str) -> str:
    """A character's global profile in the words every model-facing text uses
    (``vsb.story.words``): skin and hair, then each of top, trousers and accessory whose
    value is the same in every scene (``dark skin, short black hair, a red top, blue
    trousers, no accessory``)."""
    looks = [sc.state.characters[name] for sc in story.scenes]
    first = looks[0]
    parts = [words.skin(first.skin), words.hair(first.hair_color, first.hair_style)]
    for attr in _CLOTHES:
        values = {getattr(c, attr) for c in looks}
        if len(values) != 1:
            continue  # it changes: a lasting profile does not say it
        value = values.pop()
        if attr == "top":
            parts.append(words.article(f"{value} top"))
        elif attr == "trousers":
            parts.append(f"{value} trousers")
        else:
            parts.append(words.accessory(value))
    return ", ".join(parts)


def _scene_of(state: SceneState) -> VinaScene:
    present = tuple(n for n in state.order if state.characters[n].present)
    seen = [entity_words(k, o) for k, o in sorted(state.objects.items())
            if state.object_visible(k) and o.count != 0]  # fmt: skip
    return VinaScene(
        linked_entities="; ".join(seen),
        num_present=len(present),
        present=present,
        time=state.time,
        location=state.location,
    )


def sample_of_story(story: Story) -> VinaSample:
    """A vsb story in VinaBench's annotation form: per scene (from its replayed state) the
    characters present (left to right) and their number, the time, the location and the
    objects one can see as linked entities (``entity_words``); per story each character's
    profile (``profile_words``) and one style. So VinaBench's questions ask what the story
    says each picture shows (``vsb.validation.vina``: against the oracle)."""
    return VinaSample(
        story_id=story.id,
        index=story.id,
        portion=VSB_PORTION,
        scenes=tuple(_scene_of(sc.state) for sc in story.scenes),
        profiles=tuple((c.name, profile_words(story, c.name)) for c in story.world.characters),
        style=VSB_STYLE,
    )
