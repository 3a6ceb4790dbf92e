"""``vsb release build|freeze|verify|sign|keygen``: thin wrappers over vsb.release."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from vsb.cli.options import judge_options, timeout_option, workers_option

_DIR = click.Path(file_okay=False, path_type=Path)


@click.group("release")
def release() -> None:
    """Freeze a release directory into MANIFEST.json, verify, sign or export it, or build the
    whole release."""


class _RichProgress:
    """One rich bar per stage of the main job (no refresh thread: the runner forks)."""

    def __init__(self, bar: Any, console: Any) -> None:
        self.bar, self.console = bar, console
        self.tasks: dict[str, Any] = {}

    def start(self, stage: str, total: int | None) -> None:
        self.tasks[stage] = self.bar.add_task(stage, total=total, note="")
        self.bar.refresh()

    def advance(self, stage: str, done: int, total: int | None) -> None:
        if stage in self.tasks:  # a bar is drawn from its stage's start
            self.bar.update(self.tasks[stage], completed=done, total=total)
            self.bar.refresh()

    def note(self, stage: str, message: str) -> None:
        if stage in self.tasks:
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
@workers_option("Parallel workers.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**63 - 1),
              help="Suite and run seed.")  # fmt: skip
@click.option("--evaluator", "evaluators", default=None, metavar="NAME[,NAME…]",
              help="Evaluators (default: rules and pairwise, plus vlm with --judge).")  # fmt: skip
@judge_options
@click.option("--condition", "conditions", default=None, metavar="NAME[,NAME…]",
              help="Conditions (default: all,random_context,predicted_memory; adding "
              "ablations runs the field ablations too).")  # fmt: skip
@click.option("--paraphrase/--no-paraphrase", default=True, show_default=True,
              help="Run the reworded suite under independent and publish the prompt "
              "sensitivity (sensitivity/prompt_sensitivity.*).")  # fmt: skip
@click.option("--implicit/--no-implicit", default=True, show_default=True,
              help="Run the implicit-effect stories under independent and structured_memory "
              "and publish explicit vs implicit pass rates "
              "(sensitivity/implicit_effects.*).")  # fmt: skip
@click.option("--served-judges", is_flag=True,
              help="Serve the reference judges over HTTP on 127.0.0.1 (default: answered in "
              "process through the same handler; same verdicts).")  # fmt: skip
@click.option("--suite", "suite_dir", default=None, type=_DIR,
              help="Your suite (vsb suite import, vsb suite generate --per-cell N) instead of "
              "the default one; the suite variants are off with it.")  # fmt: skip
@click.option("--model", "models", default=None, metavar="NAME[,NAME…]",
              help="Your models, run beside the five simulators (which stay: oracle "
              "validation and the floor): stored:SOURCE, python:MODULE:FUNCTION, any name "
              "of vsb models.")  # fmt: skip
@click.option("--samples", "samples_dir", default=None, type=_DIR,
              help="For stored:SOURCE models: the samples directory "
              "(<dir>/<SOURCE>/<condition>/<story>/scene_<kk>.png).")  # fmt: skip
@click.option("--layout", "samples_layout", type=click.Choice(["vsb", "vinabench"]),
              default="vsb", show_default=True,
              help="How --samples DIR/SOURCE is laid out (vinabench: <index>_<tid>.jpg, as "
              "vsb run --layout vinabench).")  # fmt: skip
@timeout_option
def build(
    name: str,
    out_dir: Path,
    workers: int,
    seed: int,
    evaluators: str | None,
    judge: str | None,
    base_url: str | None,
    judge_batch: int,
    judge_concurrency: int,
    budget: float | None,
    conditions: str | None,
    paraphrase: bool,
    implicit: bool,
    served_judges: bool,
    suite_dir: Path | None,
    models: str | None,
    samples_dir: Path | None,
    samples_layout: str,
    timeout_s: float | None,
) -> None:
    """The main job: generate the default suite, run the five simulators under every
    condition, evaluate, score, validate the judges, freeze OUT/NAME/release and build
    OUT/NAME/site. A rerun reuses the generation cache and skips up-to-date stages.

    With --suite and --model it publishes your suite and your models: they are on the
    leaderboard, the model pages and the story pages beside the simulators.

    Two suite variants run too, unless turned off: the paraphrased suite under independent
    (prompt sensitivity) and the implicit-effect stories under independent and
    structured_memory (how much failure is inference); both are compared with the release
    story by story, with bootstrap CIs, and shown on the site's analysis page.

    With --judge the release also holds a VLM judge pass (one call per scene, answers cached
    in OUT/NAME/cache, calls in the run's ledger), scored and validated beside the rule
    checker, with a leaderboard per evaluator and the judge-swap comparison on the site."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )  # fmt: skip

    from vsb.adapters.registry import resolve_models
    from vsb.conditions import resolve_conditions
    from vsb.release.build import BuildConfig, build_release

    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TextColumn("{task.fields[note]}"),
    )  # fmt: skip
    names = tuple(v.strip() for v in evaluators.split(",") if v.strip()) if evaluators else None
    config = BuildConfig(
        name=name, out=out_dir, workers=workers, seed=seed, evaluators=names or None,
        judge=judge, base_url=base_url, judge_batch=judge_batch,
        judge_concurrency=judge_concurrency, budget_usd=budget, timeout_s=timeout_s,
        paraphrase=paraphrase,
        implicit=implicit,
        served_judges=served_judges,
        conditions=tuple(resolve_conditions(conditions)) if conditions else None,
        suite=suite_dir, extra_models=tuple(resolve_models(models)) if models else (),
        samples=samples_dir, samples_layout=samples_layout,
    )  # fmt: skip
    if suite_dir is not None and (paraphrase or implicit):
        click.echo("with --suite the suite variants are off (they reword the default suite)",
                   err=True)  # fmt: skip
    from vsb.store.cache import failed_checks_note, failed_checks_under

    checks = -failed_checks_under(out_dir / name / "cache")
    t0 = time.perf_counter()
    with Progress(*columns, console=console, auto_refresh=False) as bar:
        result = build_release(config, _RichProgress(bar, console))
    total = time.perf_counter() - t0  # wall time: some stages overlap
    checks += failed_checks_under(out_dir / name / "cache")
    for model, reason in result.unavailable.items():
        click.echo(f"skipped {model}: {reason}", err=True)
    click.echo(
        f"{result.images} images ({result.generated} generated, {result.cached} from cache)"
        + (f", {result.variant_images} in suite variants" if result.variant_images else "")
        + failed_checks_note(checks, sep=", ")
        + "; "
        f"stages skipped: {', '.join(result.skipped) or 'none'}; {total:.1f} s"
    )
    if result.failed:
        click.echo(result.failed)
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


_VERIFY_HELP = """Check RELEASE_DIR against its MANIFEST.json; exit 1 naming each problem.

\b
What a pass proves:
- always: every file outside the top-level oracle/ is listed in MANIFEST.json
  with its size and SHA-256, none is missing or extra, and the manifest hashes
  to its own root hash. That is internal consistency only: whoever changes a
  file and recomputes the manifest passes this check.
- with --expect-root HASH: also that this is the release whose root hash you
  were given (take HASH from the announcement or the site, not from the
  release's own README.md, which is not hashed).
- with --key PUB.pem: also that MANIFEST.json.sig is an Ed25519 signature of
  this MANIFEST.json by the holder of the private key matching PUB.pem (as
  trustworthy as the way you got PUB.pem).
- with --oracle DIR: also that the oracle folder DIR (published later, or the
  release's own oracle/) is the one whose commitment (oracle_sha256) the
  manifest holds.
Never covered without --oracle: the contents of the sealed oracle/ (not
hashed); never covered at all: whether the numbers are right, only that they
are the ones that were published.
"""


@release.command("verify", help=_VERIFY_HELP)
@click.argument("release_dir", type=_DIR)
@click.option(
    "--expect-root",
    "expect_root",
    metavar="HASH",
    default=None,
    help="Fail unless the manifest hashes to this root hash (64 hex digits).",
)
@click.option("--key", "key", metavar="PUB.pem", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Also check MANIFEST.json.sig against this Ed25519 public key.")  # fmt: skip
@click.option("--oracle", "oracle", metavar="DIR", default=None,
              type=click.Path(file_okay=False, path_type=Path),
              help="Also check that the oracle folder DIR is the one sealed with it.")  # fmt: skip
def verify(
    release_dir: Path, expect_root: str | None, key: Path | None, oracle: Path | None
) -> None:
    from vsb.errors import ReleaseError
    from vsb.release.manifest import load_manifest, parse_root_hash
    from vsb.release.manifest import verify as do_verify

    if expect_root is not None:
        parse_root_hash(expect_root)  # a malformed hash is a usage error, before any work
    public = None
    if key is not None:
        from vsb.release.signing import load_public_key, signature_problems

        public = load_public_key(key)
    problems = do_verify(release_dir, expect_root=expect_root)
    if public is not None:
        problems += signature_problems(release_dir, public)
    if oracle is not None:
        from vsb.release.manifest import verify_oracle

        problems += verify_oracle(release_dir, oracle)
    if len(problems) == 1:
        raise ReleaseError(f"verification failed: {problems[0]}", file=release_dir)
    for p in problems:
        click.echo(p, err=True)
    if problems:
        raise ReleaseError(
            f"verification failed: {len(problems)} problem(s), listed above", file=release_dir
        )
    manifest = load_manifest(release_dir)
    click.echo(f"ok: {manifest.release} {manifest.root_hash} ({len(manifest.files)} files)")
    if expect_root is None:
        click.echo("internally consistent only; pass --expect-root HASH to check it is the release")
    else:
        click.echo("root hash matches the expected one")
    if public is not None:
        from vsb.release.signing import fingerprint

        click.echo(f"signed by the key {fingerprint(public)}")
    if oracle is not None:
        click.echo(f"oracle {oracle} is the one sealed with the release ({manifest.oracle_sha256})")
    for line in _unchecked(release_dir, manifest.oracle_sha256, oracle, public):
        click.echo(line)


def _unchecked(
    release_dir: Path, commitment: str | None, oracle: Path | None, public: Any
) -> list[str]:
    """What this verify left unchecked, one line each (a pass says nothing about it)."""
    lines = []
    if oracle is None:
        own = release_dir / "oracle"
        if commitment is None:
            lines.append("oracle/ not checked: MANIFEST.json holds no oracle commitment")
        elif own.is_dir():
            lines.append(f"oracle/ not checked: add --oracle {own} to check it")
        else:
            lines.append("oracle/ not checked: add --oracle DIR (the published oracle) to check it")
    if public is None and (release_dir / "MANIFEST.json.sig").is_file():
        lines.append("MANIFEST.json.sig not checked: add --key PUB.pem to check it")
    return lines


@release.command("sign")
@click.argument("release_dir", type=_DIR)
@click.option("--key", "key", metavar="KEY.pem", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Ed25519 private key (PEM), e.g. from `vsb release keygen`.")  # fmt: skip
def sign(release_dir: Path, key: Path) -> None:
    """Verify RELEASE_DIR, then write MANIFEST.json.sig: a detached Ed25519 signature of the
    bytes of MANIFEST.json (readers check it with `vsb release verify --key PUB.pem`)."""
    from vsb.release.manifest import load_manifest
    from vsb.release.signing import sign_release

    path, key_id = sign_release(release_dir, key)
    manifest = load_manifest(release_dir)
    click.echo(f"signed {manifest.release} (root hash {manifest.root_hash}) -> {path}")
    click.echo(f"public key fingerprint {key_id}")


@release.command("export")
@click.argument("release_dir", type=_DIR)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["hf"]),
    default="hf",
    show_default=True,
    help="hf: a Hugging Face dataset folder (Parquet tables, dataset card, images).",
)
@click.option("--out", "out_dir", required=True, type=_DIR,
              help="The dataset folder to write (new or empty).")  # fmt: skip
def export(release_dir: Path, fmt: str, out_dir: Path) -> None:
    """Verify RELEASE_DIR, then write it to OUT as a dataset for readers without vsb: one
    Parquet file per table (stories, scenes, requirements, images, verdicts, signals,
    scores), the images by relative path, and a dataset card naming the root hash."""
    from vsb.release.export import export_release

    result = export_release(release_dir, out_dir, fmt)
    rows = ", ".join(f"{name} {n:,}" for name, n in result.rows.items())
    how = "hard-linked" if result.linked else "copied"
    click.echo(f"exported {rows} rows; {result.images:,} images {how} -> {result.out}")


@release.command("keygen")
@click.option("--out", "out_dir", required=True, type=_DIR,
              help="Directory for the key pair (created if missing).")  # fmt: skip
def keygen(out_dir: Path) -> None:
    """Make an Ed25519 key pair in OUT: vsb-release-private.pem (mode 0600; keep it secret,
    outside any release) and vsb-release-public.pem (publish it). Never replaces a key."""
    from vsb.release.signing import fingerprint, generate_keypair, load_public_key

    private, public = generate_keypair(out_dir)
    click.echo(f"private key {private} (mode 0600; keep it secret)")
    click.echo(f"public key  {public} (publish it)")
    click.echo(f"fingerprint {fingerprint(load_public_key(public))}")
