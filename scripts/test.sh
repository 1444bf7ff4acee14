#!/usr/bin/env bash
# Run the whole test suite, Label Studio tests included: ruff and the layer contracts first, then
# the unit tests once in a random order (pytest-randomly prints the seed; rerun an order with
# -p randomly --randomly-seed=N), then every other test, each file on one pytest-xdist worker
# (SEGBENCH_TEST_WORKERS, default 3: the integration tests mostly wait on servers and processes, so
# three workers keep two cores busy). Arguments replace that plan with one pytest run of their own
# (e.g. scripts/test.sh tests/core -x).
#
# A throwaway Label Studio server is installed if needed and started with the public test-only
# values of scripts/label-studio.test.env (its own port and folder, so a user's server is left
# alone) on a fresh database, and stopped again however pytest ends. pytest's exit code is kept;
# exit 5 (no tests collected) is reported, not hidden. SEGBENCH_TEST_LABEL_STUDIO=0 runs without
# the server (its tests then skip, or fail when CI is set). The small local language model of
# scripts/local-llm.sh is installed and served the same way (SEGBENCH_TEST_LOCAL_MODEL=0: without it),
# and FiftyOne for `segbench view` is installed in its own environment (SEGBENCH_TEST_FIFTYONE=0: without it).
set -uo pipefail
cd "$(dirname "$0")/.."

test_server() { SEGBENCH_LABEL_STUDIO_TEST=1 bash scripts/label-studio.sh "$@"; }

pytest_run() {
  .venv/bin/python -m pytest "$@"
  local status=$?
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests (exit 5): check the selection" >&2
  fi
  return "$status"
}

.venv/bin/ruff check src tests bench || exit 1
# Type checking of src/segbench with the pydantic plugin ([tool.mypy] in pyproject.toml).
.venv/bin/mypy || exit 1
# The layer contracts of pyproject.toml ([tool.importlinter]): a broken one fails the run.
.venv/bin/lint-imports || exit 1

stop_servers() {
  if [ "${SEGBENCH_TEST_LABEL_STUDIO:-1}" != "0" ]; then
    test_server stop --all >/dev/null || echo "warning: could not stop the Label Studio test servers" >&2
  fi
  if [ "${SEGBENCH_TEST_LOCAL_MODEL:-1}" != "0" ]; then
    bash scripts/local-llm.sh stop >/dev/null || echo "warning: could not stop the local model server" >&2
  fi
}
trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "${SEGBENCH_TEST_LABEL_STUDIO:-1}" != "0" ]; then
  test_server install || exit 1
  test_server start --fresh || exit 1
  # SEGBENCH_LABEL_STUDIO_URL, _TOKEN and _FILES for the tests' label_studio fixture.
  eval "$(test_server env)" || exit 1
fi

# The real small model the localmodel tests run the language stages on (one thread, port 8093).
if [ "${SEGBENCH_TEST_LOCAL_MODEL:-1}" != "0" ]; then
  bash scripts/local-llm.sh install || exit 1
  bash scripts/local-llm.sh start || exit 1
  # The server's URL and request log for the tests' local_model fixture.
  eval "$(bash scripts/local-llm.sh env --test)" || exit 1
fi

# FiftyOne in its own environment, for the tests of `segbench view` (their fiftyone_dir fixture).
if [ "${SEGBENCH_TEST_FIFTYONE:-1}" != "0" ]; then
  bash scripts/fiftyone.sh install || exit 1
  export SEGBENCH_TEST_FIFTYONE_DIR="${SEGBENCH_FIFTYONE_DIR:-${SEGBENCH_WORK_DIR:-.segbench}/fiftyone}"
fi

# The tests' folders peak near 1.5 GB (a passing test's folder is removed when it ends): say so
# up front when the disk is short, rather than fail halfway with "No space left on device".
free_mb=$(df -Pm "${TMPDIR:-/tmp}" | awk 'NR == 2 { print $4 }')
if [ "${free_mb:-0}" -lt 2048 ]; then
  echo "warning: ${free_mb:-?} MB free under ${TMPDIR:-/tmp}; the tests need about 1.5 GB there" >&2
fi

if [ "$#" -gt 0 ]; then
  pytest_run "$@"
  exit $?
fi
pytest_run -m unit -p randomly -n 2
unit=$?
pytest_run -m "not unit" -p no:randomly -n "${SEGBENCH_TEST_WORKERS:-3}" --dist loadfile
rest=$?
[ "$unit" -eq 0 ] && [ "$rest" -eq 0 ]
