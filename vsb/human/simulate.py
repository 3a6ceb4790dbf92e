"""Synthetic raters for checking the human-rating pipeline (never evidence about models).

Every file is marked ``synthetic`` with a notice and carries ``truth``: the latent mean
rating of each model, set from the release's own scores (the primary evaluator's global
score in the rated condition, mapped linearly onto 2.2-3.8 so that rounding and the 1-5
bounds barely bias it). A careful rater's likert rating of a target is

    round(model mean + story effect + rater bias + item noise + dimension noise)

clipped to 1-5 (effects normal with sd ``STORY_SD``, ``RATER_SD``, ``ITEM_SD``, ``DIM_SD``);
their pairwise choices follow a logistic in the two models' mean difference, they answer
controls right with probability ``CONTROL_HIT`` and spend about 12 s per item. A careless
rater answers uniformly at random in 1-3 s. All raters rate the same likert targets (a
seeded subset of the release's story x model pairs, each rater in their own order), so the
reliability statistics have overlapping data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vsb.errors import InputError
from vsb.fsio import atomic_write_json
from vsb.human.blinding import PoolStory, rated_condition, story_pool
from vsb.human.models import (
    CONTROL_BAD,
    CONTROL_GOOD,
    DIMENSION_KEYS,
    RATING_FORMAT,
    RATING_FORMAT_VERSION,
    RatingFile,
)
from vsb.human.results import SYNTHETIC_NOTICE
from vsb.human.session import has_controls
from vsb.site.data import SiteData, load_site_data

STORY_SD, RATER_SD, ITEM_SD, DIM_SD = 0.3, 0.3, 0.3, 0.5
CONTROL_HIT = 0.97
PAIR_SCALE = 0.5
TIE_SHARE = 0.1
STARTED_AT = "2025-01-01T00:00:00Z"


def true_means(data: SiteData, condition: str) -> dict[str, float]:
    """Each model's latent mean rating, from its global score (3.0 when it has none)."""
    g = {
        r.model: r.global_score.score
        for r in data.scores.scores
        if r.condition == condition and r.global_score is not None
    }
    out = {m: 3.0 for m in data.models}
    if g:
        lo, hi = min(g.values()), max(g.values())
        half = (hi - lo) / 2 or 1.0
        out.update({m: 3.0 + 0.8 * (v - (lo + hi) / 2) / half for m, v in g.items()})
    return out


def _letters(rng: np.random.Generator, models: list[str]) -> dict[str, str]:
    names = [chr(65 + i) if i < 26 else "A" + chr(65 + i - 26) for i in range(len(models))]
    perm = rng.permutation(len(models))
    return {names[int(k)]: m for k, m in zip(perm, models, strict=True)}


def _rater(
    rng: np.random.Generator, index: int, careless: bool, data: SiteData, pool: list[PoolStory],
    targets: list[tuple[str, str]], story_fx: dict[str, float], mu: dict[str, float],
    n_pairwise: int, n_control: int,
) -> RatingFile:  # fmt: skip
    cond = rated_condition(data)
    models = sorted({m for s in pool for m in s.images})
    letters = _letters(rng, models)
    letter_of = {m: k for k, m in letters.items()}
    bias = rng.normal(0.0, RATER_SD)

    def seconds() -> float:
        t = rng.uniform(1.0, 3.0) if careless else 12.0 * rng.lognormal(0.0, 0.4)
        return round(float(t), 2)

    def likert(story: str, model: str) -> dict[str, int]:
        if careless:
            return {d: int(rng.integers(1, 6)) for d in DIMENSION_KEYS}
        latent = mu[model] + story_fx[story] + bias + rng.normal(0.0, ITEM_SD)
        vals = np.clip(np.rint(latent + rng.normal(0.0, DIM_SD, len(DIMENSION_KEYS))), 1, 5)
        return {d: int(v) for d, v in zip(DIMENSION_KEYS, vals, strict=True)}

    def choose(a: str, b: str, control: bool) -> str:
        if careless:
            return str(rng.choice(["a", "b", "tie"]))
        if control:
            right = "a" if a == CONTROL_GOOD else "b"
            return right if rng.random() < CONTROL_HIT else ("b" if right == "a" else "a")
        if rng.random() < TIE_SHARE:
            return "tie"
        p_a = 1.0 / (1.0 + np.exp(-(mu[a] - mu[b]) / PAIR_SCALE))
        return "a" if rng.random() < p_a else "b"

    items: list[dict[str, object]] = []

    def add(kind: str, story: str, **extra: object) -> None:
        n = len(items)
        items.append({"kind": kind, "item_id": f"i{n:03d}", "story_id": story,
                      "condition": cond, "time_s": seconds(), "order": n, **extra})  # fmt: skip

    for k in rng.permutation(len(targets)):
        story, model = targets[int(k)]
        add("likert", story, model=model, letter=letter_of[model], ratings=likert(story, model))
    pairs = [(s.story_id, a, b) for s in pool for a in s.images for b in s.images if a < b]
    pairs = [p for p in pairs if {p[1], p[2]} != {CONTROL_GOOD, CONTROL_BAD}]
    n_pick = min(n_pairwise, len(pairs))
    for k in rng.choice(len(pairs), size=n_pick, replace=False) if n_pick else ():
        story, a, b = pairs[int(k)]
        if rng.random() < 0.5:
            a, b = b, a
        add("pairwise", story, model_a=a, model_b=b, letter_a=letter_of[a],
            letter_b=letter_of[b], choice=choose(a, b, False))  # fmt: skip
    controls = [s.story_id for s in pool if CONTROL_GOOD in s.images and CONTROL_BAD in s.images]
    for _ in range(n_control if controls else 0):
        story = str(rng.choice(controls))
        a, b = (CONTROL_GOOD, CONTROL_BAD) if rng.random() < 0.5 else (CONTROL_BAD, CONTROL_GOOD)
        add("control", story, model_a=a, model_b=b, letter_a=letter_of[a],
            letter_b=letter_of[b], choice=choose(a, b, True))  # fmt: skip
    first = next((it for it in items if it["kind"] == "likert"), None)
    if first is not None:
        story, model = str(first["story_id"]), str(first["model"])
        add("likert", story, model=model, letter=letter_of[model], ratings=likert(story, model),
            repeat_of=first["item_id"])  # fmt: skip
    return RatingFile.model_validate(
        {
            "version": RATING_FORMAT_VERSION, "format": RATING_FORMAT, "synthetic": True,
            "note": SYNTHETIC_NOTICE, "rater_id": f"synthetic-{index:02d}",
            "session_id": f"{int(rng.integers(0, 2**63)):016x}",
            "release": data.manifest.release, "root_hash": data.manifest.root_hash,
            "started_at": STARTED_AT, "finished_at": STARTED_AT, "letters": letters,
            "items": items, "truth": {"model_means": mu, "careless": careless},
        },
        strict=False,
    )  # fmt: skip


def simulate_raters(
    release_dir: str | Path,
    n_raters: int,
    seed: int,
    *,
    careless_share: float = 0.25,
    n_likert: int = 24,
    n_pairwise: int = 8,
    n_control: int = 4,
) -> list[RatingFile]:
    """``n_raters`` synthetic rating files for the release (deterministic in ``seed``)."""
    if n_raters < 1:
        raise InputError("need at least one rater")
    if not 0.0 <= careless_share <= 1.0:
        raise InputError("the careless share must lie between 0 and 1")
    data = load_site_data(release_dir)
    pool = story_pool(data)
    if not pool:
        raise InputError("the release has no story with a complete image strip", file=release_dir)
    rng = np.random.default_rng(seed)
    mu = true_means(data, rated_condition(data))
    story_fx = {s.story_id: float(rng.normal(0.0, STORY_SD)) for s in pool}
    all_targets = [(s.story_id, m) for s in pool for m in sorted(s.images)]
    pick = rng.choice(len(all_targets), size=min(n_likert, len(all_targets)), replace=False)
    targets = [all_targets[int(k)] for k in sorted(pick)]
    n_careless = round(careless_share * n_raters)
    careless = set(int(k) for k in rng.choice(n_raters, size=n_careless, replace=False))
    n_ctrl = n_control if has_controls(pool) else 0
    return [
        _rater(rng, i + 1, i in careless, data, pool, targets, story_fx, mu, n_pairwise, n_ctrl)
        for i in range(n_raters)
    ]


def write_simulated(
    out_dir: str | Path, files: list[RatingFile], release_dir: str | Path
) -> list[Path]:
    """Write each file as ``OUT/<rater_id>.json``; never inside the (hashed) release."""
    out = Path(out_dir)
    if out.resolve().is_relative_to(Path(release_dir).resolve()):
        raise InputError("write synthetic ratings outside the release directory", file=out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in files:
        p = out / f"{f.rater_id}.json"
        atomic_write_json(p, f.model_dump(mode="json"))
        paths.append(p)
    return paths
