#!/usr/bin/env bash
# The bench's overhead and pool sections on Temporal with PostgreSQL, to sit
# beside the embedded server's (SQLite in memory) in BENCHMARKS.md:
#
#   bench/postgres.sh overhead pool                        # both sections
#   bench/postgres.sh cost                                 # CPU, statements, events and S3 requests per chunk
#   bench/postgres.sh overhead -- -overhead-tokens 50000   # bench flags after --
#
# deploy/bare/run.sh --temporal starts PostgreSQL and temporal-server as
# docker-compose.yml runs them (schemas by the schema job, the namespace and
# memagent's search attributes by the setup job, the dynamic config
# operators run, deploy/temporal/dynamicconfig.yaml) on free loopback
# ports; the bench then runs each section against that server (-temporal),
# with S3, the simulator and the workers in its own process as usual, and
# run.sh stops everything. Each section's markdown, under its own report
# header naming the server and its settings, goes to stdout; progress and
# logs go to stderr. PostgreSQL runs with pg_stat_statements loaded, so
# that the cost section counts the statements the server runs; the cost
# section reads the server's and the postmaster's CPU from /proc by the
# process ids run.sh gives it. The first run builds Temporal's server (minutes; kept,
# see run.sh). The pool section takes about 18 minutes on 2 cores.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

sections=() flags=()
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; flags=("$@"); break ;;
    overhead | pool | cost) sections+=("$1"); shift ;;
    *) echo "usage: $0 overhead|pool|cost... [-- BENCH FLAGS...]" >&2; exit 2 ;;
  esac
done
[ ${#sections[@]} -gt 0 ] || { echo "usage: $0 overhead|pool|cost... [-- BENCH FLAGS...]" >&2; exit 2; }

log() { printf '%s postgres-bench: %s\n' "$(date +%T)" "$*" >&2; }

if [ -n "${MEMAGENT_PG_BENCH_BIN:-}" ]; then
  # Inside run.sh --temporal: the server is up.
  : "${MEMAGENT_BARE_TEMPORAL:?run by deploy/bare/run.sh --temporal}"
  for s in "${sections[@]}"; do
    began=$SECONDS
    log "section $s on Temporal at $MEMAGENT_BARE_TEMPORAL ($MEMAGENT_BARE_POSTGRES)"
    "$MEMAGENT_PG_BENCH_BIN" -only "$s" -out '' \
      -temporal "$MEMAGENT_BARE_TEMPORAL" -temporal-namespace "$MEMAGENT_BARE_NAMESPACE" \
      -temporal-db "$MEMAGENT_BARE_POSTGRES" -temporal-dynamic-config "$MEMAGENT_BARE_DYNAMIC_CONFIG" \
      -temporal-pid "$MEMAGENT_BARE_TEMPORAL_PID" -postgres-pid "$MEMAGENT_BARE_POSTGRES_PID" -postgres-url "$MEMAGENT_BARE_POSTGRES_URL" \
      -command "bench/postgres.sh $s${flags[*]:+ -- ${flags[*]}}" "${flags[@]}"
    log "section $s done in $((SECONDS - began))s"
  done
  exit 0
fi

# The bench binary first, so nothing compiles while the server runs.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memagent-pg-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "building the bench"
GOFLAGS="${GOFLAGS:-} -buildvcs=false" go build -o "$tmp/bench" ./bench
MEMAGENT_BARE_PG_OPTIONS="${MEMAGENT_BARE_PG_OPTIONS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all" \
  MEMAGENT_PG_BENCH_BIN=$tmp/bench bash deploy/bare/run.sh --temporal bash "$root/bench/postgres.sh" "${sections[@]}" -- "${flags[@]}"
