"""scripts/readme_figures.py: the README's figures are written from a release and checked
against it (CI runs ``--check`` on a fresh build of the default release)."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "readme_figures.py"
_spec = importlib.util.spec_from_file_location("readme_figures", SCRIPT)
assert _spec is not None and _spec.loader is not None
figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figures)

MODELS = ("procedural-oracle", "procedural-sloppy")
CONDITIONS = ("independent", "structured_memory", "random_context", "predicted_memory")
SUMMARIES = ("global", "coherence", "adherence", "conditional_coherence")


def _write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def fake_release(root: Path, *, root_hash: str = "ab" * 32) -> Path:
    """A small release: the files the figures read, in the release's formats."""
    rel = root / "build" / "v9" / "release"
    (rel / "suite").mkdir(parents=True)
    (rel / "MANIFEST.json").write_text(json.dumps({"release": "v9", "root_hash": root_hash}))
    story = {"scenes": [
        {"requirements": [{"source": "prompt"}, {"source": "prompt"}]},
        {"requirements": [{"source": "memory"}, {"source": "prompt"}, {"source": "memory"}]},
    ]}  # fmt: skip
    (rel / "suite" / "s1.json").write_text(json.dumps(story))
    (rel / "suite" / "suite.json").write_text(json.dumps({"stories": [{"file": "s1.json"}]}))
    (rel / "scores").mkdir()
    (rel / "scores" / "scores.json").write_text(json.dumps({"primary_evaluator": "rules"}))
    scores = []
    for i, m in enumerate(MODELS):
        for c in CONDITIONS:
            for metric in SUMMARIES:
                v = 1.0 - 0.25 * i
                scores.append({
                    "evaluator": "rules", "model": m, "condition": c, "rank": i + 1,
                    "metric_kind": "summary", "metric": metric, "score": v,
                    "ci_low": v - 0.01 * i, "ci_high": v, "rank_low": i + 1, "rank_high": i + 1,
                })  # fmt: skip
    for i, m in enumerate(figures.READERS):  # the readers: the ceiling table, the 77 line
        for c in figures.CEILING_CONDITIONS:
            for metric in SUMMARIES:
                v = 0.9 - 0.5 * i
                scores.append({
                    "evaluator": "rules", "model": m, "condition": c, "rank": 9,
                    "metric_kind": "summary", "metric": metric, "score": v,
                    "ci_low": v - 0.02, "ci_high": v + 0.02, "rank_low": 9, "rank_high": 9,
                })  # fmt: skip
    _write_csv(rel / "scores" / "model_scores.csv", scores)
    comps = []
    for i, m in enumerate(MODELS):
        for a, b in (("structured_memory", "independent"), ("independent", "random_context"),
                     ("structured_memory", "random_context"), ("independent", "predicted_memory"),
                     ("structured_memory", "predicted_memory")):  # fmt: skip
            d = -0.2 * i if a == "structured_memory" else 0.0
            if b == "predicted_memory":  # independent − predicted, stored b − a: flipped
                d = 0.05 if a == "independent" else 0.1 * i
            comps.append({
                "evaluator": "rules", "kind": "condition", "a_model": m, "a_condition": a,
                "b_condition": b, "metric_kind": "summary", "metric": "coherence",
                "diff": d, "ci_low": d - 0.05 * i, "ci_high": d + 0.05 * i,
            })  # fmt: skip
    _write_csv(rel / "scores" / "comparisons.csv", comps)
    tax = []
    for m, n, det in (("procedural-oracle", 0, 0), ("procedural-sloppy", 10, 9)):
        for label in ("order_swap", "all"):
            r = "" if n == 0 else str(det / n)
            tax.append({
                "evaluator": "rules", "model": m, "taxonomy": label, "n_faults": n,
                "n_detected": det, "recall": r, "recall_ci_low": r, "recall_ci_high": r,
                "precision": "" if n == 0 else "1.0", "precision_ci_low": r,
                "precision_ci_high": r,
            })  # fmt: skip
    _write_csv(rel / "validation" / "taxonomy_by_model.csv", tax)
    _write_csv(
        rel / "validation" / "taxonomy.csv",
        [
            {k: v for k, v in t.items() if k != "model"}
            for t in tax
            if t["model"] != "procedural-oracle"
        ],
    )
    sens = [
        {"evaluator": "rules", "model": m, "condition": "independent", "metric_kind": kind,
         "metric": metric, "diff": 0.01 * i, "ci_low": -0.02, "ci_high": 0.03}
        for i, m in enumerate(MODELS)
        for kind, metric in (("summary", "global"), ("summary", "adherence"),
                             ("summary", "coherence"), ("dimension", "identity"))
    ]  # fmt: skip
    _write_csv(rel / "sensitivity" / "prompt_sensitivity.csv", sens)
    implicit = [
        {"evaluator": "rules", "model": m, "condition": c, "explicit_pass": 0.9,
         "implicit_pass": 0.9 - 0.2 * i, "diff": -0.2 * i, "ci_low": -0.3 * i,
         "ci_high": -0.1 * i, "p_less": 1.0, "n_checks": 68, "n_stories": 18}
        for i, m in enumerate(MODELS)
        for c in ("independent", "structured_memory")
    ]  # fmt: skip
    _write_csv(rel / "sensitivity" / "implicit_effects.csv", implicit)
    validity = {  # VinaBench's metrics against the oracle (validation/vinabench_validity.json)
        "questions": 12, "judge": "literal", "models": list(MODELS),
        "conditions": ["structured_memory"],
        "metrics": [{"model": m, "metric": "char_num_align", "spearman": 0.5, "false_alarms": 0,
                     "clean": 3} for m in (*MODELS, "all")],
        "labels": [{"model": m, "metric": "char_num_align", "label": label, "recall": 0.9,
                    "precision": 1.0, "recall_alone": 1.0}
                   for m in (*MODELS, "all") for label in ("any", "character_missing")],
    }  # fmt: skip
    (rel / "validation" / "vinabench_validity.json").write_text(json.dumps(validity))
    return rel


def _doc(root: Path) -> Path:
    readme = root / "README.md"
    blocks = "\n\n".join(
        f"<!-- figures:{name} -->\nold\n<!-- /figures:{name} -->" for name in figures.FIGURES
    )
    readme.write_text(f"# project\n\nprose\n\n{blocks}\n\nmore prose\n", "utf-8")
    return readme


def _script(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True
    )


def test_write_then_check_agrees_and_an_edited_figure_fails(tmp_path: Path) -> None:
    fake_release(tmp_path)
    readme = _doc(tmp_path)
    build = tmp_path / "build" / "v9"
    assert _script("--release", build, "--root", tmp_path, "--check").returncode == 1
    wrote = _script("--release", build, "--root", tmp_path, "--write")
    assert wrote.returncode == 0, wrote.stderr
    text = readme.read_text("utf-8")
    assert "--expect-root " + "ab" * 32 in text
    assert "1 stories, 2 scenes and 5 requirements" in text and "3 stated" in text
    assert "| procedural-sloppy | 10 | 0.900" in text and "order_swap 9/10" in text
    # predicted gain = −(independent − predicted); memory − predicted as stored
    row = "| procedural-sloppy | −0.200 [−0.250, −0.150] | −0.050 [−0.100, 0.000] | "
    assert row + "+0.100 [+0.050, +0.150] |" in text
    assert "| procedural-sloppy | independent | +0.010 [−0.020, +0.030] | +0.010" in text
    assert (
        "| procedural-sloppy | structured_memory | 0.900 | 0.700 | −0.200 [−0.300, −0.100] | 68 |"
        in text
    )
    assert text.startswith("# project\n\nprose\n") and text.endswith("more prose\n")
    ok = _script("--release", build, "--root", tmp_path, "--check")
    assert ok.returncode == 0, ok.stderr
    # a figure edited by hand (one digit of the leaderboard) fails the check, by name
    readme.write_text(text.replace("| 0.750 |", "| 0.751 |", 1), "utf-8")
    bad = _script("--release", build, "--root", tmp_path, "--check")
    assert bad.returncode == 1
    assert "README.md: figure 'leaderboard' disagrees" in bad.stderr
    assert "--write" in bad.stderr


def test_a_new_build_makes_the_readme_stale(tmp_path: Path) -> None:
    fake_release(tmp_path)
    _doc(tmp_path)
    build = tmp_path / "build" / "v9"
    figures.run(build, tmp_path, write=True)
    (build / "release" / "MANIFEST.json").write_text(
        json.dumps({"release": "v9", "root_hash": "cd" * 32})
    )
    assert figures.run(build, tmp_path, write=False) == [
        f"README.md: figure 'root-hash' disagrees with {build / 'release'}"
    ]


def test_docs_are_checked_too_and_broken_markers_are_errors(tmp_path: Path) -> None:
    fake_release(tmp_path)
    (tmp_path / "README.md").write_text("no figures\n")
    (tmp_path / "docs").mkdir()
    doc = tmp_path / "docs" / "validation.md"
    doc.write_text("<!-- figures:validation -->\nstale\n<!-- /figures:validation -->\n")
    stale = figures.run(tmp_path / "build" / "v9", tmp_path, write=False)
    assert stale and stale[0].startswith("docs/validation.md: figure 'validation'")
    doc.write_text("<!-- figures:nonsense -->\nx\n<!-- /figures:nonsense -->\n")
    with pytest.raises(figures.FigureError, match="unknown figure 'nonsense'"):
        figures.run(tmp_path / "build" / "v9", tmp_path, write=False)
    no_release = _script("--release", tmp_path / "nowhere", "--root", tmp_path, "--check")
    assert no_release.returncode == 2
    assert "no MANIFEST.json" in no_release.stderr and "Traceback" not in no_release.stderr


def test_the_committed_readme_has_every_figure_marked() -> None:
    """Every figure the script writes appears in README.md or docs/ (none silently dropped)."""
    root = SCRIPT.parents[1]
    text = "".join(p.read_text("utf-8") for p in figures.documents(root))
    for name in figures.FIGURES:
        assert f"<!-- figures:{name} -->" in text, name
