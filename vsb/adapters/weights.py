"""Where a diffusers pipeline's files are, and what names them (found, never downloaded).

A directory written by ``save_pretrained`` (``model_index.json`` and one folder per
component) or a Hugging Face hub name already in the local hub cache (``HF_HUB_CACHE``, else
``HF_HOME/hub``, else ``~/.cache/huggingface/hub``); anything else is one ``InputError``
naming what to download and where. The identity that enters every cache key is
``hub:NAME@COMMIT`` for a hub snapshot, ``dir:SHA256`` over the names and contents of a
directory's files.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from vsb.errors import InputError
from vsb.fsio import hf_hub_cache

INSTALL_HINT = "pip install 'vsb[diffusers]'"
_FILES = (
    "model_index.json and one folder per component (unet/ or transformer/, vae/, "
    "text_encoder/, tokenizer/, scheduler/) as save_pretrained writes them"
)
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class PipelineWeights:
    """Where a pipeline's files are, what names them, and its pipeline class."""

    source: str
    path: Path
    ident: str
    pipeline_class: str


def locate_pipeline(source: str) -> PipelineWeights:
    """The local files of ``source`` (a directory, or a hub name in the local hub cache)."""
    if not source:
        raise InputError("diffusers: no model given (--model diffusers:MODEL_ID_OR_DIR)")
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir() or not (path / "model_index.json").is_file():
            raise InputError(f"not a diffusers pipeline directory: it needs {_FILES}", file=path)
        path = path.resolve()
        ident = f"dir:{dir_sha256(path)}"
    else:
        cache = hf_hub_cache()
        if not _REPO_ID.match(source):
            raise InputError(
                f"diffusers: no pipeline directory {source!r} (and it is not a hub name OWNER/NAME)"
            )
        snapshot = _cached_snapshot(source, cache)
        if snapshot is None:
            raise InputError(
                f"diffusers weights {source!r} are neither a directory nor in the Hugging Face "
                f"cache ({cache}): download them with `hf download {source}` (huggingface_hub "
                f">= 0.34) into that cache, or save the pipeline to a directory with {_FILES} "
                f"and pass --model diffusers:DIR"
            )
        path, ident = snapshot, f"hub:{source}@{snapshot.name}"
    return PipelineWeights(source, path, ident, _pipeline_class(path))


def _cached_snapshot(repo_id: str, cache: Path) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        raise InputError(f"the diffusers adapter needs huggingface_hub: {INSTALL_HINT}") from None
    try:
        found = try_to_load_from_cache(repo_id, "model_index.json", cache_dir=cache)
    except ValueError:  # not a valid repo id
        return None
    return Path(found).parent if isinstance(found, str) else None


def _pipeline_class(path: Path) -> str:
    index = path / "model_index.json"
    try:
        name = json.loads(index.read_text(encoding="utf-8"))["_class_name"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"unreadable model_index.json ({err})", file=index) from None
    if not isinstance(name, str) or not name:
        raise InputError("model_index.json has no _class_name", file=index)
    return name


_DIR_IDENTS: dict[tuple[Path, tuple[tuple[str, int, int], ...]], str] = {}
_DIR_LOCK = threading.Lock()


def dir_sha256(path: Path) -> str:
    """sha256 over the relative names and contents of every file under ``path`` (memoised
    per process while no file's size or modification time changes)."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and ".cache" not in p.parts)
    stamp = tuple((p.relative_to(path).as_posix(), *_stat(p)) for p in files)
    with _DIR_LOCK:
        known = _DIR_IDENTS.get((path, stamp))
    if known is not None:
        return known
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(path).as_posix().encode() + b"\0")
        with open(p, "rb") as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 22), b""):  # type: ignore[misc]
                h.update(chunk)
        h.update(b"\0")
    ident = h.hexdigest()
    with _DIR_LOCK:
        _DIR_IDENTS[(path, stamp)] = ident
    return ident


def _stat(p: Path) -> tuple[int, int]:
    st = p.stat()
    return st.st_size, st.st_mtime_ns
