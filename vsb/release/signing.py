"""Ed25519 signatures of a release's ``MANIFEST.json`` (through the ``cryptography`` package).

``vsb release keygen`` makes a key pair (PKCS#8 PEM private key, mode 0600; SubjectPublicKeyInfo
PEM public key). ``vsb release sign`` writes ``MANIFEST.json.sig`` next to the manifest: the
raw 64-byte Ed25519 signature of the manifest's exact bytes, so ``openssl pkeyutl -verify
-pubin -inkey PUB.pem -rawin -in MANIFEST.json -sigfile MANIFEST.json.sig`` checks it too.
Since the manifest holds the SHA-256 of every hashed file and its root hash covers the whole
manifest, a valid signature of an internally consistent release proves that the holder of
the private key signed exactly these files; it proves nothing about who holds the key — that
is as good as the way the reader got the public key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, TypeVar

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from vsb.errors import InputError, ReleaseError
from vsb.fsio import atomic_write_bytes, sha256_hex
from vsb.release.manifest import MANIFEST_NAME, SIGNATURE_NAME, load_manifest, verify

PRIVATE_KEY_NAME = "vsb-release-private.pem"
PUBLIC_KEY_NAME = "vsb-release-public.pem"
SIGNATURE_SIZE = 64
_KEYGEN_HINT = "an Ed25519 key in PEM form (make a pair with `vsb release keygen --out DIR`)"


def _read_pem(path: Path, what: str) -> bytes:
    if not path.is_file():
        raise InputError(f"{what} key file does not exist", file=path)
    data = path.read_bytes()
    if b"-----BEGIN " not in data:
        raise InputError(f"not a PEM file; expected {_KEYGEN_HINT}", file=path)
    return data


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in PEM file ``path``; ``InputError`` naming what is wrong."""
    return _load_key(Path(path), "private", Ed25519PrivateKey)  # type: ignore[type-abstract]


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    """The Ed25519 public key in PEM file ``path``; ``InputError`` naming what is wrong."""
    return _load_key(Path(path), "public", Ed25519PublicKey)  # type: ignore[type-abstract]


_K = TypeVar("_K", Ed25519PrivateKey, Ed25519PublicKey)


def _load_key(path: Path, kind: Literal["private", "public"], want: type[_K]) -> _K:
    """One half of a key pair from PEM file ``path``, refusing the other half by name."""
    data = _read_pem(path, kind)
    use, other, name = (
        ("sign", "public", PRIVATE_KEY_NAME)
        if kind == "private"
        else ("verify", "private", PUBLIC_KEY_NAME)
    )
    if f"{other.upper()} KEY-----".encode() in data:
        raise InputError(f"this is a {other} key; {use} with the {kind} key ({name})", file=path)
    try:
        key = (
            serialization.load_pem_private_key(data, password=None)
            if kind == "private"
            else serialization.load_pem_public_key(data)
        )
    except TypeError as err:  # an encrypted private key, and no password
        raise InputError(f"encrypted private keys are not supported ({err})", file=path) from err
    except (ValueError, UnsupportedAlgorithm) as err:
        raise InputError(f"cannot read the {kind} key; expected {_KEYGEN_HINT}", file=path) from err
    if not isinstance(key, want):
        raise InputError(
            f"the {kind} key is {type(key).__name__}, not Ed25519; expected {_KEYGEN_HINT}",
            file=path,
        )
    return key


def fingerprint(key: Ed25519PublicKey) -> str:
    """Hex SHA-256 of the raw 32-byte public key (how a reader names a key)."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return sha256_hex(raw)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a new file ``path`` with ``mode``, atomically, never replacing one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, path)  # fails if path exists: an existing key is never replaced
    except FileExistsError as err:
        raise InputError("key file already exists; not replacing it", file=path) from err
    finally:
        tmp.unlink(missing_ok=True)


def generate_keypair(out_dir: str | Path) -> tuple[Path, Path]:
    """Make an Ed25519 key pair in ``out_dir``: (private key path, mode 0600; public key path).

    Refuses (``InputError``) when either file exists; neither is then written."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("not a directory", file=out)
    out.mkdir(parents=True, exist_ok=True)
    private_path, public_path = out / PRIVATE_KEY_NAME, out / PUBLIC_KEY_NAME
    for p in (private_path, public_path):
        if p.exists():
            raise InputError("key file already exists; not replacing it", file=p)
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write_new(private_path, private_pem, 0o600)
    try:
        _write_new(public_path, public_pem, 0o644)
    except BaseException:
        private_path.unlink(missing_ok=True)
        raise
    return private_path, public_path


def sign_release(release_dir: str | Path, private_key: str | Path) -> tuple[Path, str]:
    """Sign an intact release: write ``MANIFEST.json.sig``; returns (its path, key fingerprint).

    The key is read first (``InputError`` when bad), then the release is verified: a release
    with any problem is not signed (``ReleaseError`` listing the problems)."""
    root = Path(release_dir)
    key = load_private_key(private_key)
    problems = verify(root)
    if problems:
        raise ReleaseError(
            f"not signing a release that fails verification ({len(problems)} problem(s)): "
            + "; ".join(problems),
            file=root,
        )
    signature = key.sign((root / MANIFEST_NAME).read_bytes())
    path = root / SIGNATURE_NAME
    atomic_write_bytes(path, signature)
    return path, fingerprint(key.public_key())


def signature_problems(release_dir: str | Path, public_key: Ed25519PublicKey) -> list[str]:
    """What is wrong with the release's signature under ``public_key``; empty when valid.

    Valid means ``MANIFEST.json.sig`` is an Ed25519 signature of the exact bytes of
    ``MANIFEST.json`` by the private key matching ``public_key``."""
    root = Path(release_dir)
    load_manifest(root)  # a clear error when there is no manifest at all
    sig_path = root / SIGNATURE_NAME
    if not sig_path.is_file():
        return [f"not signed: no {SIGNATURE_NAME} (sign with `vsb release sign`)"]
    signature = sig_path.read_bytes()
    key_id = fingerprint(public_key)
    if len(signature) != SIGNATURE_SIZE:
        return [
            f"bad signature: {SIGNATURE_NAME} has {len(signature)} bytes, "
            f"an Ed25519 signature has {SIGNATURE_SIZE}"
        ]
    try:
        public_key.verify(signature, (root / MANIFEST_NAME).read_bytes())
    except InvalidSignature:
        return [
            f"bad signature: {SIGNATURE_NAME} is not a signature of this {MANIFEST_NAME} "
            f"by key {key_id}"
        ]
    return []
