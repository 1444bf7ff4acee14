"""The flip metrics that COCO-CD and Waterbirds-seg share: reading a split and predictions, metrics, report."""
