"""Real provider adapters (OpenAI, Replicate, Stability, Imagen) and stored samples.

Each module registers its models on import; ``vsb.adapters.registry`` imports this package.
Provider adapters are exercised only through ``httpx.MockTransport`` in this repository.
"""

# the simulators register first: model_names() lists them before the providers
from vsb.adapters import simulators  # noqa: F401
from vsb.adapters.providers import imagen, openai, replicate, stability, stored

__all__ = ["imagen", "openai", "replicate", "stability", "stored"]
