"""Bring your own narratives: ``vsb suite import`` (docs/IMPORT.md).

``sources`` reads narrative files, ``answer`` is what the LLM is asked and what it may
answer, ``build`` replays an extraction into a state-checked story, ``reader`` is the
careful reader of vsb's own sentence shapes (``--llm mock``, the round trip), and
``importer`` runs the extraction calls through the VLM judge's call machinery.
"""
