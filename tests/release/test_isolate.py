"""Stages in a process of their own (vsb.release.isolate): the result, the progress and the
error come back as if the stage had run in the build process, and the stage's memory does
not stay in the build process."""

from __future__ import annotations

import os
import pickle
import signal

import pytest
from stage_progress import Recorder

from vsb.errors import InputError, ReleaseError, TransitionError, UnknownNameError
from vsb.release.isolate import CAN_FORK, StageHost, run_isolated

pytestmark = pytest.mark.skipif(not CAN_FORK, reason="needs fork")

_HELD: list[bytes] = []


def test_the_stage_runs_in_another_process_and_its_memory_stays_there() -> None:
    def stage(_p: object) -> tuple[int, int]:
        _HELD.append(b"x" * 1_000_000)
        return os.getpid(), len(_HELD)

    pid, held = run_isolated(stage, Recorder())
    assert pid != os.getpid()
    assert held == 1
    assert _HELD == []  # what the stage kept is gone with its process


def test_progress_comes_back_in_order() -> None:
    def stage(p: Recorder) -> str:
        p.start("evaluate", 3)
        for i in range(1, 4):
            p.advance("evaluate", i, 3)
        p.note("evaluate", "writing tables")
        return "done"

    rec = Recorder()
    assert run_isolated(stage, rec) == "done"
    assert rec.calls == [
        ("start", ("evaluate", 3)),
        ("advance", ("evaluate", 1, 3)),
        ("advance", ("evaluate", 2, 3)),
        ("advance", ("evaluate", 3, 3)),
        ("note", ("evaluate", "writing tables")),
    ]


def test_a_vsb_error_keeps_its_message_file_and_location() -> None:
    def stage(_p: object) -> None:
        raise InputError("expected a number", file="suite/suite.json", location="/stories/0")

    with pytest.raises(InputError) as info:
        run_isolated(stage, Recorder())
    assert str(info.value) == "suite/suite.json: /stories/0: expected a number"
    assert info.value.file == "suite/suite.json"


@pytest.mark.parametrize(
    "err",
    [
        UnknownNameError("model", "procedural-amnesic", ["procedural-amnesiac", "oracle"]),
        TransitionError("holder", "two holders", story="s1", scene=2, event=0),
    ],
)
def test_errors_whose_init_takes_other_arguments_survive_pickling(err: Exception) -> None:
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert back.__dict__ == err.__dict__

    def stage(_p: object) -> None:
        raise err

    with pytest.raises(type(err)) as info:
        run_isolated(stage, Recorder())
    assert str(info.value) == str(err)


def test_another_error_carries_the_childs_traceback() -> None:
    def failing_stage(_p: object) -> None:
        raise ValueError("bad cell")

    with pytest.raises(ValueError, match="bad cell") as info:
        run_isolated(failing_stage, Recorder())
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "failing_stage" in notes


def test_an_unpicklable_error_arrives_as_its_text() -> None:
    class Local(Exception):  # a class defined in a function cannot be pickled
        pass

    def stage(_p: object) -> None:
        raise Local("lost class")

    with pytest.raises(RuntimeError, match="Local: lost class"):
        run_isolated(stage, Recorder())


def test_a_child_that_dies_is_reported_with_its_exit_status_or_signal() -> None:
    """A one-line ReleaseError (the CLI prints it without a traceback) that says how."""

    def exits(_p: object) -> None:
        os._exit(3)

    with pytest.raises(ReleaseError, match="'stage' exited with status 3 before it gave"):
        run_isolated(exits, Recorder())

    def killed(_p: object) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(ReleaseError, match="killed by SIGKILL \\(out of memory"):
        run_isolated(killed, Recorder())


def test_a_host_keeps_state_between_its_stages_and_starts_only_when_called() -> None:
    shared: dict[str, int] = {}

    def load(_p: object) -> int:
        shared["tables"] = os.getpid()
        return shared["tables"]

    def use(_p: object) -> int:
        return shared["tables"]  # what the first stage loaded, in the same child

    with StageHost({"load": load, "use": use}) as host:
        assert host.proc is None  # nothing forked before the first call
        first = host.call("load", Recorder())
        assert host.call("use", Recorder()) == first != os.getpid()
        proc = host.proc
    assert shared == {}
    assert proc is not None and not proc.is_alive() and proc.exitcode == 0


def test_a_host_never_called_forks_nothing() -> None:
    with StageHost({"score": lambda p: 1}) as host:
        pass
    assert host.proc is None


def test_a_result_that_cannot_be_sent_back_is_an_error_not_a_hang() -> None:
    def stage(_p: object) -> object:
        return lambda: None  # a lambda does not pickle

    with pytest.raises(RuntimeError, match="cannot be sent back"):
        run_isolated(stage, Recorder())


def test_a_stage_is_sent_its_arguments_with_fork_or_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vsb.release.isolate as isolate

    def stage(_p: object, a: int, b: dict[str, int]) -> tuple[int, int]:
        return os.getpid(), a + b["x"]

    with StageHost({"s": stage}) as host:
        pid, total = host.call("s", Recorder(), 2, {"x": 40})
    assert total == 42 and pid != os.getpid()
    monkeypatch.setattr(isolate, "CAN_FORK", False)
    with StageHost({"s": stage}) as host:
        host.send("s", 1, {"x": 1})
        assert host.receive("s", Recorder()) == (os.getpid(), 2)  # here, with what was sent
