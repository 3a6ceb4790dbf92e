"""Real provider adapters (OpenAI, Replicate, Stability, Imagen) and stored samples.

``vsb.adapters.registry`` names their models by import path and imports a module only when
one of its models is asked for. Provider adapters are exercised only through
``httpx.MockTransport`` (and loopback servers) in this repository.
"""
