"""Each dataset's logic, one subpackage per dataset: pure functions and metric code.

Nothing here imports Prefect, talks HTTP or reads settings: functions take explicit arguments and
return values, so they run the same in a flow, a test or a notebook. What several datasets share
lives in :mod:`segbench.core`; the Prefect flows that call these functions live in
:mod:`segbench.flows`. The layer rule is an import-linter contract (``pyproject.toml``).
"""
