"""The story layer: typed models, scene text, requirements, loading and validation."""
