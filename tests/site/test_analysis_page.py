"""The analysis page: memory gain, placebo, ablation heat maps and prompt sensitivity, every
figure read from the release (scores.json's comparisons, sensitivity/), hostile names escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from site_synth import HOSTILE, HOSTILE_MODEL, make_release

from vsb.errors import InputError
from vsb.release.manifest import freeze
from vsb.scores.analysis import effects_from_comparisons
from vsb.scores.implicit import IMPLICIT_FILE, ImplicitReport, ImplicitRow
from vsb.scores.models import ScoresReport
from vsb.scores.sensitivity import SENSITIVITY_FILE, SensitivityReport, SensitivityRow
from vsb.site.analysis import analysis_page, load_implicit, load_sensitivity
from vsb.site.build import build_site
from vsb.site.data import load_site_data

CONDITIONS = (
    "independent",
    "structured_memory",
    "random_context",
    "structured_memory-no_identity",
    "structured_memory-no_objects",
    "predicted_memory",
)


def _sensitivity(release: Path) -> SensitivityReport:
    scores = ScoresReport.model_validate_json((release / "scores" / "scores.json").read_text())
    rows = [
        SensitivityRow(
            evaluator="rules",
            model=m,
            condition="structured_memory",
            metric_kind="summary",
            metric=metric,
            a_score=0.9,
            b_score=0.8,
            diff=0.1 if m == "alpha" else 0.0,
            ci_low=0.05 if m == "alpha" else -0.01,
            ci_high=0.15 if m == "alpha" else 0.01,
            p_greater=1.0,
            p_less=0.0,
            n_stories=3,
        )
        for m in scores.models
        for metric in ("global", "adherence", "coherence")
    ]
    return SensitivityReport(
        run_a=scores.run,
        run_b=scores.run.model_copy(
            update={"run_dir": "run-paraphrase", "prompt_style": "paraphrase"}
        ),
        evaluator="rules", seed=0, n_resamples=200, confidence=0.95,
        cells=[f"{m}@structured_memory" for m in scores.models], only_a=[], only_b=[], rows=rows,
    )  # fmt: skip


def _implicit(release: Path) -> ImplicitReport:
    scores = ScoresReport.model_validate_json((release / "scores" / "scores.json").read_text())
    rows = [
        ImplicitRow(
            evaluator="rules", model=m, condition=c, explicit_pass=0.9,
            implicit_pass=0.6 if m == "alpha" else 0.88, diff=-0.3 if m == "alpha" else -0.02,
            ci_low=-0.45 if m == "alpha" else -0.07, ci_high=-0.15 if m == "alpha" else 0.03,
            p_less=1.0, n_checks=68, n_stories=18,
        )
        for m in scores.models
        for c in ("independent", "structured_memory")
    ]  # fmt: skip
    return ImplicitReport(
        run_a=scores.run,
        run_b=scores.run.model_copy(update={"run_dir": "run-implicit", "prompt_style": "implicit"}),
        evaluator="rules", seed=0, n_resamples=200, confidence=0.95, inferred_requirements=68,
        stories=["a", "b"], rows=rows,
    )  # fmt: skip


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_release(
        tmp_path_factory.mktemp("analysis") / "v0.0.2-test",
        models=("alpha", HOSTILE_MODEL),
        conditions=CONDITIONS,
    )
    path = root / SENSITIVITY_FILE
    path.parent.mkdir(parents=True)
    path.write_text(_sensitivity(root).model_dump_json())
    (root / IMPLICIT_FILE).write_text(_implicit(root).model_dump_json())
    freeze(root, "v0.0.2-test")
    return root


@pytest.fixture(scope="module")
def site(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(release, out)
    return out


@pytest.fixture(scope="module")
def page(site: Path) -> str:
    return (site / "analysis.html").read_text()


def test_page_shows_the_releases_effects(release: Path, page: str) -> None:
    data = load_site_data(release)
    effects = effects_from_comparisons(data.scores.comparisons)
    assert {e.effect for e in effects} == {
        "memory_gain", "placebo_gain", "memory_vs_placebo", "predicted_gain",
        "memory_vs_predicted", "ablation",
    }  # fmt: skip
    shown = re.findall(r'data-v="([-0-9.e]+)"', page)
    for e in effects:
        if e.metric_kind == "summary" and e.metric in ("coherence", "global"):
            assert repr(e.diff) in shown or str(e.diff) in shown, e
    assert 'href="analysis.html" class="here"' in page
    assert "<h3>alpha</h3>" in page
    assert len(re.findall(r'<figure class="plot" tabindex="0" aria-label="[^"]+"><svg', page)) == 2
    assert "no identity" in page and "no objects" in page
    assert "Not run here: structured_memory-no_clothing, structured_memory-no_environment" in page


def test_leaderboard_shows_memory_minus_placebo(release: Path, site: Path) -> None:
    effects = effects_from_comparisons(load_site_data(release).scores.comparisons)
    (net,) = [
        e
        for e in effects
        if e.model == "alpha" and e.effect == "memory_vs_placebo" and e.metric == "coherence"
    ]
    board = (site / "index.html").read_text()
    assert "memory − placebo" in board
    row = next(r for r in board.split("<tr") if 'href="models/alpha.html"' in r)
    assert f'data-v="{net.diff}"' in row and f"[{net.ci_low:+.3f}, {net.ci_high:+.3f}]" in row


def test_predicted_memory_section_shows_its_effects_with_cis(release: Path, page: str) -> None:
    effects = effects_from_comparisons(load_site_data(release).scores.comparisons)
    section = page.split('id="predicted"', 1)[1].split('id="ablations"', 1)[0]
    assert "Memory gain under imperfect extraction" in page.split('id="predicted"', 1)[1][:80]
    assert 'id="predicted-gains"' in section and "memory − predicted" in section
    row = next(r for r in section.split("<tr") if 'href="models/alpha.html"' in r)
    shown = 0
    for e in effects:
        if (
            e.model != "alpha"
            or e.metric_kind != "summary"
            or e.metric not in ("coherence", "global")
        ):
            continue
        if e.effect not in ("memory_gain", "predicted_gain", "memory_vs_predicted"):
            continue
        assert e.ci_low is not None and e.ci_high is not None
        cell = f'data-v="{e.diff}" title="{e.n_stories} stories"><span class="score">'
        assert cell in row, e
        assert f"[{e.ci_low:+.3f}, {e.ci_high:+.3f}]" in row, e
        shown += 1
    assert shown == 6
    # the share of facts the simulated extractor read wrong on these stories
    rate = re.search(r"on these stories it read ([0-9.]+) % of the facts wrong", section)
    assert rate is not None and 3.0 < float(rate.group(1)) < 25.0


def test_heat_map_frames_cells_whose_ci_excludes_zero(release: Path) -> None:
    ctx = analysis_page(load_site_data(release))
    for _model, grid, plot in ctx["ablations"]:
        framed = plot.count('stroke="#222"')
        assert framed == sum(c.excludes_zero for row in grid.values() for c in row.values())
        assert plot.count("<rect") == len(grid) * len(ctx["ablation_metrics"])


def test_sensitivity_table(page: str) -> None:
    section = page.split('id="sensitivity"', 1)[1]
    assert "run-paraphrase" in section and "(paraphrase)" in section
    assert '<td class="num pos" data-v="0.1"' in section  # alpha: the CI excludes 0
    assert "[+0.050, +0.150]" in section and "[-0.010, +0.010]" in section


def test_implicit_effects_section(page: str, site: Path) -> None:
    section = page.split('id="implicit"', 1)[1]
    assert "run-implicit</strong>, implicit)" in section and "68 requirements" in section
    row = next(r for r in section.split("<tr") if ">alpha<" in r and "independent" in r)
    assert '<td class="num neg" data-v="-0.3"' in row and "[-0.450, -0.150]" in row
    assert ">0.900<" in row and ">0.600<" in row
    other = next(r for r in section.split("<tr") if "alpha" not in r and "independent" in r)
    assert '<td class="num " data-v="-0.02"' in other  # the CI holds 0: not coloured
    assert (site / "data" / IMPLICIT_FILE).is_file()  # the download the section links
    # the leaderboard column: off by default, one cell per (model, condition) row
    board = (site / "index.html").read_text()
    assert '<input type="checkbox" value="implicit"> implicit effects' in board
    cells = re.findall(r'<td class="num gain[^"]*" data-col="implicit" data-v="([^"]*)"', board)
    rows = board.split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr ")
    assert len(cells) == rows and "-0.3" in cells and "" in cells  # "" for other conditions


def test_hostile_names_are_escaped(page: str) -> None:
    assert HOSTILE not in page and "<script>alert" not in page
    assert HOSTILE_MODEL.replace("<", "&lt;").replace(">", "&gt;") in page


def test_release_without_controls_or_paraphrase(synth_site: Path) -> None:
    assert "memory − placebo" not in (synth_site / "index.html").read_text()
    page = (synth_site / "analysis.html").read_text()
    assert "was run without the placebo" in page
    assert "was run without predicted_memory" in page
    assert 'id="predicted-gains"' not in page
    assert "This release has no field ablations" in page
    assert "This release has no paraphrase run" in page
    assert "This release has no implicit-effects run" in page
    assert 'data-col="implicit"' not in (synth_site / "index.html").read_text()
    assert "<svg" not in page.split('id="ablations"', 1)[1]


def test_a_broken_sensitivity_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / SENSITIVITY_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": "1.0", "rows": "nope"}))
    with pytest.raises(InputError, match="does not match SensitivityReport") as info:
        load_sensitivity(SimpleNamespace(root=tmp_path))  # type: ignore[arg-type]
    assert info.value.file == str(path)


def test_a_broken_implicit_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / IMPLICIT_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": "1.0", "rows": [{"diff": "big"}]}))
    with pytest.raises(InputError, match="does not match ImplicitReport") as info:
        load_implicit(SimpleNamespace(root=tmp_path))  # type: ignore[arg-type]
    assert info.value.file == str(path)
