"""The oracle commitment: MANIFEST.json commits to the sealed oracle without hashing it as a
file, and ``vsb release verify --oracle DIR`` accepts the true oracle and rejects any other."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.fsio import canonical_json, sha256_hex
from vsb.release.manifest import (
    COVERAGE,
    Manifest,
    freeze,
    load_manifest,
    oracle_commitment,
    root_hash,
    verify,
    verify_oracle,
)


@pytest.fixture
def rel(tmp_path: Path) -> Path:
    root = tmp_path / "v9"
    (root / "scores").mkdir(parents=True)
    (root / "scores" / "scores.json").write_text('{"a": 1}\n')
    (root / "oracle" / "more").mkdir(parents=True)
    (root / "oracle" / "faults.jsonl").write_text('{"fault": 1}\n')
    (root / "oracle" / "more" / "x.json").write_text("{}\n")
    freeze(root, "v9")
    return root


def test_commitment_is_a_hash_over_sorted_paths_and_file_hashes(rel: Path) -> None:
    m = load_manifest(rel)
    pairs = [
        ["faults.jsonl", sha256_hex(b'{"fault": 1}\n')],
        ["more/x.json", sha256_hex(b"{}\n")],
    ]
    assert m.oracle_sha256 == sha256_hex(canonical_json(pairs))
    assert m.version == "1.2"
    # the oracle's files stay out of the file list; the commitment is covered by the root hash
    assert [f.path for f in m.files] == ["scores/scores.json"]
    body = json.loads((rel / "MANIFEST.json").read_text())
    body.pop("root_hash")
    assert m.root_hash == sha256_hex(canonical_json(body))


def test_verify_oracle_accepts_the_true_oracle_copied_elsewhere(
    rel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    published = tmp_path / "published-oracle"
    shutil.copytree(rel / "oracle", published)
    assert verify_oracle(rel, published) == []
    assert main(["release", "verify", str(rel), "--oracle", str(published)]) == 0
    out = capsys.readouterr().out
    assert "is the one sealed with the release" in out


@pytest.mark.parametrize("change", ["edit", "add", "remove", "rename"])
def test_verify_oracle_rejects_a_changed_oracle(
    rel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    other = tmp_path / "other"
    shutil.copytree(rel / "oracle", other)
    if change == "edit":
        (other / "faults.jsonl").write_text('{"fault": 2}\n')
    elif change == "add":
        (other / "extra.jsonl").write_text("\n")
    elif change == "remove":
        (other / "more" / "x.json").unlink()
    else:
        (other / "faults.jsonl").rename(other / "faults2.jsonl")
    problems = verify_oracle(rel, other)
    assert len(problems) == 1 and problems[0].startswith("not the sealed oracle")
    assert main(["release", "verify", str(rel), "--oracle", str(other)]) == 1
    err = capsys.readouterr().err
    assert "not the sealed oracle" in err and "Traceback" not in err


def test_plain_verify_still_ignores_the_oracle_but_the_commitment_is_tamper_evident(
    rel: Path,
) -> None:
    (rel / "oracle" / "faults.jsonl").write_text("changed\n")
    assert verify(rel) == []  # the oracle is not a hashed file
    assert verify_oracle(rel, rel / "oracle")[0].startswith("not the sealed oracle")
    # rewriting the commitment to match the new oracle breaks the root hash
    body = json.loads((rel / "MANIFEST.json").read_text())
    body["oracle_sha256"] = oracle_commitment(rel / "oracle")
    (rel / "MANIFEST.json").write_text(json.dumps(body))
    assert verify(rel)[0].startswith("manifest root hash mismatch")
    assert "void" in verify_oracle(rel, rel / "oracle")[0]


def test_a_format_1_1_manifest_hashes_as_before(tmp_path: Path) -> None:
    """Manifests without a commitment keep their root hash (the field is left out)."""
    m = Manifest(release="old", vsb_version="0", root_hash="", files=[], excluded=[], version="1.1")
    old = sha256_hex(
        canonical_json(m.model_dump(mode="json", exclude={"root_hash", "oracle_sha256"}))
    )
    assert root_hash(m) == old


def test_a_release_without_oracle_has_no_commitment(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.txt").write_text("a")
    assert freeze(root, "r").oracle_sha256 is None
    assert "no oracle commitment" in verify_oracle(root, tmp_path)[0]


def test_the_coverage_sentence_is_the_same_everywhere(rel: Path) -> None:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    assert COVERAGE in (rel / "README.md").read_text()
    assert COVERAGE in " ".join(readme.read_text().split())


def test_a_plain_verify_says_the_oracle_went_unchecked(
    rel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38, item 5: after an edit to oracle/faults.jsonl, `verify --expect-root` passes
    (by design) but says that oracle/ was not checked and how to check it."""
    (rel / "oracle" / "faults.jsonl").write_text("changed\n")
    root = load_manifest(rel).root_hash
    assert main(["release", "verify", str(rel), "--expect-root", root]) == 0
    out = capsys.readouterr().out
    assert f"oracle/ not checked: add --oracle {rel / 'oracle'} to check it" in out
    assert main(["release", "verify", str(rel), "--oracle", str(rel / "oracle")]) == 1
    capsys.readouterr()
    shutil.rmtree(rel / "oracle")
    assert main(["release", "verify", str(rel)]) == 0
    assert "oracle/ not checked: add --oracle DIR" in capsys.readouterr().out


def test_verify_says_an_unchecked_signature_went_unchecked(
    rel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["release", "keygen", "--out", str(tmp_path / "keys")]) == 0
    private = tmp_path / "keys" / "vsb-release-private.pem"
    assert main(["release", "sign", str(rel), "--key", str(private)]) == 0
    capsys.readouterr()
    assert main(["release", "verify", str(rel)]) == 0
    assert "MANIFEST.json.sig not checked: add --key PUB.pem" in capsys.readouterr().out
