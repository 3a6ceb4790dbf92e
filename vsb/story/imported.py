"""What an imported story (``vsb suite import``) adds to the story model.

The state machine tracks render-vocabulary values only; a value the narrative does not give
("unknown") or gives outside the vocabulary (free text) is held by a placeholder in the
world. A ``Substitution`` says how a requirement derived from a placeholder departs from the
derivation: withheld (``value`` null) or replaced by the free text, judged by a VLM only; a
substitution with no derived requirement adds one (an entity outside the vocabulary seen in
that scene). ``vsb.story.requirements.apply_substitutions`` applies them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from vsb.fsio import STRICT


class Substitution(BaseModel):
    """One requirement of an imported story that rests on a placeholder, or an entity."""

    model_config = STRICT
    scene: int = Field(ge=1, description="1-based scene number.")
    subject: str = Field(description="Character name, object kind, entity or 'scene'.")
    attribute: str = Field(description="The requirement's attribute (top, present, location…).")
    value: bool | int | str | list[str] | None = Field(
        description="Free text judged by a VLM only, or null: withheld (the text does not say)."
    )


class ImportInfo(BaseModel):
    """Where an imported story came from and what of it is outside the render vocabulary."""

    model_config = STRICT
    source: str = Field(description="The narrative file and the story's place in it.")
    llm: str = Field(description="The model that extracted the story's state.")
    substitutions: list[Substitution] = Field(default_factory=list)
    sources: dict[str, Literal["prompt", "memory"]] = Field(
        default_factory=dict,
        description="Gold annotations only: requirement id -> source (prompt: the scene text "
        "states the fact; memory: it does not). Left out when empty.",
        exclude_if=lambda v: not v,
    )
