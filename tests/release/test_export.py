"""``vsb release export --format hf``: a dataset folder that loads without vsb (with
``datasets`` when it is installed, else pandas), row counts equal to the release's."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from vsb.cli.main import main
from vsb.errors import InputError
from vsb.release.export import CONFIGS, export_release
from vsb.release.manifest import load_manifest
from vsb.tables import iter_rows, requirements_file, signals_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "site"))
from site_synth import make_release


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_release(tmp_path_factory.mktemp("rel") / "v0.0.1-test")


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def _expected_rows(rel: Path) -> dict[str, int]:
    suite = json.loads((rel / "suite" / "suite.json").read_text())
    stories = [json.loads((rel / "suite" / e["file"]).read_text()) for e in suite["stories"]]
    return {
        "stories": len(stories),
        "scenes": sum(len(s["scenes"]) for s in stories),
        "requirements": sum(len(sc["requirements"]) for s in stories for sc in s["scenes"]),
        "images": _lines(rel / "records.jsonl"),
        "verdicts": sum(1 for _ in iter_rows(requirements_file(rel))),
        "signals": sum(1 for _ in iter_rows(signals_file(rel))),
        "scores": len(pd.read_csv(rel / "scores" / "model_scores.csv")),
    }


def _load(path: Path) -> int:
    """Rows of one Parquet file, loaded as a reader without vsb would."""
    if importlib.util.find_spec("datasets") is not None:
        import datasets

        return len(datasets.load_dataset("parquet", data_files=str(path), split="train"))
    return len(pd.read_parquet(path))


def test_export_loads_with_the_release_row_counts(
    release: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hf"
    assert main(["release", "export", str(release), "--format", "hf", "--out", str(out)]) == 0
    assert "exported verdicts" in capsys.readouterr().out
    expected = _expected_rows(release)
    assert expected["verdicts"] > 0 and expected["signals"] > 0
    card = (out / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    configs = {c["config_name"]: c["data_files"][0]["path"] for c in front["configs"]}
    assert set(configs) == set(CONFIGS) == set(expected)
    for name, rel in configs.items():
        assert _load(out / rel) == expected[name], name
    manifest = load_manifest(release)
    assert manifest.root_hash in card and str(manifest.oracle_sha256) in card
    # images by relative path: every path the tables name is there, with the release's bytes
    images = pd.read_parquet(out / "data" / "images.parquet")
    verdicts = pd.read_parquet(out / "data" / "verdicts.parquet")
    assert set(verdicts["image"].dropna()) <= set(images["image"].dropna())
    for rel in images["image"].dropna():
        assert (out / rel).read_bytes() == (release / rel).read_bytes()
    reqs = pd.read_parquet(out / "data" / "requirements.parquet")
    assert reqs["expected"].map(type).eq(str).all()  # mixed types stored as JSON text


def test_export_refuses_a_changed_release_and_a_used_folder(
    release: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("x")
    with pytest.raises(InputError, match="not empty"):
        export_release(release, used)
    changed = tmp_path / "changed"
    shutil.copytree(release, changed)
    (changed / "scores" / "model_scores.csv").write_text("evaluator\n")
    assert main(["release", "export", str(changed), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "changed: scores/model_scores.csv" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".o.")] == []
