"""Cross-process exclusion on one machine: a directory lock and process liveness.

``DirectoryLock(dir)`` takes an exclusive ``fcntl.flock`` on ``dir/.vsb-run.lock`` (the file
holds the owner's pid) without waiting: a second taker gets ``RunError`` naming the directory
and the pid that holds it. The kernel drops the lock when its owner dies, so a SIGKILLed
owner never blocks the next taker; ``release()`` (also on any error, through ``with``)
unlinks the file while still holding the lock, and a taker that locked a file which was
unlinked meanwhile starts again on the new one. A forked child closes its inherited copy at
once, so the lock lives exactly as long as the process that took it.

``process_token(pid)`` and ``process_alive(pid, token)`` tell whether the process that wrote
a claim (the generation cache's in-flight claims) still runs: the token is the process's
start time from ``/proc``, so a recycled pid does not pass for the old owner, and a zombie
counts as dead.

``die_with_parent(parent)``, a process pool's initializer: the worker is killed by the kernel
when the process that forked it dies (Linux ``PR_SET_PDEATHSIG``), so a SIGKILLed ``vsb``
leaves no orphan behind to fail on the pipe to its dead parent (``BrokenPipeError``
tracebacks); elsewhere a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import sys
import time
from pathlib import Path

from vsb.errors import RunError

LOCK_NAME = ".vsb-run.lock"

#: Descriptors of the locks this process holds (closed in forked children).
_HELD: set[int] = set()


def _close_inherited() -> None:
    # Closing a duplicate leaves the parent's lock in place (LOCK_UN here would release it).
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_inherited)


class DirectoryLock:
    """An exclusive, non-waiting lock on a directory (see the module docstring)."""

    def __init__(self, directory: str | Path, what: str = "run directory") -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def _holder(self) -> str:
        """The pid written by the holder (it writes it right after locking)."""
        for _ in range(50):
            try:
                text = self.path.read_text(encoding="ascii").strip()
            except (OSError, UnicodeDecodeError):
                text = ""
            if text.isdigit():
                return f"pid {text}"
            time.sleep(0.002)
        return "pid unknown"

    def acquire(self) -> None:
        """Take the lock or raise ``RunError`` at once if another process holds it."""
        if self._fd is not None:
            raise RunError(f"{self.what} lock taken twice by one owner", file=self.directory)
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as err:
                raise RunError(f"cannot lock the {self.what}: {err}", file=self.directory) from err
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise RunError(
                        f"cannot lock the {self.what}: {err}", file=self.directory
                    ) from err
                raise RunError(
                    f"{self.what} is in use by another vsb run ({self._holder()}); "
                    "wait for it to finish or choose another directory",
                    file=self.directory,
                ) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:  # the previous holder unlinked it after we opened it: retry
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._fd = fd
            _HELD.add(fd)
            return

    def release(self) -> None:
        """Drop the lock and remove its file (safe to call twice)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _HELD.discard(fd)
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> DirectoryLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _proc_stat(pid: int) -> list[str] | None:
    """Fields 3… of ``/proc/<pid>/stat`` (state first), or None where unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def process_token(pid: int) -> str:
    """The process's start time (clock ticks since boot) as text; "" where unknown."""
    fields = _proc_stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else ""


def process_alive(pid: int, token: str = "") -> bool:
    """Whether process ``pid`` runs, and is the one that had ``token`` (when both are known)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    fields = _proc_stat(pid)
    if fields is None:
        return True  # no /proc here: signal 0 is all we know
    if fields and fields[0] in ("Z", "X"):
        return False  # killed, not yet reaped
    now = fields[19] if len(fields) > 19 else ""
    return not (token and now and now != token)


#: ``prctl`` option: the signal a process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux; elsewhere nothing);
    exit at once if ``parent``, the pid that forked it, is already gone. A pool worker's
    initializer (``initializer=die_with_parent, initargs=(os.getpid(),)``)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return
    if os.getppid() != parent:
        os._exit(0)  # the parent died before the request took effect
