"""What a blinded session holds. It draws from the release's stories in the rated condition,
with each model's complete image strip (``story_pool``, :mod:`vsb.human.blinding`). The
``/evaluate`` page embeds ``evaluate_payload`` as JSON, under the opaque names of
:mod:`vsb.human.blinding`; ``vsb human simulate`` draws from the same ``story_pool``.

Only (story, model) pairs whose every scene has an image are offered; control items need
both control models (``CONTROL_GOOD``, ``CONTROL_BAD``) complete on a story.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vsb.human.blinding import Blinding, PoolStory
from vsb.human.models import (
    BLIND_FORMAT_VERSION,
    CONTROL_BAD,
    CONTROL_GOOD,
    RATED_DIMENSIONS,
    RATER_ID_RULE,
    RATING_FORMAT,
)

if TYPE_CHECKING:
    from vsb.site.data import SiteData


@dataclass(frozen=True)
class SessionConfig:
    """How many items of each kind one session holds (fewer when the release is small)."""

    n_likert: int = 8
    n_pairwise: int = 4
    n_control: int = 4
    n_repeat: int = 1


def has_controls(pool: list[PoolStory]) -> bool:
    """Whether some story has both control models complete."""
    return any(CONTROL_GOOD in s.images and CONTROL_BAD in s.images for s in pool)


def evaluate_payload(
    data: SiteData, blinding: Blinding, pool: list[PoolStory], config: SessionConfig | None = None
) -> dict[str, Any]:
    """The JSON the ``/evaluate`` page embeds: no model name, no control answer (see
    :mod:`vsb.human.blinding`). ``pool`` holds the strips the site copied (under
    ``blinding.image_name``)."""
    cfg = config or SessionConfig()
    stories = []
    for s in pool:
        strips = sorted(
            (
                {
                    "target": blinding.target(s.story_id, m),
                    "group": blinding.groups[m],
                    "images": [blinding.image_name(p) for p in paths],
                }
                for m, paths in s.images.items()
            ),
            key=lambda x: str(x["target"]),
        )
        stories.append({"texts": list(s.texts), "strips": strips})
    return {
        "version": BLIND_FORMAT_VERSION,
        "format": RATING_FORMAT,
        "release": data.manifest.release,
        "root_hash": data.manifest.root_hash,
        "dimensions": [{"key": k, "label": lab, "help": h} for k, lab, h in RATED_DIMENSIONS],
        "config": {"n_likert": cfg.n_likert, "n_repeat": cfg.n_repeat},
        "rater_id_pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        "rater_id_rule": RATER_ID_RULE,
        "n_groups": len(blinding.groups),
        "stories": stories,
        "decks": blinding.decks(pool, cfg.n_pairwise, cfg.n_control),
    }
