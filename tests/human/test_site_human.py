"""The site's human parts: evaluate.html embeds its session data safely, the judge page
shows the human report (labelled synthetic when it is) and escapes what ratings carry."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from site_synth import HOSTILE, HOSTILE_MODEL

from vsb.cli.main import main
from vsb.human.blinding import make_blinding, release_blinding, story_pool
from vsb.human.models import CONTROL_BAD, CONTROL_GOOD, RatingFile
from vsb.human.session import evaluate_payload
from vsb.human.write import RELEASE_REPORT
from vsb.site.build import build_site
from vsb.site.data import load_site_data

_EMBED = re.compile(r'<script type="application/json" id="evaluate-data">(.*?)</script>', re.DOTALL)


@pytest.fixture(scope="module")
def site_with_human(
    tmp_path_factory: pytest.TempPathFactory, human_release: Path, simulated_files: list[Path]
) -> Path:
    root = tmp_path_factory.mktemp("site-human")
    release = root / "release"
    shutil.copytree(human_release, release)
    args = ["human", "import", *map(str, simulated_files), "--resamples", "50"]
    assert main([*args, "--out", str(release / "human"), "--release", str(release)]) == 0
    build_site(release, root / "site")
    return root / "site"


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_no_page_carries_raw_markup_from_the_data(site_with_human: Path) -> None:
    for page in _pages(site_with_human):
        text = page.read_text()
        assert HOSTILE not in text, page
        assert "<script>alert" not in text, page


def test_judge_page_shows_the_synthetic_human_report_escaped(site_with_human: Path) -> None:
    text = (site_with_human / "judge.html").read_text()
    assert 'id="human"' in text and "Against human ratings" in text
    assert text.count('class="synthetic-notice"') == 2  # first and last
    assert "SYNTHETIC" in text
    for table in ("human-rankings", "human-correlations", "human-raters", "human-alpha",
                  "human-icc", "human-means", "human-bt", "human-mixed"):  # fmt: skip
        assert f'id="{table}"' in text, table
    assert html.escape(HOSTILE_MODEL, quote=False) in text
    assert "synthetic-01" in text and "median item time" in text


def test_judge_page_without_human_ratings_says_so(human_release: Path, tmp_path: Path) -> None:
    build_site(human_release, tmp_path / "site")
    text = (tmp_path / "site" / "judge.html").read_text()
    assert "holds no human ratings" in text and 'class="synthetic-notice"' not in text
    assert not (human_release / RELEASE_REPORT).exists()


def test_evaluate_page_embeds_the_session_as_escaped_json(
    site_with_human: Path, human_release: Path
) -> None:
    text = (site_with_human / "evaluate.html").read_text()
    assert "<nav" not in text and 'href="index.html"' not in text  # it stands alone
    (embedded,) = _EMBED.findall(text)
    assert "</" not in embedded and "<" not in embedded  # |tojson escapes markup
    payload = json.loads(embedded)
    assert payload["version"] == "2.0" and payload["n_groups"] == 3
    # blinded: no model, no condition, no control pair named (vsb.human.blinding)
    assert not {"models", "control", "condition"} & set(payload)
    assert HOSTILE_MODEL not in json.dumps(payload, ensure_ascii=False)
    blinding = release_blinding(human_release)
    for story in payload["stories"]:
        for strip in story["strips"]:
            assert strip["target"] in blinding.strips
            assert len(strip["images"]) == len(story["texts"])
            assert all(re.fullmatch(r"rate/[0-9a-f]{32}\.png", p) for p in strip["images"])
            assert all((site_with_human / p).is_file() for p in strip["images"])
            # each opaque picture is the release's picture of that strip with a keyed nonce
            release_paths = blinding.strips[strip["target"]].images
            assert [
                blinding.rater_bytes(p, (human_release / p).read_bytes()) for p in release_paths
            ] == [(site_with_human / p).read_bytes() for p in strip["images"]]
    controls = 0
    for deck in payload["decks"]:
        assert len(deck) == 8
        models = [{blinding.strips[t].model for t in pair} for pair in deck]
        controls += sum(m == {CONTROL_GOOD, CONTROL_BAD} for m in models)
    assert controls == 4 * len(payload["decks"])
    assert (site_with_human / "static" / "evaluate.js").is_file()
    assert "cdn" not in text.lower() and "http://" not in text and "https://" not in text


def test_an_incomplete_strip_is_not_offered(human_release: Path) -> None:
    data = load_site_data(human_release)
    pool = story_pool(data)
    story = pool[0]
    key = (HOSTILE_MODEL, "structured_memory", story.story_id, 2)
    assert key in data.images
    data.images[key] = None  # a failed image
    after = {s.story_id: s for s in story_pool(data)}
    assert HOSTILE_MODEL not in after[story.story_id].images
    blinding = make_blinding(b"k" * 32, "structured_memory", list(after.values()))
    payload = evaluate_payload(data, blinding, list(after.values()))
    first = payload["stories"][[s.story_id for s in after.values()].index(story.story_id)]
    hostile = blinding.target(story.story_id, HOSTILE_MODEL)
    assert hostile not in {t["target"] for t in first["strips"]}
    assert all(hostile not in pair for deck in payload["decks"] for pair in deck)


def test_a_release_without_its_sealed_oracle_offers_no_session(
    human_release: Path, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    shutil.copytree(human_release, release)
    shutil.rmtree(release / "oracle")
    build_site(release, tmp_path / "site")
    text = (tmp_path / "site" / "evaluate.html").read_text()
    assert "no sealed oracle" in text and not _EMBED.findall(text)


def test_judge_page_says_not_enough_overlap_with_one_rater(
    human_release: Path, simulated: list[RatingFile], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    shutil.copytree(human_release, release)
    careful = next(f for f in simulated if f.truth is not None and not f.truth.careless)
    one = tmp_path / "one.json"
    one.write_text(careful.model_dump_json())
    args = ["human", "import", str(one), "--resamples", "20", "--release", str(release)]
    assert main([*args, "--out", str(release / "human")]) == 0
    build_site(release, tmp_path / "site")
    text = (tmp_path / "site" / "judge.html").read_text()
    alpha = text[text.index('id="human-alpha"') : text.index('id="human-icc"')]
    icc = text[text.index('id="human-icc"') :]
    icc = icc[: icc.index("</table>")]
    assert alpha.count("not enough overlap") == 7 and icc.count("not enough overlap") == 7
