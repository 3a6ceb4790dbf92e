"""vsb's test suite: a regular package, so that no installed distribution's top-level
``tests`` package (torch-fidelity 0.4.0 ships one) shadows ``from tests.… import``."""
