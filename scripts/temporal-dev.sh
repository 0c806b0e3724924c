#!/usr/bin/env bash
# Throwaway Temporal dev server for the integration tests of temporal/.
#
#   eval "$(scripts/temporal-dev.sh)"           # start; exports AGENTGRAPH_TEMPORAL_ADDR and AGENTGRAPH_TEMPORAL_DIR
#   trap 'scripts/temporal-dev.sh stop' EXIT    # stop it and delete its files when the caller exits
#   go test -race ./temporal/...
#
#   scripts/temporal-dev.sh start     same as no argument
#   scripts/temporal-dev.sh install   only install the CLI when it is missing
#   scripts/temporal-dev.sh stop [DIR]
#                                     stop the server of DIR (default $AGENTGRAPH_TEMPORAL_DIR) and delete DIR
#
# The server is `temporal server start-dev`: in memory, headless, listening on
# 127.0.0.1 only, on free ports, with eager activity execution on (an activity
# round trip takes about 50 ms instead of 100 ms on this server). The CLI is found as $TEMPORAL_CLI, on PATH or
# in $(go env GOPATH)/bin; when missing it is built with
# `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` (about 4 to 9
# minutes cold), once: later runs reuse the binary. Progress goes to stderr;
# stdout carries only the export lines.
set -euo pipefail

CLI_VERSION=v1.5.1

log() { echo "temporal-dev: $*" >&2; }
die() { log "$*"; exit 1; }

find_cli() {
  if [ -n "${TEMPORAL_CLI:-}" ] && [ -x "$TEMPORAL_CLI" ]; then echo "$TEMPORAL_CLI"; return 0; fi
  if command -v temporal >/dev/null 2>&1; then command -v temporal; return 0; fi
  local gobin
  gobin="$(go env GOBIN 2>/dev/null || true)"
  [ -n "$gobin" ] || gobin="$(go env GOPATH 2>/dev/null)/bin"
  if [ -x "$gobin/temporal" ]; then echo "$gobin/temporal"; return 0; fi
  return 1
}

install() {
  local cli
  if cli=$(find_cli); then echo "$cli"; return; fi
  log "building the Temporal CLI $CLI_VERSION (go install; several minutes the first time)"
  (cd "${TMPDIR:-/tmp}" && GOWORK=off GOFLAGS= go install "github.com/temporalio/cli/cmd/temporal@$CLI_VERSION") >&2 ||
    die "go install github.com/temporalio/cli/cmd/temporal@$CLI_VERSION failed"
  find_cli || die "the CLI was built but is not on PATH nor in GOBIN"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 40000))
    port_free "$p" && { echo "$p"; return; }
  done
  die "no free port found"
}

start() {
  local cli dir port http metrics pid
  cli=$(install)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/agentgraph-temporal.XXXXXX")
  for attempt in 1 2 3; do
    port=$(free_port); http=$(free_port); metrics=$(free_port)
    "$cli" server start-dev --ip 127.0.0.1 --port "$port" --http-port "$http" --metrics-port "$metrics" \
      --dynamic-config-value system.enableActivityEagerExecution=true \
      --headless --log-level warn >"$dir/server.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/pid"
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      if "$cli" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1; then
        log "ready on 127.0.0.1:$port (stop with: scripts/temporal-dev.sh stop $dir)"
        printf "export AGENTGRAPH_TEMPORAL_ADDR='127.0.0.1:%s'\n" "$port"
        printf "export AGENTGRAPH_TEMPORAL_DIR='%s'\n" "$dir"
        return
      fi
      sleep 0.2
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    log "the server did not come up on port $port (attempt $attempt)"
  done
  tail -n 30 "$dir/server.log" >&2
  rm -rf "$dir"
  die "server did not start"
}

stop() {
  local dir=${1:-${AGENTGRAPH_TEMPORAL_DIR:-}}
  [ -n "$dir" ] || die "stop: no directory given and AGENTGRAPH_TEMPORAL_DIR is not set"
  case "$dir" in
    */agentgraph-temporal.*) ;;
    *) die "stop: $dir is not a directory made by this script" ;;
  esac
  if [ -s "$dir/pid" ]; then
    local pid
    pid=$(cat "$dir/pid")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      log "stopped $dir"
    fi
  fi
  rm -rf "$dir"
}

case "${1:-start}" in
  start) start ;;
  install) install >/dev/null ;;
  stop) stop "${2:-}" ;;
  *) die "usage: $0 [start] | install | stop [DIR]" ;;
esac
