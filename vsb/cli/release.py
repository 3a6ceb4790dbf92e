"""``vsb release build|freeze|verify``: thin wrappers over vsb.release."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

_DIR = click.Path(file_okay=False, path_type=Path)


@click.group("release")
def release() -> None:
    """Freeze a release directory into MANIFEST.json, verify it, or build the whole release."""


class _RichProgress:
    """One rich bar per stage of the main job (no refresh thread: the runner forks)."""

    def __init__(self, bar: Any, console: Any) -> None:
        self.bar, self.console = bar, console
        self.tasks: dict[str, Any] = {}

    def start(self, stage: str, total: int | None) -> None:
        self.tasks[stage] = self.bar.add_task(stage, total=total, note="")
        self.bar.refresh()

    def advance(self, stage: str, done: int, total: int | None) -> None:
        self.bar.update(self.tasks[stage], completed=done, total=total)
        self.bar.refresh()

    def note(self, stage: str, message: str) -> None:
        self.bar.update(self.tasks[stage], note=message)
        self.bar.refresh()

    def finish(self, stage: str, seconds: float, skipped: bool) -> None:
        task = self.tasks[stage]
        total = self.bar.tasks[task].total or 1
        note = "up to date, skipped" if skipped else self.bar.tasks[task].fields.get("note", "")
        self.bar.update(task, total=total, completed=total, note=note)
        self.bar.refresh()


@release.command("build")
@click.argument("name")
@click.option("--out", "out_dir", default=Path("build"), show_default=True, type=_DIR,
              help="Build directory; the release goes to OUT/NAME/.")  # fmt: skip
@click.option("--workers", default=2, show_default=True, help="Parallel workers.")
@click.option("--seed", default=0, show_default=True, help="Suite and run seed.")
def build(name: str, out_dir: Path, workers: int, seed: int) -> None:
    """The main job: generate the default suite, run the five simulators under every
    condition, evaluate, score, validate the judges, freeze OUT/NAME/release and build
    OUT/NAME/site. A rerun reuses the generation cache and skips up-to-date stages."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )  # fmt: skip

    from vsb.release.build import BuildConfig, build_release

    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TextColumn("{task.fields[note]}"),
    )  # fmt: skip
    config = BuildConfig(name=name, out=out_dir, workers=workers, seed=seed)
    with Progress(*columns, console=console, auto_refresh=False) as bar:
        result = build_release(config, _RichProgress(bar, console))
    for model, reason in result.unavailable.items():
        click.echo(f"skipped {model}: {reason}", err=True)
    total = sum(result.seconds.values())
    click.echo(
        f"{result.images} images ({result.generated} generated, {result.cached} from cache); "
        f"stages skipped: {', '.join(result.skipped) or 'none'}; {total:.1f} s"
    )
    if result.manifest is not None:
        click.echo(f"release {result.manifest.release} root hash {result.manifest.root_hash}")
    click.echo(f"release: {result.release_dir}")
    click.echo(f"open the site: {result.index}")


@release.command("freeze")
@click.argument("release_dir", type=_DIR)
@click.option("--name", default=None, help="Release name (default: the directory's name).")
def freeze(release_dir: Path, name: str | None) -> None:
    """Write RELEASE_DIR/MANIFEST.json: SHA-256 and size of every file (oracle excluded)."""
    from vsb.release.manifest import MANIFEST_NAME
    from vsb.release.manifest import freeze as do_freeze

    manifest = do_freeze(release_dir, name or release_dir.resolve().name)
    click.echo(
        f"froze {manifest.release}: {len(manifest.files)} files hashed, "
        f"{len(manifest.excluded)} oracle files excluded"
    )
    click.echo(f"root hash {manifest.root_hash} -> {release_dir / MANIFEST_NAME}")


@release.command("verify")
@click.argument("release_dir", type=_DIR)
def verify(release_dir: Path) -> None:
    """Check every file of RELEASE_DIR against its MANIFEST.json; exit 1 naming each problem."""
    from vsb.errors import ReleaseError
    from vsb.release.manifest import load_manifest
    from vsb.release.manifest import verify as do_verify

    problems = do_verify(release_dir)
    for p in problems:
        click.echo(p, err=True)
    if problems:
        raise ReleaseError(f"verification failed: {len(problems)} problem(s)", file=release_dir)
    manifest = load_manifest(release_dir)
    click.echo(f"ok: {manifest.release} {manifest.root_hash} ({len(manifest.files)} files)")
