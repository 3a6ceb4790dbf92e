"""A run killed exactly between storing an image and finishing its ledger row (issue #23
item 1): a call finished in the ledger always has its image in the cache, so no call is
paid for twice; a call whose image was stored but whose row was never finished is
reconciled by the rerun, not sent again.

The kill is placed, not timed: ``vsb run`` runs in a child process whose
``GenerationCache._commit`` SIGKILLs the process just before (or just after) the N-th entry
is committed, against the local billing server of ``tests/openai_images_server.py``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_paid_runs import _env, _events, images_server
from vsb.errors import CacheError
from vsb.generator.generate import generate_story, write_suite
from vsb.run.runner import RunConfig, run
from vsb.store.cache import GenerationCache
from vsb.store.ledger import Ledger

#: The child: ``python -c CHILD WHEN N MARKER vsb-argv…`` (WHEN: before|after the commit).
CHILD = """
import os, signal, sys
from pathlib import Path
from vsb.store.cache import GenerationCache
from vsb.cli.main import main

when, n, marker, argv = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:]
commit = GenerationCache._commit
seen = [0]

def dying_commit(self, *args, **kwargs):
    seen[0] += 1
    if seen[0] == n and when == "before":
        marker.write_text(args[0][0])
        os.kill(os.getpid(), signal.SIGKILL)
    commit(self, *args, **kwargs)
    if seen[0] == n and when == "after":
        marker.write_text(args[0][0])
        os.kill(os.getpid(), signal.SIGKILL)

GenerationCache._commit = dying_commit
sys.exit(main(argv))
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """Two stories, 3 + 5 scenes: 8 distinct requests under ``independent``."""
    out = tmp_path / "suite"
    write_suite(
        [
            generate_story("wardrobe", "easy", "w", seed=1),
            generate_story("counting", "medium", "c", seed=3),
        ],
        out,
        seed=0,
    )
    return out


def _rows(run_dir: Path) -> list[tuple[int, str, str, int]]:
    """(session, key, status, success) of every adapter call, in order."""
    with sqlite3.connect(run_dir / "ledger.sqlite") as db:
        rows = db.execute(
            "SELECT session, key, status, success FROM requests WHERE cache_hit = 0 ORDER BY rowid"
        ).fetchall()
    return [(int(a), str(b), str(c), int(d)) for a, b, c, d in rows]


def _kill_then_rerun(suite: Path, tmp_path: Path, when: str, n: int) -> tuple[str, int, int]:
    """Run killed at the ``n``-th cache commit (``when``: before or after it), then rerun to
    the end: the key being committed, the server's requests, and distinct request bodies."""
    log, marker = tmp_path / "server.log", tmp_path / "killed-at"
    with images_server(log, seed=3) as url:
        argv = [
            "run", "--suite", str(suite), "--model", "openai:test-model", "--base-url", url,
            "--condition", "independent", "--out", str(tmp_path / "run"),
            "--cache", str(tmp_path / "cache"), "--concurrency", "1",
        ]  # fmt: skip
        killed = subprocess.run(
            [sys.executable, "-c", CHILD, when, str(n), str(marker), *argv],
            env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        rerun = subprocess.run(
            [sys.executable, "-m", "vsb.cli.main", *argv],
            env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert rerun.returncode == 0, rerun.stderr
    recv = [e for e in _events(log) if e["ev"] == "recv"]
    return marker.read_text(), len(recv), len({e["sha"] for e in recv})


def test_killed_before_the_image_is_stored_the_call_is_interrupted_not_finished(
    suite: Path, tmp_path: Path
) -> None:
    """Regression: the ledger row was finished before the cache stored the image, so a kill
    in between left a *finished* call without its image, and the rerun paid for it again."""
    key, sent, distinct = _kill_then_rerun(suite, tmp_path, "before", 3)
    rows = _rows(tmp_path / "run")
    first = [r for r in rows if r[0] == 1]
    assert [r[2] for r in first] == ["done", "done", "started"]  # the third: in flight
    assert first[-1][1] == key
    # the one request sent twice is the one in flight at the kill, in the ledger as interrupted
    assert (sent, distinct) == (9, 8)
    assert [r[2] for r in rows if r[1] == key] == ["started", "done"]
    for k in {r[1] for r in rows}:
        finished = [r for r in rows if r[1] == k and r[2] != "started"]
        assert len(finished) == 1, (k, rows)  # no finished call is ever made again


def test_killed_after_the_image_is_stored_the_rerun_reconciles_it(
    suite: Path, tmp_path: Path
) -> None:
    """The row of a call whose image the cache stored is finished by the rerun (reconciled),
    and the call is not sent again."""
    key, sent, distinct = _kill_then_rerun(suite, tmp_path, "after", 3)
    assert (sent, distinct) == (8, 8)  # nothing sent twice
    rows = _rows(tmp_path / "run")
    assert [(r[2], r[3]) for r in rows if r[1] == key] == [("reconciled", 1)]
    assert all(r[2] in ("done", "reconciled") for r in rows) and len(rows) == 8
    with Ledger.open_existing(tmp_path / "run" / "ledger.sqlite") as led:
        (total,) = led.summary(all_sessions=True)
    assert (total.calls, total.interrupted, total.failures) == (8, 0, 0)


def test_reconcile_needs_the_attempt_that_stored_the_image(tmp_path: Path) -> None:
    """A row left unfinished is reconciled only when the cache's entry came from that very
    attempt (another run sharing the cache may have stored the key)."""
    with Ledger(tmp_path / "ledger.sqlite") as led:
        led.start_session("s")
        mine = led.begin("k1", "m", cost_usd=0.5, attempt="a1")
        other = led.begin("k2", "m", cost_usd=0.5, attempt="a2")
        never = led.begin("k3", "m", cost_usd=0.5, attempt="a3")
        assert led.reconcile({"k1": ("a1", 0.25), "k2": ("b", None)}) == 1
        rows = dict(led._conn().execute("SELECT rowid, status || ':' || cost_usd FROM requests"))
    assert rows == {mine: "reconciled:0.25", other: "started:0.5", never: "started:0.5"}


# --- issue #23 item 8d: pool workers die with their killed parent, quietly ----------------

#: The child: ``python -c SLOW PIDS vsb-argv…``: simulators take 0.3 s an image and note
#: their worker's pid.
SLOW = """
import os, sys, time
from pathlib import Path
from vsb.adapters.simulators import ProceduralSimulator
from vsb.cli.main import main

pids, argv = Path(sys.argv[1]), sys.argv[2:]
generate = ProceduralSimulator.generate

def slow(self, request):
    with pids.open("a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(0.3)
    return generate(self, request)

ProceduralSimulator.generate = slow
sys.exit(main(argv))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.is_file() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_run_leaves_no_worker_behind_and_no_traceback(suite: Path, tmp_path: Path) -> None:
    """Regression: after kill -9 of ``vsb release build`` (here: its ``vsb run`` stage),
    the orphaned fork workers finished their task and printed ``BrokenPipeError``
    tracebacks writing the result to their dead parent."""
    pids, err = tmp_path / "pids", tmp_path / "stderr"
    argv = [
        "run", "--suite", str(suite), "--model", "procedural-drift-mid", "--condition",
        "independent,structured_memory", "--out", str(tmp_path / "run"),
        "--cache", str(tmp_path / "cache"), "--workers", "2",
    ]  # fmt: skip
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", SLOW, str(pids), *argv],
            stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
        workers = {int(x) for x in pids.read_text().split()} if pids.is_file() else set()
    assert len(workers) == 2 and proc.pid not in workers, "both workers at work"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL
    killed = time.monotonic()
    while any(_alive(p) for p in workers) and time.monotonic() < killed + 30:
        time.sleep(0.02)
    gone_after = time.monotonic() - killed
    assert not any(_alive(p) for p in workers)
    assert gone_after < 0.25, f"the workers outlived their parent by {gone_after:.2f} s"
    assert "Traceback" not in err.read_text(), err.read_text()


def test_a_call_whose_image_cannot_be_stored_is_finished_saying_so(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call was made (and paid): its row is finished, with why its image is not cached."""

    def full_disk(self: GenerationCache, data: bytes) -> str:
        raise CacheError("no space left on device", file=self.root)

    monkeypatch.setattr(GenerationCache, "_write_object", full_disk)
    config = RunConfig(
        suite_dir=suite, models=["procedural-drift-mid"], conditions=["independent"],
        out=tmp_path / "run", cache_dir=tmp_path / "cache",
    )  # fmt: skip
    with pytest.raises(CacheError, match="no space"):
        run(config)
    with sqlite3.connect(tmp_path / "run" / "ledger.sqlite") as db:
        rows = db.execute("SELECT status, success, error FROM requests").fetchall()
    assert len(rows) == 1 and rows[0][:2] == ("done", 1)
    assert rows[0][2].startswith("the image could not be stored: ") and "no space" in rows[0][2]


def test_an_index_and_a_ledger_from_before_attempt_ids_are_migrated(tmp_path: Path) -> None:
    """Caches and ledgers written before attempt ids gain the columns (NULL: never
    reconciled) and keep every entry."""
    png = b"\x89PNG not decoded here"
    cache_dir = tmp_path / "cache"
    (cache_dir / "objects").mkdir(parents=True)
    with sqlite3.connect(cache_dir / "index.sqlite") as db:
        db.execute(
            "CREATE TABLE entries (key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, "
            "metadata TEXT NOT NULL, cost_usd REAL)"
        )
        old = GenerationCache(cache_dir)
        sha = old._write_object(png)
        db.execute("INSERT INTO entries VALUES ('k', ?, '{}', 0.5)", (sha,))
    db.close()
    cache = GenerationCache(cache_dir)
    assert cache.peek("k") is not None and cache.origins(["k"]) == {}
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        db.execute("CREATE TABLE sessions (session INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT)")
        db.execute(
            "CREATE TABLE requests (session INTEGER NOT NULL, key TEXT NOT NULL, model TEXT "
            "NOT NULL, condition TEXT, story_id TEXT, scene INTEGER, latency_s REAL NOT NULL, "
            "success INTEGER NOT NULL, cache_hit INTEGER NOT NULL, cost_usd REAL, error TEXT, "
            "status TEXT NOT NULL DEFAULT 'done')"
        )
        db.execute("INSERT INTO requests VALUES (1, 'k', 'm', NULL, NULL, NULL, 0, 0, 0, 1, "
                   "NULL, 'started')")  # fmt: skip
    db.close()
    with Ledger(tmp_path / "ledger.sqlite") as led:
        assert led.unfinished() == []  # no attempt id: stays interrupted
        assert led.reconcile({"k": ("anything", None)}) == 0
        (row,) = led.summary(all_sessions=True)
    assert row.interrupted == 1
    cache.close()
