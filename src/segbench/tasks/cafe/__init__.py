"""CAFE: pure logic and metrics (see :mod:`segbench.tasks`)."""
