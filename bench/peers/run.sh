#!/usr/bin/env bash
# Graph-execution overhead benchmark: installs the peers, runs every workload
# for every peer REPS times (one fresh process per peer x workload x rep, under
# /usr/bin/time -v for peak RSS), and prints the medians as
#     peer workload metric value unit
#
# Usage:
#   ./run.sh                    # install + all workloads, REPS=3
#   REPS=5 ./run.sh             # more repetitions
#   ./run.sh W1 W3              # only some workloads
#   SKIP_INSTALL=1 ./run.sh     # reuse node_modules / the built Go binary
#
# Adding a peer (e.g. a new Go StateGraph SDK): build a command that takes the
# workload name as its only argument and prints `peer workload metric value
# unit` lines (see RESULTS.md, "Harness contract"), then
#   EXTRA_PEERS='gosdk|/abs/dir|./gosdk-bench|' ./run.sh
# Format: name|workdir|command|extra-workloads  (several separated by ';').
# Workloads a peer cannot express: exit with status 3 (recorded as N/A).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"

REPS="${REPS:-3}"
if [ "$#" -gt 0 ]; then WORKLOADS="$*"; else WORKLOADS="${WORKLOADS:-W1 W2 W3 W4 W5}"; fi
OUT="${OUT:-$HERE/results/$(date +%Y%m%d-%H%M%S)}"
TIME_BIN="${TIME_BIN:-/usr/bin/time}"

# The Eino harness is a module of its own (eino/go.mod), never part of a
# go.work of the repository around it.
export GOWORK=off

# Never let a caller's environment turn LangSmith tracing on (network I/O).
unset LANGCHAIN_TRACING_V2 LANGCHAIN_TRACING LANGSMITH_TRACING LANGSMITH_TRACING_V2 || true

log() { echo "[run.sh] $*" >&2; }

[ -x "$TIME_BIN" ] || { log "need GNU time at $TIME_BIN (apt-get install time)"; exit 1; }
command -v node >/dev/null || { log "need node (>= 20)"; exit 1; }
command -v go >/dev/null || { log "need go"; exit 1; }

# ------------------------------------------------------------------ install
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  log "installing LangGraph.js deps"
  (
    cd langgraphjs
    if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
  ) >&2
  log "downloading Go modules and building the Eino harness"
  (
    cd eino
    go mod download
    go build -trimpath -o eino-bench .
  ) >&2
fi

# ------------------------------------------------------------------ peers
# name|workdir|command|extra workloads run only for this peer
PEERS=(
  "langgraphjs|$HERE/langgraphjs|node bench.mjs|"
  "eino|$HERE/eino|./eino-bench|W1-localstate W3-dag W5-resume"
)
if [ -n "${EXTRA_PEERS:-}" ]; then
  IFS=';' read -r -a extra <<<"$EXTRA_PEERS"
  PEERS+=("${extra[@]}")
fi

mkdir -p "$OUT"
RAW="$OUT/raw.txt"
: >"$RAW"

# ------------------------------------------------------------------ versions
{
  echo "# date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# host $(uname -srm); cpus $(nproc); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
  echo "# node $(node --version); go $(go env GOVERSION)"
  for p in @langchain/langgraph @langchain/core @langchain/langgraph-checkpoint langsmith; do
    v=$(cd langgraphjs && node -p "require('./node_modules/$p/package.json').version" 2>/dev/null || echo '?')
    echo "# npm $p $v"
  done
  (cd eino && go list -m -f '# go-module {{.Path}} {{.Version}}' github.com/cloudwego/eino github.com/bytedance/sonic) || true
} | tee "$OUT/versions.txt" >&2

# ------------------------------------------------------------------ run
failures=0
run_one() { # rep name dir cmd workload
  local rep=$1 name=$2 dir=$3 cmd=$4 w=$5
  local base="$OUT/$name.$w.$rep"
  local rc=0
  (cd "$dir" && exec "$TIME_BIN" -v -o "$base.time" $cmd "$w") >"$base.out" 2>"$base.err" || rc=$?
  if [ "$rc" = 3 ]; then
    echo "$rep $name $w na 0 -" >>"$RAW"
    log "rep $rep $name $w: N/A"
    return
  fi
  if [ "$rc" != 0 ]; then
    failures=$((failures + 1))
    log "rep $rep $name $w: FAILED (rc=$rc), see $base.err"
    tail -5 "$base.err" >&2 || true
    return
  fi
  # harness lines are `peer workload metric value unit`; prefix the rep
  awk -v rep="$rep" 'NF == 5 { print rep, $0 }' "$base.out" >>"$RAW"
  local rss wall usr sys
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$base.time")
  usr=$(awk -F': ' '/User time \(seconds\)/ { print $2 }' "$base.time")
  sys=$(awk -F': ' '/System time \(seconds\)/ { print $2 }' "$base.time")
  echo "$rep $name $w peak_rss $(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }') MiB" >>"$RAW"
  echo "$rep $name $w process_cpu $(awk -v u="$usr" -v s="$sys" 'BEGIN { printf "%.2f", u + s }') s" >>"$RAW"
  log "rep $rep $name $w: $(tr '\n' ';' <"$base.out") rss=${rss}KiB load=$(cut -d' ' -f1 /proc/loadavg)"
}

log "load average before: $(cat /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
  # Alternate peer order between reps so neither peer always runs first.
  order=("${PEERS[@]}")
  if [ $((rep % 2)) = 0 ]; then
    order=()
    for ((i = ${#PEERS[@]} - 1; i >= 0; i--)); do order+=("${PEERS[$i]}"); done
  fi
  for w in $WORKLOADS; do
    for spec in "${order[@]}"; do
      IFS='|' read -r name dir cmd extras <<<"$spec"
      run_one "$rep" "$name" "$dir" "$cmd" "$w"
      # peer-specific variants run right after the base workload
      for x in $extras; do
        case "$x" in "$w"-*) run_one "$rep" "$name" "$dir" "$cmd" "$x" ;; esac
      done
    done
  done
done
log "load average after: $(cat /proc/loadavg)"

# ------------------------------------------------------------------ summary
node "$HERE/summarize.mjs" "$RAW" --markdown "$OUT/summary.md" | tee "$OUT/summary.txt"
log "raw: $RAW; table: $OUT/summary.md"
if [ "$failures" != 0 ]; then
  log "$failures run(s) failed"
  exit 1
fi
