"""Kill ``vsb run`` with SIGKILL part-way, rerun it, and check what the ledger and the cache say.

Two modes; both print the guarantees of docs/CRASH_SAFETY.md as counts that must be 0.

``--mode sim`` (issue #10 item 7, issue #23 item 1): ``vsb run --model procedural-drift-mid
--condition all`` on the default suite (1,260 requests) is SIGKILLed (its process group) once
``--kill-at`` images have appeared in the cache, or ``--kill-after`` seconds after it started,
and the same command is run again, in a fresh run directory and cache per kill point. Then:

    calls        ledger rows that are adapter calls (not cache hits), over every session
    distinct     cache entries (images generated at least once)
    interrupted  calls begun and never finished (in flight at the kill)
    missing      cache keys with no call row in the ledger (must be 0)
    twice        calls finished twice for one key: a call finished in the ledger whose image
                 was not in the cache, made (paid) again (must be 0)

Measured before the fix of issue #23 (the ledger row was finished before the cache stored
the image) at 1.2, 1.6, 2.0, 2.4, 2.8 s: at 2.4 s 1,262 calls with 1 interrupted for 1,260
images, i.e. one call made twice though finished.

``--mode http`` (issue #23): the same against a local server that bills per request
(tests/openai_images_server.py: OpenAI's images API, ``--latency``, seeded 429s), model
``openai:test-model``, ``--concurrency 8``: one run directory and cache, killed at
``--kills`` points (each after a seeded random number of further answered requests), rerun
each time, then run to the end and once more (which must send nothing). The server's image
spells the request body's sha256, so each cache entry names its request. Per request key:

    sent           requests the server received whole (429s and requests of killed runs
                   included)
    cut off        requests whose client died while sending them (never answered)
    distinct       distinct requests
    answered twice requests the server answered with an image more than once: each extra
                   answer must have been in flight at a kill (its client died before
                   storing the image), so it has an interrupted ledger row
    paid twice     answers beyond one a key and its interrupted rows, plus keys finished
                   twice in the ledger (must be 0: a completed request is never sent again)
    unrecorded     requests the server received beyond the key's ledger rows (must be 0:
                   every sent request has a row)
    interrupted    ledger rows left begun (in flight at a kill: paid for, perhaps)
    reconciled     rows a rerun finished because their image had reached the cache
    last rerun     requests the final rerun sent (must be 0)

``--mode paths`` (issue #35): the three paid paths the same way, each against the same
billing server (its chat route answers as a judge and as the importer's LLM): ``run``
(``openai:test-model``, conditions ``independent,previous_text,structured_memory``),
``judge`` (``vsb evaluate --evaluator vlm`` of a simulator run of the default suite, one call
per image) and ``import`` (``vsb suite import`` of the default suite's 40 stories as
plain-text narratives); the server answers 500 to 10 % of requests (``--p500``, seeded), so
calls are retried. Each is killed ``--kills`` times (after a seeded random number of further
answered requests, then a random moment inside a call), rerun each time, run to the end and
once more. Per path:

    sent / distinct    requests the server received whole / distinct request bodies
    rows               the path's ledger rows that are calls (every attempt)
    interrupted        rows left begun (in flight at a kill)
    reconciled         rows a rerun finished: the answer had reached the cache
    answered twice     request bodies answered more than once (each must be a call whose
                       answer a kill lost before it was stored: an interrupted row)
    repeated           completed calls sent again: calls finished twice in the ledger, plus
                       answers beyond one a body not covered by an interrupted row (must be 0)
    without a row      requests received beyond the path's ledger rows, per command (the
                       requests the server received after it started and before the next
                       one did, the rows of the ledger sessions it opened; must be 0)
    last rerun         requests the final rerun sent (must be 0)

Run: ``.venv/bin/python benchmarks/kill_rerun.py --mode http [--kills 20] [--seed 0]``
(``--mode sim [--kill-at 100,300,…|--kill-after 1.2,1.6,…] [--workers N]``; ``--mode paths
[--paths run,judge,import] [--kills 20]``). Set PYTHONPATH to a checkout to measure another
version of vsb.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "openai_images_server.py"
sys.path.insert(0, str(SERVER.parent))
from openai_images_server import body_sha  # noqa: E402


def _objects(cache: Path) -> int:
    root = cache / "objects"
    return sum(1 for _ in root.rglob("*.png")) if root.is_dir() else 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _calls(run_dir: Path) -> list[tuple[str, str, int]]:
    """(key, status, success) of every adapter call in the ledger."""
    with sqlite3.connect(run_dir / "ledger.sqlite") as led:
        rows = led.execute(
            "SELECT key, status, success FROM requests WHERE cache_hit = 0 AND key != ''"
        ).fetchall()
    return [(str(k), str(s), int(ok)) for k, s, ok in rows]


def _cached(cache: Path) -> dict[str, str]:
    """key -> the sha256 of the image object."""
    with sqlite3.connect(cache / "index.sqlite") as idx:
        return {str(k): str(s) for k, s in idx.execute("SELECT key, sha256 FROM entries")}


def _suite(root: Path) -> Path:
    suite = root / "suite"
    subprocess.run(
        [sys.executable, "-m", "vsb.cli.main", "suite", "generate", "--out", str(suite)],
        check=True,
        capture_output=True,
    )
    return suite


# --- sim -------------------------------------------------------------------------------


def sim(args: argparse.Namespace) -> None:
    points: list[tuple[str, float]] = (
        [("s", float(x)) for x in args.kill_after.split(",")]
        if args.kill_after
        else [("n", float(x)) for x in args.kill_at.split(",")]
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = _suite(root)
        head = ["kill at", "calls", "distinct", "interrupted", "missing", "twice"]
        print(" ".join(f"{h:>11}" for h in head), " rerun")
        for n, (unit, at) in enumerate(points):
            run_dir, cache = root / f"run{n}", root / f"cache{n}"
            cmd = [
                sys.executable, "-m", "vsb.cli.main", "run", "--suite", str(suite),
                "--model", args.model, "--condition", "all", "--out", str(run_dir),
                "--cache", str(cache), "--workers", str(args.workers),
            ]  # fmt: skip
            proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
            )
            t0 = time.monotonic()
            while proc.poll() is None and (
                time.monotonic() - t0 < at if unit == "s" else _objects(cache) < at
            ):
                time.sleep(0.002)
            killed = proc.poll() is None
            _kill_group(proc)
            rerun = subprocess.run(cmd, capture_output=True, text=True, check=False)
            calls = _calls(run_dir)
            keys = set(_cached(cache))
            interrupted = sum(s == "started" for _k, s, _ok in calls)
            missing = len(keys - {k for k, _s, _ok in calls})
            finished = Counter(k for k, s, ok in calls if s != "started" and ok)
            twice = sum(c - 1 for c in finished.values() if c > 1)
            label = f"{at:g} {'s' if unit == 's' else 'img'}" + ("" if killed else " (done)")
            cells = [label, len(calls), len(keys), interrupted, missing, twice]
            print(
                " ".join(f"{c:>11}" for c in cells),
                f" exit {rerun.returncode}: {rerun.stdout.strip() or rerun.stderr.strip()}",
            )


# --- http ------------------------------------------------------------------------------


def _events(log: Path) -> list[dict[str, Any]]:
    if not log.is_file():
        return []
    return [json.loads(x) for x in log.read_text().splitlines() if x.endswith("}")]


def http(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env |= {"OPENAI_API_KEY": "sk-bench", "NO_PROXY": "*"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tempfile.mkdtemp(prefix="kill-rerun-")) if args.keep else Path(tmp)
        suite = _suite(root)
        log = root / "server.log"
        server, url = _billing_server(log, args, "--p429", str(args.p429))
        try:
            cmd = [
                sys.executable, "-m", "vsb.cli.main", "run", "--suite", str(suite),
                "--model", "openai:test-model", "--base-url", url,
                "--condition", args.conditions, "--out", str(root / "run"),
                "--cache", str(root / "cache"), "--concurrency", "8",
                "--retry-delay", "0.01", "--max-attempts", "20",
            ]  # fmt: skip
            kills = 0
            for _ in range(args.kills):
                answered = sum(e["ev"] == "done" and e["status"] == 200 for e in _events(log))
                target = answered + int(rng.integers(args.min_step, args.max_step + 1))
                proc = subprocess.Popen(
                    cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )  # fmt: skip
                while proc.poll() is None:
                    done = sum(e["ev"] == "done" and e["status"] == 200 for e in _events(log))
                    if done >= target:
                        time.sleep(float(rng.uniform(0, 2 * args.latency)))  # inside a call
                        break
                    time.sleep(0.003)
                kills += proc.poll() is None
                _kill_group(proc)
            final = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            before = sum(e["ev"] == "recv" for e in _events(log))
            again = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            last = sum(e["ev"] == "recv" for e in _events(log)) - before
        finally:
            server.kill()
            server.wait()
        _report_http(root, _events(log), kills, final, again, last, args.keep)


def _report_http(
    root: Path,
    events: list[dict[str, Any]],
    kills: int,
    final: subprocess.CompletedProcess[str],
    again: subprocess.CompletedProcess[str],
    last: int,
    kept: bool,
) -> None:
    cache = root / "cache"
    key_body = {
        k: body_sha((cache / "objects" / sha[:2] / f"{sha}.png").read_bytes())
        for k, sha in _cached(cache).items()
    }
    calls = _calls(root / "run")
    with sqlite3.connect(root / "run" / "ledger.sqlite") as led:
        reconciled = led.execute("SELECT COUNT(*) FROM requests WHERE status = 'reconciled'")
        n_reconciled = int(reconciled.fetchone()[0])
    sent = Counter(e["sha"] for e in events if e["ev"] == "recv")
    answered = Counter(e["sha"] for e in events if e["ev"] == "done" and e["status"] == 200)
    # Two keys may send the same body (two contexts that word the prompt alike): count per
    # body, over its keys.
    keys_of: dict[str, list[str]] = {}
    for k, body in key_body.items():
        keys_of.setdefault(body, []).append(k)
    rows = Counter(k for k, _s, _ok in calls)
    interrupted = Counter(k for k, s, _ok in calls if s == "started")
    finished_ok = Counter(k for k, s, ok in calls if s != "started" and ok)
    paid_twice = sum(max(0, c - 1) for c in finished_ok.values())
    unrecorded = answered_twice = 0
    for body, keys in keys_of.items():
        extra = max(0, answered[body] - len(keys))  # answered more than once a key
        answered_twice += extra
        paid_twice += max(0, extra - sum(interrupted[k] for k in keys))
        unrecorded += max(0, sent[body] - sum(rows[k] for k in keys))
    unrecorded += sum(n for b, n in sent.items() if b not in keys_of)  # of no stored key
    figures = {
        "kills": kills,
        "sent": sum(sent.values()),
        "cut off": sum(e["ev"] == "partial" for e in events),
        "distinct": len(sent),
        "answered twice": answered_twice,
        "paid twice": paid_twice,
        "unrecorded": unrecorded,
        "ledger calls": len(calls),
        "interrupted": sum(interrupted.values()),
        "reconciled": n_reconciled,
        "last rerun": last,
    }
    for name, value in figures.items():
        print(f"{name:>15} {value}")
    print(f"{'final run':>15} exit {final.returncode}: {final.stdout.strip()}")
    print(f"{'last rerun':>15} exit {again.returncode}: {again.stdout.strip()}")
    if kept:
        print(f"{'kept':>15} {root}")


# --- paths (issue #35) -----------------------------------------------------------------


def _path_commands(root: Path, suite: Path, url: str) -> dict[str, tuple[list[str], Path, str]]:
    """Per path: the command, its ledger and the prefix of its ledger rows."""
    vsb = [sys.executable, "-m", "vsb.cli.main"]
    sim, narratives = root / "sim", root / "narratives"
    if not sim.exists():
        subprocess.run(
            [*vsb, "run", "--suite", str(suite), "--model", "procedural-drift-mid",
             "--condition", "independent", "--out", str(sim), "--cache", str(root / "simcache")],
            check=True, capture_output=True,
        )  # fmt: skip
    if not narratives.exists():
        narratives.mkdir()
        for f in sorted(suite.glob("*.json")):
            if f.name != "suite.json":
                doc = json.loads(f.read_text())
                texts = [sc["text"] for sc in doc["scenes"]]
                (narratives / f"{doc['id']}.txt").write_text("\n\n".join(texts) + "\n")
    txts = [str(p) for p in sorted(narratives.glob("*.txt"))]
    return {
        "run": (
            [*vsb, "run", "--suite", str(suite), "--model", "openai:test-model", "--base-url",
             url, "--condition", "independent,previous_text,structured_memory",
             "--out", str(root / "run"),
             "--cache", str(root / "cache-run"), "--retry-delay", "0.01", "--max-attempts",
             "20"],
            root / "run" / "ledger.sqlite", "openai:",
        ),
        "judge": (
            [*vsb, "evaluate", str(sim), "--evaluator", "vlm", "--judge",
             "openai-compatible:bench-judge", "--base-url", url, "--cache",
             str(root / "cache-judge")],
            sim / "ledger.sqlite", "judge:",
        ),
        "import": (
            [*vsb, "suite", "import", *txts, "--llm", "openai-compatible:bench-llm",
             "--base-url", url, "--out", str(root / "imported"), "--cache",
             str(root / "cache-import")],
            root / "imported" / "import" / "ledger.sqlite", "import:",
        ),
    }  # fmt: skip


def _path_rows(ledger: Path, prefix: str) -> list[tuple[str, str, int, int]]:
    """(key, status, success, session) of the path's call rows."""
    if not ledger.is_file():
        return []
    with sqlite3.connect(ledger) as led:
        rows = led.execute(
            "SELECT key, status, success, session FROM requests WHERE cache_hit = 0 "
            "AND model LIKE ?",
            (prefix + "%",),
        ).fetchall()
    return [(str(k), str(s), int(ok), int(n)) for k, s, ok, n in rows]


def _last_session(ledger: Path) -> int:
    if not ledger.is_file():
        return 0
    with sqlite3.connect(ledger) as led:
        return int(led.execute("SELECT COALESCE(MAX(session), 0) FROM sessions").fetchone()[0])


def _timed(cmd: list[str], env: dict[str, str], ledger: Path, spans: list[Any]) -> Any:
    """Run ``cmd`` to its end; its span (start, end, sessions it opened) into ``spans``."""
    t0, s0 = time.time(), _last_session(ledger)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    spans.append((t0, time.time(), s0, _last_session(ledger)))
    return done


def paths(args: argparse.Namespace) -> None:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env |= {"OPENAI_API_KEY": "sk-bench", "NO_PROXY": "*"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tempfile.mkdtemp(prefix="kill-paths-")) if args.keep else Path(tmp)
        suite = _suite(root)
        names = [p.strip() for p in args.paths.split(",") if p.strip()]
        print(f"{'':>15} " + " ".join(f"{n:>9}" for n in names))
        table: dict[str, list[str]] = {}
        for name in names:
            rng = np.random.default_rng([args.seed, names.index(name)])
            log = root / f"server-{name}.log"
            server, url = _billing_server(log, args, "--p500", str(args.p500))
            try:
                cmd, ledger, prefix = _path_commands(root, suite, url)[name]
                # further answers before each kill: the 40 imports and 210 judge calls
                # in smaller steps than the run's 550 requests, so every kill hits a live one
                step = {"import": (1, 2), "judge": (2, 8)}.get(name, (args.min_step, args.max_step))
                kills = 0
                spans: list[Any] = []  # per command: start, end, sessions it opened
                for _ in range(args.kills):
                    answered = sum(e["ev"] == "done" and e["status"] == 200 for e in _events(log))
                    target = answered + int(rng.integers(step[0], step[1] + 1))
                    t0, s0 = time.time(), _last_session(ledger)
                    proc = subprocess.Popen(
                        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )  # fmt: skip
                    while proc.poll() is None:
                        done = sum(e["ev"] == "done" and e["status"] == 200 for e in _events(log))
                        if done >= target:
                            time.sleep(float(rng.uniform(0, 2 * args.latency)))
                            break
                        time.sleep(0.003)
                    kills += proc.poll() is None
                    _kill_group(proc)
                    spans.append((t0, time.time(), s0, _last_session(ledger)))
                final = _timed(cmd, env, ledger, spans)
                before = sum(e["ev"] == "recv" for e in _events(log))
                again = _timed(cmd, env, ledger, spans)
                last = sum(e["ev"] == "recv" for e in _events(log)) - before
            finally:
                server.kill()
                server.wait()
            events = _events(log)
            rows = _path_rows(ledger, prefix)
            sent = Counter(e["sha"] for e in events if e["ev"] == "recv")
            answered_n = Counter(
                e["sha"] for e in events if e["ev"] == "done" and e["status"] == 200
            )
            interrupted = sum(s == "started" for _k, s, _ok, _n in rows)
            finished_ok = Counter(k for k, s, ok, _n in rows if s != "started" and ok)
            # per command: requests received while it ran beyond the rows it began
            # (a request is the latest command's that had started when the server logged it)
            starts = [t0 for t0, *_x in spans]
            by_command = Counter(
                max(i for i, t0 in enumerate(starts) if t0 <= e["t"])
                for e in events
                if e["ev"] == "recv" and e["t"] >= starts[0]
            )
            unrecorded = 0
            for i, (_t0, _t1, s0, s1) in enumerate(spans):
                n_rows = sum(s0 < n <= s1 for *_x, n in rows)
                unrecorded += max(0, by_command[i] - n_rows)
            twice = sum(n - 1 for n in answered_n.values() if n > 1)
            repeated = sum(n - 1 for n in finished_ok.values() if n > 1)
            repeated += max(0, twice - interrupted)
            table[name] = [
                str(kills), str(sum(sent.values())), str(len(sent)), str(len(rows)),
                str(interrupted), str(sum(s == "reconciled" for _k, s, _ok, _n in rows)),
                str(twice), str(repeated), str(unrecorded),
                str(last), f"{final.returncode}/{again.returncode}",
            ]  # fmt: skip
        heads = ["kills", "sent", "distinct", "rows", "interrupted", "reconciled",
                 "answered twice", "repeated", "without a row", "last rerun", "exit"]  # fmt: skip
        for i, h in enumerate(heads):
            print(f"{h:>15} " + " ".join(f"{table[n][i]:>9}" for n in names))
        if args.keep:
            print(f"{'kept':>15} {root}")


def _billing_server(
    log: Path, args: argparse.Namespace, *extra: str
) -> tuple[subprocess.Popen[str], str]:
    """The billing server (SERVER) on 127.0.0.1, logging each request to ``log``, and its
    OpenAI-compatible base URL."""
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--log", str(log), "--latency", str(args.latency),
         "--seed", str(args.seed), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    return server, f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}/v1"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("sim", "http", "paths"), default="sim")
    ap.add_argument("--paths", default="run,judge,import", help="--mode paths: which")
    ap.add_argument("--kill-at", default="100,200,300,450,600,750,900,1000,1100")
    ap.add_argument("--kill-after", default="", help="seconds after start, e.g. 1.2,1.6,2.0")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--model", default="procedural-drift-mid")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.03)
    ap.add_argument("--p429", type=float, default=0.1)
    ap.add_argument("--p500", type=float, default=0.1, help="--mode paths: seeded 500s")
    ap.add_argument("--min-step", type=int, default=3)
    ap.add_argument("--max-step", type=int, default=15)
    ap.add_argument("--conditions", default="independent,previous_text,structured_memory")
    ap.add_argument("--keep", action="store_true", help="keep the run, cache and server log")
    args = ap.parse_args()
    {"http": http, "paths": paths}.get(args.mode, sim)(args)


if __name__ == "__main__":
    main()
