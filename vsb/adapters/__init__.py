"""Model adapters: the provider-neutral interface, the registry, and the procedural simulators.

Nothing here may be imported by ``vsb.evaluators`` (the simulators have privileged access to
the stories and ``vsb.adapters.oracle`` writes the sealed fault file).
"""
