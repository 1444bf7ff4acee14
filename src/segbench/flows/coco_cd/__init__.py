"""COCO-CD's Prefect flows."""
