"""The story generator: ten category templates and the default suite."""
