"""Image files that look like images and are not: for the unreadable-image tests (issue #23).

Imported by tests as ``hostile_images`` (``tests/`` is on ``sys.path`` through its conftest).
"""

from __future__ import annotations

import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """The (type, data) chunks of a PNG."""
    assert png.startswith(PNG_SIGNATURE)
    out, pos = [], len(PNG_SIGNATURE)
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos : pos + 4])
        out.append((png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + n]))
        pos += 12 + n
    return out


def build(parts: list[tuple[bytes, bytes]]) -> bytes:
    """A PNG from (type, data) chunks, every CRC correct."""
    return PNG_SIGNATURE + b"".join(_chunk(k, d) for k, d in parts)


def scrambled_idat(png: bytes) -> bytes:
    """``png`` with its compressed pixel data scrambled (every CRC still correct): it opens
    and passes ``verify()``, and fails only when decoded."""
    parts = chunks(png)
    out = []
    for kind, data in parts:
        if kind == b"IDAT":
            data = data[:2] + bytes(b ^ 0x5A for b in data[2:])
        out.append((kind, data))
    return build(out)


def huge_header(width: int, height: int) -> bytes:
    """A small file whose header declares a ``width`` × ``height`` RGB image (a bomb)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return build([(b"IHDR", ihdr), (b"IDAT", zlib.compress(b"\0" * 64)), (b"IEND", b"")])
