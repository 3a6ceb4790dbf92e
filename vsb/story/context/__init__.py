"""The context a prompting condition gives a model besides the scene text, built from the
story's states: which facts each kind of context carries (``facts``), the state written as
JSON or as a paragraph (``memory``) and what a condition is (``condition``: the registry).

``vsb.conditions`` is the face: it registers the built-in conditions and re-exports what the
rest of vsb imports. Like the rest of the story layer, nothing here imports above it (the
placebo's partner story comes from ``vsb.generator.placebo``).
"""
