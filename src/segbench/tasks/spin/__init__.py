"""SPIN: pure logic and metrics (see :mod:`segbench.tasks`)."""
