"""Freeze and verify: a release names every changed, missing and extra file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.errors import ReleaseError
from vsb.fsio import canonical_json, sha256_hex
from vsb.release.manifest import freeze, load_manifest, verify, verify_or_raise


@pytest.fixture
def rel(tmp_path: Path) -> Path:
    root = tmp_path / "v9.9.9"
    (root / "scores").mkdir(parents=True)
    (root / "scores" / "scores.json").write_text('{"a": 1}\n')
    (root / "images" / "m" / "c").mkdir(parents=True)
    (root / "images" / "m" / "c" / "scene_01.png").write_bytes(b"\x89PNG fake")
    (root / "records.jsonl").write_text("{}\n")
    (root / "oracle").mkdir()
    (root / "oracle" / "faults.jsonl").write_text("secret\n")
    (root / "run" / "oracle").mkdir(parents=True)
    (root / "run" / "oracle" / "faults.jsonl").write_text("secret too\n")
    freeze(root, "v9.9.9")
    return root


def test_manifest_content(rel: Path) -> None:
    m = load_manifest(rel)
    assert m.release == "v9.9.9"
    paths = [f.path for f in m.files]
    assert paths == ["images/m/c/scene_01.png", "records.jsonl", "scores/scores.json"]
    assert m.excluded == ["oracle/faults.jsonl", "run/oracle/faults.jsonl"]
    assert m.files[2].size == len('{"a": 1}\n')
    assert m.files[2].sha256 == sha256_hex(b'{"a": 1}\n')
    body = json.loads((rel / "MANIFEST.json").read_text())
    del body["root_hash"]
    assert m.root_hash == sha256_hex(canonical_json(body))
    assert verify(rel) == []


def test_freeze_is_deterministic(rel: Path) -> None:
    first = (rel / "MANIFEST.json").read_bytes()
    freeze(rel, "v9.9.9")
    assert (rel / "MANIFEST.json").read_bytes() == first


def test_one_changed_byte(rel: Path) -> None:
    p = rel / "images" / "m" / "c" / "scene_01.png"
    data = bytearray(p.read_bytes())
    data[-1] ^= 1
    p.write_bytes(bytes(data))
    problems = verify(rel)
    assert len(problems) == 1
    assert problems[0].startswith("changed: images/m/c/scene_01.png")


def test_deleted_file(rel: Path) -> None:
    (rel / "records.jsonl").unlink()
    assert verify(rel) == ["missing: records.jsonl"]


def test_added_file(rel: Path) -> None:
    (rel / "scores" / "extra.csv").write_text("x\n")
    assert verify(rel) == ["extra: scores/extra.csv"]


def test_oracle_changes_are_not_reported(rel: Path) -> None:
    (rel / "oracle" / "faults.jsonl").write_text("other\n")
    (rel / "oracle" / "more.jsonl").write_text("new\n")
    assert verify(rel) == []


def test_edited_manifest_entry(rel: Path) -> None:
    path = rel / "MANIFEST.json"
    obj = json.loads(path.read_text())
    obj["files"][1]["sha256"] = "0" * 64
    path.write_text(json.dumps(obj))
    problems = verify(rel)
    assert problems[0].startswith("manifest root hash mismatch")
    assert any(p.startswith("changed: records.jsonl") for p in problems)


def test_edited_root_hash(rel: Path) -> None:
    path = rel / "MANIFEST.json"
    obj = json.loads(path.read_text())
    obj["root_hash"] = "f" * 64
    path.write_text(json.dumps(obj))
    problems = verify(rel)
    assert len(problems) == 1
    assert "root hash mismatch" in problems[0] and "f" * 64 in problems[0]


def test_malformed_manifest(rel: Path) -> None:
    (rel / "MANIFEST.json").write_text("{not json")
    with pytest.raises(ReleaseError, match="not valid JSON"):
        verify(rel)


def test_verify_or_raise_lists_everything(rel: Path) -> None:
    (rel / "records.jsonl").unlink()
    (rel / "new.txt").write_text("n")
    with pytest.raises(ReleaseError) as info:
        verify_or_raise(rel)
    assert "missing: records.jsonl" in str(info.value)
    assert "extra: new.txt" in str(info.value)


def test_cli_freeze_and_verify(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "freeze", str(rel)]) == 0
    assert "v9.9.9" in capsys.readouterr().out
    assert main(["release", "verify", str(rel)]) == 0
    assert "ok: v9.9.9" in capsys.readouterr().out
    (rel / "scores" / "scores.json").write_text('{"a": 2}\n')
    (rel / "records.jsonl").unlink()
    assert main(["release", "verify", str(rel)]) == 1
    err = capsys.readouterr().err
    assert "changed: scores/scores.json" in err
    assert "missing: records.jsonl" in err
    assert "2 problem(s)" in err


def test_cli_verify_without_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "verify", str(tmp_path)]) == 1
    assert "no MANIFEST.json" in capsys.readouterr().err


def test_edited_release_name_breaks_the_root_hash(rel: Path) -> None:
    path = rel / "MANIFEST.json"
    obj = json.loads(path.read_text())
    obj["release"] = "v0.0.1"
    path.write_text(json.dumps(obj))
    problems = verify(rel)
    assert len(problems) == 1 and problems[0].startswith("manifest root hash mismatch")
