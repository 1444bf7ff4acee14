"""Data files shipped with segbench: category lists and the curated COCO-CD context lists."""
