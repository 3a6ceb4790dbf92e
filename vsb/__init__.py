"""vsb: the Visual Story Benchmark."""

__version__ = "0.1.0"
