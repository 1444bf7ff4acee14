"""SPIN's Prefect flows."""
