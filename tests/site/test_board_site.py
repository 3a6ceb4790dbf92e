"""The leaderboard a researcher expects (issue 14): honest ranks, memory gain, win rates, the
long-horizon view, downloads of every table, model cards, a methodology generated from the
release, and the static half of accessibility (the browser test drives the rest)."""

from __future__ import annotations

import csv
import html as html_lib
import io
import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from vsb.cli.main import cli
from vsb.scores.models import ScoresReport
from vsb.site.board import GAIN_A, GAIN_B, memory_gain, ties, win_matrix
from vsb.tables import REQUIREMENT_COLUMNS, iter_rows, requirements_file

REPO = Path(__file__).parents[2]


class _Doc(HTMLParser):
    """Start tags with attributes, in order, and the text of every element id'd."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _doc(path: Path) -> _Doc:
    d = _Doc()
    d.feed(path.read_text())
    return d


def _scores(release: Path) -> ScoresReport:
    return ScoresReport.model_validate_json((release / "scores" / "scores.json").read_text())


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _rows(html: str, table_id: str) -> list[str]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr[^>]*data-condition[^>]*>.*?</tr>", body, flags=re.S)


def test_ranks_are_ranges_and_ties_are_marked(synth_site: Path, synth_release: Path) -> None:
    rep = _scores(synth_release)
    html = (synth_site / "index.html").read_text()
    rows = _rows(html, "leaderboard")
    by = {r.condition for r in rep.scores}
    assert len(rows) == len(rep.scores)  # every condition's rows, one selector away
    for c in by:
        tie = ties(rep, c)
        mine = [r for r in rows if f'data-condition="{c}"' in r]
        ranked = sorted((r for r in rep.scores if r.condition == c), key=lambda r: r.rank)
        for r, tr in zip(ranked, mine, strict=True):
            assert r.rank_low is not None and r.rank_high is not None
            if r.rank_low != r.rank_high:
                assert f"({r.rank_low}–{r.rank_high})" in tr
            else:
                assert 'class="range"' not in tr
            assert ("≈" in tr) == (r.model in tie)
    # the tie rule: the paired CI of Δ global with the next model includes 0
    for c in by:
        for m, t in ties(rep, c).items():
            assert t.low <= 0 <= t.high and t.other != m


def test_memory_gain_and_win_rate_come_from_comparisons(
    synth_site: Path, synth_release: Path
) -> None:
    rep = _scores(synth_release)
    gains = memory_gain(rep)
    assert set(gains) == set(rep.models)
    for m, g in gains.items():
        c = next(
            c
            for c in rep.comparisons
            if c.kind == "condition" and c.metric == "coherence" and c.a_model == m
            and {c.a_condition, c.b_condition} == {GAIN_A, GAIN_B}
        )  # fmt: skip
        sign = 1 if c.a_condition == GAIN_A else -1
        assert g.diff == pytest.approx(sign * c.diff)
    models, win = win_matrix(rep, rep.primary_condition)
    for i in range(len(models)):
        assert win[i][i] is None
        for j in range(len(models)):
            if i != j:
                assert win[i][j] + win[j][i] == pytest.approx(1.0)  # type: ignore[operator]
    table = json.loads((synth_site / "data/index/win_rate.json").read_text())
    assert [r["model"] for r in table["rows"]] == models
    lead = list(
        csv.DictReader(io.StringIO((synth_site / "data/index/leaderboard.csv").read_text()))
    )
    for row in lead:
        g = gains[row["model"]]
        assert float(row["memory_gain"]) == pytest.approx(g.diff)


def test_long_horizon_on_leaderboard_and_model_pages(synth_site: Path, synth_release: Path) -> None:
    rep = _scores(synth_release)
    scene = [p for p in rep.horizon if p.axis == "scene" and p.metric == "coherence"]
    assert scene and {int(p.group) for p in scene} >= {2, 3}
    html = (synth_site / "index.html").read_text()
    assert 'id="long-horizon"' in html and "Memory coherence by scene position" in html
    rows = _rows(html, "horizon")
    for p in scene:
        tr = next(r for r in rows if f'data-condition="{p.condition}"' in r and
                  f">{p.model}</a>" in html_lib.unescape(r))  # fmt: skip
        assert f'data-v="{p.score}"' in tr
    data = json.loads((synth_site / "data/index/horizon_scene.json").read_text())
    assert len(data["rows"]) == len(scene)
    model = (synth_site / "models" / "alpha.html").read_text()
    assert 'id="long-horizon"' in model and "polyline" in model


def test_every_table_is_downloadable(synth_site: Path, synth_release: Path) -> None:
    rep = _scores(synth_release)
    links: set[str] = set()
    for page in sorted(synth_site.rglob("*.html")):
        if page.name in ("methodology.html", "evaluate.html", "analysis.html"):
            continue
        html = page.read_text()
        n_tables = html.count("<table")
        found = re.findall(r'<p class="downloads">.*?</p>', html, flags=re.S)
        if page.name != "judge.html" or "judge_human" not in html:
            assert n_tables == 0 or found, page
        for p in found:
            hrefs = re.findall(r'href="([^"]+)"', p)
            assert [h.rsplit(".", 1)[1] for h in hrefs] == ["csv", "json"], (page, p)
            links |= {(page.parent / h).resolve().as_posix() for h in hrefs}
    for link in links:
        path = Path(link)
        assert path.is_file(), link
        if path.suffix == ".json":
            doc = json.loads(path.read_text())
            assert doc["release"] == rep.run.release or doc["release"]
            assert all(set(r) == set(doc["columns"]) for r in doc["rows"])
        else:
            pd.read_csv(path)
    lead = pd.read_csv(synth_site / "data/index/leaderboard.csv")
    assert len(lead) == len(rep.scores)
    for r in rep.scores:
        row = lead[(lead.model == r.model) & (lead.condition == r.condition)].iloc[0]
        assert row.global_score == pytest.approx(r.global_score.score)  # type: ignore[union-attr]
        assert (row["rank"], row.rank_low, row.rank_high) == (r.rank, r.rank_low, r.rank_high)


def _requirements(release: Path) -> pd.DataFrame:
    """The release's requirement rows (Parquet, or JSON lines in the synthetic releases)."""
    return pd.DataFrame([r for _, r in iter_rows(requirements_file(release))])


def test_per_requirement_results_as_csv_and_parquet(synth_site: Path, synth_release: Path) -> None:
    n = len(_requirements(synth_release))
    a = pd.read_csv(synth_site / "data" / "requirements.csv", keep_default_na=False)
    b = pd.read_parquet(synth_site / "data" / "requirements.parquet")
    assert len(a) == len(b) == n
    assert list(a.columns[:5]) == ["model", "condition", "story_id", "scene", "req_id"]
    # the order of the data contract's columns (was: verdict moved after passed)
    assert list(a.columns) == [c for c in REQUIREMENT_COLUMNS if c in a.columns]
    assert list(a.columns) == list(b.columns)
    assert a.passed.sum() == b.passed.sum()
    assert (synth_site / "data" / "scores" / "scores.json").is_file()
    assert (synth_site / "data" / "scores" / "horizon.csv").is_file()


def test_story_browser_filter_data(synth_site: Path, synth_release: Path) -> None:
    html = (synth_site / "stories" / "index.html").read_text()
    for name in ("q", "category", "difficulty", "scenes", "fail"):
        assert f'name="{name}"' in html
    rows = re.findall(r"<tr data-category=[^>]*>", html)
    assert len(rows) == 3
    req = _requirements(synth_release)
    prim = req[(req.condition == "structured_memory") & ~req.passed]
    for tr in rows:
        sid = re.search(r'data-id="([^"]+)"', tr).group(1)  # type: ignore[union-attr]
        fail = re.search(r'data-fail="([^"]*)"', tr).group(1).split()  # type: ignore[union-attr]
        assert set(fail) == set(prim[prim.story_id == sid].dimension)


def test_story_pages_show_full_model_names(synth_site: Path) -> None:
    from site_synth import HOSTILE_MODEL, MODELS

    html = (synth_site / "stories" / "cause_effect-easy" / "structured_memory.html").read_text()
    heads = re.findall(r'<th scope="col" class="mark-h" title="([^"]*)">([^<]*)</th>', html)
    assert heads
    names = {h[1] for h in heads}
    assert {"alpha", "beta"} <= names
    assert any("evil" in h[0] for h in heads) and len(heads[0][1]) > 0
    assert all(t == text for t, text in heads)  # the full name, also as a tooltip
    assert "…" not in "".join(n for n in names) and len(MODELS) == 3 and HOSTILE_MODEL


def test_accessibility_markup(synth_site: Path) -> None:
    for page in sorted(synth_site.rglob("*.html")):
        if page.name in ("evaluate.html", "analysis.html"):  # pages of issues 13 and 16
            continue
        html = page.read_text()
        doc = _doc(page)
        first_link = next(a for t, a in doc.tags if t == "a")
        assert first_link.get("href") == "#main" and first_link.get("class") == "skip", page
        assert any(t == "main" and a.get("id") == "main" for t, a in doc.tags), page
        current = [a for t, a in doc.tags if t == "a" and a.get("aria-current") == "page"]
        top = page.relative_to(synth_site).as_posix()
        if top in ("index.html", "comparisons.html", "stories/index.html", "methodology.html"):
            assert len([a for a in current if "here" in (a.get("class") or "")]) == 1, page
        if page.name == "methodology.html":
            continue
        for head in re.findall(r"<thead>.*?</thead>", html, flags=re.S):
            cells = re.findall(r"<th[ >][^>]*>", head)
            assert all('scope="col"' in c for c in cells), (page, head[:200])
        for table in re.findall(r"<table[^>]*>\s*(?:<caption|<thead)", html):
            assert "<caption" in table, (page, table)
    assert "↕" not in (synth_site / "index.html").read_text()  # no arrow read in headers


def _named_commands(text: str) -> list[list[str]]:
    return [m.split() for m in re.findall(r"\bvsb ((?:[a-z][a-z-]+)(?: [a-z][a-z-]+)?)", text)]


def test_methodology_is_generated_from_the_release(
    per_cell_site: Path, per_cell_release: Path
) -> None:
    """The figures equal the release's own counts (a `--per-cell 2` suite), every vsb
    command named exists, and nothing the release lacks is advertised as present."""
    html = (per_cell_site / "methodology.html").read_text()
    text = _text(html).replace("&#39;", "'")
    suite = json.loads((per_cell_release / "suite" / "suite.json").read_text())
    stories = [
        json.loads((per_cell_release / "suite" / e["file"]).read_text()) for e in suite["stories"]
    ]
    reqs = [r for s in stories for sc in s["scenes"] for r in sc["requirements"]]
    n_scenes = sum(len(s["scenes"]) for s in stories)
    by = Counter((r["dimension"], r["source"]) for r in reqs)
    n_prompt = sum(v for (_, src), v in by.items() if src == "prompt")
    assert len(stories) == 60 and len(reqs) > 1000
    assert (
        f"This release's suite holds 60 stories, {n_scenes:,} scenes and {len(reqs):,} "
        f"requirements: {n_prompt:,} prompt and {len(reqs) - n_prompt:,} memory." in text
    )
    assert "2 stories in every category × difficulty cell" in text
    from vsb.story.models import DIMENSION_LABELS

    for (dim, _), _v in by.items():
        p, m = by[(dim, "prompt")], by[(dim, "memory")]
        cells = f"<td>{DIMENSION_LABELS[dim]}</td><td>{p:,}</td><td>{m:,}</td><td>{p + m:,}</td>"
        assert cells in html
    # the rule checker's checks of the oracle's images, as the release holds them
    req = _requirements(per_cell_release)
    oracle = req[(req.model == "procedural-oracle") & (req.evaluator == "rules")]
    assert f"failed {int((~oracle.passed).sum()):,} of {len(oracle):,} checks" in text
    assert "procedural-oracle 0.00 0.00 — 1.00 evaluator false-positive floor yes" in text
    assert "procedural-sloppy 0.03 0.15 0.60 0.50" in text  # p_inference beside the others
    assert "procedural-amnesiac 0.35 0.01 0.25 0.80 great single images, no memory no" in text
    assert "(100 resamples in this release)" in text
    for stale in ("3,865", "15,460", "/evaluate "):  # scripts/*.py named must exist (below)
        assert stale not in text
    assert "This release holds no human ratings." in text
    assert "Not in this release (vsb evaluate RUN --evaluator vlm" in text
    for words in _named_commands(text):
        cmd = cli.commands.get(words[0])
        assert cmd is not None, words
        if hasattr(cmd, "commands") and len(words) > 1:
            assert words[1] in cmd.commands, words  # type: ignore[attr-defined]
    for path in re.findall(r"\b((?:vsb|config|scripts)/[\w/.-]+\.(?:py|json))", text):
        assert (REPO / path).is_file(), path


def test_model_card_of_a_registered_simulator(per_cell_site: Path) -> None:
    text = _text((per_cell_site / "models" / "procedural-oracle.html").read_text())
    assert "adapter ProceduralSimulator" in text
    assert "p_memory 0.0" in text and "sticky 0.7" in text
    assert "list price 0.0000 USD per image, as of 2025-06-01" in text
    # the synthetic records carry no cost: unknown stays unknown, never 0
    assert "cost the run recorded unknown (320 images of unknown cost)" in text
    assert "images in this release 320" in text
    cov = pd.read_csv(per_cell_site / "data/models/procedural-oracle/coverage.csv")
    assert list(cov.expected_images) == [320] and list(cov.images) == [320]


def test_an_evaluators_view_holds_only_its_long_horizon(synth_release: Path) -> None:
    from vsb.site.data import scores_view

    rep = _scores(synth_release)
    other = [p.model_copy(update={"evaluator": "vlm", "score": 0.0}) for p in rep.horizon]
    both = rep.model_copy(update={"horizon": [*rep.horizon, *other]})
    assert scores_view(both, "rules").horizon == rep.horizon
    assert scores_view(both, "vlm").horizon == other


def test_model_cards_of_unregistered_and_family_models(synth_release: Path) -> None:
    """A family model (diffusers:…) is never built by the site (it may need weights or an
    extra), and an unknown name is said to be unknown; both cards still show the data."""
    from vsb.site.cards import model_card
    from vsb.site.data import load_site_data

    data = load_site_data(synth_release)
    card = model_card(data, "diffusers:/no/such/dir")
    assert card.info is None and card.about.startswith("a model of the diffusers:ARGUMENT")
    alpha = model_card(data, "alpha")
    assert alpha.info is None and alpha.about == "not registered in this vsb"
    assert alpha.images == 32 and alpha.recorded_cost is None and alpha.unknown_costs == 32


def test_site_csv_keeps_the_column_order_of_the_releases_csv(tmp_path: Path) -> None:
    """Regression: the site's data/requirements.csv put verdict after passed, while the
    release's evaluation table (and docs/CONTRACTS.md) put it after evaluator."""
    from vsb.site.downloads import write_requirements

    row = {c: f"x-{c}" for c in reversed(REQUIREMENT_COLUMNS)} | {"passed": True, "scene": 1}
    src = tmp_path / "requirements.jsonl"
    src.write_text(json.dumps(row) + "\n")
    write_requirements(src, tmp_path / "site")
    with open(tmp_path / "site" / "data" / "requirements.csv", newline="") as fh:
        assert next(csv.reader(fh)) == list(REQUIREMENT_COLUMNS)
