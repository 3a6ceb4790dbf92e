"""The main job's plumbing: assembling a release from a run, skipping up-to-date stages,
and the same root hash whether images were generated or read from the cache."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vsb.release import stages
from vsb.release.build import BuildConfig, assemble, build_release
from vsb.release.manifest import verify


def _fake_run(run_dir: Path, *, latency: float, hit: bool, n: int = 3) -> None:
    (run_dir / "suite").mkdir(parents=True, exist_ok=True)
    (run_dir / "suite" / "suite.json").write_text('{"stories": []}\n')
    (run_dir / "oracle").mkdir(exist_ok=True)
    (run_dir / "oracle" / "faults.jsonl").write_text('{"secret": 1}\n')
    (run_dir / "manifest.json").write_text('{"version": "1.0"}\n')
    (run_dir / "ledger.sqlite").write_bytes(f"ledger {latency}".encode())
    recs = []
    for k in range(1, n + 1):
        rel = f"images/m/c/s/scene_{k:02d}.png"
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        data = f"png{k}".encode()
        (run_dir / rel).write_bytes(data)
        recs.append(
            {"model": "m", "condition": "c", "story_id": "s", "scene": k, "key": str(k),
             "path": rel, "sha256": hashlib.sha256(data).hexdigest(), "cache_hit": hit,
             "latency_s": latency * k, "cost_usd": None, "error": None}
        )  # fmt: skip
    (run_dir / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_assemble_drops_volatile_bookkeeping(tmp_path: Path) -> None:
    run, rel = tmp_path / "run", tmp_path / "release"
    _fake_run(run, latency=0.5, hit=False)
    hashes = assemble(run, rel)
    assert sorted(hashes) == [f"images/m/c/s/scene_0{k}.png" for k in (1, 2, 3)]
    assert hashes["images/m/c/s/scene_01.png"] == hashlib.sha256(b"png1").hexdigest()
    assert not (rel / "ledger.sqlite").exists()
    assert (rel / "oracle" / "faults.jsonl").is_file()
    assert (rel / "images" / "m" / "c" / "s" / "scene_03.png").read_bytes() == b"png3"
    rows = [json.loads(x) for x in (rel / "records.jsonl").read_text().splitlines()]
    assert all("latency_s" not in r and "cache_hit" not in r for r in rows)
    before = {p: p.read_bytes() for p in rel.rglob("*") if p.is_file()}
    _fake_run(run, latency=0.001, hit=True, n=2)
    (run / "images" / "m" / "c" / "s" / "scene_03.png").unlink()
    assemble(run, rel)
    after = {p: p.read_bytes() for p in rel.rglob("*") if p.is_file()}
    gone = rel / "images" / "m" / "c" / "s" / "scene_03.png"
    assert set(before) - set(after) == {gone}
    assert all(after[p] == before[p] for p in after if p.name != "records.jsonl")


class _Calls:
    """What the fake stages did, kept in a file: the build runs most stages in processes of
    their own (vsb.release.isolate), so a count held in memory would stay in the child."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("{}")

    def _load(self) -> dict[str, Any]:
        return dict(json.loads(self.path.read_text()))

    @contextlib.contextmanager
    def _update(self) -> Iterator[dict[str, Any]]:
        """Read, change and write the state under a lock: two stages may run at once."""
        with (self.path.parent / "calls.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = self._load()
            yield state
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state))
            os.replace(tmp, self.path)

    def hit(self, name: str) -> None:
        with self._update() as state:
            counts = state.setdefault("counts", {})
            counts[name] = counts.get(name, 0) + 1

    def note(self, key: str, value: Any) -> None:
        with self._update() as state:
            state[key] = value

    @property
    def counts(self) -> dict[str, int]:
        return dict(self._load().get("counts", {}))

    def get(self, key: str) -> Any:
        return self._load().get(key)


@pytest.fixture
def fake_stages(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> _Calls:
    calls = _Calls(tmp_path_factory.mktemp("calls") / "calls.json")
    runs = [(0.5, False), (0.01, True), (0.02, True)]

    def suite(out: Path, seed: int) -> bool:
        calls.hit("suite")
        out.mkdir(parents=True, exist_ok=True)
        (out / "suite.json").write_text("{}\n")
        return True

    def run_models(suite: Path, run_dir: Path, *a: Any) -> Any:
        latency, hit = runs[calls.counts.get("run", 0)]
        calls.hit("run")
        _fake_run(run_dir, latency=latency, hit=hit)
        return SimpleNamespace(
            images=3,
            calls=0 if hit else 3,
            hits=3 if hit else 0,
            skipped={},
            failed_line=lambda: None,
        )

    def writer(name: str, rel: str) -> Any:
        def fn(release_dir: Path, *a: Any) -> list[str]:
            calls.hit(name)
            if name == "score":  # (progress, release name, tables): which object, where
                calls.note("score_tables", [id(a[2]), str(a[2].root), os.getpid()])
            if name == "validate":  # (progress, release name, scratch, tables)
                calls.note("validate_tables", [id(a[3]), str(a[3].root), os.getpid()])
            (release_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (release_dir / rel).write_text(f"{name}\n")
            return [rel]

        return fn

    def site(release_dir: Path, site_dir: Path, progress: Any) -> list[str]:
        calls.hit("site")
        site_dir.mkdir(parents=True, exist_ok=True)
        (site_dir / "index.html").write_text("<html></html>")
        return ["index.html"]

    monkeypatch.setattr(stages, "write_default_suite", suite)
    monkeypatch.setattr(stages, "run_models", run_models)
    monkeypatch.setattr(stages, "default_models", lambda: ["m"])
    monkeypatch.setattr(stages, "default_conditions", lambda: ["c"])

    def load_tables(release_dir: Path) -> object:
        calls.hit("load_tables")
        return SimpleNamespace(root=release_dir)

    monkeypatch.setattr(stages, "load_tables", load_tables)
    monkeypatch.setattr(stages, "evaluate", writer("evaluate", "evaluations/requirements.parquet"))
    monkeypatch.setattr(stages, "score", writer("score", "scores/scores.json"))
    monkeypatch.setattr(stages, "validate", writer("validate", "validation/judge.json"))
    monkeypatch.setattr(stages, "build_site_dir", site)

    def judge_references(release_dir: Path, p: Any, work: Path, served: bool, **kw: Any) -> Any:
        p.note("validate", "reference judge literal")  # before the validate stage starts
        calls.hit("judge_references")
        calls.note("served", served)
        calls.note("judged_in", os.getpid())
        return {"judged": str(work)}

    def write_references(release_dir: Path, judged: Any, tables: Any = None) -> list[str]:
        calls.hit("write_references")
        calls.note("references_from", [judged, os.getpid()])
        rel = "validation/reference_judges.json"
        (release_dir / rel).write_text("{}\n")
        return [rel]

    monkeypatch.setattr(stages, "judge_references", judge_references)
    monkeypatch.setattr(stages, "write_references", write_references)
    return calls


def test_rerun_skips_fresh_stages_and_keeps_root_hash(fake_stages: _Calls, tmp_path: Path) -> None:
    cfg = BuildConfig(name="v9.0.0", out=tmp_path)
    first = build_release(cfg)
    assert first.skipped == []
    assert first.manifest is not None and verify(first.release_dir) == []
    assert first.manifest.excluded == ["oracle/faults.jsonl"]
    second = build_release(cfg)
    assert second.skipped == ["evaluate", "score", "validate", "site"]
    assert second.manifest is not None
    assert second.manifest.root_hash == first.manifest.root_hash
    assert fake_stages.counts == {"suite": 2, "run": 2, "evaluate": 1, "score": 1,
                                  "validate": 1, "site": 1, "load_tables": 1,
                                  "judge_references": 1, "write_references": 1}  # fmt: skip
    assert "validation/reference_judges.json" in {f.path for f in second.manifest.files}
    # a damaged output makes its stage run again
    (first.release_dir / "scores" / "scores.json").write_text("tampered\n")
    third = build_release(cfg)
    assert "score" not in third.skipped and fake_stages.counts["score"] == 2
    assert third.manifest is not None and third.manifest.root_hash == first.manifest.root_hash
    assert (first.root / "site").is_dir() and not (first.release_dir / "site").exists()


def test_evaluation_tables_are_read_once_and_handed_to_score_and_validate(
    fake_stages: _Calls, tmp_path: Path
) -> None:
    """The build reads the release's evaluation tables once, after evaluate, and gives the
    same in-memory value to score and validate; a build whose stages are fresh reads none."""
    cfg = BuildConfig(name="v9.0.0", out=tmp_path)
    build_release(cfg)
    assert fake_stages.counts["load_tables"] == 1 and fake_stages.get("served") is False
    score, validate = fake_stages.get("score_tables"), fake_stages.get("validate_tables")
    assert score == validate  # the same object in the same process
    assert score[1] == str(tmp_path / "v9.0.0" / "release")
    build_release(cfg)
    assert fake_stages.counts["load_tables"] == 1


def test_served_judges_reaches_the_validate_stage(fake_stages: _Calls, tmp_path: Path) -> None:
    build_release(BuildConfig(name="v9.0.0", out=tmp_path, served_judges=True))
    assert fake_stages.get("served") is True


def test_reference_judges_answer_in_a_process_of_their_own_and_are_validated_beside_score(
    fake_stages: _Calls, tmp_path: Path
) -> None:
    build_release(BuildConfig(name="v9.0.0", out=tmp_path))
    analysis = fake_stages.get("validate_tables")[2]
    judged_in = fake_stages.get("judged_in")
    judged, written_in = fake_stages.get("references_from")
    assert judged_in not in (analysis, os.getpid())  # a process of its own
    assert written_in == analysis  # validated where the tables are
    assert judged == {"judged": str(tmp_path / "v9.0.0" / "scratch")}
    assert not (tmp_path / "v9.0.0" / "scratch" / "reference").exists()


class _Strict:
    """A progress display that, like the CLI's bars, knows a stage only once it started."""

    def __init__(self) -> None:
        self.open: set[str] = set()
        self.notes: list[tuple[str, str]] = []

    def start(self, stage: str, total: int | None) -> None:
        self.open.add(stage)

    def advance(self, stage: str, done: int, total: int | None) -> None:
        assert stage in self.open, f"advance of {stage} before it started"

    def note(self, stage: str, message: str) -> None:
        assert stage in self.open, f"note of {stage} before it started: {message}"
        self.notes.append((stage, message))

    def finish(self, stage: str, seconds: float, skipped: bool) -> None:
        self.open.discard(stage)


def test_work_that_begins_early_reports_once_its_stage_has_started(
    fake_stages: _Calls, tmp_path: Path
) -> None:
    """The reference judges answer during score; their notes belong to validate (found by
    a new user: `vsb release build` failed with KeyError: 'validate')."""
    strict = _Strict()
    result = build_release(BuildConfig(name="v9.0.0", out=tmp_path), strict)
    assert result.manifest is not None and fake_stages.counts["judge_references"] == 1


def test_the_command_draws_the_early_work_without_failing(
    fake_stages: _Calls, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vsb.cli.main import main

    assert main(["release", "build", "v9.0.0", "--out", str(tmp_path)]) == 0
    assert "KeyError" not in capsys.readouterr().err


def test_the_command_reports_wall_time_not_the_sum_of_overlapping_stages(
    fake_stages: _Calls,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import re

    import vsb.release.build as build_mod
    from vsb.cli.main import main

    real = build_mod.build_release

    def overlapping(config: BuildConfig, progress: Any = None) -> Any:
        result = real(config, progress)
        result.seconds.update({"paraphrase": 50.0, "implicit": 50.0})  # side by side
        return result

    monkeypatch.setattr(build_mod, "build_release", overlapping)
    assert main(["release", "build", "v9.0.0", "--out", str(tmp_path)]) == 0
    took = re.search(r"stages skipped: [^;]*; ([0-9.]+) s", capsys.readouterr().out)
    assert took is not None and float(took.group(1)) < 50


def test_without_fork_every_stage_runs_in_the_build_process(
    fake_stages: _Calls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where fork is missing, the stages (the reference judges and the analysis too) run
    one after the other in the build process, with the same result."""
    import vsb.release.build as build_mod
    import vsb.release.isolate as isolate

    monkeypatch.setattr(isolate, "CAN_FORK", False)
    monkeypatch.setattr(build_mod, "CAN_FORK", False)
    result = build_release(BuildConfig(name="v9.0.0", out=tmp_path), _Strict())
    assert result.manifest is not None and verify(result.release_dir) == []
    assert fake_stages.get("judged_in") == os.getpid()
    assert fake_stages.get("references_from")[1] == os.getpid()
    assert fake_stages.get("validate_tables")[2] == os.getpid()
    assert fake_stages.counts["judge_references"] == fake_stages.counts["write_references"] == 1
