"""Ed25519 signatures of MANIFEST.json: keygen, sign, verify --key, and one-line errors."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from vsb.cli.main import main
from vsb.errors import InputError, ReleaseError
from vsb.release.manifest import freeze, load_manifest, verify
from vsb.release.signing import (
    PRIVATE_KEY_NAME,
    PUBLIC_KEY_NAME,
    fingerprint,
    generate_keypair,
    load_private_key,
    load_public_key,
    sign_release,
    signature_problems,
)


@pytest.fixture
def rel(tmp_path: Path) -> Path:
    root = tmp_path / "v1.0.0"
    (root / "scores").mkdir(parents=True)
    (root / "scores" / "scores.json").write_text('{"alpha": 0.8}\n')
    (root / "records.jsonl").write_text("{}\n")
    (root / "oracle").mkdir()
    (root / "oracle" / "faults.jsonl").write_text("sealed\n")
    freeze(root, "v1.0.0")
    return root


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    return generate_keypair(tmp_path / "keys")


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


def test_keygen_files_and_modes(keys: tuple[Path, Path]) -> None:
    private, public = keys
    assert (private.name, public.name) == (PRIVATE_KEY_NAME, PUBLIC_KEY_NAME)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    key = load_private_key(private)
    assert fingerprint(key.public_key()) == fingerprint(load_public_key(public))
    assert not list(private.parent.glob(".*.tmp"))


def test_keygen_never_replaces_a_key(keys: tuple[Path, Path]) -> None:
    private, public = keys
    before = private.read_bytes(), public.read_bytes()
    with pytest.raises(InputError, match="already exists"):
        generate_keypair(private.parent)
    assert (private.read_bytes(), public.read_bytes()) == before


def test_sign_and_verify(rel: Path, keys: tuple[Path, Path]) -> None:
    private, public = keys
    sig, key_id = sign_release(rel, private)
    assert sig == rel / "MANIFEST.json.sig" and len(sig.read_bytes()) == 64
    assert key_id == fingerprint(load_public_key(public))
    assert signature_problems(rel, load_public_key(public)) == []
    assert verify(rel) == []  # the signature file is not an extra file


def test_freeze_keeps_a_signature_of_identical_bytes_only(
    rel: Path, keys: tuple[Path, Path]
) -> None:
    private, _ = keys
    sig, _ = sign_release(rel, private)
    freeze(rel, "v1.0.0")
    assert sig.is_file()
    (rel / "records.jsonl").write_text('{"x": 1}\n')
    freeze(rel, "v1.0.0")
    assert not sig.exists()


def test_tampered_release_fails_key(rel: Path, keys: tuple[Path, Path]) -> None:
    """A changed file with a recomputed manifest passes plain verify but not --key, whether
    the forger keeps the old signature or drops it."""
    private, public = keys
    sig, _ = sign_release(rel, private)
    old_sig = sig.read_bytes()
    (rel / "scores" / "scores.json").write_text('{"alpha": 0.99}\n')
    freeze(rel, "v1.0.0")
    assert verify(rel) == []
    pub = load_public_key(public)
    assert signature_problems(rel, pub)[0].startswith("not signed: no MANIFEST.json.sig")
    sig.write_bytes(old_sig)
    problems = signature_problems(rel, pub)
    assert len(problems) == 1 and problems[0].startswith("bad signature")
    assert fingerprint(pub) in problems[0]


def test_signature_by_another_key(rel: Path, keys: tuple[Path, Path], tmp_path: Path) -> None:
    _, public = keys
    other_private, _ = generate_keypair(tmp_path / "other")
    sign_release(rel, other_private)
    assert signature_problems(rel, load_public_key(public))[0].startswith("bad signature")


def test_truncated_signature(rel: Path, keys: tuple[Path, Path]) -> None:
    private, public = keys
    sig, _ = sign_release(rel, private)
    sig.write_bytes(sig.read_bytes()[:40])
    assert signature_problems(rel, load_public_key(public)) == [
        "bad signature: MANIFEST.json.sig has 40 bytes, an Ed25519 signature has 64"
    ]


def test_sign_refuses_a_broken_release(rel: Path, keys: tuple[Path, Path]) -> None:
    (rel / "records.jsonl").unlink()
    with pytest.raises(ReleaseError, match=r"missing: records\.jsonl"):
        sign_release(rel, keys[0])
    assert not (rel / "MANIFEST.json.sig").exists()


def test_bad_key_files(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    private, public = keys
    with pytest.raises(InputError, match="does not exist"):
        load_public_key(tmp_path / "nope.pem")
    junk = tmp_path / "junk.pem"
    junk.write_text("hello\n")
    with pytest.raises(InputError, match="not a PEM file"):
        load_public_key(junk)
    broken = tmp_path / "broken.pem"
    broken.write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    with pytest.raises(InputError, match="cannot read the public key"):
        load_public_key(broken)
    with pytest.raises(InputError, match="this is a private key"):
        load_public_key(private)
    with pytest.raises(InputError, match="this is a public key"):
        load_private_key(public)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    ec_pem = tmp_path / "ec.pem"
    ec_pem.write_bytes(
        ec_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(InputError, match="not Ed25519"):
        load_private_key(ec_pem)
    encrypted = tmp_path / "enc.pem"
    encrypted.write_bytes(
        load_private_key(private).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw"),
        )
    )
    with pytest.raises(InputError, match="encrypted private keys are not supported"):
        load_private_key(encrypted)


def test_cli_keygen_sign_verify(
    rel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli-keys"
    assert main(["release", "keygen", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    public = out / PUBLIC_KEY_NAME
    key_id = fingerprint(load_public_key(public))
    assert key_id in text and "mode 0600" in text
    assert main(["release", "keygen", "--out", str(out)]) == 1
    assert "already exists" in _one_line_error(capsys)
    assert main(["release", "sign", str(rel), "--key", str(out / PRIVATE_KEY_NAME)]) == 0
    assert "MANIFEST.json.sig" in capsys.readouterr().out
    root = load_manifest(rel).root_hash
    argv = ["release", "verify", str(rel), "--expect-root", root, "--key", str(public)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"ok: v1.0.0 {root}" in text and f"signed by the key {key_id}" in text


def test_cli_errors_are_one_line(
    rel: Path, keys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    private, public = keys
    verify_key = ["release", "verify", str(rel), "--key"]
    assert main([*verify_key, str(public)]) == 1
    assert "not signed: no MANIFEST.json.sig" in _one_line_error(capsys)
    assert main([*verify_key, str(tmp_path / "missing.pem")]) == 1
    assert "key file does not exist" in _one_line_error(capsys)
    assert main([*verify_key, str(private)]) == 1
    assert "this is a private key" in _one_line_error(capsys)
    assert main(["release", "sign", str(rel), "--key", str(public)]) == 1
    assert "this is a public key" in _one_line_error(capsys)
    sign_release(rel, generate_keypair(tmp_path / "other")[0])
    assert main([*verify_key, str(public)]) == 1
    assert "bad signature" in _one_line_error(capsys)


def test_cli_tampered_release(
    rel: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    private, public = keys
    published = load_manifest(rel).root_hash
    sign_release(rel, private)
    old_sig = (rel / "MANIFEST.json.sig").read_bytes()
    (rel / "scores" / "scores.json").write_text('{"alpha": 0.99}\n')
    freeze(rel, "v1.0.0")
    (rel / "MANIFEST.json.sig").write_bytes(old_sig)
    assert main(["release", "verify", str(rel)]) == 0
    capsys.readouterr()
    assert main(["release", "verify", str(rel), "--key", str(public)]) == 1
    assert "bad signature" in _one_line_error(capsys)
    argv = ["release", "verify", str(rel), "--expect-root", published, "--key", str(public)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("not the expected release") and err[1].startswith("bad signature")
    assert err[-1].endswith("verification failed: 2 problem(s), listed above")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_openssl_accepts_the_signature(rel: Path, keys: tuple[Path, Path]) -> None:
    private, public = keys
    sign_release(rel, private)
    cmd = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(public), "-rawin"]
    cmd += ["-in", str(rel / "MANIFEST.json"), "-sigfile", str(rel / "MANIFEST.json.sig")]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (rel / "MANIFEST.json").write_text((rel / "MANIFEST.json").read_text() + " ")
    assert subprocess.run(cmd, capture_output=True, check=False).returncode != 0
