"""``vsb site build``: render the static site of a frozen release.

Pages (relative to the site root)::

    index.html                      leaderboard of the primary evaluator (the rule checker when it
                                    applies): primary condition, plots, every condition
    leaderboard/<evaluator>.html    the same leaderboard for every other evaluator (a selector
                                    on each links them all)
    models/<slug>.html              one page per model
    comparisons.html                paired comparisons (Δ, CI, P(Δ>0), win rate)
    analysis.html                   memory gain, placebo, predicted memory, field ablations,
                                    prompt sensitivity, implicit effects
    stability.html                  rank stability under Dirichlet weight perturbation
    judge.html                      judge validation against the sealed oracle (and humans)
    evaluate.html                   the blinded human-evaluation session (works from disk; its
                                    pictures copied under opaque names in rate/, no model name)
    stories/index.html              story browser
    stories/<id>/<condition>.html   scene texts, image strips, pass/fail marks
    methodology.html                the methodology text
    static/                         CSS and JS (no CDN)
    images/                         the release's PNGs, copied

Every page names the release and its root hash (from MANIFEST.json). Templates autoescape.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from vsb import __version__
from vsb.errors import ReleaseError
from vsb.evaluators.vina.questions import METRICS as VINA_METRICS
from vsb.fsio import link_or_copy, sha256_hex
from vsb.human.blinding import PoolStory, blinding_key, make_blinding, rated_condition, story_pool
from vsb.human.session import evaluate_payload
from vsb.human.write import release_report
from vsb.site import pages
from vsb.site.analysis import analysis_page
from vsb.site.data import SiteData, load_site_data, model_slug, read_records, scores_view
from vsb.site.downloads import Download, write_requirements, write_tables
from vsb.site.methodology import methodology_text, release_facts, render_methodology
from vsb.story.models import DIMENSION_LABELS
from vsb.tables import requirements_file

#: Marker file: a directory holding it was written by ``build_site`` and may be replaced.
MARKER = ".vsb-site"
STATIC_FILES = ("style.css", "sort.js", "board.js", "evaluate.js", "evaluate.css")
#: Release files the site offers for download as they are (under data/).
RELEASE_DOWNLOADS = ("scores", "validation", "sensitivity")
_SAFE_PATH = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
#: A sideways-scrolling table wrapper; each must be focusable (axe: scrollable-region-focusable).
_TABLE_WRAP = re.compile(r'<div [^>]*class="(?:[^"]* )?table-wrap[" ][^>]*>')


def check_table_wraps(html: str, path: str) -> None:
    """Refuse a page whose table wrapper a keyboard cannot reach (write tables through the
    ``table_wrap`` macro of macros.html, which adds ``tabindex="0" role="group"``)."""
    for tag in _TABLE_WRAP.findall(html):
        if 'tabindex="0"' not in tag or 'role="group"' not in tag:
            raise RuntimeError(f'{path}: {tag} lacks tabindex="0" role="group"')


@dataclass(frozen=True)
class SiteResult:
    """What a site build wrote."""

    out: Path
    pages: int
    images: int


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _ci(est: Any) -> str:
    if est is None or est.ci_low is None or est.ci_high is None:
        return "—"
    return f"[{est.ci_low:.3f}, {est.ci_high:.3f}]"


def _pair_ci(c: Any) -> str:
    if c.ci_low is None or c.ci_high is None:
        return "—"
    return f"[{c.ci_low:+.3f}, {c.ci_high:+.3f}]"


def environment() -> Environment:
    """The Jinja2 environment (autoescape on for every template)."""
    env = Environment(
        loader=PackageLoader("vsb.site", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        f3=_fmt, ci=_ci, pair_ci=_pair_ci, heat=pages.heat_class,
        dim=lambda d: DIMENSION_LABELS.get(d, d),
        dimshort=lambda d: pages.DIM_SHORT.get(d, d.replace("_", " ")),
        metric=lambda c: pages.metric_label(c.metric_kind, c.metric),
        signed=lambda x: "—" if x is None else f"{x:+.3f}",
        usd=lambda x: "unknown" if x is None else f"{x:,.4f} USD",
    )  # fmt: skip
    env.globals["zip"] = zip
    return env


def _site_image_path(rel: str) -> str:
    """Where a release image goes in the site (its own path when that is plain and safe)."""
    if _SAFE_PATH.fullmatch(rel) and ".." not in rel.split("/"):
        return rel if rel.startswith("images/") else f"images/{rel}"
    suffix = Path(rel).suffix if re.fullmatch(r"\.[A-Za-z0-9]{1,5}", Path(rel).suffix) else ""
    return f"images/_/{sha256_hex(rel.encode())[:16]}{suffix}"


def _prepare_out(out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise ReleaseError("site output exists and is not a directory", file=out)
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise ReleaseError(
                f"refusing to overwrite a non-empty directory without {MARKER}", file=out
            )
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("written by vsb site build; replaced on every build\n")


class _Sources:
    """Which release files the site may link: regular files inside the release, not under
    ``oracle/``. Each folder is resolved once (not each image: ~7,000 realpath walks)."""

    def __init__(self, root: Path) -> None:
        self.root = str(root.resolve())
        self.real: dict[str, str] = {}

    def get(self, rel: str) -> str | None:
        """The real path of the release file ``rel``; None when the site must not use it.
        (Plain ``os.path`` on strings: it runs once per image.)"""
        if "oracle" in rel.split("/"):
            return None
        head, name = os.path.split(os.path.join(self.root, rel))
        folder = self.real.get(head)
        if folder is None:
            folder = self.real[head] = os.path.realpath(head)
        src = os.path.join(folder, name)
        try:
            mode = os.lstat(src).st_mode
        except OSError:
            return None
        if stat.S_ISLNK(mode):
            src = os.path.realpath(src)
            if not os.path.isfile(src):
                return None
        elif not stat.S_ISREG(mode):
            return None
        return src if src.startswith(self.root.rstrip(os.sep) + os.sep) else None


def _copy_images(paths: Iterable[str | None], out: Path, sources: _Sources) -> dict[str, str]:
    mapping: dict[str, str] = {}
    made: set[str] = set()
    for rel in sorted({p for p in paths if p}):
        src = sources.get(rel)
        if src is None:
            continue
        site = _site_image_path(rel)
        dest = os.path.join(out, site)
        folder = os.path.dirname(dest)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        link_or_copy(src, dest)
        mapping[rel] = site
    return mapping


#: The rater pictures to write: (the blinding, [(release path, source file, site file)]).
_RaterJobs = tuple[Any, list[tuple[str, str, str]]]


def _evaluate_session(
    data: SiteData, out: Path, sources: _Sources
) -> tuple[dict[str, Any] | None, _RaterJobs | None]:
    """The blinded page's payload and the pictures it shows, to be copied under opaque
    names (rate/, by ``write_rater_pictures``); (None, None) when the release has no sealed
    oracle to key the blinding."""
    try:
        key = blinding_key(data.root, data.manifest.root_hash)
    except ReleaseError:
        return None, None
    cond = rated_condition(data)
    root = data.root.resolve()

    def copyable(rel: str) -> bool:
        return sources.get(rel) is not None

    pool: list[PoolStory] = []
    for s in story_pool(data, cond):
        strips = {m: ps for m, ps in s.images.items() if all(copyable(p) for p in ps)}
        if strips:
            pool.append(replace(s, images=strips))
    blinding = make_blinding(key, cond, pool)
    (out / "rate").mkdir(parents=True, exist_ok=True)
    jobs = [(rel, str(root / rel), str(out / blinding.image_name(rel)))
            for s in pool for paths in s.images.values() for rel in paths]  # fmt: skip
    return evaluate_payload(data, blinding, pool), (blinding, jobs)


def write_rater_pictures(_progress: Any, blinding: Any, jobs: list[tuple[str, str, str]]) -> int:
    """Each rated picture perturbed for raters (``Blinding.rater_bytes``) and written under
    its opaque name: never a link, a rater's picture is never the bytes under a model's name.
    Runs in the site's helper process while the story pages render (~2.5 ms a picture)."""
    for rel, src, dest in jobs:
        Path(dest).write_bytes(blinding.rater_bytes(rel, Path(src).read_bytes()))
    return len(jobs)


class _Writer:
    def __init__(self, env: Environment, out: Path, common: dict[str, Any]) -> None:
        self.env, self.out, self.common, self.count = env, out, common, 0

    def page(self, path: str, template: str, **ctx: Any) -> None:
        """Render one page; its ``tables`` (if any) are written as CSV and JSON downloads."""
        depth = path.count("/")
        root = "../" * depth
        downloads: dict[str, Download] = {}
        if ctx.get("tables"):
            c = self.common
            downloads = write_tables(self.out, path, ctx["tables"], c["release"], c["root_hash"])
        html = self.env.get_template(template).render(
            {**self.common, **ctx, "root": root, "page_path": path, "downloads": downloads}
        )
        check_table_wraps(html, path)
        dest = self.out / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(html, encoding="utf-8")
        self.count += 1


class _Quiet:
    """No progress to draw (the site's helper process only answers)."""

    def start(self, stage: str, total: int | None) -> None: ...
    def advance(self, stage: str, done: int, total: int | None) -> None: ...
    def note(self, stage: str, message: str) -> None: ...
    def finish(self, stage: str, seconds: float, skipped: bool) -> None: ...


def _release_files(_progress: Any, root: Path, out: Path) -> dict[str, str]:
    """What the site takes from the release file by file, without its pages: the images
    (hard-linked; release path -> site path) and the per-requirement downloads."""
    images = _copy_images(read_records(root)[0].values(), out, _Sources(root))
    write_requirements(requirements_file(root), out)
    return images


def build_site(release_dir: str | Path, out_dir: str | Path) -> SiteResult:
    """Render every page of the site of ``release_dir`` into ``out_dir`` (replaced).

    The images and the per-requirement downloads are written meanwhile by a process forked
    before the release's data is read (``vsb.release.isolate.StageHost``; without fork, here
    first): ~1 s of a 4 s site, and the two processes hold less at once than this one did
    alone (the downloads' columns are never in the process that holds the pages' data)."""
    from vsb.release.isolate import StageHost

    root, out = Path(release_dir), Path(out_dir)
    if out.resolve().is_relative_to(root.resolve()):
        raise ReleaseError("the site must live outside the hashed release directory", file=out)
    _prepare_out(out)
    fns: dict[str, Callable[..., Any]] = {
        "files": partial(_release_files, root=root, out=out),
        "rate": write_rater_pictures,
    }
    with StageHost(fns) as helper:
        helper.send("files")
        return _pages(root, out, _Helper(helper))


class _Helper:
    """The site's helper process, as the pages see it: the release's files first, then the
    rater pictures, each waited for when the pages need it done."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.rating = False

    def files(self) -> dict[str, str]:
        """The images' site paths, once they are written."""
        got: dict[str, str] = self.host.receive("files", _Quiet())
        return got

    def rate(self, jobs: _RaterJobs | None) -> None:
        """Start writing the rater pictures (after ``files``)."""
        if jobs is not None:
            self.host.send("rate", *jobs)
            self.rating = True

    def wait(self) -> None:
        """Wait until the rater pictures are written."""
        if self.rating:
            self.host.receive("rate", _Quiet())
            self.rating = False


def _pages(root: Path, out: Path, helper: _Helper) -> SiteResult:
    """Every page of the site; ``helper`` writes the images and the rater pictures."""
    data = load_site_data(root)
    static = resources.files("vsb.site").joinpath("static")
    (out / "static").mkdir()
    for name in STATIC_FILES:
        (out / "static" / name).write_bytes(static.joinpath(name).read_bytes())
    sources = _Sources(data.root)
    # the rater pictures first (~3 s in the helper, once it has written the release's files),
    # while this process renders every page
    session, rater_jobs = _evaluate_session(data, out, sources)
    images = helper.files()
    helper.rate(rater_jobs)
    m = data.manifest
    common = {
        "release": m.release,
        "root_hash": m.root_hash,
        "n_files": len(m.files),
        "vsb_version": __version__,
        "scores": data.scores,
        "judge": data.judge,
        "models": data.models,
        "conditions": data.conditions,
        "primary": data.scores.primary_condition,
        "slugs": data.slugs,
        "stories": data.stories,
        "dims": list(data.scores.dimensions),
    }
    full = data.all_scores or data.scores
    order = [full.primary_evaluator, *(e for e in full.evaluators if e != full.primary_evaluator)]
    boards = {
        ev: "index.html" if i == 0 else f"leaderboard/{model_slug(ev)}.html"
        for i, ev in enumerate(order)
    }
    common["boards"] = boards
    common["judge_swap"] = full.judge_swap
    w = _Writer(environment(), out, common)
    for ev, path in boards.items():
        view = data if ev == full.primary_evaluator else replace(data, scores=scores_view(full, ev))
        w.page(path, "index.html", evaluator=ev, **pages.leaderboard(view))
    for model in data.models:
        w.page(f"models/{data.slugs[model]}.html", "model.html", **pages.model_page(data, model))
    w.page("comparisons.html", "comparisons.html", **pages.comparisons(data))
    w.page("analysis.html", "analysis.html", **analysis_page(data))
    w.page("stability.html", "stability.html", **pages.stability_tables(data))
    w.page(
        "judge.html",
        "judge.html",
        human=release_report(data.root),
        reference=data.reference,
        vina=data.vinabench,
        vina_metrics=VINA_METRICS,
        **pages.judge_tables(data),
    )
    w.page("evaluate.html", "evaluate.html", session=session)
    w.page("stories/index.html", "stories.html", **pages.story_index(data))
    for story in data.stories:
        for cond in data.conditions:
            w.page(
                f"stories/{story.id}/{cond}.html",
                "story.html",
                **pages.story_page(data, story, cond, images),
            )
    _release_downloads(data, out)
    facts = release_facts(data, evaluate_page=(out / "evaluate.html").is_file())
    title, body, toc = render_methodology(methodology_text(facts))
    w.page(
        "methodology.html", "methodology.html",
        title=title, body=body, toc=toc, n_scenes=facts["n_scenes"], n_reqs=facts["n_reqs"],
    )  # fmt: skip
    helper.wait()
    return SiteResult(out=out, pages=w.count, images=len(images))


def _release_downloads(data: SiteData, out: Path) -> None:
    """The release's score and validation files as they are, under data/ (its
    per-requirement results: ``_release_files``)."""
    for folder in RELEASE_DOWNLOADS:
        src = data.root / folder
        if not src.is_dir():
            continue
        for f in sorted(src.iterdir()):
            if f.is_file() and f.suffix in (".json", ".csv"):
                (out / "data" / folder).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, out / "data" / folder / f.name)
