"""``vsb release build``: the suite variants are on by default; ``--no-paraphrase`` and
``--no-implicit`` turn each off (the command hands them to the library's ``BuildConfig``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.release import build
from vsb.release.build import BuildConfig, BuildResult


@pytest.mark.parametrize(
    ("flags", "paraphrase", "implicit"),
    [
        ([], True, True),
        (["--no-paraphrase"], False, True),
        (["--no-implicit"], True, False),
        (["--no-paraphrase", "--no-implicit", "--paraphrase"], True, False),
    ],
)
def test_variant_flags_reach_the_build(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    paraphrase: bool,
    implicit: bool,
) -> None:
    seen: list[BuildConfig] = []

    def fake(config: BuildConfig, progress: object = None) -> BuildResult:
        seen.append(config)
        return BuildResult(root=tmp_path, release_dir=tmp_path, site_dir=tmp_path,
                           images=7, variant_images=3 if paraphrase or implicit else 0)  # fmt: skip

    monkeypatch.setattr(build, "build_release", fake)
    assert main(["release", "build", "vflags", "--out", str(tmp_path), *flags]) == 0
    assert [(c.paraphrase, c.implicit) for c in seen] == [(paraphrase, implicit)]
    out = capsys.readouterr().out
    assert out.startswith("7 images") and (", 3 in suite variants" in out) == (
        paraphrase or implicit
    )


def test_help_names_the_switches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "build", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--paraphrase / --no-paraphrase" in text and "--implicit / --no-implicit" in text
