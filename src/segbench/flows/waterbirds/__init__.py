"""Waterbirds-seg's Prefect flows."""
