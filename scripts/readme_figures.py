#!/usr/bin/env python3
"""Write, or check, the README's figures from a built release.

Every figure of README.md and docs/*.md that comes from the default release lies between two
markers, ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->``; this script computes the
text between them from the release's own files (MANIFEST.json, suite/, scores/,
validation/, sensitivity/), so the prose can never drift from the build:

    python scripts/readme_figures.py --release build/v0.1.0 --write   # rewrite the blocks
    python scripts/readme_figures.py --release build/v0.1.0 --check   # exit 1 naming each stale one

``--release`` takes the build folder (``build/v0.1.0``) or its ``release/`` folder. Only the
standard library is used (the release's CSV and JSON files), so it runs in any Python >= 3.11.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(
    r"(?P<open><!-- figures:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)"
    r"(?P<close><!-- /figures:(?P=name) -->)",
    re.S,
)
PRIMARY_CONDITION = "structured_memory"
PREDICTED_CONDITION = "predicted_memory"
METHODOLOGY_REQUIREMENTS = 3865
"""The requirement count the methodology's example suite states (the README compares)."""


class FigureError(Exception):
    """A release that lacks what a figure needs, or a document whose markers are broken."""


def release_dir(path: Path) -> Path:
    """The folder holding MANIFEST.json: PATH itself or PATH/release."""
    for cand in (path, path / "release"):
        if (cand / "MANIFEST.json").is_file():
            return cand
    raise FigureError(f"{path}: no MANIFEST.json here or in release/ (build the release first)")


def _csv(rel: Path, name: str) -> list[dict[str, str]]:
    path = rel / name
    if not path.is_file():
        raise FigureError(f"{path}: missing (the figures need it)")
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _json(path: Path) -> dict:
    if not path.is_file():
        raise FigureError(f"{path}: missing (the figures need it)")
    return json.loads(path.read_text("utf-8"))


def _f3(x: str | float) -> str:
    return f"{float(x):.3f}"


def _signed(x: str | float) -> str:
    v = float(x)
    if abs(v) < 5e-4:
        return "0.000"
    return f"{'+' if v > 0 else '−'}{abs(v):.3f}"


def _ci(lo: str, hi: str, fmt: Callable[[str], str] = _f3) -> str:
    return f"[{fmt(lo)}, {fmt(hi)}]"


# --- the figures ------------------------------------------------------------------------


def fig_root_hash(rel: Path) -> str:
    manifest = _json(rel / "MANIFEST.json")
    root = manifest["root_hash"]
    return (
        "```bash\n"
        f"vsb release verify ../build/{manifest['release']}/release --expect-root {root}"
        "  # needs: release build\n"
        "```\n"
    )


def _suite_counts(rel: Path) -> dict[str, int]:
    index = _json(rel / "suite" / "suite.json")
    counts = {"stories": 0, "scenes": 0, "requirements": 0, "prompt": 0, "memory": 0}
    for entry in index["stories"]:
        story = _json(rel / "suite" / entry["file"])
        counts["stories"] += 1
        counts["scenes"] += len(story["scenes"])
        for scene in story["scenes"]:
            for req in scene["requirements"]:
                counts["requirements"] += 1
                counts[req["source"]] = counts.get(req["source"], 0) + 1
    return counts


def fig_suite_counts(rel: Path) -> str:
    c = _suite_counts(rel)
    delta = 100 * (c["requirements"] - METHODOLOGY_REQUIREMENTS) / METHODOLOGY_REQUIREMENTS
    return (
        f"{c['stories']} stories, {c['scenes']:,} scenes and {c['requirements']:,} requirements "
        f"({delta:+.1f} % against the methodology's {METHODOLOGY_REQUIREMENTS:,}): "
        f"{c['prompt']:,} stated in the scene text (`prompt`) and {c['memory']:,} carried "
        "from earlier scenes (`memory`).\n"
    )


def _scores(rel: Path) -> dict[tuple[str, str, str, str], dict[str, str]]:
    rows = _csv(rel, "scores/model_scores.csv")
    return {
        (r["evaluator"], r["model"], r["condition"], r["metric"]): r
        for r in rows
        if r["metric_kind"] == "summary"
    }


def _primary_evaluator(rel: Path) -> str:
    return str(_json(rel / "scores" / "scores.json").get("primary_evaluator") or "rules")


def fig_leaderboard(rel: Path) -> str:
    ev = _primary_evaluator(rel)
    scores = _scores(rel)
    cells = [k for k in scores if k[0] == ev and k[2] == PRIMARY_CONDITION and k[3] == "global"]
    cells.sort(key=lambda k: (int(scores[k]["rank"]), k[1]))
    if not cells:
        raise FigureError(f"{rel}: no {ev} scores under {PRIMARY_CONDITION}")
    out = [
        "| rank [range] | model | global | memory coherence [95 % CI] | adherence | "
        "conditional coherence |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for key in cells:
        g = scores[key]
        coh = scores[(ev, key[1], PRIMARY_CONDITION, "coherence")]
        adh = scores[(ev, key[1], PRIMARY_CONDITION, "adherence")]
        cond = scores[(ev, key[1], PRIMARY_CONDITION, "conditional_coherence")]
        out.append(
            f"| {g['rank']} [{g['rank_low']}–{g['rank_high']}] | {key[1]} | {_f3(g['score'])} | "
            f"{_f3(coh['score'])} {_ci(coh['ci_low'], coh['ci_high'])} | {_f3(adh['score'])} | "
            f"{_f3(cond['score'])} |"
        )
    return "\n".join(out) + "\n" + _reach(rel)


READERS = ("procedural-reader", "procedural-reader-77")
CEILING_CONDITIONS = (
    "independent", "previous_text", "structured_memory", "summarized_state", "full_context",
)  # fmt: skip


def _reach(rel: Path) -> str:
    """What the readers reach under the primary condition: the leaderboard's 77-token line."""
    ev = _primary_evaluator(rel)
    scores = _scores(rel)
    try:
        whole, short = (
            {m: scores[(ev, r, PRIMARY_CONDITION, m)]["score"] for m in ("adherence", "coherence")}
            for r in READERS
        )
    except KeyError:
        return ""
    return (
        f"\nWhat the prompt carries caps what a model can reach: `procedural-reader`, which "
        f"draws only what its prompt states, reaches memory coherence {_f3(whole['coherence'])} "
        f"and adherence {_f3(whole['adherence'])} under `{PRIMARY_CONDITION}`; read through a "
        f"77-token CLIP encoder (Stable Diffusion 1.5, SDXL without chunked encoding), "
        f"`procedural-reader-77` reaches only {_f3(short['coherence'])} and "
        f"{_f3(short['adherence'])}: the structured memory comes first and pushes the scene "
        "text out ([the ceiling per condition](docs/analysis.md#the-information-ceiling)).\n"
    )


def fig_reader_ceiling(rel: Path) -> str:
    """The readers' adherence and memory coherence per text condition (docs/analysis.md)."""
    ev = _primary_evaluator(rel)
    scores = _scores(rel)
    out = [
        "| condition | reader: adherence | reader: memory coherence [95 % CI] | "
        "reader-77: adherence | reader-77: memory coherence [95 % CI] |",
        "| --- | --- | --- | --- | --- |",
    ]
    for cond in CEILING_CONDITIONS:
        cells = []
        for r in READERS:
            a, c = scores.get((ev, r, cond, "adherence")), scores.get((ev, r, cond, "coherence"))
            if a is None or c is None:
                raise FigureError(f"{rel}: no {ev} scores of {r} under {cond}")
            cells += [_f3(a["score"]), f"{_f3(c['score'])} {_ci(c['ci_low'], c['ci_high'])}"]
        out.append(f"| {cond} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def fig_sloppy(rel: Path) -> str:
    ev = _primary_evaluator(rel)
    scores = _scores(rel)
    model, cond = "procedural-sloppy", "independent"
    try:
        c, a, s = (
            scores[(ev, model, cond, m)]
            for m in ("conditional_coherence", "adherence", "coherence")
        )
    except KeyError:
        raise FigureError(f"{rel}: no {ev} scores of {model} under {cond}") from None
    return (
        f"under `{cond}` its conditional coherence is {_f3(c['score'])} against an adherence "
        f"of {_f3(a['score'])}, while its strict coherence ({_f3(s['score'])}) is dragged "
        "down by omissions.\n"
    )


def fig_memory_gain(rel: Path) -> str:
    ev = _primary_evaluator(rel)
    rows = _csv(rel, "scores/comparisons.csv")
    diff: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        wanted = (r["kind"], r["metric_kind"], r["metric"], r["evaluator"])
        if wanted == ("condition", "summary", "coherence", ev):
            diff[(r["a_model"], r["a_condition"], r["b_condition"])] = r
    models = sorted({k[0] for k in diff}, key=lambda m: -float(
        diff.get((m, PRIMARY_CONDITION, "independent"), {"diff": "0"})["diff"]))  # fmt: skip
    out = [
        "| model | memory gain [95 % CI] | placebo gain [95 % CI] | memory − placebo [95 % CI] |",
        "| --- | --- | --- | --- |",
    ]
    for m in models:
        mem = diff.get((m, PRIMARY_CONDITION, "independent"))
        plc = diff.get((m, "independent", "random_context"))  # independent − placebo
        mvp = diff.get((m, PRIMARY_CONDITION, "random_context"))
        if mem is None or plc is None or mvp is None:
            raise FigureError(f"{rel}: comparisons lack a condition pair of {m}")
        neg = lambda x: str(-float(x))  # noqa: E731  placebo − independent
        out.append(
            f"| {m} | {_signed(mem['diff'])} {_ci(mem['ci_low'], mem['ci_high'], _signed)} | "
            f"{_signed(neg(plc['diff']))} "
            f"{_ci(neg(plc['ci_high']), neg(plc['ci_low']), _signed)} | "
            f"{_signed(mvp['diff'])} {_ci(mvp['ci_low'], mvp['ci_high'], _signed)} |"
        )
    return "\n".join(out) + "\n"


def _oriented(diff: dict[tuple[str, str, str], dict[str, str]], m: str, a: str, b: str) -> str:
    """``Δ [CI]`` of a − b for model ``m`` from a comparison stored either way round."""
    r = diff.get((m, a, b))
    if r is not None:
        return f"{_signed(r['diff'])} {_ci(r['ci_low'], r['ci_high'], _signed)}"
    r = diff.get((m, b, a))
    if r is None:
        raise FigureError(f"comparisons lack the pair {a} / {b} of {m}")
    neg = lambda x: str(-float(x))  # noqa: E731
    return f"{_signed(neg(r['diff']))} {_ci(neg(r['ci_high']), neg(r['ci_low']), _signed)}"


def fig_predicted_memory(rel: Path) -> str:
    """Memory gain under imperfect extraction: structured_memory − independent,
    predicted_memory − independent and structured_memory − predicted_memory."""
    ev = _primary_evaluator(rel)
    diff: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in _csv(rel, "scores/comparisons.csv"):
        wanted = (r["kind"], r["metric_kind"], r["metric"], r["evaluator"])
        if wanted == ("condition", "summary", "coherence", ev):
            diff[(r["a_model"], r["a_condition"], r["b_condition"])] = r
    models = sorted({k[0] for k in diff}, key=lambda m: -float(
        diff.get((m, PRIMARY_CONDITION, "independent"), {"diff": "0"})["diff"]))  # fmt: skip
    out = [
        "| model | memory gain [95 % CI] | predicted gain [95 % CI] | "
        "memory − predicted [95 % CI] |",
        "| --- | --- | --- | --- |",
    ]
    for m in models:
        try:
            cells = [
                _oriented(diff, m, PRIMARY_CONDITION, "independent"),
                _oriented(diff, m, PREDICTED_CONDITION, "independent"),
                _oriented(diff, m, PRIMARY_CONDITION, PREDICTED_CONDITION),
            ]
        except FigureError as err:
            raise FigureError(f"{rel}: {err}") from None
        out.append(f"| {m} | {' | '.join(cells)} |")
    return "\n".join(out) + "\n"


def fig_validation(rel: Path) -> str:
    ev = _primary_evaluator(rel)
    rows = [r for r in _csv(rel, "validation/taxonomy_by_model.csv") if r["evaluator"] == ev]
    by_model: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        by_model.setdefault(r["model"], []).append(r)
    overall = {
        r["taxonomy"]: r for r in _csv(rel, "validation/taxonomy.csv") if r["evaluator"] == ev
    }
    out = [
        "| simulator | injected faults | strict recall [95 % CI] | strict precision [95 % CI] | "
        "labels at 1.000 | below 1.000 (detected / faults) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def row(name: str, allrow: dict[str, str], labels: list[dict[str, str]]) -> str:
        if int(allrow["n_faults"]) == 0:
            return f"| {name} | 0 | — | — | — | — |"
        present = [r for r in labels if r["taxonomy"] != "all" and int(r["n_faults"]) > 0]
        perfect = [r for r in present if r["recall"] == r["precision"] == "1.0"]
        worse = [
            f"{r['taxonomy']} {r['n_detected']}/{r['n_faults']}"
            + (f", precision {_f3(r['precision'])}" if r["precision"] != "1.0" else "")
            for r in present
            if r not in perfect
        ]
        return (
            f"| {name} | {int(allrow['n_faults']):,} | {_f3(allrow['recall'])} "
            f"{_ci(allrow['recall_ci_low'], allrow['recall_ci_high'])} | "
            f"{_f3(allrow['precision'])} "
            f"{_ci(allrow['precision_ci_low'], allrow['precision_ci_high'])} | "
            f"{len(perfect)} of {len(present)} | {'; '.join(worse) or 'none'} |"
        )

    for model in sorted(by_model):
        labels = by_model[model]
        allrow = next(r for r in labels if r["taxonomy"] == "all")
        out.append(row(model, allrow, labels))
    if "all" in overall:
        out.append(row("all five", overall["all"], list(overall.values())))
    return "\n".join(out) + "\n"


def fig_prompt_sensitivity(rel: Path) -> str:
    rows = [
        r
        for r in _csv(rel, "sensitivity/prompt_sensitivity.csv")
        if r["metric_kind"] == "summary" and r["metric"] in ("global", "adherence", "coherence")
    ]
    by = {(r["model"], r["condition"], r["metric"]): r for r in rows}
    out = [
        "| model | condition | global, plain − paraphrase [95 % CI] | prompt adherence | "
        "memory coherence |",
        "| --- | --- | --- | --- | --- |",
    ]
    for m, c in dict.fromkeys((r["model"], r["condition"]) for r in rows):
        cells = []
        for metric in ("global", "adherence", "coherence"):
            r = by.get((m, c, metric))
            cells.append(
                "—" if r is None
                else f"{_signed(r['diff'])} {_ci(r['ci_low'], r['ci_high'], _signed)}"
            )  # fmt: skip
        out.append(f"| {m} | {c} | {' | '.join(cells)} |")
    return "\n".join(out) + "\n"


def fig_implicit_effects(rel: Path) -> str:
    out = [
        "| model | condition | pass rate, effect stated | pass rate, effect implicit | "
        "implicit − explicit [95 % CI] | checks |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in _csv(rel, "sensitivity/implicit_effects.csv"):
        out.append(
            f"| {r['model']} | {r['condition']} | {_f3(r['explicit_pass'])} | "
            f"{_f3(r['implicit_pass'])} | {_signed(r['diff'])} "
            f"{_ci(r['ci_low'], r['ci_high'], _signed)} | {r['n_checks']} |"
        )
    return "\n".join(out) + "\n"


def fig_vinabench_validity(rel: Path) -> str:
    """VinaBench's metrics against the oracle (validation/vinabench_validity.json): per
    metric and simulator, recall on any fault and ρ with memory coherence; then, pooled over
    the simulators, each fault label's recall / precision (recall alone) per metric."""
    doc = _json(rel / "validation/vinabench_validity.json")
    metrics = list(dict.fromkeys(m["metric"] for m in doc["metrics"]))
    pools = list(dict.fromkeys(m["model"] for m in doc["metrics"]))
    summary = {(m["model"], m["metric"]): m for m in doc["metrics"]}
    rows = {(r["model"], r["metric"], r["label"]): r for r in doc["labels"]}

    def f3(v: float | None) -> str:
        return "—" if v is None else _f3(v)

    out = [
        f"{doc['questions']:,} questions asked of the {doc['judge']} judge about "
        f"{', '.join(doc['models'])} under {', '.join(doc['conditions'])}; each cell: recall "
        "on units carrying any fault · Spearman ρ with memory coherence (rules).",
        "",
        "| metric | " + " | ".join(pools) + " |",
        "| --- |" + " --- |" * len(pools),
    ]
    for metric in metrics:
        cells = []
        for pool in pools:
            s, a = summary.get((pool, metric)), rows.get((pool, metric, "any"))
            cells.append("—" if s is None else f"{f3(a and a['recall'])} · {f3(s['spearman'])}")
        out.append(f"| {metric} | " + " | ".join(cells) + " |")
    pooled = [s for (pool, _), s in summary.items() if pool == pools[-1]]
    alarms, clean = sum(s["false_alarms"] for s in pooled), sum(s["clean"] for s in pooled)
    out += ["", f"False alarms (a clean unit failed): {alarms} of {clean:,} clean units.", ""]
    pool = pools[-1]
    labels = list(dict.fromkeys(r["label"] for r in doc["labels"] if r["model"] == pool))
    out += [
        f"Fault label × metric on {pool}: recall / precision (recall alone).",
        "",
        "| fault label | " + " | ".join(metrics) + " |",
        "| --- |" + " --- |" * len(metrics),
    ]
    for label in labels:
        cells = []
        for metric in metrics:
            r = rows.get((pool, metric, label))
            cells.append(
                "—"
                if r is None
                else f"{f3(r['recall'])} / {f3(r['precision'])} ({f3(r['recall_alone'])})"
            )
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


FIGURES: dict[str, Callable[[Path], str]] = {
    "root-hash": fig_root_hash,
    "suite-counts": fig_suite_counts,
    "leaderboard": fig_leaderboard,
    "sloppy": fig_sloppy,
    "memory-gain": fig_memory_gain,
    "predicted-memory": fig_predicted_memory,
    "validation": fig_validation,
    "vinabench-validity": fig_vinabench_validity,
    "prompt-sensitivity": fig_prompt_sensitivity,
    "implicit-effects": fig_implicit_effects,
    "reader-ceiling": fig_reader_ceiling,
}


# --- documents ------------------------------------------------------------------------


def documents(root: Path) -> list[Path]:
    """README.md and docs/*.md under ``root``."""
    docs = sorted((root / "docs").glob("*.md")) if (root / "docs").is_dir() else []
    return [p for p in [root / "README.md", *docs] if p.is_file()]


def refresh(text: str, figures: dict[str, str], where: str) -> tuple[str, list[str]]:
    """(text with every marked block rewritten, names of the blocks that changed)."""
    changed: list[str] = []
    for name in re.findall(r"<!-- figures:([^ ]+) -->", text):
        if name not in figures:
            raise FigureError(f"{where}: unknown figure {name!r} (known: {', '.join(figures)})")
    if text.count("<!-- figures:") != text.count("<!-- /figures:"):
        raise FigureError(f"{where}: a figures marker is not closed")

    def sub(m: re.Match[str]) -> str:
        new = figures[m["name"]]
        if m["body"] != new:
            changed.append(m["name"])
        return m["open"] + new + m["close"]

    return BLOCK.sub(sub, text), changed


def run(release: Path, root: Path, write: bool) -> list[str]:
    """Refresh (``write``) or check every document under ``root``; returns one line per
    stale block (empty: all agree)."""
    rel = release_dir(release)
    figures = {name: fn(rel) for name, fn in FIGURES.items()}
    stale: list[str] = []
    for doc in documents(root):
        text = doc.read_text("utf-8")
        new, changed = refresh(text, figures, str(doc))
        stale += [
            f"{doc.relative_to(root)}: figure {name!r} disagrees with {rel}" for name in changed
        ]
        if write and new != text:
            tmp = doc.with_name(doc.name + ".tmp")
            tmp.write_text(new, "utf-8")
            tmp.replace(doc)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", type=Path, required=True, help="build/NAME or its release/")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (README.md, docs/)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 when a figure is stale")
    mode.add_argument("--write", action="store_true", help="rewrite the stale figures")
    args = parser.parse_args(argv)
    try:
        stale = run(args.release, args.root, args.write)
    except FigureError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.write:
        print(f"rewrote {len(stale)} figure(s)" + "".join(f"\n  {s}" for s in stale))
        return 0
    for line in stale:
        print(line, file=sys.stderr)
    if stale:
        print(
            f"{len(stale)} README figure(s) disagree with the build; run "
            f"python scripts/readme_figures.py --release {args.release} --write",
            file=sys.stderr,
        )
        return 1
    print("README figures agree with the build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
