"""The methodology page, generated from the release it describes.

``templates/methodology.txt`` is the text of the methodology with every figure left as a
Jinja placeholder: counts of stories, scenes and requirements (by dimension and source) come
from the release's suite, the conditions and simulator parameters from the code's registries,
the evaluators, resamples and judge figures from the release's scores and validation, and a
section whose feature the release does not hold says so. ``release_facts`` computes those
figures; ``methodology_text`` fills the template (plain text); ``render_methodology`` turns
the text into escaped HTML:

Blocks are separated by blank lines: a tab-separated block is a table (first row the header),
a block of ``•`` lines a bullet list, a block of ``1.`` lines a numbered list, a short single
line without a final full stop a heading (``N. Title`` → h2, others → h3), anything else a
paragraph.
"""

from __future__ import annotations

import importlib.util
import re
import typing
from collections import Counter
from importlib import resources
from typing import Any

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup, escape

from vsb import __version__
from vsb.release.manifest import COVERAGE
from vsb.scores.implicit import IMPLICIT_FILE
from vsb.scores.sensitivity import SENSITIVITY_FILE
from vsb.site.data import SiteData
from vsb.site.inventory import SIGNAL_DEFINITIONS, evaluator_rows, statistic_rows
from vsb.story.models import CATEGORIES, DIFFICULTIES, DIMENSION_LABELS, DIMENSIONS, Event

_NUMBERED = re.compile(r"^\d+\.\s+")
#: Accessible name of a sideways-scrolling table wrapper (focusable, so keyboards can scroll it).
_WRAP_LABEL = "Table; scrolls sideways on narrow screens"
#: What each simulator is for (prose; its parameters come from the code).
SIMULATOR_ROLES = {
    "procedural-oracle": "evaluator false-positive floor",
    "procedural-drift-low": "mild drift",
    "procedural-drift-mid": "reference",
    "procedural-amnesiac": "great single images, no memory",
    "procedural-sloppy": "good memory, poor adherence",
}
ORACLE = "procedural-oracle"
HUMAN_REPORT = "human/report.json"


def _template_text() -> str:
    return resources.files("vsb.site").joinpath("templates/methodology.txt").read_text("utf-8")


def _n(x: int) -> str:
    return f"{x:,}"


def _or_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _event_types() -> list[str]:
    union = typing.get_args(Event)[0]
    return [cls.model_fields["type"].default for cls in typing.get_args(union)]


def release_facts(data: SiteData, *, evaluate_page: bool = False) -> dict[str, Any]:
    """Every figure the methodology states, computed from the release and the code."""
    from vsb.adapters.faults import SimulatorParams
    from vsb.adapters.registry import model_names
    from vsb.adapters.simulators import SIMULATORS
    from vsb.conditions import CONDITIONS, PRIMARY_CONDITION, get_condition, is_condition
    from vsb.evaluators.registry import evaluator_names
    from vsb.run.catalog import PriceList, list_patterns
    from vsb.story.context.predicted import DEFAULT_ERROR_RATE
    from vsb.story.io import read_suite_index

    stories = data.stories
    reqs = [r for s in stories for sc in s.scenes for r in sc.requirements]
    by: Counter[tuple[str, str]] = Counter((r.dimension, r.source) for r in reqs)
    cells: Counter[tuple[str, str]] = Counter((s.category, s.difficulty) for s in stories)
    per_cell = set(cells.values())
    index = read_suite_index(data.root / "suite")
    full = data.all_scores or data.scores
    conds = data.conditions
    # the rule checker on true renders: every check of procedural-oracle's images
    oracle_checks = oracle_failed = 0
    for per_req in data.checks.values():
        for per_model in per_req.values():
            c = per_model.get(ORACLE)
            if c is not None:
                oracle_checks += 1
                oracle_failed += not c.passed
    signals = {s.evaluator for s in full.signals}
    signals |= {a.evaluator for a in (data.judge.auroc if data.judge else [])}
    signal_evaluators = sorted(signals - set(full.evaluators))
    judge_rows = []
    if data.judge is not None:
        for e in data.judge.evaluators:
            a = e.taxonomy[-1] if e.taxonomy else None
            judge_rows.append((e.evaluator, a))
    factors = {
        n: get_condition(n).context_factor
        for n in ("structured_memory", "summarized_state", "full_context")
        if n in CONDITIONS
    }
    registered_evaluators = set(evaluator_names())
    return {
        "release": data.manifest.release,
        "version": __version__,
        "n_stories": len(stories),
        "n_scenes": sum(len(s.scenes) for s in stories),
        "n_reqs": len(reqs),
        "n_prompt": sum(r.source == "prompt" for r in reqs),
        "n_memory": sum(r.source == "memory" for r in reqs),
        "scene_counts": _or_list([str(k) for k in sorted({len(s.scenes) for s in stories})]),
        "per_cell": per_cell.pop() if len(per_cell) == 1 and len(cells) == 30 else None,
        "cell_rows": [
            (c.replace("_", " "), [cells[(c, d)] for d in DIFFICULTIES])
            for c in CATEGORIES
            if any(cells[(c, d)] for d in DIFFICULTIES)
        ],
        "difficulties": list(DIFFICULTIES),
        "dim_rows": [
            (DIMENSION_LABELS[d], by[(d, "prompt")], by[(d, "memory")])
            for d in DIMENSIONS
            if by[(d, "prompt")] or by[(d, "memory")]
        ],
        "suite_seed": index.seed if index else None,
        "prompt_style": index.prompt_style if index else stories[0].prompt_style,
        "variant_styles": [
            text
            for rel, text in (
                (SENSITIVITY_FILE, "the paraphrased suite (prompt sensitivity)"),
                (IMPLICIT_FILE, "the implicit-effect stories (implicit effects)"),
            )
            if (data.root / rel).is_file()
        ],
        "event_types": _event_types(),
        "conditions": [
            (
                c,
                get_condition(c).description.replace(" (primary)", "")
                if is_condition(c)
                else "(not registered in this vsb)",
            )
            for c in conds
        ],
        "primary": PRIMARY_CONDITION,
        "other_conditions": [c for c in CONDITIONS.names() if c not in conds],
        "factors": factors,
        "models": list(data.models),
        "registered_models": model_names(),
        "model_families": [p.pattern for p in list_patterns()],
        "pricing_as_of": PriceList.load().as_of,
        "simulators": [
            (name, p, name in data.models, SIMULATOR_ROLES.get(name, ""))
            for name, p in SIMULATORS.items()
        ],
        "sticky": SimulatorParams(0.0, 0.0).sticky,
        "extraction_rate": f"{DEFAULT_ERROR_RATE:g}",
        "oracle_in_release": any(m == ORACLE for m in data.models),
        "oracle_checks": oracle_checks,
        "oracle_failed": oracle_failed,
        "primary_evaluator": data.scores.primary_evaluator,
        "evaluators": list(full.evaluators),
        "judge_evaluators": [e for e in full.evaluators if e.split(":", 1)[0] == "vlm"],
        "signal_evaluators": signal_evaluators,
        "embed_registered": {"clip", "dino"} <= registered_evaluators,
        "vlm_registered": "vlm" in registered_evaluators,
        "n_resamples": full.n_resamples,
        "confidence": round(full.confidence * 100),
        "n_draws": full.rank_stability[0].n_draws if full.rank_stability else None,
        "alpha": full.rank_stability[0].alpha if full.rank_stability else None,
        "judge_rows": judge_rows,
        "human_ratings": (data.root / HUMAN_REPORT).is_file(),
        "evaluate_page": evaluate_page,
        "human_cli": importlib.util.find_spec("vsb.cli.human") is not None,
        "coverage": COVERAGE,
        "evaluator_rows": evaluator_rows(data, set(full.evaluators) | signals),
        "statistic_rows": statistic_rows(data),
        "signal_definitions": list(SIGNAL_DEFINITIONS.items()),
        "oracle_sha256": data.manifest.oracle_sha256,
    }


def methodology_text(facts: dict[str, Any]) -> str:
    """The methodology text with the release's figures filled in."""
    env = Environment(
        autoescape=False,  # plain text: render_methodology escapes every block
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["n"] = _n
    env.filters["f2"] = lambda x: f"{x:.2f}"
    return env.from_string(_template_text()).render(facts)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def render_methodology(text: str) -> tuple[str, Markup, list[tuple[str, str]]]:
    """(title, body HTML, [(anchor, heading)] of the h2 sections)."""
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    title = blocks[0].strip() if blocks else "Methodology"
    parts: list[str] = []
    toc: list[tuple[str, str]] = []
    for block in blocks[1:]:
        lines = block.splitlines()
        if all("\t" in ln for ln in lines):
            rows = [ln.split("\t") for ln in lines]
            head = "".join(f'<th scope="col">{escape(c)}</th>' for c in rows[0])
            body = "".join(
                "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:]
            )
            parts.append(
                f'<div class="table-wrap" tabindex="0" role="group" aria-label="{_WRAP_LABEL}">'
                f'<table class="data"><thead><tr>{head}</tr></thead>'
                f"{body}</table></div>"
            )
        elif all(ln.startswith("•") for ln in lines):
            items = "".join(f"<li>{escape(ln.lstrip('• ').strip())}</li>" for ln in lines)
            parts.append(f"<ul>{items}</ul>")
        elif len(lines) > 1 and all(_NUMBERED.match(ln) for ln in lines):
            items = "".join(f"<li>{escape(_NUMBERED.sub('', ln))}</li>" for ln in lines)
            parts.append(f"<ol>{items}</ol>")
        elif len(lines) == 1 and len(block) < 80 and not block.rstrip().endswith("."):
            anchor = _slug(block)
            if _NUMBERED.match(block):
                toc.append((anchor, block))
                parts.append(f'<h2 id="{anchor}">{escape(block)}</h2>')
            else:
                parts.append(f'<h3 id="{anchor}">{escape(block)}</h3>')
        else:
            parts.append(f"<p>{escape(' '.join(ln.strip() for ln in lines))}</p>")
    return title, Markup("\n".join(parts)), toc
