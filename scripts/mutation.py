"""Mutation testing of the measurement core, one module at a time (see docs/TESTING.md).

For each module of ``[tool.vsb-mutation.modules]`` in pyproject.toml (module -> the test
files that import it), this copies the working tree into ``build/mutation/<module>/``,
narrows mutmut's ``[tool.mutmut]`` section there to that one module and those tests, runs
``mutmut run`` and reads back every mutant's status. So a module's score counts only the
tests that import it, and the five runs never share mutmut's state.

Writes ``build/mutation/report.md`` (score table and every surviving mutant's diff) and
``build/mutation/report.json``; exits 1 when a module scores below ``--min-score``.
Standard library only; mutmut itself runs from ``--mutmut`` (scripts/mutation.sh installs
it into a venv of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: mutmut statuses that count as a caught mutant (tests failed, or ran past the timeout).
CAUGHT = {"killed", "timeout", "caught by type check"}
#: Statuses that count as not caught.
ALIVE = {"survived", "no tests"}

#: mutmut 3 mutates code inside functions only; these are the module- and class-level
#: constants the figures depend on, each changed once (text before -> after) and run against
#: the module's tests. A change the tests do not notice is a surviving mutant like any other.
CONSTANT_MUTANTS: dict[str, list[tuple[str, str]]] = {
    "vsb/evaluators/rules.py": [
        ('"skin": 3.0,', '"skin": 4.0,'),
        ('"hair_color": 3.0,', '"hair_color": 2.0,'),
        ('"hair_style": 3.0,', '"hair_style": 4.0,'),
        ('"top": 1.0,', '"top": 2.0,'),
        ('"trousers": 1.0,', '"trousers": 0.0,'),
        ('"accessory": 1.0,', '"accessory": 0.0,'),
        ('"pose": 0.5,', '"pose": 1.0,'),
        ("sum(WEIGHTS.values()) + 10.0", "sum(WEIGHTS.values()) - 10.0"),
        ("ABSENT_BIAS = 6.0", "ABSENT_BIAS = 7.0"),
        ("ABSENT_BIAS = 6.0", "ABSENT_BIAS = 5.0"),
        ("ORDER_WEIGHT = 2.0", "ORDER_WEIGHT = 3.0"),
        ("ORDER_WEIGHT = 2.0", "ORDER_WEIGHT = 1.0"),
        ('_IDENTITY = ("skin", "hair_color", "hair_style")', '_IDENTITY = ("skin", "hair_color")'),
    ],
    "vsb/validation/matching.py": [
        ("    knock_on: bool = False", "    knock_on: bool = True"),
        ("    direct: bool = False", "    direct: bool = True"),
        ('SCENE_SUBJECT = "scene"', 'SCENE_SUBJECT = "Scene"'),
        ('{"failed", "unsure", "parse_failure"}', '{"failed", "unsure"}'),
        ('{"failed", "unsure", "parse_failure"}', '{"failed", "parse_failure"}'),
        ('"hair_style": "hair", "color"', '"color"'),
        ('"story_id", "scene", "subject"', '"story_id", "subject"'),
    ],
    "vsb/scores/stats/bootstrap.py": [
        ("TIE_TOLERANCE = 1e-12", "TIE_TOLERANCE = 0.0"),
        ("TIE_TOLERANCE = 1e-12", "TIE_TOLERANCE = 1e-6"),
    ],
    "vsb/validation/truth.py": [
        ('("skin", "hair_color", "hair_style")', '("skin", "hair_color")'),
        ('("top", "trousers", "accessory")', '("top", "trousers")'),
        ('"same_place": ("location",)', '"same_place": ("time",)'),
    ],
    "vsb/story/requirements.py": [
        ('"present": ("adherence", "character_missing")', '"present": ("adherence", "x")'),
        ('"hair": ("identity", "identity_drift")', '"hair": ("clothing", "identity_drift")'),
        ('"pose": ("action", "pose_mismatch")', '"pose": ("clothing", "pose_mismatch")'),
        ('"count": ("object_persistence", "count_mismatch")', '"count": ("x", "count_mismatch")'),
        ('"state": ("object_state", "wrong_state")', '"state": ("object_state", "x")'),
        ('"holder": ("spatial", "wrong_holder")', '"holder": ("spatial", "x")'),
        ('"order": ("spatial", "order_swap")', '"order": ("spatial", "x")'),
        ('"location": ("environment", "wrong_location")', '"location": ("x", "wrong_location")'),
    ],
}

Result = dict[str, Any]
"""One module's run: module, tests, mutants, caught, score, survivors (name, status, diff)."""


def _modules(pyproject: dict) -> dict[str, list[str]]:
    try:
        return dict(pyproject["tool"]["vsb-mutation"]["modules"])
    except KeyError:
        sys.exit("pyproject.toml: missing [tool.vsb-mutation.modules] (module -> test files)")


def _tree_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


def _narrowed_pyproject(text: str, module: str, tests: list[str]) -> str:
    """pyproject.toml text with ``[tool.mutmut]`` replaced by one for ``module`` alone."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines():
        if re.match(r"^\s*\[", line):
            skipping = line.strip() == "[tool.mutmut]"
        if not skipping:
            kept.append(line)
    base = tomllib.loads(text)["tool"]["mutmut"]
    section = {
        **base,
        "only_mutate": [module],
        "pytest_add_cli_args_test_selection": tests,
    }
    lines = ["", "[tool.mutmut]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in section.items()]
    return "\n".join(kept) + "\n" + "\n".join(lines) + "\n"


def _copy_tree(dest: Path, module: str, tests: list[str]) -> None:
    # mutmut keeps results across runs and would not rerun a survivor after a test changed
    shutil.rmtree(dest / "mutants", ignore_errors=True)
    for rel in _tree_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        src = ROOT / rel
        if not target.exists() or target.read_bytes() != src.read_bytes():
            shutil.copy2(src, target)
    text = (ROOT / "pyproject.toml").read_text()
    (dest / "pyproject.toml").write_text(_narrowed_pyproject(text, module, tests))


def _statuses(dest: Path, mutmut: str) -> dict[str, str]:
    """mutant name -> status, from ``mutmut results --all true``."""
    out = subprocess.run(
        [mutmut, "results", "--all", "true"], cwd=dest, capture_output=True, text=True
    )
    if out.returncode != 0:
        sys.exit(f"mutmut results failed in {dest}:\n{out.stderr}")
    statuses = {}
    for line in out.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            statuses[name] = status.strip()
    return statuses


def _diff(dest: Path, mutmut: str, name: str) -> str:
    out = subprocess.run([mutmut, "show", name], cwd=dest, capture_output=True, text=True)
    return out.stdout.strip()


def run_module(module: str, tests: list[str], mutmut: str, jobs: int) -> Result:
    missing = [t for t in tests if not (ROOT / t).is_file()]
    if missing:
        sys.exit(f"pyproject.toml [tool.vsb-mutation.modules]: {module}: no file {missing[0]}")
    dest = ROOT / "build" / "mutation" / Path(module).with_suffix("").as_posix().replace("/", ".")
    _copy_tree(dest, module, tests)
    print(f"== {module}: mutmut run in {dest.relative_to(ROOT)} ({len(tests)} test files)")
    log = dest / "mutmut-run.log"
    with log.open("w") as fh:
        run = subprocess.run(
            [mutmut, "run", "--max-children", str(jobs)], cwd=dest, stdout=fh, stderr=fh
        )
    if run.returncode != 0:
        sys.exit(f"mutmut run failed for {module} (exit {run.returncode}); see {log}")
    statuses = _statuses(dest, mutmut)
    caught = sorted(n for n, s in statuses.items() if s in CAUGHT)
    alive = sorted(n for n, s in statuses.items() if s in ALIVE)
    other = sorted(n for n, s in statuses.items() if s not in CAUGHT | ALIVE)
    if other:
        sys.exit(f"{module}: mutants with unexpected status: {other[:5]}")
    total = len(caught) + len(alive)
    return {
        "module": module,
        "tests": tests,
        "mutants": total,
        "caught": len(caught),
        "score": len(caught) / total if total else None,
        "survivors": [
            {"name": n, "status": statuses[n], "diff": _diff(dest, mutmut, n)} for n in alive
        ],
    }


def run_constants(module: str, tests: list[str], python: str) -> list[Result]:
    """Each constant mutant of ``module`` applied to the scratch copy and run against
    ``tests`` (pytest -x); the copy is restored after each."""
    dest = ROOT / "build" / "mutation" / "constants"
    _copy_tree(dest, module, tests)
    path = dest / module
    original = path.read_text()
    out = []
    for before, after in CONSTANT_MUTANTS.get(module, []):
        if original.count(before) != 1:
            sys.exit(f"{module}: constant mutant text not found exactly once: {before!r}")
        path.write_text(original.replace(before, after))
        try:
            run = subprocess.run(
                [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                cwd=dest,
                capture_output=True,
                env={**os.environ, "PYTHONPATH": str(dest)},
            )
        finally:
            path.write_text(original)
        out.append({"before": before, "after": after, "caught": run.returncode != 0})
    return out


def _report(results: list[Result]) -> str:
    lines = [
        "| module | mutants | caught | score | constants caught |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        score = r["score"]
        pct = "n/a" if score is None else f"{100 * score:.1f} %"
        const = r.get("constants", [])
        caught = sum(c["caught"] for c in const)
        lines.append(
            f"| {r['module']} | {r['mutants']} | {r['caught']} | {pct} | {caught}/{len(const)} |"
        )
    for r in results:
        survivors = r["survivors"]
        lines += ["", f"## {r['module']}: {len(survivors)} not caught", ""]
        for s in survivors:
            lines += [f"### {s['name']} ({s['status']})", "", "```diff", s["diff"], "```", ""]
        for c in r.get("constants", []):
            if not c["caught"]:
                lines += [f"### constant `{c['before']}` -> `{c['after']}` (survived)", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("modules", nargs="*", help="modules to run (default: all configured)")
    p.add_argument("--mutmut", default="mutmut", help="the mutmut executable")
    p.add_argument("--jobs", type=int, default=2, help="mutants tested in parallel")
    p.add_argument("--min-score", type=float, default=0.9, help="fail below this score")
    p.add_argument(
        "--constants-only", action="store_true", help="skip mutmut; keep its last results"
    )
    p.add_argument(
        "--python", default=sys.executable, help="the project's interpreter (constant mutants)"
    )
    args = p.parse_args(argv)
    config = _modules(tomllib.loads((ROOT / "pyproject.toml").read_text()))
    chosen = args.modules or list(config)
    unknown = [m for m in chosen if m not in config]
    if unknown:
        known = ", ".join(config)
        sys.exit(f"unknown module {unknown[0]} (configured: {known})")
    mutmut = shutil.which(args.mutmut)
    if mutmut is None:
        sys.exit(f"no mutmut at {args.mutmut} (bash scripts/mutation.sh installs it)")
    mutmut = str(Path(mutmut).resolve())  # the runs happen in other directories
    out = ROOT / "build" / "mutation"
    saved = out / "report.json"
    earlier = json.loads(saved.read_text()) if saved.is_file() else []
    results = []
    for m in chosen:
        if args.constants_only:
            last = [r for r in earlier if r["module"] == m]
            if not last:
                sys.exit(f"{m}: no earlier mutmut result in {saved}")
            result = last[-1]
        else:
            result = run_module(m, config[m], mutmut, args.jobs)
        print(f"== {m}: constant mutants")
        result["constants"] = run_constants(m, config[m], args.python)
        results.append(result)
    # keep the last result of the modules not run this time, in the configured order
    by_module = {r["module"]: r for r in [*earlier, *results] if r["module"] in config}
    merged = [by_module[m] for m in config if m in by_module]
    saved.write_text(json.dumps(merged, indent=1) + "\n")
    report = _report(merged)
    (out / "report.md").write_text(report)
    print(report.split("\n## ")[0])
    print(f"survivors and diffs: {(out / 'report.md').relative_to(ROOT)}")
    low = [r["module"] for r in results if r["score"] is None or r["score"] < args.min_score]
    low += [r["module"] for r in results if not all(c["caught"] for c in r["constants"])]
    if low:
        print(f"below {args.min_score:.0%}: {', '.join(map(str, low))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
