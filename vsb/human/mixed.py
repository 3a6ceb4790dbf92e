"""The mixed-effects model ``rating ~ model + (1|story) + (1|rater)`` with statsmodels.

Story and rater are crossed random intercepts: statsmodels' ``MixedLM`` takes them as
variance components of a single all-covering group (``vc_formula``), fitted by REML. The
response is a likert item's mean over the six dimensions; the model effect is treatment
coded against ``reference`` (each other model's estimate is its difference from it). With
more than one condition a condition term is added. Names go into the formula as codes
(``m0``, ``s0``…), so any model or story name is safe. Fit warnings (boundary, convergence)
are kept as notes, never raised.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vsb.human.results import MixedEffectRow


@dataclass(frozen=True)
class Observation:
    """One likert item: the mean rating and what it is nested in."""

    rating: float
    model: str
    story: str
    rater: str
    condition: str


@dataclass(frozen=True)
class MixedFit:
    """What the fit found (None: it could not be fitted; ``notes`` says why)."""

    reference: str
    intercept: float | None
    effects: list[MixedEffectRow]
    var_story: float | None
    var_rater: float | None
    var_residual: float | None
    n_obs: int
    n_stories: int
    n_raters: int
    converged: bool
    notes: list[str] = field(default_factory=list)


def _f(x: object) -> float | None:
    v = float(x)  # type: ignore[arg-type]
    return None if not np.isfinite(v) else v


def fit_mixed(
    obs: Sequence[Observation], reference: str | None = None, confidence: float = 0.95
) -> MixedFit:
    """Fit the model; needs ≥2 models, stories and raters (else an empty fit with a note)."""
    models = sorted({o.model for o in obs})
    stories = sorted({o.story for o in obs})
    raters = sorted({o.rater for o in obs})
    conds = sorted({o.condition for o in obs})
    ref = reference if reference in models else (models[0] if models else "")
    empty = MixedFit(ref, None, [], None, None, None, len(obs), len(stories), len(raters), False)
    if len(models) < 2 or len(stories) < 2 or len(raters) < 2 or len(obs) <= len(models) + 2:
        return _note(empty, "too few models, stories, raters or ratings to fit")
    import pandas as pd
    import statsmodels.formula.api as smf

    mcode = {m: f"m{i}" for i, m in enumerate([ref, *(m for m in models if m != ref)])}
    scode = {s: f"s{i}" for i, s in enumerate(stories)}
    rcode = {r: f"r{i}" for i, r in enumerate(raters)}
    ccode = {c: f"c{i}" for i, c in enumerate(conds)}
    df = pd.DataFrame(
        {
            "rating": [o.rating for o in obs],
            "model": [mcode[o.model] for o in obs],
            "story": [scode[o.story] for o in obs],
            "rater": [rcode[o.rater] for o in obs],
            "condition": [ccode[o.condition] for o in obs],
            "group": 1,
        }
    )
    formula = "rating ~ C(model, Treatment('m0'))" + (" + C(condition)" if len(conds) > 1 else "")
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            md = smf.mixedlm(
                formula, df, groups="group", re_formula="0",
                vc_formula={"story": "0 + C(story)", "rater": "0 + C(rater)"},
            )  # fmt: skip
            res = md.fit(reml=True)
        except (ValueError, np.linalg.LinAlgError) as err:
            return _note(empty, f"the fit failed: {err}")
    notes += sorted({str(w.message).splitlines()[0] for w in caught})
    ci = res.conf_int(alpha=1.0 - confidence)
    back = {v: k for k, v in mcode.items()}
    effects = []
    for name in res.fe_params.index:
        if not name.startswith("C(model"):
            continue
        code = name.rsplit("[T.", 1)[1].rstrip("]")
        effects.append(
            MixedEffectRow(
                model=back[code], estimate=float(res.fe_params[name]), se=_f(res.bse_fe[name]),
                ci_low=_f(ci.loc[name, 0]), ci_high=_f(ci.loc[name, 1]), p=_f(res.pvalues[name]),
            )
        )  # fmt: skip
    vc = dict(zip(md.exog_vc.names, np.asarray(res.vcomp, dtype=float), strict=True))
    return MixedFit(
        reference=ref,
        intercept=_f(res.fe_params["Intercept"]),
        effects=sorted(effects, key=lambda e: e.model),
        var_story=_f(vc.get("story", np.nan)),
        var_rater=_f(vc.get("rater", np.nan)),
        var_residual=_f(res.scale),
        n_obs=len(obs),
        n_stories=len(stories),
        n_raters=len(raters),
        converged=bool(res.converged),
        notes=notes,
    )


def _note(fit: MixedFit, note: str) -> MixedFit:
    return MixedFit(**{**fit.__dict__, "notes": [*fit.notes, note]})
