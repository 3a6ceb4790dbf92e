"""``vsb site build|serve``: the static leaderboard site (thin wrappers over vsb.site)."""

from __future__ import annotations

from pathlib import Path

import click

_DIR = click.Path(file_okay=False, path_type=Path)


@click.group("site")
def site() -> None:
    """Build the static site of a frozen release, or serve a built site locally."""


@site.command("build")
@click.argument("release_dir", type=_DIR)
@click.option("--out", "out_dir", required=True, type=_DIR, help="Site directory to write.")
def build(release_dir: Path, out_dir: Path) -> None:
    """Render every page of RELEASE_DIR's site into OUT (numbers read from the release)."""
    from vsb.site.build import build_site

    result = build_site(release_dir, out_dir)
    click.echo(f"{result.pages} pages, {result.images} images -> {out_dir / 'index.html'}")


@site.command("serve")
@click.argument("site_dir", type=_DIR)
@click.option("--port", default=8000, show_default=True, help="Port on 127.0.0.1.")
def serve(site_dir: Path, port: int) -> None:
    """Serve SITE_DIR on http://127.0.0.1:PORT/ until interrupted."""
    from vsb.site.serve import make_server, serve_until_interrupted

    server = make_server(site_dir, port)
    host, bound = server.server_address[:2]
    click.echo(f"serving {site_dir} at http://{host!s}:{bound}/ (Ctrl-C to stop)")
    serve_until_interrupted(server)
