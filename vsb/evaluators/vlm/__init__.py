"""The VLM judge's internals; ``vsb.evaluators.vlm_judge`` is their face."""
