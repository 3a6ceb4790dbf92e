"""``vsb.tables.reasons``: one line for a model's images that were not judged."""

from __future__ import annotations

from vsb.tables.reasons import image_name, images_reason, off_palette


def test_shares_off_the_palette_are_one_reason_naming_the_worst_images() -> None:
    reasons = {image_name("independent", "s", k): off_palette(1 - p) for k, p in
               enumerate((0.7, 0.7, 0.7, 1.0, 1.0, 0.55), start=1)}  # fmt: skip
    assert images_reason(reasons) == (
        "55–100% of pixels are off the palette, 100% in independent/s/scene_04.png, "
        "independent/s/scene_05.png"
    )
    same = {image_name("c", "s", k): off_palette(0.3) for k in range(1, 6)}
    assert images_reason(same) == (
        "70% of pixels are off the palette: c/s/scene_01.png, c/s/scene_02.png, "
        "c/s/scene_03.png and 2 more"
    )


def test_another_reason_shared_by_more_images_is_given_as_it_is() -> None:
    reasons = {"c/s/scene_01.png": off_palette(0.2), "c/s/scene_02.png": "not a render",
               "c/s/scene_03.png": "not a render"}  # fmt: skip
    assert images_reason(reasons) == "not a render"
    assert images_reason({}) == ""
