"""``vsb release export RELEASE --format hf --out DIR``: a frozen release as a Hugging Face
dataset folder, for readers who load results without installing vsb.

The folder holds one Parquet file per table under ``data/`` — ``stories``, ``scenes``,
``requirements`` (the suite), ``images`` (one row per generated image, with its relative
path), ``verdicts`` (every evaluator's requirement rows), ``signals`` (continuous signals) and
``scores`` (``scores/model_scores.csv``) — the release's images under ``images/`` at the same
relative paths (hard links where the filesystem allows, else copies), and a dataset card
``README.md`` whose YAML front matter names each config and its ``data_files``, and whose text
states the release's root hash and oracle commitment. Values whose type varies from row to
row (a requirement's expected value) are stored as JSON text.

The release is verified first (a changed release is not exported); the folder is written
beside ``DIR`` and renamed into place, so a failed export leaves nothing half-written. The
export is a view of the release, not part of it: its files are not in the manifest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsb.errors import InputError
from vsb.fsio import _umask, iter_jsonl, load_json
from vsb.release.manifest import COVERAGE, Manifest, verify_or_raise
from vsb.tables import iter_rows, requirements_file, signals_file

FORMATS = ("hf",)
#: Config name -> what its rows are (the dataset card's table), in card order.
CONFIGS: dict[str, str] = {
    "verdicts": "one row per (evaluator, model, condition, story, scene, requirement): the verdict",
    "scores": "one row per (evaluator, model, condition, metric): the score, its CI and rank",
    "signals": "one row per (evaluator, model, condition, story, scene, signal): its value",
    "images": "one row per generated image: model, condition, story, scene, relative path",
    "requirements": "one row per requirement of the suite: the checkable fact",
    "scenes": "one row per scene: its text and events",
    "stories": "one row per story: category, difficulty, world",
}


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    out: Path
    rows: dict[str, int]
    images: int
    linked: bool


def _js(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _suite_tables(release: Path) -> tuple[list[dict], list[dict], list[dict]]:
    index = load_json(release / "suite" / "suite.json")
    stories, scenes, reqs = [], [], []
    for entry in index["stories"]:
        story = load_json(release / "suite" / entry["file"])
        sid = story["id"]
        stories.append({
            "story_id": sid, "category": story["category"], "difficulty": story["difficulty"],
            "seed": story.get("seed"), "prompt_style": story.get("prompt_style"),
            "n_scenes": len(story["scenes"]),
            "n_requirements": sum(len(s["requirements"]) for s in story["scenes"]),
            "world": _js(story["world"]), "causal_links": _js(story.get("causal_links")),
        })  # fmt: skip
        for sc in story["scenes"]:
            scenes.append({
                "story_id": sid, "scene": sc["index"], "text": sc["text"],
                "events": _js(sc["events"]), "n_requirements": len(sc["requirements"]),
            })  # fmt: skip
            for r in sc["requirements"]:
                reqs.append({
                    "story_id": sid, "scene": sc["index"], "req_id": r["id"],
                    "dimension": r["dimension"], "source": r["source"],
                    "subject": r.get("subject"), "attribute": r.get("attribute"),
                    "expected": _js(r.get("expected")), "taxonomy": r.get("taxonomy"),
                    "causal_link": _js(r.get("causal_link")),
                })  # fmt: skip
    return stories, scenes, reqs


def _with_image(rows: Iterable[dict], paths: dict[tuple, str | None]) -> list[dict]:
    out = []
    for r in rows:
        key = (r.get("model"), r.get("condition"), r.get("story_id"), r.get("scene"))
        out.append({**r, "image": paths.get(key)})
    return out


def _frame(rows: list[dict]) -> Any:
    import pandas as pd

    frame = pd.DataFrame(rows)
    for col in frame.columns:  # mixed-type columns (JSON values) as text
        kinds = {type(v) for v in frame[col] if v is not None and v == v}
        if len(kinds) > 1 or kinds & {dict, list}:
            frame[col] = [None if v is None else _js(v) for v in frame[col]]
    return frame


def dataset_card(manifest: Manifest, rows: dict[str, int], images: int) -> str:
    """The dataset card: YAML front matter (configs and data_files) and a text stating the
    release, its root hash and oracle commitment, and what each table holds."""
    front = ["---", f"pretty_name: VSB release {manifest.release}", "configs:"]
    for i, name in enumerate(CONFIGS):
        front += [f"- config_name: {name}", "  data_files:", "  - split: train",
                  f"    path: data/{name}.parquet"]  # fmt: skip
        if i == 0:
            front.append("  default: true")
    front += ["tags:", "- visual-story-benchmark", "- text-to-image", "- evaluation", "---", ""]
    table = "\n".join(f"| `{n}` | {rows[n]:,} | {CONFIGS[n]} |" for n in CONFIGS)
    body = f"""# VSB release {manifest.release}

The results of release **{manifest.release}** of the Visual Story Benchmark, exported by vsb
{manifest.vsb_version} for loading without vsb. This folder is a view of the release, not part
of it: to check the numbers are the published ones, verify the release itself.

- Root hash (SHA-256): `{manifest.root_hash}`
- Oracle commitment (SHA-256): `{manifest.oracle_sha256 or "none (no oracle)"}`

{COVERAGE}

| config | rows | what a row is |
| --- | --- | --- |
{table}

The {images:,} images lie under `images/` at the relative paths the `image` column of
`images`, `verdicts` and `signals` names. Values whose type varies (a requirement's
`expected`, a story's `world`) are JSON text.

```python
from datasets import load_dataset
verdicts = load_dataset("parquet", data_files="data/verdicts.parquet", split="train")
# or: pandas.read_parquet("data/verdicts.parquet")
```
"""
    return "\n".join(front) + body


def _place_images(release: Path, out: Path, rels: Iterable[str]) -> tuple[int, bool]:
    n, linked = 0, True
    for rel in sorted(set(rels)):
        src, dest = release / rel, out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dest)
        except OSError:
            shutil.copyfile(src, dest)
            linked = False
        n += 1
    return n, linked


def export_release(release_dir: str | Path, out: str | Path, fmt: str = "hf") -> ExportResult:
    """Export a frozen, intact release as a dataset folder at ``out`` (see the module doc)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    release, dest = Path(release_dir), Path(out)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InputError("the export folder exists and is not empty; name a new one", file=dest)
    manifest = verify_or_raise(release)
    stories, scenes, reqs = _suite_tables(release)
    records = [r for _, r in iter_jsonl(release / "records.jsonl")]
    paths = {
        (r["model"], r["condition"], r["story_id"], r["scene"]): r.get("path") for r in records
    }
    images = [
        {"model": r["model"], "condition": r["condition"], "story_id": r["story_id"],
         "scene": r["scene"], "image": r.get("path"), "sha256": r.get("sha256"),
         "error": r.get("error"), "refused": bool(r.get("refused"))}
        for r in records
    ]  # fmt: skip
    verdicts = _with_image((r for _, r in iter_rows(requirements_file(release))), paths)
    sig_file = signals_file(release)
    signals = _with_image((r for _, r in iter_rows(sig_file)), paths) if sig_file.is_file() else []
    import pandas as pd

    tables: dict[str, Any] = {
        "verdicts": _frame(verdicts),
        "scores": pd.read_csv(release / "scores" / "model_scores.csv"),
        "signals": _frame(signals),
        "images": _frame(images),
        "requirements": _frame(reqs),
        "scenes": _frame(scenes),
        "stories": _frame(stories),
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700
        (tmp / "data").mkdir()
        for name, frame in tables.items():
            frame.to_parquet(tmp / "data" / f"{name}.parquet", index=False)
        n_images, linked = _place_images(release, tmp, (r["image"] for r in images if r["image"]))
        rows = {name: len(frame) for name, frame in tables.items()}
        (tmp / "README.md").write_text(dataset_card(manifest, rows, n_images), "utf-8")
        if dest.exists():
            dest.rmdir()  # empty (checked above)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportResult(out=dest, rows=rows, images=n_images, linked=linked)
