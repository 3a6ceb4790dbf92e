"""Every paid call path keeps the same promises (issue 35): ``vsb run`` (an image provider),
``vsb evaluate --evaluator vlm`` (the judge) and ``vsb suite import`` (the narrative reader),
each against the billing server of ``tests/openai_images_server.py`` on 127.0.0.1, which logs
every request it receives.

One harness, parametrized over the three paths:

- a kill at each point of a call (``vsb.store.paid``): just after its ledger row was begun
  (nothing sent), just after its answer came (nothing stored), just after the answer was
  stored (its row not finished); then the same command again, to the end, and once more;
- a server that answers each first attempt with HTTP 500;
- a server that hangs on each first attempt, past ``--timeout``;
- a damaged ledger, a damaged cache index.

The promises: every request the server received has a ledger row (rows are begun before
sending), no completed call is sent again (only one whose answer the kill lost), a call
stored but not finished is reconciled, the last rerun sends nothing; a damaged file is one
line naming it and what to do, exit 1, nothing sent and nothing already written removed.

The kill is placed, not timed: the command runs in a child process whose ledger or call
machinery SIGKILLs it at the N-th such point (calls one at a time)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_paid_runs import _events, images_server
from vsb.generator.generate import generate_story, write_suite
from vsb.run.runner import RunConfig, run

#: The child: ``python -c CHILD POINT N vsb-argv…``; POINT: begun | answered | stored | none.
CHILD = """
import os, signal, sys
from contextlib import contextmanager
from vsb.cli.main import main
from vsb.store.ledger import Ledger

point, n, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
seen = [0]

def count():
    seen[0] += 1
    if seen[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)

if point == "begun":  # the row is committed, the request not sent
    begin = Ledger.begin
    def dying_begin(self, *args, **kwargs):
        row = begin(self, *args, **kwargs)
        count()
        return row
    Ledger.begin = dying_begin
elif point == "answered":  # the answer came, nothing stored
    from vsb.store import paid
    waiting = paid.InFlight.waiting
    @contextmanager
    def dying_waiting(self, what):
        with waiting(self, what):
            yield
        count()
    paid.InFlight.waiting = dying_waiting
elif point == "stored":  # the answer is stored, its row not finished
    finish = Ledger.finish
    def dying_finish(self, row, **kwargs):
        if kwargs.get("success"):
            count()
        return finish(self, row, **kwargs)
    Ledger.finish = dying_finish
sys.exit(main(argv))
"""


@dataclass(frozen=True)
class PaidPath:
    """One paid path: its command, its ledger and the prefix of its rows there."""

    name: str
    argv: Callable[[str, Path], list[str]]
    ledger: Path
    model: str
    cache_index: Path
    calls: int
    #: the option that makes calls one at a time
    one_at_a_time: tuple[str, ...]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite of two stories (3 + 3 scenes), a simulator run of it (for the judge) and the
    stories' texts as narratives (for the importer)."""
    root = tmp_path_factory.mktemp("world")
    stories = [
        generate_story("wardrobe", "easy", "w", seed=1),
        generate_story("possession", "easy", "p", seed=2),
    ]
    write_suite(stories, root / "suite", seed=0)
    run(RunConfig(suite_dir=root / "suite", models=["procedural-drift-mid"],
                  conditions=["independent"], out=root / "sim", cache_dir=root / "simcache",
                  workers=1))  # fmt: skip
    for s in stories:
        (root / f"{s.id}.txt").write_text("\n\n".join(sc.text for sc in s.scenes) + "\n")
    return root


def _paths(world: Path, tmp: Path) -> dict[str, PaidPath]:
    """The three paths, each writing under ``tmp`` (the judge into a copy of the sim run)."""
    run_dir, sim, imported = tmp / "run", tmp / "sim", tmp / "imported"
    if not sim.exists():
        shutil.copytree(world / "sim", sim)
    narratives = sorted(str(p) for p in world.glob("*.txt"))

    def run_argv(url: str, cache: Path) -> list[str]:
        return ["run", "--suite", str(world / "suite"), "--model", "openai:test-model",
                "--base-url", url, "--condition", "independent", "--out", str(run_dir),
                "--cache", str(cache), "--retry-delay", "0.05"]  # fmt: skip

    def judge_argv(url: str, cache: Path) -> list[str]:
        judge = "openai-compatible:test-judge"
        return ["evaluate", str(sim), "--evaluator", "vlm", "--judge", judge,
                "--base-url", url, "--cache", str(cache)]  # fmt: skip

    def import_argv(url: str, cache: Path) -> list[str]:
        return ["suite", "import", *narratives, "--llm", "openai-compatible:test-llm",
                "--base-url", url, "--out", str(imported), "--cache", str(cache)]  # fmt: skip

    return {
        "run": PaidPath(
            "run",
            run_argv,
            run_dir / "ledger.sqlite",
            "openai:",
            Path("index.sqlite"),
            6,
            ("--concurrency", "1"),
        ),
        "judge": PaidPath(
            "judge",
            judge_argv,
            sim / "ledger.sqlite",
            "judge:",
            Path("judge.sqlite"),
            6,
            ("--judge-concurrency", "1"),
        ),
        "import": PaidPath(
            "import",
            import_argv,
            imported / "import" / "ledger.sqlite",
            "import:",
            Path("judge.sqlite"),
            2,
            ("--concurrency", "1"),
        ),
    }


PATHS = ("run", "judge", "import")


def _vsb(argv: list[str], point: str = "none", n: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env |= {"OPENAI_API_KEY": "sk-test", "NO_PROXY": "*", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", CHILD, point, str(n), *argv],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _rows(path: PaidPath) -> list[tuple[str, str, int, float | None, str | None]]:
    """(key, status, success, cost, error) of the path's call attempts, in order."""
    with sqlite3.connect(path.ledger) as db:
        rows = db.execute(
            "SELECT key, status, success, cost_usd, error FROM requests WHERE cache_hit = 0 "
            "AND model LIKE ? ORDER BY rowid",
            (path.model + "%",),
        ).fetchall()
    return [(str(k), str(s), int(ok), c, e) for k, s, ok, c, e in rows]


def _server(tmp: Path, **opts: object) -> Iterator[tuple[str, Path]]:
    log = tmp / "server.log"
    with images_server(log, **opts) as url:
        yield url, log


def _sent(log: Path) -> list[str]:
    """The body sha256 of every request the server received whole."""
    return [e["sha"] for e in _events(log) if e["ev"] == "recv"]


def _answered(log: Path) -> Counter[str]:
    """How often each body was answered 200."""
    return Counter(e["sha"] for e in _events(log) if e["ev"] == "done" and e["status"] == 200)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# --- a kill at each point of a call -------------------------------------------------------


@pytest.mark.parametrize("point", ["begun", "answered", "stored"])
@pytest.mark.parametrize("name", PATHS)
def test_a_kill_at_each_point_costs_at_most_the_call_in_hand(
    world: Path, tmp_path: Path, name: str, point: str
) -> None:
    path = _paths(world, tmp_path)[name]
    with contextlib.contextmanager(_server)(tmp_path) as (url, log):
        argv = [*path.argv(url, tmp_path / "cache"), *path.one_at_a_time]
        killed = _vsb(argv, point, 2)
        assert killed.returncode == -9, killed.stderr
        done = _vsb(argv)
        assert done.returncode == 0, done.stderr
        n_done = len(_sent(log))
        again = _vsb(argv)
        assert again.returncode == 0, again.stderr
        sent = _sent(log)
    rows = _rows(path)
    # every request received has its row (begun before it was sent)
    assert len(sent) <= len(rows)
    assert len(set(sent)) == path.calls
    assert len(sent) == n_done  # the last rerun sent nothing
    interrupted = [r for r in rows if r[1] == "started"]
    reconciled = [r for r in rows if r[1] == "reconciled"]
    finished_ok = Counter(k for k, status, ok, _c, _e in rows if status != "started" and ok)
    assert max(finished_ok.values()) == 1  # no completed call twice
    answered = _answered(log)
    twice = sum(n - 1 for n in answered.values())
    if point == "begun":  # the row was begun, nothing sent: the rerun sends it once
        assert (len(interrupted), len(reconciled), twice) == (1, 0, 0)
        assert len(rows) == len(sent) + 1
    elif point == "answered":  # answered, never stored: asked again, the first interrupted
        assert (len(interrupted), len(reconciled), twice) == (1, 0, 1)
        assert len(rows) == len(sent)
    else:  # stored, row not finished: reconciled by the rerun, never sent again
        assert (len(interrupted), len(reconciled), twice) == (0, 1, 0)
        assert len(rows) == len(sent) == path.calls


# --- a 500 once, a hang ---------------------------------------------------------------------


@pytest.mark.parametrize("name", PATHS)
def test_a_server_failing_each_first_attempt_gets_a_row_per_attempt(
    world: Path, tmp_path: Path, name: str
) -> None:
    path = _paths(world, tmp_path)[name]
    with contextlib.contextmanager(_server)(tmp_path, fail_first=1) as (url, log):
        got = _vsb(path.argv(url, tmp_path / "cache"))
        sent = _sent(log)
        again = _vsb(path.argv(url, tmp_path / "cache"))
        assert again.returncode == 0 and len(_sent(log)) == len(sent)  # all cached
    assert got.returncode == 0, got.stderr
    rows = _rows(path)
    assert len(sent) == len(rows) == 2 * path.calls  # the issue: judge 38 sent, 19 rows
    failed = [r for r in rows if not r[2]]
    assert len(failed) == path.calls and all(r[1] == "done" for r in rows)
    assert all("500" in (r[4] or "") for r in failed)
    assert all(r[3] in (0.0, None) for r in failed)  # an error answer is not billed


@pytest.mark.parametrize("name", PATHS)
def test_a_hanging_server_is_given_up_after_timeout_and_named_while_waited_for(
    world: Path, tmp_path: Path, name: str
) -> None:
    path = _paths(world, tmp_path)[name]
    with contextlib.contextmanager(_server)(tmp_path, hang_first=8) as (url, log):
        got = _vsb([*path.argv(url, tmp_path / "cache"), "--timeout", "2"])
        sent = _sent(log)
    assert got.returncode == 0, got.stderr
    rows = _rows(path)
    assert len(sent) == len(rows) == 2 * path.calls  # the timed-out attempts have rows
    timed_out = [r for r in rows if not r[2]]
    assert len(timed_out) == path.calls and all("timed out" in (r[4] or "") for r in timed_out)
    waits = [line for line in got.stderr.splitlines() if line.startswith("waiting for ")]
    assert waits and all(line.endswith(" s") or "in flight" in line for line in waits), got.stderr


# --- damaged state ------------------------------------------------------------------------


@pytest.mark.parametrize("damaged", ["ledger", "cache index"])
@pytest.mark.parametrize("name", PATHS)
def test_a_damaged_ledger_or_cache_index_is_one_line_and_removes_nothing(
    world: Path, tmp_path: Path, name: str, damaged: str
) -> None:
    path = _paths(world, tmp_path)[name]
    cache = tmp_path / "cache"
    with contextlib.contextmanager(_server)(tmp_path) as (url, log):
        assert _vsb(path.argv(url, cache)).returncode == 0
        target = path.ledger if damaged == "ledger" else cache / path.cache_index
        target.write_bytes(b"this is not a database, it was overwritten " * 100)
        for extra in ("-wal", "-shm"):
            Path(f"{target}{extra}").unlink(missing_ok=True)
        out_dir = path.ledger.parent if name != "import" else path.ledger.parents[1]
        before = _files(out_dir)
        n_sent = len(_sent(log))
        got = _vsb(path.argv(url, cache))
        assert len(_sent(log)) == n_sent  # nothing sent
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1 and len(lines) == 1, got.stderr
    assert str(target) in lines[0] and "move it aside" in lines[0], lines[0]
    assert "Traceback" not in got.stderr
    after = _files(out_dir)
    lost = sorted(set(before) - set(after))
    assert lost == [], lost  # a command failing at its start removes nothing (manifest.json)
    # nor changes what it wrote (the ledger may have begun a session)
    changed = [k for k in before if before[k] != after[k] and ".sqlite" not in k]
    assert changed == [], changed
