"""Every sideways-scrolling table wrapper of the site is reachable by keyboard (axe-core's
``scrollable-region-focusable``): the build refuses a page with one that is not, and no
template writes one by hand without ``tabindex="0" role="group"``."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from vsb.site.build import check_table_wraps

TEMPLATES = resources.files("vsb.site").joinpath("templates")
WRAP = re.compile(r'<div class="table-wrap"[^>]*>')


def test_the_build_refuses_a_table_wrapper_a_keyboard_cannot_reach() -> None:
    check_table_wraps(
        '<div class="table-wrap" tabindex="0" role="group"><table></table></div>', "a"
    )
    with pytest.raises(RuntimeError, match=r"judge\.html: .*tabindex"):
        check_table_wraps('<p><div class="table-wrap">\n<table id="reference">', "judge.html")
    with pytest.raises(RuntimeError, match=r"x\.html"):
        check_table_wraps('<div id="t" class="wide table-wrap" tabindex="0">', "x.html")


@pytest.mark.parametrize(
    "name", sorted(t.name for t in TEMPLATES.iterdir() if t.name.endswith(".html"))
)
def test_no_template_writes_an_unfocusable_table_wrapper(name: str) -> None:
    text = TEMPLATES.joinpath(name).read_text("utf-8")
    bad = [t for t in WRAP.findall(text) if 'tabindex="0"' not in t or 'role="group"' not in t]
    assert not bad, f"{name}: use the table_wrap macro of macros.html: {bad}"
