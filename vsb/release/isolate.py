"""Stages of the main job in a process of their own, so their memory goes back when they end.

The stages that fan out to a pool of workers (evaluate and the suite variants) each run in a
child forked from the build process while that is still small: their workers are forked from
the child, not from a build process swollen by an earlier stage (a fork worker's resident set
counts every page it shares with its parent), and the rows, imports and fragmented heap a stage
leaves behind go back to the system when the child exits. Score and validate share one child
(``StageHost``), so the evaluation tables are read once for both. The child reports progress
and each result (or error) to the build process over a pipe; the build process draws the
progress and keeps the stage ledger.

A stage function runs in the child exactly as it would in the build process: same arguments,
same return value, same exception (a ``VsbError`` keeps its message, file and location; any
other error carries the child's traceback as a note). Where fork is missing, it runs in the
build process. No stage imports pandas (``vsb.tables`` converts rows to Arrow without it).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from vsb.errors import ReleaseError
from vsb.release.config import Progress

#: Off on platforms without fork (the stages then run in the build process).
CAN_FORK = "fork" in multiprocessing.get_all_start_methods()

StageFn = Callable[..., Any]  # (progress, *args) -> result


class _Relay:
    """The child's Progress: every call goes to the build process over the pipe."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def start(self, stage: str, total: int | None) -> None:
        self.conn.send(("progress", "start", (stage, total)))

    def advance(self, stage: str, done: int, total: int | None) -> None:
        self.conn.send(("progress", "advance", (stage, done, total)))

    def note(self, stage: str, message: str) -> None:
        self.conn.send(("progress", "note", (stage, message)))

    def finish(self, stage: str, seconds: float, skipped: bool) -> None:
        self.conn.send(("progress", "finish", (stage, seconds, skipped)))


def _sendable(err: BaseException) -> BaseException:
    """``err`` if it survives pickling, else a RuntimeError with its text."""
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:  # whatever the class does, its text still gets through
        return RuntimeError(f"{type(err).__name__}: {err}")
    return err


def _serve(orders: Any, replies: Any, fns: Mapping[str, StageFn], parent: int) -> None:
    """The child: run each named stage it is sent, until told to stop (None) or orphaned."""
    from vsb.store.locks import die_with_parent

    die_with_parent(parent)
    relay = _Relay(replies)
    while True:
        try:
            order = orders.recv()
        except EOFError:
            return
        if order is None:
            return
        name, args = order
        try:
            result = fns[name](relay, *args)
        except BaseException as err:  # every failure goes back to the build process
            replies.send(("error", _sendable(err), traceback.format_exc()))
            if not isinstance(err, Exception):
                return  # KeyboardInterrupt, SystemExit: this child is done
        else:
            try:
                replies.send(("done", result, None))
            except Exception as err:  # a result that cannot be pickled
                why = RuntimeError(f"stage {name!r} gave a result that cannot be sent back: {err}")
                replies.send(("error", why, traceback.format_exc()))


class StageHost:
    """A child process, forked at the first ``call``, that runs the stages it was given by
    name one at a time; what one leaves in memory the next can use (the child's own memory),
    and all of it goes back when the ``with`` block ends."""

    def __init__(self, fns: Mapping[str, StageFn]) -> None:
        self.fns = dict(fns)
        self.proc: Any = None
        self.sent = ""  # the stage last sent
        self.args: tuple[Any, ...] = ()  # and what it was sent with

    def __enter__(self) -> StageHost:
        return self

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        orders_r, self.orders = ctx.Pipe(duplex=False)
        self.replies, replies_w = ctx.Pipe(duplex=False)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.proc = ctx.Process(
            target=_serve, args=(orders_r, replies_w, self.fns, os.getpid()), daemon=False
        )
        self.proc.start()
        orders_r.close()
        replies_w.close()

    def call(self, name: str, progress: Progress, *args: Any) -> Any:
        """Run stage ``name`` in the child (given the progress, then ``args``, which must
        pickle); its return value, or its exception raised here."""
        self.send(name, *args)
        return self.receive(name, progress)

    def send(self, name: str, *args: Any) -> None:
        """Start stage ``name`` in the child and return at once; ``receive`` waits for it."""
        self.sent, self.args = name, args
        if not CAN_FORK:
            return
        if self.proc is None:
            self._start()
        self.orders.send((name, args))

    def receive(self, name: str, progress: Progress) -> Any:
        """Wait for stage ``name`` (sent with ``send``), drawing its progress; its return
        value, or its exception raised here."""
        if not CAN_FORK:  # no child: the stage runs now, here
            return self.fns[name](progress, *self.args)
        while True:
            done, result = self.step(progress)
            if done:
                return result

    def step(self, progress: Progress) -> tuple[bool, Any]:
        """Take one message of the stage in flight (waiting for it): a progress call, drawn
        here (``(False, None)``), or its end: ``(True, its return value)``, or its exception
        raised here."""
        name = self.sent
        try:
            kind, payload, extra = self.replies.recv()
        except EOFError:
            self.proc.join()
            raise ReleaseError(_died(name, self.proc.exitcode)) from None
        if kind == "progress":
            getattr(progress, payload)(*extra)
            return False, None
        if kind == "done":
            return True, payload
        err: BaseException = payload
        if not hasattr(err, "message"):  # not a VsbError: say where it came from
            err.add_note(f"in the process running stage {name!r}:\n{extra}")
        raise err

    def close(self) -> None:
        """Stop the child now, when its stages are done (leaving the ``with`` block does it
        too; after this, a ``call`` forks a new one)."""
        self.__exit__(None, None, None)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(OSError):  # the child may be gone already
            self.orders.send(None)
        self.proc.join(timeout=None if kind is None else 5)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join()
        self.orders.close()
        self.replies.close()
        self.proc = None


def _died(stage: str, code: int | None) -> str:
    """Why stage ``stage``'s process gave no result, from its exit status."""
    if code is not None and code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
        if code == -signal.SIGKILL:
            how += " (out of memory? see dmesg)"
    else:
        how = f"exited with status {code}"
    return f"the process running stage {stage!r} {how} before it gave a result"


def wait_any(hosts: Mapping[str, StageHost], progress: Progress) -> tuple[str, Any]:
    """Wait until the stage sent to one of ``hosts`` (each with a stage in flight) ends,
    drawing every host's progress meanwhile: (that host's key, the stage's return value), or
    its exception raised here. Needs fork (``CAN_FORK``)."""
    from multiprocessing.connection import wait

    by_conn: dict[Any, str] = {host.replies: key for key, host in hosts.items()}
    while True:
        for conn in wait(list(by_conn)):
            key = by_conn[conn]
            done, result = hosts[key].step(progress)
            if done:
                return key, result


def run_isolated(fn: StageFn, progress: Progress) -> Any:
    """``fn(progress)`` in a child of its own; its return value, or its exception here."""
    with StageHost({"stage": fn}) as host:
        return host.call("stage", progress)
