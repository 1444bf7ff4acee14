"""Thin Prefect flows, one package (or module) per dataset, plus what every dataset's flows share:
rounds, publishing, rebuilds, the demo, task runners and persisted units of work."""

from segbench.settings import ensure_prefect_home

ensure_prefect_home()  # before any flow module imports Prefect
