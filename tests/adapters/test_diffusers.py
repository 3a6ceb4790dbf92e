"""``--model diffusers:DIR``: a tiny random-weight Stable Diffusion pipeline on CPU, through the
CLI and the runner (same bytes twice, the second run from the cache), image conditioning under
previous_image, batching across stories, and the errors a user meets without weights."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs the diffusers extra: pip install 'vsb[diffusers]'")
pytest.importorskip("diffusers", reason="needs the diffusers extra: pip install 'vsb[diffusers]'")

from tests.adapters.diffusers_helpers import save_tiny_sd
from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.diffusers import (
    DiffusersAdapter,
    DiffusersOptions,
    diffusers_adapter,
    noise_seed,
    parse_size,
)
from vsb.adapters.registry import get_adapter, resolve_models
from vsb.cli.main import main
from vsb.conditions import ConditionContext
from vsb.errors import AdapterError, InputError
from vsb.generator.generate import generate_story, write_suite
from vsb.run.runner import RunConfig, run

OPTS = DiffusersOptions(steps=2, width=32, height=32, batch_size=2)
CLI_OPTS = ["--steps", "2", "--size", "32", "--batch-size", "2", "--workers", "2"]


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short stories (three scenes each)."""
    out = tmp_path_factory.mktemp("small-suite")
    stories = [
        generate_story("counting", "easy", "counting-easy", seed=0),
        generate_story("wardrobe", "easy", "wardrobe-easy", seed=1),
    ]
    write_suite(stories, out, seed=0)
    return out


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory, small_suite: Path) -> Path:
    """A tiny pipeline whose tokenizer knows the small suite's words."""
    texts = [
        scene["text"]
        for f in sorted(small_suite.glob("*-easy.json"))
        for scene in json.loads(f.read_text())["scenes"]
    ]
    return save_tiny_sd(tmp_path_factory.mktemp("tiny-sd") / "pipe", texts)


def _records(run_dir: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]


def _request(
    adapter: DiffusersAdapter, prompt: str, refs: tuple[bytes, ...] = ()
) -> GenerationRequest:
    ctx = ConditionContext("previous_image" if refs else "independent", reference_image=bool(refs))
    return GenerationRequest(
        adapter.name, adapter.version, prompt, 0, ctx, adapter.parameters(), refs
    )


def test_cli_run_twice_gives_the_same_bytes_and_the_second_is_cached(
    tmp_path: Path, small_suite: Path, tiny_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = f"diffusers:{tiny_dir}"
    common = ["run", "--suite", str(small_suite), "--model", model, *CLI_OPTS]
    common += ["--condition", "independent,previous_image"]
    cache = ["--cache", str(tmp_path / "cache")]
    assert main([*common, *cache, "--out", str(tmp_path / "r1")]) == 0
    first = capsys.readouterr()
    assert "12 images (10 generated, 2 from cache, 0 failed)" in first.out, first
    assert "Traceback" not in first.err
    assert main([*common, *cache, "--out", str(tmp_path / "r2")]) == 0
    assert "12 images (0 generated, 12 from cache, 0 failed)" in capsys.readouterr().out
    # a cold cache regenerates every image: byte-identical to the first run
    cold = ["--cache", str(tmp_path / "cache2")]
    assert main([*common, *cold, "--out", str(tmp_path / "r3")]) == 0
    runs = [_records(tmp_path / r) for r in ("r1", "r2", "r3")]
    assert [r["cache_hit"] for r in runs[1]] == [True] * 12
    assert [r["cache_hit"] for r in runs[2]].count(False) == 10
    shas = [[(r["key"], r["sha256"]) for r in recs] for recs in runs]
    assert shas[0] == shas[1] == shas[2] and all(s for _k, s in shas[0])
    for rec in runs[0]:
        png = (tmp_path / "r1" / rec["path"]).read_bytes()
        assert png == (tmp_path / "r3" / rec["path"]).read_bytes()
        assert png.startswith(b"\x89PNG") and rec["error"] is None
    # previous_image sends a different request from scene 2 on (the previous frame goes along)
    by = {(r["condition"], r["story_id"], r["scene"]): r for r in runs[0]}
    for sid in ("counting-easy", "wardrobe-easy"):
        assert by["independent", sid, 1]["key"] == by["previous_image", sid, 1]["key"]
        for k in (2, 3):
            ind, prev = by["independent", sid, k], by["previous_image", sid, k]
            assert ind["key"] != prev["key"] and ind["sha256"] != prev["sha256"]


def test_parameters_enter_the_cache_key_and_a_change_regenerates(
    tmp_path: Path, small_suite: Path, tiny_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["run", "--suite", str(small_suite), "--model", f"diffusers:{tiny_dir}"]
    common += ["--condition", "independent", "--cache", str(tmp_path / "c"), "--size", "32"]
    assert main([*common, "--steps", "2", "--out", str(tmp_path / "a")]) == 0
    assert main([*common, "--steps", "3", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert out.count("6 images (6 generated, 0 from cache, 0 failed)") == 2
    a, b = _records(tmp_path / "a"), _records(tmp_path / "b")
    assert not {r["key"] for r in a} & {r["key"] for r in b}


def test_the_runner_hands_the_previous_frame_to_img2img(
    tmp_path: Path, small_suite: Path, tiny_dir: Path
) -> None:
    adapter = diffusers_adapter(str(tiny_dir), OPTS, gather_s=0.01)
    assert adapter.accepts_reference_image
    sent: dict[str, tuple[bytes, ...]] = {}
    real = adapter.generate

    def spy(req: GenerationRequest) -> GenerationResult:
        sent[req.key()] = req.reference_images
        return real(req)

    adapter.generate = spy  # type: ignore[method-assign]
    model = f"diffusers:{tiny_dir}"
    config = RunConfig(
        suite_dir=small_suite, models=[model], conditions=["previous_image"],
        out=tmp_path / "run", workers=2, cache_dir=tmp_path / "cache",
    )  # fmt: skip
    res = run(config, adapters={model: adapter})
    assert (res.images, res.failures, res.calls) == (6, 0, 6)
    recs = {(r["story_id"], r["scene"]): r for r in _records(tmp_path / "run")}
    for (sid, k), rec in recs.items():
        if k == 1:
            assert sent[rec["key"]] == ()
        else:  # the frame generated for the scene before, in the same story
            assert sent[rec["key"]] == ((tmp_path / "run" / recs[sid, k - 1]["path"]).read_bytes(),)
    assert sum(adapter.batches) == 6 and max(adapter.batches) <= 2


def test_the_reference_image_changes_the_output(tiny_dir: Path) -> None:
    adapter = diffusers_adapter(str(tiny_dir), OPTS, gather_s=0.0)
    a = adapter.generate(_request(adapter, "Tao is here.")).png
    b = adapter.generate(_request(adapter, "five pink flowers")).png
    with_a = adapter.generate(_request(adapter, "Tao is here.", (a,)))
    with_b = adapter.generate(_request(adapter, "Tao is here.", (b,)))
    assert with_a.metadata["conditioned"] is True
    assert with_a.png != with_b.png and with_a.png != a
    assert adapter.generate(_request(adapter, "Tao is here.", (a,))).png == with_a.png


def test_batched_images_do_not_depend_on_their_batch_partners(tiny_dir: Path) -> None:
    adapter = diffusers_adapter(str(tiny_dir), OPTS, gather_s=5.0)
    alone = diffusers_adapter(str(tiny_dir), OPTS, gather_s=0.0)
    solo = alone.generate(_request(alone, "Tao is here.")).png  # a padded batch of one
    for partner in ("five pink flowers", "In the classroom."):
        out: dict[str, bytes] = {}

        def go(prompt: str, out: dict[str, bytes] = out) -> None:
            out[prompt] = adapter.generate(_request(adapter, prompt)).png

        threads = [threading.Thread(target=go, args=(p,)) for p in ("Tao is here.", partner)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert out["Tao is here."] == solo and out[partner] != solo
    assert adapter.batches == [2, 2]  # both pairs went through one pipeline call each


def test_noise_seed_ignores_device_and_batch_size(tiny_dir: Path) -> None:
    a = diffusers_adapter(str(tiny_dir), OPTS)
    b = diffusers_adapter(str(tiny_dir), DiffusersOptions(device="cpu", batch_size=4, steps=9))
    ra, rb = _request(a, "Tao is here."), _request(b, "Tao is here.")
    assert ra.key() != rb.key() and noise_seed(ra) == noise_seed(rb)
    assert noise_seed(ra) != noise_seed(_request(a, "Tao is gone."))


def test_a_pipeline_without_img2img_refuses_a_reference(tiny_dir: Path) -> None:
    plain = DiffusersAdapter(str(tiny_dir), OPTS)
    assert not plain.accepts_reference_image
    with pytest.raises(AdapterError, match="takes no reference image"):
        plain.generate(_request(plain, "Tao", (b"\x89PNG",)))


def test_pattern_names_resolve_through_the_registry(tiny_dir: Path) -> None:
    name = f"diffusers:{tiny_dir}"
    assert resolve_models(f"procedural-oracle,{name}") == ["procedural-oracle", name]
    adapter = get_adapter(name, options=OPTS)
    assert adapter.name == name and adapter.parameters()["steps"] == 2
    assert adapter.version.startswith("dir:") and ";diffusers=" in adapter.version


def test_new_weights_change_the_version(tmp_path: Path, tiny_dir: Path) -> None:
    other = save_tiny_sd(tmp_path / "other", ["Tao is here."], seed=1)
    assert diffusers_adapter(str(other)).version != diffusers_adapter(str(tiny_dir)).version


@pytest.mark.parametrize(
    ("text", "expected"), [("32", (32, 32)), ("1216x832", (1216, 832)), (None, (None, None))]
)
def test_parse_size(text: str | None, expected: tuple[int | None, int | None]) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size", "30"], "multiple of 8"),
        (["--size", "big"], "--size must be N or WIDTHxHEIGHT"),
        (["--device", "tpu"], "--device must be cpu, cuda, cuda:N or mps"),
        (["--device", "cuda"], "torch sees no CUDA device"),
    ],
)
def test_bad_options_are_one_line_errors(
    tmp_path: Path,
    small_suite: Path,
    tiny_dir: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    import torch

    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    argv = ["run", "--suite", str(small_suite), "--model", f"diffusers:{tiny_dir}"]
    argv += ["--condition", "independent", "--out", str(tmp_path / "r"), "--steps", "1", *args]
    assert main([*argv, "--cache", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_weights_say_what_to_download_and_where(
    tmp_path: Path,
    small_suite: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    argv = ["run", "--suite", str(small_suite), "--condition", "independent"]
    argv += ["--out", str(tmp_path / "r"), "--cache", str(tmp_path / "c")]
    assert main([*argv, "--model", "diffusers:someone/not-downloaded"]) == 1
    err = capsys.readouterr().err.strip()
    assert "hf download someone/not-downloaded" in err and str(hub) in err
    assert len(err.splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*argv, "--model", f"diffusers:{empty}"]) == 1
    err = capsys.readouterr().err.strip()
    assert "not a diffusers pipeline directory" in err and "model_index.json" in err
    assert not (tmp_path / "r" / "records.jsonl").exists()


def test_a_hub_snapshot_in_the_local_cache_is_found_and_named_by_commit(
    tmp_path: Path, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    hub = tmp_path / "hub"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snap = hub / "models--someone--tiny-sd" / "snapshots" / commit
    shutil.copytree(tiny_dir, snap)
    (hub / "models--someone--tiny-sd" / "refs").mkdir()
    (hub / "models--someone--tiny-sd" / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    adapter = get_adapter("diffusers:someone/tiny-sd", options=OPTS)
    assert adapter.version.startswith(f"hub:someone/tiny-sd@{commit};")
    assert adapter.generate(_request(adapter, "Tao is here.")).png.startswith(b"\x89PNG")


def test_an_unreadable_model_index_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model_index.json").write_text("{not json")
    with pytest.raises(InputError, match=r"unreadable model_index\.json"):
        diffusers_adapter(str(bad))


def test_the_adapter_travels_as_its_source_and_options(tiny_dir: Path) -> None:
    import pickle

    adapter = diffusers_adapter(str(tiny_dir), OPTS, gather_s=0.0)
    png = adapter.generate(_request(adapter, "Tao is here.")).png
    copy = pickle.loads(pickle.dumps(adapter))  # what a Ray worker rebuilds (pipeline unloaded)
    assert type(copy) is type(adapter) and copy._pipe is None
    assert (copy.name, copy.version, copy.parameters()) == (
        adapter.name, adapter.version, adapter.parameters(),
    )  # fmt: skip
    assert copy.generate(_request(copy, "Tao is here.")).png == png
    assert adapter.ray_resources == {"num_cpus": 1}
    on_gpu = DiffusersAdapter(str(tiny_dir), DiffusersOptions(device="cuda"))
    assert on_gpu.ray_resources == {"num_gpus": 1}  # loads nothing: no GPU needed to ask


def test_cpu_bytes_do_not_depend_on_the_workers_thread_count(
    tmp_path: Path, tiny_dir: Path, small_suite: Path
) -> None:
    # regression: a Ray worker's torch runs on one thread (OMP_NUM_THREADS=1), the driver's on
    # several; without the thread count fixed in the options, 9 of 22 images came out other
    import pickle

    import torch

    model = f"diffusers:{tiny_dir}"
    before = torch.get_num_threads()
    shas = []
    try:
        torch.set_num_threads(2)
        adapter = diffusers_adapter(str(tiny_dir), OPTS, gather_s=0.05)
        assert adapter.parameters()["threads"] == 2
        for threads, name in ((2, "driver"), (1, "worker")):
            torch.set_num_threads(threads)
            copy = pickle.loads(pickle.dumps(adapter))  # what a Ray worker rebuilds
            config = RunConfig(
                suite_dir=small_suite, models=[model], out=tmp_path / name, workers=2,
                conditions=["independent", "previous_image"], cache_dir=tmp_path / f"c-{name}",
            )  # fmt: skip
            assert run(config, adapters={model: copy}).calls == 10
            assert torch.get_num_threads() == threads  # restored after each pipeline call
            shas.append([(r["key"], r["sha256"]) for r in _records(tmp_path / name)])
    finally:
        torch.set_num_threads(before)
    assert shas[0] == shas[1]


def test_vsb_models_lists_the_family_with_its_parameters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["models", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    family = next(p for p in doc["patterns"] if p["pattern"].startswith("diffusers:"))
    assert family["parameters"] == DiffusersOptions().parameters()
    assert {"device", "dtype", "steps", "guidance", "batch_size"} <= set(family["parameters"])


def test_a_model_name_cannot_climb_out_of_the_images_folder(
    tmp_path: Path,
    small_suite: Path,
    tiny_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # regression: the model name is a folder of RUN/images; diffusers:../../../../DIR (a real
    # pipeline, relative to the working directory) wrote its images outside RUN
    cwd = tiny_dir.parent / "w" / "x" / "y" / "z"
    cwd.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(cwd)
    run_dir = tmp_path / "a" / "b" / "run"
    climb = f"diffusers:../../../../{tiny_dir.name}"
    argv = ["run", "--suite", str(small_suite), "--model", climb, "--condition", "independent"]
    argv += ["--out", str(run_dir), "--cache", str(tmp_path / "c"), "--steps", "1"]
    main(argv)
    pngs = [p for p in tmp_path.rglob("*.png") if not p.is_relative_to(tmp_path / "c")]
    outside = [p for p in pngs if not p.is_relative_to(run_dir)]
    assert not outside
    assert "no '..' in a model name" in capsys.readouterr().err


# --- a prompt over the CLIP encoder's 77 tokens (issue #44) -----------------------------------

LONG_SCENE = "In the park, Ari waves at a red kite, which is flying."


def _long_request(adapter: DiffusersAdapter) -> GenerationRequest:
    """A request of ~150 CLIP tokens: a long previous_text context, then the scene text."""
    story = " ".join(
        f"Scene {i}: Noor walks past {i} green lanterns by the lake." for i in range(12)
    )
    ctx = ConditionContext("previous_text", text=story)
    return GenerationRequest(
        adapter.name, adapter.version, LONG_SCENE, 0, ctx, adapter.parameters()
    )


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny pipeline with CLIP's own tokenizer (77 tokens) before its text encoder."""
    return save_tiny_sd(tmp_path_factory.mktemp("tiny-clip-sd") / "pipe", [], clip=True)


def test_a_long_prompt_is_encoded_whole_in_chunks(clip_dir: Path) -> None:
    from vsb.adapters.long_prompts import chunked_embeds
    from vsb.story.tokens import clip_count, clip_keep

    adapter = DiffusersAdapter(str(clip_dir), OPTS, gather_s=0.0)
    request = _long_request(adapter)
    full = request.full_prompt()
    n = clip_count(full)
    assert 140 <= n <= 200
    fit = adapter.prompt_fit(request)
    assert (fit.unit, fit.length, fit.budget, fit.cut, fit.encoded) == (
        "clip tokens", n, 77, False, "chunked"
    )  # fmt: skip
    result = adapter.generate(request)
    assert result.metadata["prompt_fit"] == {
        "unit": "clip tokens", "length": n, "budget": 77, "cut": False, "encoded": "chunked"
    }  # fmt: skip
    # the whole prompt reaches the UNet: three chunks, not the 77-token prefix
    pipe = adapter.pipeline()
    whole = chunked_embeds(pipe, [full])["prompt_embeds"]
    prefix = chunked_embeds(pipe, [clip_keep(full)])["prompt_embeds"]
    assert whole.shape[1] == 77 * 3 and prefix.shape[1] == 77
    pad = chunked_embeds(pipe, [""])["prompt_embeds"]
    assert not whole[:, 77:154].equal(pad) and not whole[:, 154:].equal(pad)
    assert not whole[:, :77].equal(prefix)  # chunks end at sentences: a shorter first chunk
    short = GenerationRequest(
        adapter.name, adapter.version, clip_keep(full), 0, ConditionContext("independent"),
        adapter.parameters(),
    )  # fmt: skip
    assert adapter.prompt_fit(short).encoded == "whole"
    assert adapter.generate(short).png != result.png


def test_truncate_mode_keeps_the_scene_text_and_says_cut(clip_dir: Path) -> None:
    from vsb.adapters.long_prompts import scene_first
    from vsb.story.tokens import clip_keep

    opts = DiffusersOptions(steps=2, width=32, height=32, long_prompt="truncate")
    adapter = DiffusersAdapter(str(clip_dir), opts, gather_s=0.0)
    request = _long_request(adapter)
    fit = adapter.prompt_fit(request)
    assert (fit.cut, fit.encoded, fit.budget) == (True, "truncated", 77)
    assert fit.over()
    result = adapter.generate(request)
    assert result.metadata["prompt_fit"]["cut"] is True
    # what the encoder reads starts with the whole scene text; the context is what is lost
    sent = scene_first(request)
    assert sent.startswith(LONG_SCENE + "\n\nStory so far: ")
    assert LONG_SCENE in clip_keep(sent) and LONG_SCENE not in clip_keep(request.full_prompt())
    with pytest.raises(InputError, match="long-prompt"):
        DiffusersOptions(long_prompt="drop")


def test_a_short_prompt_is_encoded_exactly_as_before(clip_dir: Path) -> None:
    import io

    import torch
    from PIL import Image

    adapter = DiffusersAdapter(str(clip_dir), OPTS, gather_s=0.0)
    request = _request(adapter, LONG_SCENE)
    fit = adapter.prompt_fit(request)
    from vsb.story.tokens import clip_count

    assert (fit.length, fit.cut, fit.encoded) == (clip_count(LONG_SCENE), False, "whole")
    png = adapter.generate(request).png
    pipe = adapter.pipeline()
    with torch.inference_mode():
        image = pipe(
            prompt=[LONG_SCENE], num_inference_steps=2, height=32, width=32, output_type="pil",
            generator=[torch.Generator("cpu").manual_seed(noise_seed(request))],
        ).images[0]  # fmt: skip
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG")
    assert png == buf.getvalue()
    assert Image.open(io.BytesIO(png)).size == (32, 32)
