"""What vsb can measure, and what a release holds of it: the methodology page's inventory.

Every registered evaluator (``vsb.evaluators.registry``) and every statistic vsb computes
(``STATISTICS`` below) is one row: what it is, its parameters read from the code (or from
the release, when the release fixed them), whether the release holds it, and when it does not,
the one command that adds it. A test holds the page complete: an evaluator registered or a
statistic listed here without a row on the page fails it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vsb.evaluators.embed.signals import EmbedOptions
from vsb.site.data import SiteData

_EMB = EmbedOptions()

#: Signal definitions of the embedding evaluators, one sentence each.
SIGNAL_DEFINITIONS: dict[str, str] = {
    "clip_text": "cosine similarity of the CLIP embeddings of a frame and of its own scene text",
    "clip_rr": (
        "text-side ranking, vsb's own measure: 1 / the rank of the scene's own text among up "
        f"to {_EMB.pool_size} texts (the other scenes of its story, as hard negatives, and "
        "scenes of other stories) by CLIP similarity to the frame, a tie counting against the "
        "frame; its mean over frames is a text-retrieval MRR, not VinaBench's metric"
    ),
    "clip_image_rr": (
        "image-side ranking, VinaBench's CLIP-T-MRR: the frame among the "
        f"{_EMB.reference_pool} {_EMB.reference_model} renders nearest the scene's text (any "
        "story's), by CLIP similarity to that text, a tie going to the frame; 1 / (1 + renders "
        "strictly nearer); comparable with VinaBench only under --clip-model "
        "openai/clip-vit-large-patch14; absent when the run has no "
        f"{_EMB.reference_model} images"
    ),
    "dino_prev": "cosine similarity of the DINOv2 CLS embeddings of a frame and the previous one",
    "dino_first": "the same against scene 1 of the sequence (drift over the story)",
    "pairwise_global": "colour-histogram intersection of consecutive frames, whole image",
    "pairwise_band": "the same on the band where figures stand",
}


@dataclass(frozen=True)
class Statistic:
    """One statistic vsb computes: name, definition, parameters (from the code or release),
    whether a release holds it, and the command that adds it when it does not."""

    name: str
    what: str
    params: Callable[[SiteData], str]
    held: Callable[[SiteData], bool]
    command: str
    #: The report fields (``Model.field``) that hold it: every field of ScoresReport,
    #: JudgeReport, EvaluatorValidation and HumanReport that is a result, not metadata, is
    #: named by some statistic (a test holds it so).
    fields: tuple[str, ...] = ()


def _scores(d: SiteData) -> Any:
    return d.all_scores or d.scores


def _human(d: SiteData) -> bool:
    return (d.root / "human" / "report.json").is_file()


def _boot(d: SiteData) -> str:
    s = _scores(d)
    return f"{s.n_resamples:,} resamples, {round(s.confidence * 100)} % percentile intervals"


def _exclusion(_: SiteData) -> str:
    from vsb.human.report import MIN_CONTROL_ACCURACY, MIN_MEDIAN_TIME_S

    return (
        f"control accuracy below {MIN_CONTROL_ACCURACY:.0%}, or median item time under "
        f"{MIN_MEDIAN_TIME_S:g} s"
    )


def _likert(_: SiteData) -> str:
    from vsb.human.models import RATED_DIMENSIONS
    from vsb.human.report import LIKERT_SCALE

    lo, hi = int(LIKERT_SCALE[0]), int(LIKERT_SCALE[-1])
    return f"{len(RATED_DIMENSIONS)} dimensions, {lo}–{hi}: " + ", ".join(
        label.lower() for _, label, _ in RATED_DIMENSIONS
    )


def _stability(d: SiteData) -> str:
    from vsb.scores.compute import DEFAULT_DRAWS

    rs = _scores(d).rank_stability
    if rs:
        return f"{rs[0].n_draws:,} Dirichlet draws, α = {rs[0].alpha:g}"
    return f"{DEFAULT_DRAWS:,} Dirichlet draws by default"


def _embed_models(_: SiteData) -> str:
    from vsb.evaluators.embed.models import DEFAULT_MODELS

    return f"CLIP ViT-B/32 ({DEFAULT_MODELS['clip']}), DINOv2-small ({DEFAULT_MODELS['dino']})"


def _signal_held(*names: str) -> Callable[[SiteData], bool]:
    return lambda d: any(s.signal in names for s in _scores(d).signals)


def _judge(d: SiteData) -> bool:
    return d.judge is not None


def _dir(name: str) -> Callable[[SiteData], bool]:
    return lambda d: (d.root / name).is_dir()


def _file(name: str) -> Callable[[SiteData], bool]:
    return lambda d: (d.root / name).is_file()


def _fixed(text: str) -> Callable[[SiteData], str]:
    return lambda _: text


_BUILD_JUDGE = "vsb release build NAME --judge openai-compatible:MODEL"
_HUMAN = (
    "vsb human import RATINGS.json --release RELEASE --out RELEASE/human, then "
    "vsb release freeze RELEASE"
)
_EMBED = "python3 scripts/embed_release.py RUN (or vsb evaluate RUN --evaluator clip,dino)"

STATISTICS: tuple[Statistic, ...] = (
    Statistic("story-clustered bootstrap", "percentile intervals of every score, resampling "
              "stories", _boot, lambda d: True, "vsb score RUN",
              fields=("ScoresReport.scores", "ScoresReport.stories")),
    Statistic("rank range and ties", "each rank's range over the resamples; ≈ when the paired "
              "interval of the difference with the next model holds 0", _boot, lambda d: True,
              "vsb score RUN"),
    Statistic("paired comparisons", "paired story bootstrap of differences, P(Δ>0), win rate, "
              "minimum detectable difference at 80 % power", _boot,
              lambda d: bool(_scores(d).comparisons), "vsb compare RUN --a M@C --b M@C",
              fields=("ScoresReport.comparisons",)),
    Statistic("rank stability", "Kendall τ of the ranking under Dirichlet-perturbed dimension "
              "weights", _stability, lambda d: bool(_scores(d).rank_stability), "vsb score RUN",
              fields=("ScoresReport.rank_stability",)),
    Statistic("long-horizon view", "memory coherence by scene position, difficulty and story "
              "length", _boot, lambda d: bool(_scores(d).horizon), "vsb score RUN",
              fields=("ScoresReport.horizon",)),
    Statistic("memory gain and placebo", "structured_memory − independent and random_context − "
              "independent, paired by story; ablation losses per fact group", _boot,
              _dir("analysis"), "vsb analysis RUN (on a copy of the release)"),
    Statistic("prompt sensitivity", "plain − paraphrased suite, paired by story", _boot,
              _file("sensitivity/prompt_sensitivity.json"), "vsb release build NAME"),
    Statistic("implicit effects", "pass rate on inferred requirements, implicit − explicit "
              "text style, paired by story", _fixed("story-clustered percentile bootstrap"),
              _file("sensitivity/implicit_effects.json"), "vsb release build NAME"),
    Statistic("strict recall and precision", "per fault label against the sealed oracle: a "
              "detection counts for the same image, subject and label", _fixed("95 % Wilson "
              "intervals"), _judge, "vsb validate-judge RUN",
              fields=("EvaluatorValidation.taxonomy", "EvaluatorValidation.taxonomy_by_model",
                      "EvaluatorValidation.verdicts", "EvaluatorValidation.verdicts_by_model")),
    Statistic("AUROC", "of each continuous signal for 'this frame has an injected visual "
              "fault'", _fixed("per evaluator and signal"), _judge, "vsb validate-judge RUN",
              fields=("JudgeReport.auroc", "EvaluatorValidation.pass_rate")),
    Statistic("error rate against the oracle's truth", "share of a judge's verdicts that "
              "disagree with the requirement-level truth", _fixed("with a 95 % interval"),
              _judge, "vsb validate-judge RUN",
              fields=("EvaluatorValidation.agreement",)),
    Statistic("Spearman and Kendall correlations", "story-level, between each signal and "
              "oracle coherence", _fixed("per evaluator"), _judge, "vsb validate-judge RUN",
              fields=("JudgeReport.correlations", "EvaluatorValidation.coherence")),
    Statistic("judge swap", "Kendall τ between two evaluators' rankings and the model pairs "
              "whose order flips", _fixed("per condition"),
              lambda d: len(_scores(d).evaluators) > 1, _BUILD_JUDGE,
              fields=("ScoresReport.judge_swap",)),
    Statistic("scores corrected for the judge's error", "a judge's pass rates corrected for "
              "its sensitivity and specificity per label on the oracle frames (Rogan–Gladen); "
              "not correctable below sensitivity + specificity − 1 = 0.2", _fixed(
                  "joint bootstrap of stories and validation frames"),
              _file("scores/judge_error.json"), _BUILD_JUDGE),
    Statistic("false violations on true renders", "checks the rule checker fails on "
              "procedural-oracle's images (true renders); the release holds one jitter seed",
              _fixed("bench_robust.py --seeds 4 adds four jitter seeds and lossy "
                     "copies"),
              lambda d: "procedural-oracle" in d.models,
              "python3 benchmarks/bench_robust.py --seeds 4"),
    Statistic("Likert ratings", "blinded human ratings of each story's frames", _likert, _human,
              _HUMAN,
              fields=("HumanReport.model_means", "HumanReport.test_retest_abs_diff")),
    Statistic("rater exclusion", "raters dropped before any statistic", _exclusion, _human,
              _HUMAN,
              fields=("HumanReport.raters", "HumanReport.n_raters_kept")),
    Statistic("Krippendorff's α", "inter-rater agreement", _fixed("ordinal and interval"),
              _human, _HUMAN,
              fields=("HumanReport.alpha",)),
    Statistic("ICC", "intraclass correlation", _fixed("ICC(2,1) and ICC(2,k)"), _human, _HUMAN,
              fields=("HumanReport.icc",)),
    Statistic("mixed model", "REML fit of the ratings", _fixed(
        "rating ~ model + (1|story) + (1|rater)"), _human, _HUMAN,
              fields=("HumanReport.mixed_model",)),
    Statistic("Bradley–Terry", "model strengths from pairwise preferences, with win rates",
              _fixed("from the pairwise items"), _human, _HUMAN,
              fields=("HumanReport.preferences", "HumanReport.bradley_terry")),
    Statistic("evaluator–human agreement", "story-level correlations and Kendall τ of model "
              "rankings between each evaluator and the raters", _fixed("per evaluator"),
              _human, _HUMAN,
              fields=("HumanReport.agreement",)),
    Statistic("not applicable", "models an evaluator could not judge (its checks all "
              "not_applicable), and the evaluator to use instead", _fixed("per evaluator and "
              "model"), lambda d: True, "vsb score RUN", fields=("ScoresReport.not_applicable",)),
    Statistic("prompts cut by the text encoder", "per model and condition, how many prompts "
              "were longer than the model's text budget and cut (not encoded whole), from every "
              "request's record (prompt_length, prompt_budget, prompt_cut)", _fixed(
                  "counted with the model's own tokenizer or the provider's documented limit"),
              lambda d: bool(_scores(d).prompts), "vsb score RUN",
              fields=("ScoresReport.prompts",)),
    Statistic("clip_rr (MRR)", SIGNAL_DEFINITIONS["clip_rr"], _embed_models,
              _signal_held("clip_rr"), _EMBED,
              fields=("ScoresReport.signals",)),
    Statistic("clip_image_rr", SIGNAL_DEFINITIONS["clip_image_rr"], _embed_models,
              _signal_held("clip_image_rr"), _EMBED),
)  # fmt: skip


def _command(info: Any) -> str:
    if info.name in ("vlm", "vlm_xframe"):
        return f"vsb evaluate RUN --evaluator {info.name} --judge openai-compatible:MODEL"
    if info.name in ("clip", "dino"):
        return _EMBED
    return f"vsb evaluate RUN --evaluator {info.name}"


def evaluator_rows(data: SiteData, held: set[str]) -> list[tuple[str, str, str, str]]:
    """(name, what it is and reads, parameters, held or the command) per registered evaluator."""
    from vsb.evaluators.registry import evaluator_info, evaluator_names

    rows = []
    for name in evaluator_names():
        info = evaluator_info(name)
        what = f"{info.description or info.kind}; {info.kind}, reads {info.reads}" + (
            ", paid" if info.paid else ""
        )
        params = info.needs or "none beyond the run"
        if name in ("clip", "dino"):
            from vsb.evaluators.embed.models import DEFAULT_MODELS

            hub = DEFAULT_MODELS["clip"] if name == "clip" else DEFAULT_MODELS["dino"]
            arch = "CLIP ViT-B/32" if name == "clip" else "DINOv2-small"
            params = f"{arch} ({hub}); {params}"
        state = "yes" if name in held else f"no — {_command(info)}"
        rows.append((name, what, params, state))
    return rows


def statistic_rows(data: SiteData) -> list[tuple[str, str, str, str]]:
    """(name, definition, parameters, held or the command) per statistic."""
    return [
        (s.name, s.what, s.params(data), "yes" if s.held(data) else f"no — {s.command}")
        for s in STATISTICS
    ]
