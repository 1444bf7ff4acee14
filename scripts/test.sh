#!/usr/bin/env bash
# Run the whole test suite. pytest's exit code 5 (no tests collected) is reported, not hidden.
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests (exit 5): check the selection" >&2
fi
exit "$status"
