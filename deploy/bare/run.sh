#!/usr/bin/env bash
# docker-compose.yml's topology from binaries, on one host, without a
# container engine: PostgreSQL in a temporary directory, Temporal's schemas
# created with its SQL tool, temporalio/server's binary with the compose
# file's dynamic config, versitygw, the inference simulator and the worker
# as separate processes, then one `starter ask` on a generated document. It
# prints the planted answer and stops everything.
#
#   deploy/bare/run.sh                    # the whole run; exit 0 = the planted answer came back
#   deploy/bare/run.sh --print-env SVC    # the environment it gives compose service SVC
#   deploy/bare/run.sh --print-command SVC
#   deploy/bare/run.sh --temporal CMD ARGS...   # PostgreSQL and Temporal only, then CMD
#   deploy/bare/run.sh --upgrade          # docs/DEPLOY.md's "Upgrading", step by step
#
# --temporal starts PostgreSQL, the schema job, the server and the setup job
# (namespace and search attributes) as the whole run does, none of the rest,
# and runs CMD with the server in its environment: MEMAGENT_BARE_TEMPORAL
# (host:port), MEMAGENT_BARE_NAMESPACE, MEMAGENT_BARE_DYNAMIC_CONFIG (the
# server's file) and MEMAGENT_BARE_POSTGRES (e.g. "PostgreSQL 15.18"). It
# exits with CMD's status, after stopping everything. bench/postgres.sh uses
# it. With --temporal it also sets MEMAGENT_BARE_TEMPORAL_PID and
# MEMAGENT_BARE_POSTGRES_PID (the server's and the postmaster's process ids,
# whose CPU the bench reads) and MEMAGENT_BARE_POSTGRES_URL (a URL psql
# takes, for the database's statistics).
# MEMAGENT_BARE_PG_OPTIONS adds server options to PostgreSQL's command line
# (e.g. "-c shared_preload_libraries=pg_stat_statements").
#
# Every setting comes from docker-compose.yml, resolved with the env file
# (.env if present, else .env.example; MEMAGENT_BARE_ENV_FILE overrides) by
# deploy/composecheck, the loader `docker compose config` uses. Versions
# too: temporal-server and temporal-sql-tool are built at the tag of the
# compose file's temporalio/server image, versitygw at its image's tag. What
# one host changes, and nothing else, is applied to that resolved file:
#   - service addresses become 127.0.0.1 and free ports (other people's
#     stacks may hold the compose ports), including Temporal's own ports
#     (FRONTEND_GRPC_PORT and the like, which the server's template reads);
#   - bind mounts become their files in this checkout, named volumes
#     directories under the run's temporary directory, and admin-tools'
#     /etc/temporal/schema the server module's schema directory;
#   - the OpenTelemetry collector is not started: OTEL_EXPORTER_OTLP_ENDPOINT
#     is dropped, unless MEMAGENT_BARE_OTLP names a collector (e.g. a Jaeger
#     v2 binary's http://127.0.0.1:4318) to send traces to instead.
# deploy/bare_test.go checks this against the compose file.
#
# --upgrade runs the same services, then two builds of the worker as
# versions of the Worker Deployment "memagent" and the `temporal` CLI (built
# from the module proxy, like the server) for every operator step: build
# bare-v1 made current starts a long question and a batch; bare-v2 starts,
# takes about half of 20 new runs at a 50% ramp, and is made current; the
# long runs continue as new onto it at their next boundary; a new run starts
# on it; bare-v1 drains, is stopped and its retirement is tried. It prints
# each command and what it answered, and exits 0 when every step did what
# the guide says. Its server reads the compose dynamic config plus two
# settings that let a drained build say so within seconds (a server with
# the defaults takes up to 6 minutes).
#
# Needs: go, jq, curl, PostgreSQL's server binaries (Debian: postgresql).
# Binaries it builds are kept in MEMAGENT_BARE_CACHE (default
# ~/.cache/memagent/bare); the first run builds Temporal's server (minutes).
# MEMAGENT_BARE_V1_REF=REF (with --upgrade) builds bare-v1 from git ref REF,
# the build before a change, and bare-v2 from this checkout.
# MEMAGENT_BARE_KEEP=1 keeps the temporary directory (logs) after the run;
# MEMAGENT_BARE_RESULT=FILE copies the ask's JSON result (workflow_id,
# chunks, answer, ...) to FILE.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

mode=run service= inner=()
case "${1:-}" in
  --print-env | --print-command) mode=${1#--}; service=${2:?"$1 needs a compose service name"} ;;
  --temporal) mode=temporal; shift; inner=("$@"); [ ${#inner[@]} -gt 0 ] || { echo "$0: --temporal needs a command" >&2; exit 2; } ;;
  --upgrade) mode=upgrade ;;
  "") ;;
  *) echo "usage: $0 [--print-env SERVICE | --print-command SERVICE | --temporal CMD ARGS... | --upgrade]" >&2; exit 2 ;;
esac

env_file=${MEMAGENT_BARE_ENV_FILE:-}
if [ -z "$env_file" ]; then
  env_file=.env.example
  [ -f .env ] && env_file=.env
fi
cache=${MEMAGENT_BARE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memagent/bare}
mkdir -p "$cache/bin"
work=$(mktemp -d "${TMPDIR:-/tmp}/memagent-bare.XXXXXX")
chmod 755 "$work"

log() { printf '%s bare: %s\n' "$(date +%T)" "$*" >&2; }

pids=()
env_over=() upgrade_dc=
pg_ctl_bin= pg_data= as_pg=()
cleanup() {
  local code=$?
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$pg_data" ] && [ -f "$pg_data/postmaster.pid" ]; then
    "${as_pg[@]}" "$pg_ctl_bin" -D "$pg_data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ "${MEMAGENT_BARE_KEEP:-}" = 1 ]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The resolved compose project: the simulator profile (no GPU here) and the
# cli profile, whose starter service is what `docker compose run starter` uses.
go -C deploy/composecheck build -o "$cache/bin/composecheck" .
compose=$work/compose.json
"$cache/bin/composecheck" -f docker-compose.yml --env-file "$env_file" \
  --profile simulator --profile cli >"$compose"

image_tag() { jq -r --arg s "$1" '.services[$s].image | sub("^[^:]*:"; "")' "$compose"; }
temporal_version=$(image_tag temporal)
versitygw_version=$(image_tag s3)
temporal_cli_version=1.5.1
schema_module=$(go mod download -json "go.temporal.io/server@v${temporal_version#v}" | jq -r .Dir)

# Free ports, a block of them: ports[name]. A port is taken when something
# accepts a connection on it.
declare -A ports
port_names=(postgresql temporal s3 inference otel worker worker2
  FRONTEND_HTTP_PORT FRONTEND_MEMBERSHIP_PORT HISTORY_GRPC_PORT HISTORY_MEMBERSHIP_PORT
  MATCHING_GRPC_PORT MATCHING_MEMBERSHIP_PORT WORKER_GRPC_PORT WORKER_MEMBERSHIP_PORT
  INTERNAL_FRONTEND_GRPC_PORT INTERNAL_FRONTEND_HTTP_PORT INTERNAL_FRONTEND_MEMBERSHIP_PORT)
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Below 32768: Temporal's cluster_membership table keeps a membership port
# as a PostgreSQL smallint.
for _ in $(seq 50); do
  base=$((20000 + RANDOM % (32768 - 20000 - ${#port_names[@]}))) ok=1
  for ((i = 0; i < ${#port_names[@]}; i++)); do
    port_free $((base + i)) || { ok=0; break; }
  done
  [ "$ok" = 1 ] && break
done
[ "$ok" = 1 ] || { echo "bare: no block of ${#port_names[@]} free ports found" >&2; exit 1; }
for ((i = 0; i < ${#port_names[@]}; i++)); do ports[${port_names[i]}]=$((base + i)); done
otlp=${MEMAGENT_BARE_OTLP:-}

# The one-host rewrites, as jq: addresses, then paths. A value that is a
# compose host name alone becomes 127.0.0.1; host:port and 0.0.0.0:port
# become 127.0.0.1 and the port picked for that service.
rewrite_jq='
def addr($v):
  $v
  | gsub("(?<h>postgresql|0\\.0\\.0\\.0)?:5432\\b"; "127.0.0.1:\($p.postgresql)")
  | gsub("\\btemporal:7233\\b"; "127.0.0.1:\($p.temporal)")
  | gsub("(?<h>\\bs3)?:7070\\b"; "127.0.0.1:\($p.s3)")
  | gsub("(?<h>\\binference|0\\.0\\.0\\.0):8000\\b"; "127.0.0.1:\($p.inference)")
  | gsub("0\\.0\\.0\\.0:9464\\b"; "127.0.0.1:\($p.worker)")
  | gsub("127\\.0\\.0\\.1:7243\\b"; "127.0.0.1:\($p.FRONTEND_HTTP_PORT)")
  | gsub("\\bhttp://otel-collector:4318\\b"; $otlp)
  | if . == "postgresql" or . == "0.0.0.0" then "127.0.0.1"
    elif . == "5432" then "\($p.postgresql)" else . end;
def path($s):
  reduce ($s.volumes // [])[] as $m (.;
    if $m.type == "bind" then gsub("^" + $m.target; $root + "/" + ($m.source | ltrimstr("./")))
    elif $m.type == "volume" then gsub("^" + $m.target + "\\b"; $work + "/" + $m.source)
    else . end)
  | gsub("^/etc/temporal/schema"; $schema + "/schema");
def rw($s): addr(.) | path($s);
'
ports_json=$(for k in "${!ports[@]}"; do printf '"%s":%s,' "$k" "${ports[$k]}"; done)
jq_args=(--argjson p "{${ports_json%,}}" --arg otlp "$otlp" --arg root "$root" --arg work "$work" --arg schema "$schema_module")

# svc_env SERVICE: KEY=VALUE lines, the compose environment rewritten for
# this host (and Temporal's ports, for the server).
svc_env() {
  jq -r "${jq_args[@]}" --arg s "$1" "$rewrite_jq"'
    .services[$s] as $svc
    | ($svc.environment // {}) | to_entries[]
    | select(.key != "OTEL_EXPORTER_OTLP_ENDPOINT" or $otlp != "")
    | "\(.key)=\(.value // "" | rw($svc))"' "$compose"
  if [ "$1" = temporal ]; then
    echo "FRONTEND_GRPC_PORT=${ports[temporal]}"
    for k in "${port_names[@]}"; do
      [[ $k == *_PORT ]] && echo "$k=${ports[$k]}"
    done
  fi
  return 0
}

# svc_command SERVICE: the compose command (or entrypoint and command), one
# argument a line, rewritten; image paths of memagent's own binaries become
# the ones built here.
svc_command() {
  jq -r "${jq_args[@]}" --arg s "$1" --arg bin "$cache/bin" "$rewrite_jq"'
    .services[$s] as $svc
    | (($svc.entrypoint // []) + ($svc.command // []))[]
    | rw($svc) | sub("^/(?<b>starter|worker|devstack)$"; "\($bin)/\(.b)")' "$compose"
}

case $mode in
  print-env) svc_env "$service"; exit 0 ;;
  print-command) svc_command "$service"; exit 0 ;;
esac

for tool in jq curl; do
  command -v "$tool" >/dev/null || { echo "bare: $tool is needed (Debian: apt-get install $tool)" >&2; exit 1; }
done
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$pg_bin/initdb" ] || { echo "bare: PostgreSQL's server binaries are needed (Debian: apt-get install postgresql)" >&2; exit 1; }

# Binaries: Temporal's at the compose image's version, from the module
# proxy (kept between runs), and memagent's from this checkout.
build_at() { # name, package@version
  local out=$cache/bin/$1
  if [ ! -x "$out" ]; then
    log "building $2 (once; kept in $cache/bin)"
    GOBIN=$work/gobin go install "$2"
    mv "$work/gobin/$(basename "${2%@*}")" "$out"
  fi
  echo "$out"
}
temporal_server=$(build_at "temporal-server-$temporal_version" "go.temporal.io/server/cmd/server@v${temporal_version#v}")
sql_tool=$(build_at "temporal-sql-tool-$temporal_version" "go.temporal.io/server/cmd/tools/sql@v${temporal_version#v}")
if [ "$mode" = run ] || [ "$mode" = upgrade ]; then
  versitygw=$(build_at "versitygw-$versitygw_version" "github.com/versity/versitygw/cmd/versitygw@$versitygw_version")
  log "building the worker, the starter and devstack (the simulator, gen-doc)"
  go build -o "$cache/bin/worker" ./worker
  go build -o "$cache/bin/devstack" ./devstack
else
  log "building the starter (its setup job registers the namespace and the search attributes)"
fi
go build -o "$cache/bin/starter" ./starter
if [ "$mode" = upgrade ]; then
  # The CLI release whose worker deployment commands match the server's
  # (1.5 and later; the newer releases' go.mod replaces a module of their
  # own, which go install refuses).
  temporal_cli=$(build_at "temporal-cli-$temporal_cli_version" "github.com/temporalio/cli/cmd/temporal@v$temporal_cli_version")
  # Two builds of the worker whose only difference is the version they
  # carry: each polls as its own version, its build id by default.
  for b in v1 v2; do
    go build -ldflags "-X github.com/memagent/memagent/internal/buildinfo.version=bare-$b" -o "$cache/bin/worker-$b" ./worker
  done
  # MEMAGENT_BARE_V1_REF=<git ref>: build v1 from that commit instead (the
  # build before a workflow change), so the upgrade carries runs in flight
  # from the old code onto this checkout's.
  if [ -n "${MEMAGENT_BARE_V1_REF:-}" ]; then
    v1src=$(mktemp -d)
    git -C "$root" worktree add --detach --quiet "$v1src/src" "$MEMAGENT_BARE_V1_REF"
    (cd "$v1src/src" && go build -ldflags "-X github.com/memagent/memagent/internal/buildinfo.version=bare-v1" -o "$cache/bin/worker-v1" ./worker)
    git -C "$root" worktree remove --force "$v1src/src"
    rm -rf "$v1src"
    log "bare-v1 built from $MEMAGENT_BARE_V1_REF ($(git -C "$root" rev-parse --short "$MEMAGENT_BARE_V1_REF"))"
  fi
fi

# start NAME SERVICE ARGV...: runs ARGV with SERVICE's environment (and
# nothing else from this shell but PATH and HOME, and env_over's KEY=VALUE
# entries over it), logging to $work/NAME.log.
start() {
  local name=$1 svc=$2; shift 2
  local -a env=()
  mapfile -t env < <(svc_env "$svc")
  env -i PATH="$PATH" HOME="$HOME" "${env[@]}" "${env_over[@]}" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}
# run_job SERVICE: runs a compose job's command to completion.
run_job() {
  local -a env=() argv=()
  mapfile -t env < <(svc_env "$1")
  mapfile -t argv < <(svc_command "$1")
  env -i PATH="$PATH" HOME="$HOME" "${env[@]}" TEMPORAL_SQL_TOOL="$sql_tool" "${argv[@]}" >"$work/$1.log" 2>&1 ||
    { tail -n 30 "$work/$1.log" >&2; echo "bare: $1 failed" >&2; return 1; }
}
# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds, or fail.
wait_for() {
  local what=$1 limit=$2 deadline=$((SECONDS + $2)); shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then
      echo "bare: $what not ready after ${limit}s; logs in $work (MEMAGENT_BARE_KEEP=1 keeps them)" >&2
      for f in "$work"/*.log; do echo "== $f" >&2; tail -n 15 "$f" >&2; done
      return 1
    fi
    sleep 0.5
  done
}
svc_var() { svc_env "$1" | sed -n "s/^$2=//p"; }

began=$SECONDS

# PostgreSQL, as the postgres image does it: POSTGRES_USER with
# POSTGRES_PASSWORD. The server refuses to run as root.
pg_ctl_bin=$pg_bin/pg_ctl pg_dir=$work/postgresql pg_data=$work/postgresql/data
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
mkdir -p "$pg_dir"
svc_var postgresql POSTGRES_PASSWORD >"$pg_dir/password"
[ "$(id -u)" = 0 ] && chown -R postgres "$pg_dir"
"${as_pg[@]}" "$pg_bin/initdb" -D "$pg_data" -U "$(svc_var postgresql POSTGRES_USER)" \
  --pwfile="$pg_dir/password" -A scram-sha-256 >"$work/initdb.log" 2>&1
"${as_pg[@]}" "$pg_ctl_bin" -D "$pg_data" -l "$pg_dir/postgresql.log" -w start \
  -o "-p ${ports[postgresql]} -k $pg_dir -c listen_addresses=127.0.0.1 ${MEMAGENT_BARE_PG_OPTIONS:-}" >/dev/null
log "postgresql on 127.0.0.1:${ports[postgresql]}"

log "temporal-schema: $(svc_command temporal-schema | tr '\n' ' ')"
run_job temporal-schema

if [ "$mode" = upgrade ]; then
  # The compose file's dynamic config, and a drained build said so in
  # seconds (defaults: a 3-minute grace for visibility, refreshed every 3
  # minutes), as the embedded dev stack does.
  upgrade_dc=$work/dynamicconfig-upgrade.yaml
  { cat "$(svc_var temporal DYNAMIC_CONFIG_FILE_PATH)"; printf '%s\n' \
    '' '# deploy/bare/run.sh --upgrade only.' \
    'matching.wv.VersionDrainageStatusVisibilityGracePeriod:' '  - value: 10s' \
    'matching.wv.VersionDrainageStatusRefreshInterval:' '  - value: 1s'; } >"$upgrade_dc"
  env_over=("DYNAMIC_CONFIG_FILE_PATH=$upgrade_dc")
fi
start temporal temporal "$temporal_server" start
temporal_pid=${pids[-1]}
env_over=()
health=$(jq -r '.services.temporal.healthcheck.test | last' "$compose" |
  sed "s/127\.0\.0\.1:7243/127.0.0.1:${ports[FRONTEND_HTTP_PORT]}/")
wait_for "temporal (its compose health check, $health)" 120 curl -fsS "$health"
log "temporal on 127.0.0.1:${ports[temporal]}, dynamic config ${upgrade_dc:-$(svc_var temporal DYNAMIC_CONFIG_FILE_PATH)}"

if [ "$mode" = temporal ]; then
  run_job setup
  log "setup: $(tail -n 1 "$work/setup.log"); running ${inner[*]}"
  code=0
  MEMAGENT_BARE_TEMPORAL=127.0.0.1:${ports[temporal]} \
    MEMAGENT_BARE_NAMESPACE=$(svc_var setup TEMPORAL_NAMESPACE) \
    MEMAGENT_BARE_DYNAMIC_CONFIG=$(svc_var temporal DYNAMIC_CONFIG_FILE_PATH) \
    MEMAGENT_BARE_POSTGRES="PostgreSQL $("$pg_bin/postgres" --version | sed -E 's/^[^0-9]*([0-9][0-9.]*).*/\1/')" \
    MEMAGENT_BARE_TEMPORAL_PID=$temporal_pid MEMAGENT_BARE_POSTGRES_PID=$(head -n 1 "$pg_data/postmaster.pid") \
    MEMAGENT_BARE_POSTGRES_URL="postgresql://$(svc_var postgresql POSTGRES_USER):$(cat "$pg_dir/password")@127.0.0.1:${ports[postgresql]}/$(svc_var temporal-schema TEMPORAL_DB || true)" \
    "${inner[@]}" || code=$?
  log "${inner[0]} exited $code after $((SECONDS - began))s; stopping everything"
  exit "$code"
fi

mapfile -t s3_argv < <(svc_command s3)
mkdir -p "$work/s3-data"
start s3 s3 "$versitygw" "${s3_argv[@]}"
mapfile -t sim_argv < <(svc_command simulator)
# --upgrade: model calls that take their time, so that runs are in flight
# across the upgrade's steps.
[ "$mode" != upgrade ] || sim_argv+=(--latency 300ms)
start simulator simulator "${sim_argv[@]}"
wait_for "simulator" 60 curl -fsS "http://127.0.0.1:${ports[inference]}/v1/models"
wait_for "s3" 60 curl -sS -o /dev/null "http://127.0.0.1:${ports[s3]}/"
log "versitygw on 127.0.0.1:${ports[s3]}, simulator on 127.0.0.1:${ports[inference]}"

run_job setup
log "setup: $(tail -n 1 "$work/setup.log")"

if [ "$mode" = upgrade ]; then
  source deploy/bare/upgrade.sh
  exit 0
fi

mapfile -t worker_argv < <(svc_command worker)
start worker worker "${worker_argv[@]}"
wait_for "worker" 120 curl -fsS "http://127.0.0.1:${ports[worker]}/readyz"
log "worker ready on 127.0.0.1:${ports[worker]}, $((SECONDS - began))s after PostgreSQL started"

# One question about a generated document with a planted fact.
mapfile -t starter_env < <(svc_env starter)
starter() { env -i PATH="$PATH" HOME="$HOME" "${starter_env[@]}" "$cache/bin/starter" "$@"; }
# The demo's document: a developer's tool, devstack's.
gendoc() { "$cache/bin/devstack" gen-doc "$@"; }
gendoc --tokens "${MEMAGENT_BARE_TOKENS:-20000}" --out "$work/document.txt" >"$work/gen-doc.txt"
question=$(sed -n 's/^question: //p' "$work/gen-doc.txt")
answer=$(sed -n 's/^answer: *//p' "$work/gen-doc.txt")
log "asking: $question"
starter ask --doc "$work/document.txt" --question "$question" --answer "$answer" --output json >"$work/ask.json" 2>"$work/ask.log" ||
  { tail -n 30 "$work/ask.log" >&2; exit 1; }
[ -z "${MEMAGENT_BARE_RESULT:-}" ] || cp "$work/ask.json" "$MEMAGENT_BARE_RESULT"
got=$(jq -r '.answer' "$work/ask.json")
echo "answer: $got"
echo "planted: $answer"
if [[ ${got,,} != *"${answer,,}"* ]]; then
  echo "bare: the answer does not contain the planted fact" >&2
  exit 1
fi
log "done in $((SECONDS - began))s after the builds; stopping everything"
