"""CAFE in the demo: generated sources, simulated workers, baselines."""
