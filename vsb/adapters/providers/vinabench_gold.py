"""``vinabench:gold``: VinaBench's gold images as a reference model, as VinaBench reports its
gold row.

A story imported from one of VinaBench's annotation files (``vsb suite import``) is served
the sample's own images: the portion's ``image_links`` (VWP), ``key_frames``
(Storyboard20K) or ``image_paths`` (StorySalon), found under ``--samples DIR`` (VinaBench's
``annotations`` folder) as its ``prepare_mrr_rank_clip.py`` finds them
(``vsb.story.vinabench.gold_file``: ``images/<folder>/<file>``, ``storyboard20k/<frame>``,
``Image_inpainted/<path less its first two parts>``). The sample is found in the file the
story was imported from (its ``imported.source``; that file, else the file of that name in
DIR) by the story's id. One image per scene, served under every condition; the cache is keyed
by its bytes (``StoredSamples``). A story not imported from VinaBench, or whose gold image is
not there, fails per image (``AdapterError``), never the run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from vsb.adapters.base import Privileged
from vsb.adapters.providers.stored import StoredSamples
from vsb.errors import AdapterError, InputError
from vsb.story.models import Story
from vsb.story.vinabench import VinaSample, gold_file, read_samples

NAME = "vinabench:gold"
#: ``vsb.narrative.sources``' source of a VinaBench story: ``FILE/N`` or ``FILE:line N``,
#: then `` (scenes A-B)`` when split, then `` (VinaBench PORTION)``.
_SOURCE = re.compile(
    r"^(?P<file>.+?)(?:/\d+|:line \d+)(?: \(scenes \d+-\d+\))? \(VinaBench [^)]*\)$"
)


class VinaBenchGold(StoredSamples):
    """The gold images of VinaBench's samples, under its ``annotations`` folder."""

    version = "1"

    def __init__(self, root: str | Path | None = None) -> None:
        super().__init__(root, "vinabench-gold")
        self.name = NAME
        self._files: dict[Path, dict[str, VinaSample]] = {}

    def parameters(self) -> dict[str, Any]:
        return {"source": "vinabench-gold"}

    def preflight(self) -> None:
        if self.root is None:
            from vsb.errors import CredentialMissing

            raise CredentialMissing(
                f"model {NAME!r} needs VinaBench's annotations folder (--samples DIR)"
            )

    def _file(self, story: Story) -> Path:
        source = story.imported.source if story.imported is not None else ""
        m = _SOURCE.match(source)
        if m is None:
            raise AdapterError(f"{NAME}: story {story.id} was not imported from VinaBench")
        given = Path(m["file"])
        assert self.root is not None
        for path in (given, self.root / given.name):
            if path.is_file():
                return path
        raise AdapterError(
            f"{NAME}: story {story.id} comes from {given}, which is neither there nor in "
            f"{self.root}"
        )

    def sample(self, story: Story) -> VinaSample:
        """The story's VinaBench sample (``AdapterError`` when it cannot be found)."""
        path = self._file(story)
        if path not in self._files:
            try:
                self._files[path] = read_samples(path)
            except InputError as err:
                raise AdapterError(f"{NAME}: {err}") from None
        found = self._files[path].get(story.id)
        if found is None:
            raise AdapterError(f"{NAME}: no sample of {path} is story {story.id}")
        return found

    def request_parameters(
        self, parameters: dict[str, Any], privileged: Privileged | None
    ) -> dict[str, Any]:
        """As ``StoredSamples``'; a story with no gold image gets no ``sample_sha256``
        (``generate`` then says why, for that image alone)."""
        try:
            return super().request_parameters(parameters, privileged)
        except AdapterError:
            return {**parameters, "sample_sha256": None}

    def serves(self, p: Privileged) -> Path:
        """The gold image of the request's story and scene, under the samples directory."""
        self.preflight()
        assert self.root is not None
        sample = self.sample(p.story)
        if len(sample.gold) < p.scene:
            raise AdapterError(f"{NAME}: sample {sample.index} lists no gold image per scene")
        link = sample.gold[p.scene - 1]
        if not isinstance(link, str) or not link:
            raise AdapterError(
                f"{NAME}: sample {sample.index} scene {p.scene}: {link!r} names no image file"
            )
        return self.root / gold_file(sample.portion, link)


def gold_adapter(arg: str, *, root: str | Path | None = None) -> VinaBenchGold:
    """``vinabench:gold`` (the registry's pattern ``vinabench:…``)."""
    if arg != "gold":
        raise InputError(f"unknown model vinabench:{arg}; the VinaBench model is {NAME}")
    return VinaBenchGold(root)


def pattern_info() -> dict[str, object]:
    """How ``vsb models`` lists it."""
    return {
        "pattern": NAME,
        "env_var": None,
        "needs": "--samples DIR (VinaBench's annotations folder)",
        "image_input": "no",
        "about": "VinaBench's gold images of an imported VinaBench story",
    }
