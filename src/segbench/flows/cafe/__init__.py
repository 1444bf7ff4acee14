"""CAFE's Prefect flows."""
