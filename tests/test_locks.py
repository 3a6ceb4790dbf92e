"""The run-directory lock and process liveness (vsb.store.locks)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from vsb.errors import RunError
from vsb.store.locks import LOCK_NAME, DirectoryLock, process_alive, process_token


def test_second_taker_fails_at_once_and_release_removes_the_file(tmp_path: Path) -> None:
    with DirectoryLock(tmp_path) as lock:
        assert lock.held and (tmp_path / LOCK_NAME).read_text() == f"{os.getpid()}\n"
        t = time.perf_counter()
        with pytest.raises(RunError, match=rf"in use by another vsb run \(pid {os.getpid()}\)"):
            DirectoryLock(tmp_path).acquire()
        assert time.perf_counter() - t < 1.0
        with pytest.raises(RunError, match="taken twice"):
            lock.acquire()
    assert not (tmp_path / LOCK_NAME).exists()
    lock.release()  # twice is fine
    with DirectoryLock(tmp_path):
        pass


def test_lock_file_left_by_a_dead_owner_is_no_obstacle(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text("999999\n")  # SIGKILLed: the file stays, the lock not
    with DirectoryLock(tmp_path):
        assert (tmp_path / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / LOCK_NAME).exists()


def test_lock_is_released_on_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError), DirectoryLock(tmp_path):
        raise ValueError("boom")
    assert not (tmp_path / LOCK_NAME).exists()
    DirectoryLock(tmp_path).acquire()


def test_forked_child_does_not_keep_the_lock_of_a_dead_owner(tmp_path: Path) -> None:
    # The owner (a `vsb run`) takes the lock, forks a worker and dies without releasing
    # (as when SIGKILLed): its worker, still running, must not keep the directory locked.
    r, w = os.pipe()
    info_r, info_w = os.pipe()
    owner = os.fork()
    if owner == 0:  # pragma: no cover - the owner
        os.close(w)
        DirectoryLock(tmp_path).acquire()
        worker = os.fork()
        if worker == 0:
            os.read(r, 1)  # lives until the test is done
            os._exit(0)
        os.write(info_w, str(worker).encode())
        os._exit(0)  # dies holding the lock
    os.close(r)
    os.close(info_w)
    worker = int(os.read(info_r, 32))
    os.close(info_r)
    os.waitpid(owner, 0)
    try:
        assert process_alive(worker) and (tmp_path / LOCK_NAME).read_text() == f"{owner}\n"
        with DirectoryLock(tmp_path):
            pass
    finally:
        os.close(w)


def test_process_alive() -> None:
    me = os.getpid()
    assert process_alive(me, process_token(me)) and process_alive(me)
    assert process_token(me) != ""
    assert not process_alive(me, "not-my-start-time")  # a recycled pid
    assert not process_alive(0) and not process_alive(-1)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os._exit(0)
    deadline = time.monotonic() + 30
    while process_alive(pid):  # a zombie (exited, not reaped) counts as dead
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.waitpid(pid, 0)
    assert not process_alive(pid)


def test_killed_child_is_dead(tmp_path: Path) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        time.sleep(60)
        os._exit(0)
    token = process_token(pid)
    assert process_alive(pid, token)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert not process_alive(pid, token)
