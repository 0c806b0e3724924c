#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests.
#
#   eval "$(scripts/pg-test.sh)"          # start; exports AGENTGRAPH_TEST_POSTGRES_URL and AGENTGRAPH_PG_DIR
#   trap 'scripts/pg-test.sh stop' EXIT   # stop it and delete its files when the caller exits
#   go test ./checkpoint/...
#
#   scripts/pg-test.sh start   same as no argument
#   scripts/pg-test.sh stop [DIR]
#                              stop the cluster in DIR (default $AGENTGRAPH_PG_DIR) and delete DIR
#
# The cluster lives in a new temporary directory, listens only on 127.0.0.1
# on a free port, keeps its unix socket in that directory, trusts local
# connections and runs with fsync off: it is for tests only. Progress goes to
# stderr; stdout carries only the export lines.
#
# Environment:
#   PGBIN            server binaries (default: newest /usr/lib/postgresql/*/bin)
#   PG_TEST_RUN_AS   unprivileged user the server runs as when this script runs
#                    as root (default: postgres, created if missing)
#   PG_TEST_DB       database to create (default: agentgraph_test)
#   PG_TEST_INSTALL  if set to 1 and running as root, apt-get install postgresql
#                    when it is missing (for CI images)
set -euo pipefail

log() { echo "pg-test: $*" >&2; }
die() { log "$*"; exit 1; }

find_bin() {
  if [ -n "${PGBIN:-}" ]; then echo "$PGBIN"; return; fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1
}

PGBIN=$(find_bin || true)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  if [ "$(id -u)" = 0 ] && [ "${PG_TEST_INSTALL:-}" = 1 ]; then
    log "installing postgresql with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
    PGBIN=$(find_bin || true)
  fi
  [ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] ||
    die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin; install the postgresql package (or set PG_TEST_INSTALL=1 as root in CI)"
fi

# initdb and postgres refuse to run as root: run them as an unprivileged user.
RUN=()
RUN_AS=""
if [ "$(id -u)" = 0 ]; then
  RUN_AS=${PG_TEST_RUN_AS:-postgres}
  if ! id -u "$RUN_AS" >/dev/null 2>&1; then
    log "creating user $RUN_AS"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_AS"
  fi
  RUN=(runuser -u "$RUN_AS" --)
fi

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local dir port db url
  dir=$(mktemp -d "${TMPDIR:-/tmp}/agentgraph-pg.XXXXXX")
  chmod 700 "$dir"
  [ -n "$RUN_AS" ] && chown "$RUN_AS" "$dir"
  db=${PG_TEST_DB:-agentgraph_test}

  log "initdb in $dir/data ($PGBIN)"
  "${RUN[@]}" "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust \
    --encoding=UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }

  local started=""
  for _ in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    port_free "$port" || continue
    if "${RUN[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 start \
      -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      >/dev/null 2>&1; then
      started=1
      break
    fi
    log "could not start on port $port, trying another"
  done
  [ -n "$started" ] || { tail -n 30 "$dir/postgres.log" >&2; rm -rf "$dir"; die "server did not start"; }

  for _ in $(seq 1 50); do
    "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" -t 1 && break
    sleep 0.1
  done
  "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" -t 5 || die "server on port $port is not ready"
  "$PGBIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"

  url="postgres://postgres@127.0.0.1:$port/$db?sslmode=disable"
  log "ready: $url (stop with: scripts/pg-test.sh stop $dir)"
  printf "export AGENTGRAPH_TEST_POSTGRES_URL='%s'\n" "$url"
  printf "export AGENTGRAPH_PG_DIR='%s'\n" "$dir"
}

stop() {
  local dir=${1:-${AGENTGRAPH_PG_DIR:-}}
  [ -n "$dir" ] || die "stop: no directory given and AGENTGRAPH_PG_DIR is not set"
  case "$dir" in
    */agentgraph-pg.*) ;;
    *) die "stop: $dir is not a directory made by this script" ;;
  esac
  if [ -s "$dir/data/PG_VERSION" ] && "${RUN[@]}" "$PGBIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    "${RUN[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null
    log "stopped $dir"
  fi
  rm -rf "$dir"
}

case "${1:-start}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) die "usage: $0 [start] | stop [DIR]" ;;
esac
