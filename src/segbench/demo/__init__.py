"""The demo worlds: generated sources for every dataset, simulated crowd workers and the baselines
the demo evaluates. Pure generators (no Prefect); :mod:`segbench.flows.demo` runs them."""
