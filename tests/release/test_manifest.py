"""Freeze and verify: a release names every changed, missing and extra file; only the
top-level oracle/ is left out; --expect-root ties a release to the root hash a reader was given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.errors import InputError, ReleaseError
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
    freeze(root, "v9.9.9")
    return root


def test_manifest_content(rel: Path) -> None:
    m = load_manifest(rel)
    assert m.release == "v9.9.9"
    paths = [f.path for f in m.files]
    assert paths == ["images/m/c/scene_01.png", "records.jsonl", "scores/scores.json"]
    assert m.excluded == ["oracle/faults.jsonl"]
    assert m.excluded_pattern == "oracle/**"
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


def test_cli_verify_a_missing_folder_says_it_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45, item 13: a wrong path is named as one, not as an unfrozen release."""
    missing = tmp_path / "build" / "v0.1.0" / "release"
    assert main(["release", "verify", str(missing)]) == 1
    err = capsys.readouterr().err
    assert "no such release folder" in err and str(missing) in err
    assert "freeze" not in err


def test_edited_release_name_breaks_the_root_hash(rel: Path) -> None:
    path = rel / "MANIFEST.json"
    obj = json.loads(path.read_text())
    obj["release"] = "v0.0.1"
    path.write_text(json.dumps(obj))
    problems = verify(rel)
    assert len(problems) == 1 and problems[0].startswith("manifest root hash mismatch")


# --- item 9: only the run's sealed oracle (top-level oracle/) is excluded ---------------------


def test_extra_file_in_a_nested_oracle_folder_fails(rel: Path) -> None:
    (rel / "scores" / "oracle").mkdir()
    (rel / "scores" / "oracle" / "x.json").write_text("{}\n")
    assert verify(rel) == ["extra: scores/oracle/x.json"]


def test_nested_oracle_folder_is_hashed(rel: Path) -> None:
    (rel / "run" / "oracle").mkdir(parents=True)
    (rel / "run" / "oracle" / "faults.jsonl").write_text("not the sealed oracle\n")
    m = freeze(rel, "v9.9.9")
    assert "run/oracle/faults.jsonl" in [f.path for f in m.files]
    assert m.excluded == ["oracle/faults.jsonl"]
    (rel / "run" / "oracle" / "faults.jsonl").write_text("edited\n")
    problems = verify(rel)
    assert len(problems) == 1 and problems[0].startswith("changed: run/oracle/faults.jsonl")


def test_verify_ignores_the_pattern_the_manifest_declares(rel: Path) -> None:
    """A manifest that claims a wider exclusion (root hash recomputed) hides nothing."""
    path = rel / "MANIFEST.json"
    obj = json.loads(path.read_text())
    obj["excluded_pattern"] = "**"
    old_root = obj.pop("root_hash")
    obj["root_hash"] = sha256_hex(canonical_json(obj))
    path.write_text(json.dumps(obj))
    readme = rel / "README.md"
    readme.write_text(readme.read_text().replace(old_root, obj["root_hash"]))
    (rel / "scores" / "oracle").mkdir()
    (rel / "scores" / "oracle" / "x.json").write_text("{}\n")
    assert verify(rel) == ["extra: scores/oracle/x.json"]


def test_cli_extra_file_in_nested_oracle(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (rel / "scores" / "oracle").mkdir()
    (rel / "scores" / "oracle" / "x.json").write_text("{}\n")
    assert main(["release", "verify", str(rel)]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"error: {rel}: verification failed: extra: scores/oracle/x.json"
    ]


def test_linked_folder_is_refused(rel: Path, tmp_path: Path) -> None:
    """A symlinked folder is not walked; its files would escape the hash unnoticed."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "hidden.json").write_text("{}\n")
    (rel / "scores" / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(ReleaseError, match="links and special files are not allowed"):
        verify(rel)


# --- item 10: the README and --expect-root -----------------------------------------------------


def test_readme_states_name_root_hash_and_how_to_verify(rel: Path) -> None:
    m = load_manifest(rel)
    text = (rel / "README.md").read_text()
    assert "# VSB release v9.9.9" in text
    assert f"Root hash (SHA-256): `{m.root_hash}`" in text
    assert f"vsb release verify RELEASE_DIR --expect-root {m.root_hash}" in text
    assert "internal consistency only" in text
    assert "README.md" not in [f.path for f in m.files]
    before = (rel / "README.md").read_bytes()
    freeze(rel, "v9.9.9")
    assert (rel / "README.md").read_bytes() == before


def test_freeze_keeps_a_foreign_readme(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "data.json").write_text("{}\n")
    (root / "README.md").write_text("my own notes\n")
    with pytest.raises(ReleaseError, match="not written by vsb release freeze"):
        freeze(root, "r")
    assert (root / "README.md").read_text() == "my own notes\n"
    assert not (root / "MANIFEST.json").exists()


def test_readme_naming_another_root_hash_fails(rel: Path) -> None:
    root = load_manifest(rel).root_hash
    readme = rel / "README.md"
    readme.write_text(readme.read_text().replace(root, "a" * 64))
    assert verify(rel) == [f"README.md does not state the root hash {root}"]


def test_expect_root(rel: Path) -> None:
    root = load_manifest(rel).root_hash
    assert verify(rel, expect_root=root) == []
    assert verify(rel, expect_root=root.upper()) == []
    other = "0" * 64
    assert verify(rel, expect_root=other) == [
        f"not the expected release: expected root hash {other}, MANIFEST.json hashes to {root}"
    ]
    with pytest.raises(InputError, match="64 hex digits"):
        verify(rel, expect_root=root[:12])


def test_tampered_release_with_recomputed_manifest(rel: Path) -> None:
    """Changing a file and refreezing passes plain verify (internal consistency only) but not
    --expect-root with the root hash the reader was given."""
    published = load_manifest(rel).root_hash
    (rel / "scores" / "scores.json").write_text('{"a": 100}\n')
    forged = freeze(rel, "v9.9.9").root_hash
    assert forged != published
    assert verify(rel) == []
    problems = verify(rel, expect_root=published)
    assert len(problems) == 1
    assert published in problems[0] and forged in problems[0]


def test_cli_expect_root(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    published = load_manifest(rel).root_hash
    assert main(["release", "verify", str(rel), "--expect-root", published]) == 0
    out = capsys.readouterr().out
    assert f"ok: v9.9.9 {published}" in out and "matches the expected" in out
    (rel / "scores" / "scores.json").write_text('{"a": 100}\n')
    assert main(["release", "freeze", str(rel)]) == 0
    assert main(["release", "verify", str(rel)]) == 0
    assert "pass --expect-root" in capsys.readouterr().out
    assert main(["release", "verify", str(rel), "--expect-root", published]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: ") and published in err and "Traceback" not in err
    assert main(["release", "verify", str(rel), "--expect-root", "abc"]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: a root hash is 64 hex digits (a SHA-256); got 'abc'"
    )


def test_verify_help_says_what_it_proves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "verify", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "internal consistency only" in text
    assert (
        "--expect-root HASH: also that this is the release whose root hash you were given" in text
    )
    assert "by the holder of the private key matching PUB.pem" in text
