"""Thin Prefect flows, one package (or module) per dataset, plus what every dataset's flows share:
rounds, publishing, rebuilds, the demo, task runners and persisted units of work."""
