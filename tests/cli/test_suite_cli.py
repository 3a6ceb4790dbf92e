"""``vsb suite``: generate, validate (one clear line per problem, no traceback) and stats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main


def _invalid(tmp_path: Path, suite_dir: Path, edit: object) -> Path:
    src = suite_dir / "possession-medium-a.json"
    doc = json.loads(src.read_text())
    out = tmp_path / "bad.json"
    if callable(edit):
        edit(doc)
        out.write_text(json.dumps(doc))
    else:
        out.write_text(str(edit))
    return out


def test_generate_validate_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "suite"
    assert main(["suite", "generate", "--out", str(out)]) == 0
    assert "40 stories, 210 scenes" in capsys.readouterr().out
    assert main(["suite", "validate", str(out)]) == 0
    assert "40 of 40 story files valid" in capsys.readouterr().out
    assert main(["suite", "stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "wardrobe" in text and "causal" in text and "memory" in text


def _set(path: list[object], value: object):  # type: ignore[no-untyped-def]
    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        node = doc
        for p in path[:-1]:
            node = node[p]  # type: ignore[index]
        node[path[-1]] = value  # type: ignore[index]

    return edit


@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        ("{not json", "line 1 column 2: invalid JSON"),
        (_set(["scenes", 1, "index"], "two"), "/scenes/1/index: expected integer, got string"),
        (_set(["scenes", 2, "events", 0], {"type": "teleport", "character": "Ama"}),
         "/scenes/2/events/0/type: unknown event type 'teleport'"),
        (_set(["world", "start_time"], 7), "/world/start_time: expected string"),
        (_set(["scenes", 1, "state", "weather"], "foggy"),
         "/scenes/1/state: expected state differs from the state obtained by replaying"),
    ],
)  # fmt: skip
def test_validate_reports_one_line_per_problem(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str], edit: object,
    expect: str | None,
) -> None:  # fmt: skip
    bad = _invalid(tmp_path, suite_dir, edit)
    assert main(["suite", "validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and all(ln.startswith(str(bad)) for ln in lines), err
    if expect:
        assert any(expect in ln for ln in lines), err


def test_validate_exit_status_and_impossible_transition(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((suite_dir / "possession-medium-a.json").read_text())
    holder = next(o["initial_holder"] for o in doc["world"]["objects"] if o["initial_holder"])
    other = next(c["name"] for c in doc["world"]["characters"] if c["name"] != holder)
    kind = next(o["kind"] for o in doc["world"]["objects"] if o["initial_holder"])
    doc["scenes"][1]["events"].insert(
        0, {"type": "give", "object": kind, "giver": other, "receiver": holder}
    )
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    good = tmp_path / "good.json"
    shutil.copy(suite_dir / "wardrobe-easy.json", good)
    assert main(["suite", "validate", str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: /scenes/1/events/0: impossible transition (give_not_held)" in err
    assert str(good) not in err


def test_missing_path_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "stats", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file or directory" in err


def test_generate_text_styles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "implicit"
    assert main(["suite", "generate", "--out", str(out), "--text-style", "implicit"]) == 0
    assert "(68 inferred)" in capsys.readouterr().out
    assert json.loads((out / "suite.json").read_text())["prompt_style"] == "implicit"
    doc = json.loads((out / "damage_state-easy.json").read_text())
    assert any(r.get("inferred") for sc in doc["scenes"] for r in sc["requirements"])
    assert main(["suite", "validate", str(out)]) == 0  # the schema and the invariants hold
    capsys.readouterr()
    para = tmp_path / "para"
    assert main(["suite", "generate", "--out", str(para), "--text-style", "paraphrase"]) == 0
    assert "inferred" not in capsys.readouterr().out
    assert json.loads((para / "suite.json").read_text())["prompt_style"] == "paraphrase"
    argv = ["suite", "generate", "--out", str(tmp_path / "x"), "--paraphrase"]
    assert main([*argv, "--text-style", "implicit"]) == 2
    assert "--paraphrase contradicts --text-style implicit" in capsys.readouterr().err
    assert main([*argv[:4], "--text-style", "sarcastic"]) == 2
    assert "'sarcastic' is not one of" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_an_edited_inferred_mark_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "implicit"
    assert main(["suite", "generate", "--out", str(out), "--text-style", "implicit"]) == 0
    path = out / "damage_state-easy.json"
    doc = json.loads(path.read_text())
    req = next(r for sc in doc["scenes"] for r in sc["requirements"] if r.get("inferred"))
    del req["inferred"]
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["suite", "validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "s2.vase.state: inferred false differs from the derived true" in err
