#!/usr/bin/env bash
# Install, start, stop and inspect the local Label Studio server segbench runs annotation rounds on.
# Run `scripts/label-studio.sh --help` for usage. Everything it writes stays under the project's
# work dir (default .segbench/label-studio); nothing goes to the user's home.
set -euo pipefail
# Physical path: the server compares storage folders with LOCAL_FILES_DOCUMENT_ROOT literally.
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
LS_VERSION=1.23.2
HEALTH_TIMEOUT=${SEGBENCH_LABEL_STUDIO_START_TIMEOUT:-120}

usage() {
  cat <<EOF
usage: scripts/label-studio.sh install|start|stop|status|env [--annotator NAME]|--help

  install   create the server's own virtualenv and pip install label-studio==$LS_VERSION
            (~1 min, ~1 GB; skipped when already there)
  start     start the server on 127.0.0.1 (SQLite) and wait until /health answers; a fresh data
            folder is copied from an initialised template, so it starts in seconds
  start --fresh
            test servers only (SEGBENCH_LABEL_STUDIO_TEST=1): unless one is already running, discard
            its data and files first, so the server starts on an empty database
  stop      stop the server (SIGTERM, SIGKILL after 20 s)
  stop --all
            stop the server and every annotator's server
  status    running / healthy, url, pid (exit 0 only when healthy)
  env       print export lines for SEGBENCH_LABEL_STUDIO_URL, _TOKEN, _FILES (for eval; segbench
            needs none of them for a server this script started: it reads connection.json)

  --annotator NAME
            the same command for one annotator's own server (NAME: lowercase letters, digits, - _),
            in <server folder>/annotators/NAME, on the first free port from
            SEGBENCH_LABEL_STUDIO_ANNOTATOR_PORT (default 8100), kept across restarts. A round
            launched with `segbench rounds launch KEY --annotator NAME ...` puts its tasks on each
            named annotator's server, where nobody else's answers exist to be seen. It shares the
            main server's admin account, template and files folder.

environment (paths relative to the project root):
  SEGBENCH_WORK_DIR                default .segbench
  SEGBENCH_LABEL_STUDIO_DIR        server folder (data, home, files, log, pid); default \$SEGBENCH_WORK_DIR/label-studio
  SEGBENCH_LABEL_STUDIO_VENV       server virtualenv; default \$SEGBENCH_WORK_DIR/label-studio/venv
  SEGBENCH_LABEL_STUDIO_PORT       default 8089
  SEGBENCH_LABEL_STUDIO_USER, SEGBENCH_LABEL_STUDIO_PASSWORD, SEGBENCH_LABEL_STUDIO_TOKEN
                                   admin account and its API token (exactly 40 characters); required
  SEGBENCH_LABEL_STUDIO_TEST=1     use the public test-only values of scripts/label-studio.test.env
  PYTHON                           interpreter for the virtualenv; default python3.11

Rounds copy the images they show into <server folder>/files, the only folder the server serves.
start records the server's URL, token and files folder in <server folder>/connection.json (0600);
segbench reads them from there unless SEGBENCH_LABEL_STUDIO_URL, _TOKEN or _FILES are set.
EOF
}

die() { echo "error: $*" >&2; exit 1; }

abspath() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }

load_config() {
  if [ "${SEGBENCH_LABEL_STUDIO_TEST:-}" = "1" ]; then
    # Test values win over the caller's, so a real token never ends up in a test server.
    set -a
    # shellcheck source=label-studio.test.env
    . "$ROOT/scripts/label-studio.test.env"
    set +a
  fi
  WORK_DIR=$(abspath "${SEGBENCH_WORK_DIR:-.segbench}")
  LS_DIR=$(abspath "${SEGBENCH_LABEL_STUDIO_DIR:-$WORK_DIR/label-studio}")
  VENV=$(abspath "${SEGBENCH_LABEL_STUDIO_VENV:-$WORK_DIR/label-studio/venv}")
  PORT=${SEGBENCH_LABEL_STUDIO_PORT:-8089}
  URL="http://127.0.0.1:$PORT"
  DATA_DIR=$LS_DIR/data
  TEMPLATE_DIR=$LS_DIR/template
  FILES_DIR=$LS_DIR/files
  LS_HOME=$LS_DIR/home
  LOG=$LS_DIR/server.log
  PID_FILE=$LS_DIR/server.pid
  CONNECTION=$LS_DIR/connection.json
  if [ -n "${ANNOTATOR:-}" ]; then
    # An annotator's server: its own data, home, log and port; the main server's template (the same
    # admin account) and files folder (the same images).
    LS_DIR=$LS_DIR/annotators/$ANNOTATOR
    DATA_DIR=$LS_DIR/data
    LS_HOME=$LS_DIR/home
    LOG=$LS_DIR/server.log
    PID_FILE=$LS_DIR/server.pid
    CONNECTION=$LS_DIR/connection.json
    PORT=$(annotator_port)
    URL="http://127.0.0.1:$PORT"
  fi
}

annotator_port() {
  # The port recorded at the server's first start, else the first port from the base that no other
  # annotator's server has recorded and nothing listens on.
  if [ -s "$LS_DIR/port" ]; then
    cat "$LS_DIR/port"
    return 0
  fi
  local taken port
  taken=$(cat "$(dirname "$LS_DIR")"/*/port 2>/dev/null | tr '\n' ' ' || true)
  port=${SEGBENCH_LABEL_STUDIO_ANNOTATOR_PORT:-8100}
  while case " $taken " in *" $port "*) true ;; *) false ;; esac || PORT=$port port_in_use; do
    port=$((port + 1))
  done
  echo "$port"
}

require_credentials() {
  local missing=()
  for var in SEGBENCH_LABEL_STUDIO_USER SEGBENCH_LABEL_STUDIO_PASSWORD SEGBENCH_LABEL_STUDIO_TOKEN; do
    [ -n "${!var:-}" ] || missing+=("$var")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    die "set ${missing[*]} (the server's admin account and its 40-character API token),
  or SEGBENCH_LABEL_STUDIO_TEST=1 for a throwaway test server"
  fi
  [ ${#SEGBENCH_LABEL_STUDIO_TOKEN} -eq 40 ] \
    || die "SEGBENCH_LABEL_STUDIO_TOKEN must be exactly 40 characters (it has ${#SEGBENCH_LABEL_STUDIO_TOKEN})"
}

installed() {
  [ -x "$VENV/bin/label-studio" ] || return 1
  # Read the installed version from package metadata: `label-studio version` would migrate a
  # database under $HOME and ask pypi.org for the latest release, and `--version` starts a server.
  [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("label-studio"))' 2>/dev/null)" \
    = "$LS_VERSION" ]
}

cmd_install() {
  if installed; then
    echo "label-studio $LS_VERSION already installed in $VENV"
    return 0
  fi
  local python=${PYTHON:-python3.11}
  command -v "$python" >/dev/null 2>&1 || die "$python not found (set PYTHON=/path/to/python3.11)"
  echo "Installing label-studio $LS_VERSION into $VENV (~1 min, ~1 GB)"
  # Its own virtualenv: the server pins python-json-logger and redis versions Prefect cannot use.
  [ -x "$VENV/bin/python" ] || "$python" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "label-studio==$LS_VERSION"
  installed || die "label-studio $LS_VERSION did not install correctly in $VENV"
  echo "label-studio $LS_VERSION installed in $VENV"
}

healthy() {
  "$VENV/bin/python" - "$URL/health" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=3) as response:
    sys.exit(0 if response.status == 200 else 1)
EOF
}

port_in_use() {
  python3 - "$PORT" <<'EOF' >/dev/null 2>&1
import socket, sys
with socket.socket() as s:
    sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)
EOF
}

running_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid=$(cat "$PID_FILE")
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  kill -0 "$pid" 2>/dev/null || return 1
  # A stale pid file may name a process that reused the number: only this server's is ours to signal.
  if [ -r "/proc/$pid/cmdline" ] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$VENV/bin/label-studio"; then
    echo "note: $PID_FILE names pid $pid, which is not this Label Studio server; ignoring it" >&2
    return 1
  fi
  echo "$pid"
}

export_server_env() {
  # Offline and self-contained: SQLite under the data folder ($1), HOME inside the server folder,
  # no telemetry, Sentry or version checks; only $FILES_DIR may be served as local files. The
  # account goes in LABEL_STUDIO_USERNAME/_PASSWORD/_USER_TOKEN (read like --username/--password/
  # --user-token) so the secrets never show in `ps`. Call it in a subshell.
  export LABEL_STUDIO_BASE_DATA_DIR="$1" HOME="$LS_HOME" \
    LABEL_STUDIO_USERNAME="$SEGBENCH_LABEL_STUDIO_USER" LABEL_STUDIO_PASSWORD="$SEGBENCH_LABEL_STUDIO_PASSWORD" \
    LABEL_STUDIO_USER_TOKEN="$SEGBENCH_LABEL_STUDIO_TOKEN" \
    LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true \
    LOCAL_FILES_SERVING_ENABLED=true LOCAL_FILES_DOCUMENT_ROOT="$FILES_DIR" \
    SENTRY_DSN= FRONTEND_SENTRY_DSN= LATEST_VERSION_CHECK=false COLLECT_ANALYTICS=false
}

# The legacy 40-character token is refused (401) unless the organisation is created with it enabled.
SERVER_FLAGS=(--no-browser --internal-host 127.0.0.1 --enable-legacy-api-token)

fingerprint() {
  # The template holds the admin account, so it is only reused for the same account and version.
  printf '%s\n' "$LS_VERSION" "$SEGBENCH_LABEL_STUDIO_USER" "$SEGBENCH_LABEL_STUDIO_PASSWORD" \
    "$SEGBENCH_LABEL_STUDIO_TOKEN" | sha256sum | cut -c1-16
}

prepare_data_dir() {
  local fp
  fp=$(fingerprint)
  if [ -f "$DATA_DIR/label_studio.sqlite3" ]; then
    # The server creates its admin account on the first start only and keeps it afterwards.
    [ "$(cat "$DATA_DIR/.segbench-fingerprint" 2>/dev/null)" = "$fp" ] \
      || echo "warning: $DATA_DIR was created with another account or token; the server keeps the first one" >&2
    return 0
  fi
  if [ "$(cat "$TEMPLATE_DIR/.segbench-fingerprint" 2>/dev/null)" != "$fp" ]; then
    # Migrating a new database takes 30-40 s; do it once into a template and copy that after.
    echo "Initialising a template database (once, ~35 s)"
    rm -rf "$TEMPLATE_DIR" "$TEMPLATE_DIR.tmp"
    mkdir -p "$TEMPLATE_DIR.tmp"
    if ! (export_server_env "$TEMPLATE_DIR.tmp"
          "$VENV/bin/label-studio" init "${SERVER_FLAGS[@]}" --port "$PORT") >>"$LOG" 2>&1; then
      tail -n 40 "$LOG" >&2
      die "label-studio init failed (log: $LOG)"
    fi
    echo "$fp" >"$TEMPLATE_DIR.tmp/.segbench-fingerprint"
    mv "$TEMPLATE_DIR.tmp" "$TEMPLATE_DIR"
  fi
  rm -rf "$DATA_DIR"
  cp -a "$TEMPLATE_DIR" "$DATA_DIR"
  # The server keeps a generated SECRET_KEY in .env; each data folder gets its own.
  rm -f "$DATA_DIR/.env"
}

write_connection() {
  # Where segbench finds this server (settings.py reads it unless the URL, token or files folder are
  # set explicitly). The token is passed through the environment, never argv; the file is 0600.
  SEGBENCH_LS_TOKEN="$SEGBENCH_LABEL_STUDIO_TOKEN" "$VENV/bin/python" - "$URL" "$FILES_DIR" "$CONNECTION" <<'EOF'
import json, os, sys
url, files, path = sys.argv[1:]
fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "w") as out:
    json.dump({"url": url, "token": os.environ["SEGBENCH_LS_TOKEN"], "files": files}, out, indent=1)
os.replace(path + ".tmp", path)
EOF
}

cmd_start() {
  local fresh=${1:-}
  require_credentials
  installed || die "label-studio is not installed in $VENV; run: scripts/label-studio.sh install"
  if healthy; then
    write_connection
    echo "Label Studio already running and healthy at $URL"
    return 0
  fi
  if pid=$(running_pid); then
    die "a server (pid $pid) is running but $URL/health does not answer; run: scripts/label-studio.sh stop"
  fi
  # Label Studio silently moves to another port when its port is taken; refuse instead.
  port_in_use && die "port $PORT is taken by another program (set SEGBENCH_LABEL_STUDIO_PORT)"
  if [ -n "$fresh" ]; then
    # Never on a real server: its data folder holds people's annotations.
    [ "${SEGBENCH_LABEL_STUDIO_TEST:-}" = "1" ] || die "start --fresh is for test servers (SEGBENCH_LABEL_STUDIO_TEST=1)"
    rm -rf "$DATA_DIR"
    # An annotator's server shares the main server's files folder.
    [ -n "${ANNOTATOR:-}" ] || rm -rf "$FILES_DIR"
  fi
  mkdir -p "$LS_DIR" "$FILES_DIR" "$LS_HOME"
  [ -z "${ANNOTATOR:-}" ] || echo "$PORT" >"$LS_DIR/port"
  : >"$LOG"
  local t0 pid
  prepare_data_dir
  t0=$SECONDS
  rm -f "$PID_FILE"
  # setsid: the server leads its own process group, so stop can signal it and any children at
  # once. setsid may fork, so the shell it runs writes its own pid and then becomes the server.
  (
    export_server_env "$DATA_DIR"
    # shellcheck disable=SC2016
    exec setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$PID_FILE" \
      "$VENV/bin/label-studio" start "${SERVER_FLAGS[@]}" --port "$PORT"
  ) >>"$LOG" 2>&1 </dev/null &
  for _ in $(seq 1 50); do [ -s "$PID_FILE" ] && break; sleep 0.1; done
  pid=$(cat "$PID_FILE" 2>/dev/null) || die "the server did not start (log: $LOG)"
  while ! healthy; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$LOG" >&2
      rm -f "$PID_FILE"
      die "the server exited before answering $URL/health (log: $LOG)"
    fi
    if [ $((SECONDS - t0)) -ge "$HEALTH_TIMEOUT" ]; then
      tail -n 40 "$LOG" >&2
      die "no answer from $URL/health after ${HEALTH_TIMEOUT}s (server pid $pid still running; log: $LOG)"
    fi
    sleep 1
  done
  write_connection
  echo "Label Studio $LS_VERSION healthy at $URL (pid $pid, ready in $((SECONDS - t0)) s, log $LOG)"
}

cmd_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PID_FILE"
    echo "Label Studio is not running (no live pid in $PID_FILE)"
    return 0
  fi
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "server did not exit after 20 s; sending SIGKILL" >&2
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
  echo "Label Studio stopped (pid $pid)"
}

cmd_status() {
  local pid
  pid=$(running_pid) || pid=
  if [ -n "$pid" ] && installed && healthy; then
    echo "Label Studio running and healthy at $URL (pid $pid)"
  elif [ -n "$pid" ]; then
    echo "Label Studio running but not healthy at $URL (pid $pid; log $LOG)"
    return 1
  else
    echo "Label Studio not running (url $URL; start it with scripts/label-studio.sh start)"
    return 3
  fi
}

cmd_env() {
  require_credentials
  printf 'export SEGBENCH_LABEL_STUDIO_URL=%q\nexport SEGBENCH_LABEL_STUDIO_TOKEN=%q\nexport SEGBENCH_LABEL_STUDIO_FILES=%q\n' \
    "$URL" "$SEGBENCH_LABEL_STUDIO_TOKEN" "$FILES_DIR"
}

cmd_stop_all() {
  cmd_stop
  local folder
  for folder in "$LS_DIR"/annotators/*/; do
    [ -d "$folder" ] || continue
    (ANNOTATOR=$(basename "$folder"); load_config; cmd_stop)
  done
}

COMMAND=${1:-}
[ $# -eq 0 ] || shift
ANNOTATOR=
FRESH=
ALL=
while [ $# -gt 0 ]; do
  case "$1" in
    --annotator)
      [ $# -ge 2 ] || die "--annotator needs a name (see --help)"
      ANNOTATOR=$2
      [[ "$ANNOTATOR" =~ ^[a-z0-9][a-z0-9_-]{0,31}$ ]] \
        || die "annotator name '$ANNOTATOR' must be lowercase letters, digits, - or _ (at most 32)"
      shift 2 ;;
    --fresh) [ "$COMMAND" = start ] || die "--fresh goes with start (see --help)"; FRESH=--fresh; shift ;;
    --all) [ "$COMMAND" = stop ] || die "--all goes with stop (see --help)"; ALL=1; shift ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -z "$ALL" ] || [ -z "$ANNOTATOR" ] || die "stop --all stops every server; leave out --annotator"

case "$COMMAND" in
  -h | --help | help) usage ;;
  install) load_config; cmd_install ;;
  start) load_config; cmd_start "$FRESH" ;;
  stop) load_config; if [ -n "$ALL" ]; then cmd_stop_all; else cmd_stop; fi ;;
  status) load_config; cmd_status ;;
  env) load_config; cmd_env ;;
  *) usage >&2; exit 2 ;;
esac
