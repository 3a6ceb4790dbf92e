"""VinaBench's annotation files as released (issue #37): the three portions and their ids,
long samples split, gold constraints built with no LLM call (a counting LLM server on
127.0.0.1 sees none), the gold source rule, self-contradicting annotations rejected story by
story, and the LLM-vs-gold agreement of ``--compare-gold``. The fixture in ``vinabench/`` is
written here in VinaBench's layout; it holds none of VinaBench's data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from narrative_helpers import llm_server

from vsb.cli.main import cli, main
from vsb.narrative.gold import GoldError, build_gold_story
from vsb.narrative.sources import read_narratives
from vsb.narrative.vinabench import split_sizes
from vsb.state import replay
from vsb.story.invariants import story_problems
from vsb.story.io import load_suite
from vsb.story.models import Story

FIXTURE = Path(__file__).parent / "vinabench"
FILES = sorted(FIXTURE.glob("*.json"))
IDS = {
    "tt0000001_0007_2_41": ("VWP", 4),  # scene_full_id + "_" + story_id (an integer)
    "tt0000002_0011_0_7": ("VWP", 3),
    "tt0000003_1205": ("Storyboard20K", 5),  # movie_id + "_" + global_id
    "book17_003_0": ("StorySalon", 9),  # portion + "_" + sid, 18 scenes split 9 + 9
    "book17_003_1": ("StorySalon", 9),
    "book02_011": ("StorySalon", 3),
}


def _vsb(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _samples(name: str) -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads((FIXTURE / name).read_text())
    return doc


def _write(folder: Path, name: str, samples: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(samples, indent=1))
    return path


def _story(sid: str) -> Story:
    return build_gold_story(next(n for n in read_narratives(FILES) if n.id == sid))


def _req(story: Story, rid: str) -> Any:
    k = int(rid.split(".")[0][1:])
    return next((r for r in story.scenes[k - 1].requirements if r.id == rid), None)


def test_three_portions_read_with_their_own_ids() -> None:
    got = {n.id: n for n in read_narratives(FILES)}
    assert set(got) == set(IDS)
    for sid, (portion, n_scenes) in IDS.items():
        assert len(got[sid].scenes) == n_scenes
        assert f"(VinaBench {portion})" in got[sid].source
        assert got[sid].gold is not None
    # the split parts carry their own scenes and annotations
    first, second = got["book17_003_0"], got["book17_003_1"]
    assert first.scenes[0].startswith("Page 1:") and second.scenes[0].startswith("Page 10:")
    assert second.gold is not None and second.gold.location[-1] == "tree house"


@pytest.mark.parametrize(
    ("n", "sizes"),
    [(2, [2]), (16, [16]), (17, [9, 8]), (20, [10, 10]), (23, [8, 8, 7]), (31, [8, 8, 8, 7])],
)
def test_long_samples_split_into_parts_of_at_most_ten(n: int, sizes: list[int]) -> None:
    assert split_sizes(n) == sizes


def test_the_jsonl_and_json_story_layouts_still_read(tmp_path: Path) -> None:
    path = tmp_path / "stories.json"
    path.write_text(json.dumps([{"id": "a", "scenes": ["One.", "Two."]}]))
    assert [n.id for n in read_narratives([path])] == ["a"]
    assert read_narratives([path])[0].gold is None


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ({"narrative": ["a", "b"], "story_id": 3}, "scene_full_id and story_id (VWP)"),
        ({"narrative": ["a", "b"], "movie_id": "m", "global_id": None}, "movie_id and global_id"),
        ({"narrative": "a b", "portion": "p", "sid": "1"}, "expected narrative: a list"),
        ({"narrative": ["a"], "portion": "p", "sid": "1"}, "has 1 scene(s)"),
    ],
)
def test_a_sample_without_its_keys_is_a_one_line_error(
    tmp_path: Path, sample: dict[str, Any], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "vwp_test.json", [*_samples("vwp_test.json"), sample])
    out = tmp_path / "out"
    assert main(["suite", "import", str(path), "--constraints", "gold", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: /2")
    assert expected in err and not out.exists()


def test_gold_import_makes_no_llm_request(tmp_path: Path) -> None:
    with llm_server(lambda scenes, prompt: "{}") as (url, prompts):
        gold = _vsb("suite", "import", *FILES, "--constraints", "gold", "--out", tmp_path / "g")
        assert gold.exit_code == 0, gold.output
        assert prompts == []
        assert "imported 6 of 6 stories from their gold annotations" in gold.output
        # the counting server does count: the LLM reading of the same files calls it
        llm = _vsb("suite", "import", *FILES, "--llm", "openai-compatible:fake", "--base-url",
                   url, "--out", tmp_path / "l", "--cache", tmp_path / "c")  # fmt: skip
        assert len(prompts) >= len(IDS) and llm.exit_code == 2
    stories = {s.id: s for s in load_suite(tmp_path / "g")}
    assert set(stories) == set(IDS)
    assert all(s.imported is not None and s.imported.llm == "gold" for s in stories.values())
    report = json.loads((tmp_path / "g" / "import" / "report.json").read_text())
    assert {e["calls"] for e in report["stories"]} == {0}
    valid = _vsb("suite", "validate", tmp_path / "g")
    assert valid.exit_code == 0 and "6 of 6 story files valid" in valid.output


def test_gold_refuses_files_without_annotations_and_an_llm(tmp_path: Path) -> None:
    txt = tmp_path / "park.txt"
    txt.write_text("One.\n\nTwo.\n")
    got = _vsb("suite", "import", txt, "--constraints", "gold", "--out", tmp_path / "o")
    assert got.exit_code == 2 and "has no annotations" in got.output
    got = _vsb("suite", "import", *FILES, "--constraints", "gold", "--llm", "mock", "--out",
               tmp_path / "o")  # fmt: skip
    assert got.exit_code == 2 and "calls no LLM" in got.output
    got = _vsb("suite", "import", *FILES, "--out", tmp_path / "o")
    assert got.exit_code == 2 and "--llm KIND:MODEL is needed" in got.output


def test_presence_absence_time_place_and_profile_from_the_annotations() -> None:
    story = _story("tt0000001_0007_2_41")
    present = [[n for n, c in sc.state.characters.items() if c.present] for sc in story.scenes]
    assert present == [["Mara"], ["Mara", "Teo"], ["Mara", "Teo"], ["Mara"]]
    # absence of a profiled character, before and after they appear, judged from the profile
    for rid in ("s1.Teo.absent", "s4.Teo.absent"):
        r = _req(story, rid)
        assert r.judged_by == "vlm" and r.expected.startswith("a tall young man")
        assert r.taxonomy == "character_unexpected" and r.source == "memory"
    assert _req(story, "s4.Teo.present") is None  # withheld: the absent fact asks it
    # a vocabulary place is a vocabulary fact; a place outside it is free text
    assert _req(story, "s1.scene.location").expected == "kitchen"
    assert _req(story, "s1.scene.location").judged_by is None
    assert _req(story, "s3.scene.location").expected == "restaurant"
    assert _req(story, "s3.scene.location").judged_by == "vlm"
    assert [_req(story, f"s{k}.scene.time").expected for k in (1, 3, 4)] == [
        "morning", "noon", "evening",
    ]  # fmt: skip
    # the profile: vocabulary look facts, and the profile as written
    assert _req(story, "s2.Teo.hair").expected == ["blond", "short"]
    assert _req(story, "s2.Teo.accessory").expected == "glasses"
    assert _req(story, "s1.Mara.top").expected == "red"
    assert _req(story, "s1.Mara.profile").judged_by == "vlm"
    assert _req(story, "s1.Mara.profile").dimension == "identity"
    # what the annotations do not give is withheld
    assert _req(story, "s1.scene.weather") is None and _req(story, "s1.Mara.pose") is None
    assert _req(story, "s2.scene.order") is None
    # a character the profile gives no skin, hair colour or top: present through the profile
    pip = _story("book17_003_0")
    assert _req(pip, "s1.Pip.present") is None
    assert _req(pip, "s1.Pip.profile").expected == "a small orange fox wearing a yellow scarf"


def test_the_gold_source_rule() -> None:
    story = _story("tt0000001_0007_2_41")
    src = {r.id: r.source for sc in story.scenes for r in sc.requirements}
    assert src["s1.Mara.present"] == "prompt"  # "Mara unlocks the bakery kitchen …"
    assert src["s2.Mara.present"] == "memory"  # "Her brother Teo arrives": Mara not named
    assert src["s2.Teo.present"] == "prompt"
    assert src["s1.scene.location"] == "prompt"  # the kitchen is said
    assert src["s2.scene.location"] == "memory"  # "… starts kneading the dough"
    assert src["s1.scene.time"] == "memory"  # "before sunrise" is not "morning"
    assert src["s3.scene.time"] == "prompt"  # "By noon …"
    assert src["s1.Mara.hair"] == "memory"  # the text never says "long black hair"
    hale = _story("tt0000002_0011_0_7")
    src = {r.id: r.source for sc in hale.scenes for r in sc.requirements}
    assert src["s2.Stranger.top"] == "prompt"  # "A stranger in a grey coat"
    assert src["s1.scene.time"] == "prompt"  # "On a rainy night"
    assert "s3.scene.time" not in src  # "unknown": withheld


def test_a_hand_edited_source_is_caught(tmp_path: Path) -> None:
    assert (
        _vsb("suite", "import", *FILES, "--constraints", "gold", "--out", tmp_path).exit_code == 0
    )
    path = tmp_path / "tt0000001_0007_2_41.json"
    doc = json.loads(path.read_text())
    req = doc["scenes"][1]["requirements"][0]
    assert req["id"] == "s2.Mara.present" and req["source"] == "memory"
    req["source"] = "prompt"
    path.write_text(json.dumps(doc))
    got = _vsb("suite", "validate", path)
    assert got.exit_code == 1 and "s2.Mara.present: source" in got.output


def _spoil(samples: list[dict[str, Any]], how: str) -> tuple[int, str]:
    """Make the first sample contradict itself; the scene and the words of the error."""
    s = samples[0]
    if how == "twice":
        s["scene_characters"][1]["present"] = ["Mara", "Teo", "Mara"]
        return 2, "Mara listed present twice"
    if how == "count":
        s["scene_characters"][2]["num_present"] = 1
        return 3, "num_present is 1 but 2 characters are listed present"
    if how == "hair":
        s["global_profile"]["Teo"] += "; his blond hair is dyed auburn hair now"
        return 2, "Teo's profile gives two values: hair color 'blond'"
    if how == "length":
        s["time"] = s["time"][:3]
        return 4, "time has 3 entries for 4 scenes"
    s["global_profile"]["Mara"] += ", light skin, and dark-skinned"
    return 1, "Mara's profile gives two values: skin 'tone-2' ('light skin') and 'tone-5'"


@pytest.mark.parametrize("how", ["twice", "count", "hair", "length", "skin"])
def test_a_self_contradicting_annotation_rejects_that_story_only(tmp_path: Path, how: str) -> None:
    samples = _samples("vwp_test.json")
    scene, words = _spoil(samples, how)
    path = _write(tmp_path / "in", "vwp_test.json", samples)
    got = _vsb("suite", "import", path, FILES[0], "--constraints", "gold", "--out", tmp_path / "o")
    assert got.exit_code == 2
    line = next(x for x in got.output.splitlines() if x.startswith("rejected"))
    assert line.startswith("rejected tt0000001_0007_2_41 (")
    assert f"vwp_test.json/0 (VinaBench VWP)): scene {scene}: " in line and words in line
    written = {s.id for s in load_suite(tmp_path / "o")}
    assert written == {"tt0000002_0011_0_7", "book17_003_0", "book17_003_1", "book02_011"}
    report = json.loads((tmp_path / "o" / "import" / "report.json").read_text())
    bad = next(e for e in report["stories"] if e["status"] == "rejected")
    assert bad["scene"] == scene and words in bad["error"]


def test_compare_gold_measures_the_llm_reading_per_field(tmp_path: Path) -> None:
    path = _write(tmp_path / "in", "vwp_test.json", _samples("vwp_test.json")[:1])
    # an LLM that reads Teo into scene 2 only (gold: 2 and 3), the places right, the
    # noon wrong (afternoon), Mara's look right, Teo's hair long and his glasses missed
    answer = {
        "characters": [
            {"name": "Mara", "skin": "unknown", "hair_color": "black", "hair_style": "long",
             "top": "red", "trousers": "unknown", "accessory": "unknown", "pose": "unknown"},
            {"name": "Teo", "skin": "unknown", "hair_color": "blond", "hair_style": "long",
             "top": "unknown", "trousers": "unknown", "accessory": "none", "pose": "unknown"},
        ],
        "objects": [],
        "start": {"place": "kitchen", "time": "morning", "weather": "unknown",
                  "present": ["Mara"]},
        "scenes": [
            {"events": [], "entities": []},
            {"events": [{"type": "enter", "character": "Teo"}], "entities": []},
            {"events": [{"type": "exit", "character": "Teo"},
                        {"type": "move", "location": "restaurant"},
                        {"type": "set_time", "time": "afternoon"}], "entities": []},
            {"events": [{"type": "set_time", "time": "evening"}], "entities": []},
        ],
    }  # fmt: skip
    with llm_server(lambda scenes, prompt: json.dumps(answer)) as (url, prompts):
        got = _vsb("suite", "import", path, "--llm", "openai-compatible:fake", "--base-url",
                   url, "--compare-gold", "--out", tmp_path / "o", "--cache",
                   tmp_path / "c")  # fmt: skip
    assert len(prompts) == 1
    assert got.exit_code == 0, got.output
    summary = json.loads((tmp_path / "o" / "import" / "gold-agreement.json").read_text())
    fields = summary["fields"]
    assert summary["stories"] == 1
    assert (fields["presence"]["compared"], fields["presence"]["agree"]) == (8, 7)
    assert fields["presence"]["confusion"]["gold_present_llm_absent"] == 1
    assert (fields["location"]["compared"], fields["location"]["agree"]) == (4, 4)
    assert (fields["time"]["compared"], fields["time"]["agree"]) == (4, 3)
    # Mara: hair colour, hair style, top all agree; Teo: hair colour agrees, hair style
    # (long, gold short) does not, top and accessory (none: no fact) the LLM does not give
    assert (fields["identity"]["compared"], fields["identity"]["agree"]) == (7, 4)
    assert fields["identity"]["llm_unknown"] == 2
    assert "presence 7/8 (0.88)" in got.output
    import pandas as pd

    rows = pd.read_csv(tmp_path / "o" / "import" / "gold-agreement.csv")
    assert len(rows) == 8 + 4 + 4 + 7 and rows["agree"].sum() == 7 + 4 + 3 + 4


def test_a_fourth_character_is_judged_from_its_profile_only(tmp_path: Path) -> None:
    samples = _samples("vwp_test.json")[:1]
    s = samples[0]
    s["global_profile"].update({"Ada": "a cook with grey hair in a white hat", "Bel": "a waiter"})
    s["scene_characters"][2]["present"] = ["Mara", "Teo", "Ada", "Bel"]
    s["scene_characters"][2]["num_present"] = 4
    path = _write(tmp_path / "in", "vwp_test.json", samples)
    got = _vsb("suite", "import", path, "--constraints", "gold", "--out", tmp_path / "o")
    assert got.exit_code == 0, got.output
    (story,) = load_suite(tmp_path / "o")
    assert [c.name for c in story.world.characters] == ["Mara", "Teo", "Ada"]
    assert _req(story, "s3.Ada.present").expected is True  # tracked: the first three
    assert _req(story, "s3.Bel.present") is None  # the fourth: by description only
    assert _req(story, "s3.Bel.profile").expected == "a waiter"
    assert _req(story, "s2.Bel.absent").judged_by == "vlm"
    assert _vsb("suite", "validate", tmp_path / "o").exit_code == 0


_NAMES = ("Mara", "Teo", "Ada", "Bel", "Cy")
_LOOKS = (
    "a woman with long black hair in a red sweater",
    "a man with short blond hair and glasses, in a blue shirt",
    "a girl with brown hair in a beige coat and a scarf",
    "an old man with grey hair, light skin and a green jacket",
    "a boy in a red shirt with red trousers",
    "a small orange fox",
    "",
)
_TIMES = ("morning", "noon", "afternoon", "evening", "night", "early morning", "unknown", "")
_PLACES = ("kitchen", "the park", "restaurant", "under a bridge", "unknown", "ship deck", "beach")


@st.composite
def _sample(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(2, 8))
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=5, unique=True))
    profile = {x: draw(st.sampled_from(_LOOKS)) for x in names}
    present = [draw(st.lists(st.sampled_from(names), unique=True)) for _ in range(n)]
    return {
        "scene_full_id": "tt9", "story_id": draw(st.integers(0, 99)),
        "narrative": [f"{' and '.join(p) or 'Nobody'} at the {draw(st.sampled_from(_PLACES))}."
                      for p in present],
        "global_profile": profile,
        "scene_characters": [{"present": [*p, *draw(st.lists(st.just("Stranger"), max_size=1))]}
                             for p in present],
        "time": [draw(st.sampled_from(_TIMES)) for _ in range(n)],
        "location": [draw(st.sampled_from(_PLACES)) for _ in range(n)],
    }  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sample=_sample())
def test_any_annotation_makes_a_valid_story_or_a_rejection_naming_a_scene(
    sample: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = _write(tmp_path_factory.mktemp("h"), "vwp_test.json", [sample])
    (narrative,) = read_narratives([path])
    try:
        story = build_gold_story(narrative)
    except GoldError as err:
        assert err.scene is None or 1 <= err.scene <= len(sample["narrative"])
        assert "contradiction" in err.message or "places" in err.message
        return
    again = Story.model_validate_json(story.model_dump_json())
    states = replay(again.world, [s.events for s in again.scenes], again.id)
    assert list(story_problems(again, states, "x")) == []
    cast = [c.name for c in story.world.characters]
    for k, scene in enumerate(story.scenes):
        gold = [x for x in sample["scene_characters"][k]["present"] if x in cast]
        assert {x for x, c in scene.state.characters.items() if c.present} == set(gold)
        ids = [r.id for r in scene.requirements]
        assert len(ids) == len(set(ids))
        for r in scene.requirements:
            assert story.imported is not None and story.imported.sources[r.id] == r.source
            if r.attribute == "absent":
                assert r.subject not in sample["scene_characters"][k]["present"]


def test_samples_one_per_line_read_as_the_json_list(tmp_path: Path) -> None:
    """Was: 'expected {"story_id": STRING, …}' for a VWP sample (its story_id an integer)."""
    lines = tmp_path / "vinabench.jsonl"
    rows = [x for f in FILES for x in json.loads(f.read_text())]
    lines.write_text("".join(json.dumps(x) + "\n" for x in rows))
    from_lines = {n.id: n for n in read_narratives([lines])}
    from_json = {n.id: n for n in read_narratives(FILES)}
    assert set(from_lines) == set(IDS)
    for sid, n in from_json.items():
        assert (from_lines[sid].scenes, from_lines[sid].gold) == (n.scenes, n.gold)
        assert build_gold_story(from_lines[sid]).scenes == build_gold_story(n).scenes
    assert from_lines["book02_011"].source == f"{lines}:line 2 (VinaBench StorySalon)"
    vsb_line = tmp_path / "stories.jsonl"
    vsb_line.write_text(json.dumps({"story_id": "s-1", "narrative": ["One.", "Two."]}) + "\n")
    (plain,) = read_narratives([vsb_line])
    assert plain.id == "s-1" and plain.gold is None
