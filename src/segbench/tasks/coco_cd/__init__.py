"""COCO-CD: pure logic and metrics (see :mod:`segbench.tasks`)."""
