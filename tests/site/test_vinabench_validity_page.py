"""VinaBench's metrics against the oracle on the judge page of a small release built by the
main job's code path (issue 47, item 5): the validity table is in the release (hashed) and on
the site, and scripts/readme_figures.py writes its block from it."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from vsb.evaluators.vina.questions import METRICS
from vsb.validation.vina.validity import VALIDITY_CSV, VALIDITY_JSON, VinaValidityReport

ROOT = Path(__file__).resolve().parents[2]


def _figures():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "readme_figures", ROOT / "scripts/readme_figures.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_validity_table_is_in_the_release_and_on_the_judge_page(
    built_release_site: Path,
) -> None:
    release = built_release_site.parent / "release"
    manifest = json.loads((release / "MANIFEST.json").read_text())
    files = json.dumps(manifest["files"])
    assert VALIDITY_JSON in files and VALIDITY_CSV in files  # hashed like the others
    rep = VinaValidityReport.model_validate_json((release / VALIDITY_JSON).read_text())
    assert rep.judge == "literal" and rep.conditions == ["structured_memory"]
    assert rep.models == ["procedural-drift-mid", "procedural-oracle"]
    assert {m.metric for m in rep.metrics} == set(METRICS)
    page = (built_release_site / "judge.html").read_text()
    assert 'id="vinabench-validity"' in page
    for pool in rep.pools():
        assert f'id="vinabench-validity-{pool}"' in page
    table = re.search(r'<table id="vinabench-validity-all".*?</table>', page, re.S)
    assert table is not None
    assert all(f'<th scope="col">{m}</th>' in table.group(0) for m in METRICS)
    assert "data/validation/vinabench_validity.csv" in page
    assert (built_release_site / "data" / VALIDITY_CSV).is_file()  # the link's target
    block = _figures().fig_vinabench_validity(release)
    assert all(f"| {m} |" in block for m in METRICS)
    assert "False alarms (a clean unit failed): 0 of" in block
