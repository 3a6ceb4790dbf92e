"""Evaluators: the blind extractor and rule checker, pairwise consistency, and the registry."""
