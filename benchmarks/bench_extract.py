"""Time the blind extractor: decode + extract + rule checks per image, on one core.

The images are the true renders of the 210 scenes of the default suite (jitter seeds 0–3,
840 PNGs), timed best of 3 in one process. Measured on the development container
(``taskset -c 0``, one core of 2):

    decode (indexed PNG -> index plane)   ≈ 0.28 ms/image
    extract (from the index plane)        ≈ 1.24 ms/image
    rule checks                           ≈ 0.08 ms/image
    decode + extract + rules              ≈ 1.8 ms/image   (target ≤ 6 ms)

Run: ``taskset -c 0 .venv/bin/python benchmarks/bench_extract.py``
"""

from __future__ import annotations

import time

from vsb.evaluators.extractor import extract
from vsb.evaluators.render.decode import load_indices
from vsb.evaluators.render.detected import EntityVocabulary
from vsb.evaluators.rules import check_scene
from vsb.generator.generate import generate_suite
from vsb.render import render_png


def _best(fn: object, n: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t)
    return best / n * 1000


def main() -> None:
    stories = generate_suite(0)
    items = []
    for seed in range(4):
        for story in stories:
            voc = EntityVocabulary.from_world(story.world)
            for scene in story.scenes:
                png = render_png(scene.state, seed=seed * 7919 + scene.index)
                items.append((png, voc, scene, story.world))
    n = len(items)
    planes = [load_indices(png) for png, *_ in items]
    detected = [extract(p, voc) for p, (_, voc, _, _) in zip(planes, items, strict=True)]

    def decode() -> None:
        for png, *_ in items:
            load_indices(png)

    def extract_only() -> None:
        for p, (_, voc, _, _) in zip(planes, items, strict=True):
            extract(p, voc)

    def rules() -> None:
        for d, (_, _, scene, world) in zip(detected, items, strict=True):
            check_scene(d, scene, world)

    def everything() -> None:
        for png, voc, scene, world in items:
            check_scene(extract(png, voc), scene, world)

    rows = [
        ("decode (indexed PNG -> index plane)", _best(decode, n)),
        ("extract (from the index plane)", _best(extract_only, n)),
        ("rule checks", _best(rules, n)),
        ("decode + extract + rules", _best(everything, n)),
    ]
    print(f"{n} images (true renders of the default suite, 4 jitter seeds), one core")
    for name, ms in rows:
        print(f"  {name:<38} {ms:6.2f} ms/image")


if __name__ == "__main__":
    main()
