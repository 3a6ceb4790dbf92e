"""Constants of the human-evaluation test fixtures (importable by the tests, unlike conftest)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "site"))
from site_synth import HOSTILE_MODEL

from vsb.human.models import CONTROL_BAD, CONTROL_GOOD

#: Both control simulators and a model named with markup.
MODELS = (CONTROL_GOOD, CONTROL_BAD, HOSTILE_MODEL)
N_RATERS = 16
SEED = 3
