"""VinaBench files that break the format (issue 45 items 11 and 12): a per-scene list one
entry too long, control and bidirectional characters in names, a time or place that is not
a string, a string ``story_id`` for VWP; and the offline path: ``--llm mock`` reads
VinaBench's prose sparsely so ``--compare-gold`` runs without a key, and a timed-out import
call is named as the import's."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from vsb.cli.main import cli, main
from vsb.evaluators.vlm.execute import JudgeOptions
from vsb.narrative.importer import build_llm, import_narratives
from vsb.narrative.sources import read_narratives
from vsb.store.calls import RetryPolicy
from vsb.story.io import load_suite
from vsb.validation.sim_judge import serve_json

FIXTURE = Path(__file__).parent / "vinabench"


def _vsb(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _vwp() -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads((FIXTURE / "vwp_test.json").read_text())
    return doc


def _write(tmp_path: Path, samples: list[dict[str, Any]], name: str = "vwp_test.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(samples))
    return path


@pytest.mark.parametrize("key", ["scene_characters", "time", "location"])
def test_a_per_scene_list_one_entry_too_long_rejects_its_story(tmp_path: Path, key: str) -> None:
    samples = _vwp()
    extra = {"present": ["Teo"], "num_present": 1} if key == "scene_characters" else "night"
    samples[0][key] = [extra, *samples[0][key]]  # would shift every annotation by a scene
    path = _write(tmp_path, samples)
    got = _vsb("suite", "import", path, "--constraints", "gold", "--out", tmp_path / "o")
    assert got.exit_code == 2, got.output
    lines = [x for x in got.output.splitlines() if x.startswith("rejected")]
    assert lines == [
        f"rejected tt0000001_0007_2_41 ({path}/0 (VinaBench VWP)): {key} has 5 entries for 4 scenes"
    ]
    assert {s.id for s in load_suite(tmp_path / "o")} == {"tt0000002_0011_0_7"}


@pytest.mark.parametrize(
    ("spoil", "pointer", "words"),
    [
        (lambda s: s["global_profile"].update({"Ma\x00ra": "a cook"}), "/0/global_profile",
         "U+0000"),
        (lambda s: s["global_profile"].update({"Ada\u202eeno": "a cook"}), "/0/global_profile",
         "U+202E"),
        (lambda s: s["scene_characters"][1]["present"].append("Teo\u2066"),
         "/0/scene_characters/1/present", "U+2066"),
        (lambda s: s["scene_characters"][1]["present"].append("Te\x1bo"),
         "/0/scene_characters/1/present", "U+001B"),
        (lambda s: s["global_profile"].update({"Mara": "a cook\u202e in red"}),
         "/0/global_profile", "U+202E"),
        (lambda s: s["time"].__setitem__(2, 12), "/0/time/2",
         "expected each scene's time a string"),
        (lambda s: s["location"].__setitem__(1, {"name": "kitchen"}), "/0/location/1",
         "expected each scene's location a string"),
        (lambda s: s.update(story_id="41"), "/0/story_id", "expected story_id an integer"),
    ],
)  # fmt: skip
def test_a_malformed_sample_is_one_line_naming_the_file_sample_and_field(
    tmp_path: Path, spoil: Any, pointer: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _vwp()
    spoil(samples[0])
    path = _write(tmp_path, samples)
    out = tmp_path / "o"
    assert main(["suite", "import", str(path), "--constraints", "gold", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: {pointer}: "), err
    assert words in err and not out.exists()


def test_a_null_time_or_place_is_not_given(tmp_path: Path) -> None:
    samples = _vwp()
    samples[0]["time"][2] = None
    got = _vsb("suite", "import", _write(tmp_path, samples), "--constraints", "gold",
               "--out", tmp_path / "o")  # fmt: skip
    assert got.exit_code == 0, got.output


def test_a_string_story_id_with_scene_full_id_is_refused_in_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = {**_vwp()[0], "story_id": "41"}
    path = tmp_path / "vwp.jsonl"
    path.write_text(json.dumps(sample) + "\n")
    out = tmp_path / "o"
    assert main(["suite", "import", str(path), "--constraints", "gold", "--out", str(out)]) == 1
    assert "line 1/story_id: expected story_id an integer" in capsys.readouterr().err


def test_compare_gold_runs_offline_with_the_mock_reader(tmp_path: Path) -> None:
    files = sorted(FIXTURE.glob("*.json"))
    got = _vsb("suite", "import", *files, "--llm", "mock", "--compare-gold", "--out",
               tmp_path / "o")  # fmt: skip
    assert got.exit_code == 0, got.output
    assert len(load_suite(tmp_path / "o")) == 6
    summary = json.loads((tmp_path / "o" / "import" / "gold-agreement.json").read_text())
    assert summary["stories"] == 6 and summary["fields"]["presence"]["compared"] > 0
    assert "presence " in got.output


def test_the_mock_reads_names_places_and_times_sparsely() -> None:
    from vsb.narrative.reader import sparse_story

    n = read_narratives([FIXTURE / "vwp_test.json"])[0]
    answer = sparse_story(list(n.scenes))
    assert [c["name"] for c in answer["characters"]] == ["Mara", "Teo"]
    assert answer["start"] == {"place": "kitchen", "time": "unknown", "weather": "unknown",
                               "present": ["Mara"]}  # fmt: skip
    assert {"type": "enter", "character": "Teo"} in answer["scenes"][1]["events"]
    assert {"type": "set_time", "time": "noon", "new_day": False} in answer["scenes"][2]["events"]
    assert {"type": "exit", "character": "Teo"} in answer["scenes"][3]["events"]


def test_a_timed_out_import_call_is_named_as_the_imports(tmp_path: Path) -> None:
    def slow(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(0.6)
        return 500, {}

    server = serve_json(slow)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    narratives = read_narratives([FIXTURE / "vwp_test.json"])[:1]
    try:
        with httpx.Client(timeout=0.2) as client:
            llm = build_llm("openai-compatible:fake", base_url=url, client=client)
            options = JudgeOptions(cache_dir=tmp_path / "c", sleep=lambda s: None,
                                   retry=RetryPolicy(max_attempts=2))  # fmt: skip
            report, _ = import_narratives(narratives, llm, options,
                                          ledger_path=tmp_path / "ledger.sqlite")  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    error = report.results[0].error or ""
    assert error.startswith("the LLM call failed: import LLM request to ") and "timed out" in error
    assert "VLM" not in error
