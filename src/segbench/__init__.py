"""segbench: build segmentation evaluation datasets end to end and evaluate models on them."""

__version__ = "0.1.0"
