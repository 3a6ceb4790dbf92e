"""A small synthetic, frozen release (3 stories, 3 models, 2 conditions) for the site tests.

Scores and judge validation are computed by the real vsb.scores / vsb.validation code from
synthetic requirement rows; one model name and one scene text are hostile markup.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

from vsb.generator.generate import generate_suite, write_suite
from vsb.release.manifest import freeze
from vsb.scores.compute import score_run
from vsb.scores.stats.bootstrap import Resampling
from vsb.scores.write import write_scores
from vsb.story.models import Story
from vsb.tables import write_requirements, write_signals
from vsb.validation.judge import validate_run, write_judge

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
HOSTILE_MODEL = f"evil{HOSTILE}"
MODELS = ("alpha", "beta", HOSTILE_MODEL)
CONDITIONS = ("independent", "structured_memory")
P_FAIL = {"alpha": 0.05, "beta": 0.2, HOSTILE_MODEL: 0.4, "procedural-oracle": 0.0,
          "procedural-drift-mid": 0.15}  # fmt: skip
RELEASE = "v0.0.1-test"


def _png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), color).save(buf, format="PNG")
    return buf.getvalue()


def _hostile_story(story: Story) -> Story:
    scenes = list(story.scenes)
    scenes[0] = scenes[0].model_copy(update={"text": scenes[0].text + " " + HOSTILE})
    return story.model_copy(update={"scenes": scenes})


def make_release(
    root: Path,
    *,
    full: bool = False,
    models: tuple[str, ...] = MODELS,
    conditions: tuple[str, ...] = CONDITIONS,
    stories: list[Story] | None = None,
    hostile: bool = True,
    n_resamples: int = 200,
    release: str = RELEASE,
    legacy: bool = False,
) -> Path:
    """Write the synthetic release under ``root`` and freeze it; returns ``root``.
    ``full``: every story of the default suite (for timing the site at full size);
    ``stories``: these stories instead (e.g. a ``--per-cell`` suite); ``legacy``: the
    evaluation tables as JSON lines, as releases held them before Parquet."""
    suite = generate_suite(0)
    pick = [s for s in suite if s.category == "cause_effect" and s.difficulty != "medium"]
    pick += [s for s in suite if s.id == "counting-medium-a"]
    if full:
        pick = list(suite)
    if stories is not None:
        pick = list(stories)
    if hostile:
        pick[0] = _hostile_story(pick[0])
    write_suite(pick, root / "suite", seed=0)
    rng = np.random.default_rng(7)
    records, reqs, signals, faults = [], [], [], []
    for mi, model in enumerate(models):
        folder = f"m{mi}"
        for cond in conditions:
            for story in pick:
                for scene in story.scenes:
                    k = scene.index
                    rel = f"images/{folder}/{cond}/{story.id}/scene_{k:02d}.png"
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_bytes(_png((40 * mi + 60, 20 * k, 150)))
                    records.append(
                        {"model": model, "condition": cond, "story_id": story.id, "scene": k,
                         "key": f"{mi}{cond}{story.id}{k}", "path": rel, "sha256": "0" * 64,
                         "cost_usd": None, "error": None}
                    )  # fmt: skip
                    p = P_FAIL.get(model, 0.1) * (0.5 if cond == "structured_memory" else 1.0)
                    for req in scene.requirements:
                        passed = bool(rng.random() >= (p if req.source == "memory" else p / 3))
                        reqs.append(
                            {"model": model, "condition": cond, "story_id": story.id,
                             "scene": k, "req_id": req.id, "dimension": req.dimension,
                             "taxonomy": req.taxonomy, "source": req.source,
                             "subject": req.subject, "attribute": req.attribute,
                             "expected": json.dumps(req.expected),
                             "observed": json.dumps(req.expected if passed else HOSTILE),
                             "passed": passed, "failure": "" if passed else req.taxonomy,
                             "evaluator": "rules"}
                        )  # fmt: skip
                        if not passed and rng.random() < 0.8:
                            faults.append(
                                {"model": model, "condition": cond, "story_id": story.id,
                                 "scene": k, "subject": req.subject,
                                 "attribute": req.attribute, "true_value": req.expected,
                                 "rendered_value": "x", "taxonomy": req.taxonomy,
                                 "dimension": req.dimension, "visual": True, "origin": "new"}
                            )  # fmt: skip
                    signals.append(
                        {"model": model, "condition": cond, "story_id": story.id, "scene": k,
                         "signal": "pairwise_global", "value": float(rng.random())}
                    )  # fmt: skip

    def jsonl(rows: list[dict[str, object]]) -> str:
        return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)

    (root / "records.jsonl").write_text(jsonl(records))
    (root / "evaluations").mkdir()
    if legacy:
        (root / "evaluations" / "requirements.jsonl").write_text(jsonl(reqs))
        (root / "evaluations" / "signals.jsonl").write_text(jsonl(signals))
    else:
        write_requirements(root / "evaluations" / "requirements.parquet", reqs)
        write_signals(root / "evaluations" / "signals.parquet", signals)
    (root / "oracle").mkdir()
    (root / "oracle" / "faults.jsonl").write_text(jsonl(faults))
    manifest = {
        "version": "1.0", "suite": "suite", "suite_sha256": "0" * 64, "models": list(models),
        "conditions": list(conditions), "seed": 0, "prompt_style": "plain",
        "images": len(records),
    }  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest))
    write_scores(root, score_run(root, settings=Resampling(n_resamples=n_resamples, n_draws=200)))
    write_judge(root, validate_run(root))
    freeze(root, release)
    return root
