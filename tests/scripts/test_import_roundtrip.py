"""The import round trip reproduces the default suite's requirements (>= 0.98 per type), and
its comparison notices a requirement the import gets wrong."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from vsb.narrative.roundtrip import agreement
from vsb.story.models import Story

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_roundtrip.py"
_spec = importlib.util.spec_from_file_location("import_roundtrip", SCRIPT)
assert _spec is not None and _spec.loader is not None
roundtrip = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(roundtrip)


def test_round_trip_agreement_per_type(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    assert roundtrip.main(["--out", str(tmp_path / "rt"), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["by_type"]) >= {"present", "top", "holder", "state", "order", "time"}
    assert all(f["rate"] >= 0.98 for f in doc["by_type"].values())
    assert doc["rejected_stories"] == []
    assert (tmp_path / "rt" / "suite" / "suite.json").is_file()


def test_agreement_counts_a_wrong_requirement(default_suite: list[Story]) -> None:
    story = default_suite[0]
    scene = story.scenes[1]
    wrong = scene.requirements[0].model_copy(update={"source": "prompt"
                                                     if scene.requirements[0].source == "memory"
                                                     else "memory"})  # fmt: skip
    spoilt = story.model_copy(update={"scenes": [
        story.scenes[0], scene.model_copy(update={"requirements": [wrong,
                                                                   *scene.requirements[1:]]}),
        *story.scenes[2:],
    ]})  # fmt: skip
    a = agreement([story], [spoilt])
    attr = wrong.attribute
    assert a.agreed[attr] == a.total[attr] - 1 and a.rate(attr) < 1.0
    assert agreement([story], []).missing_stories == [story.id]
