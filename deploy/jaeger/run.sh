#!/usr/bin/env bash
# One trace of one `starter ask`, in a real Jaeger: builds Jaeger v2 from the
# Go module proxy, starts it on loopback with in-memory storage and its UI,
# runs deploy/bare/run.sh with MEMAGENT_BARE_OTLP pointing at Jaeger's
# OTLP/HTTP receiver, then checks through Jaeger's HTTP API that ONE trace
# holds the starter's root span, the workflow's spans, the activities' spans
# and one model-call span per chunk, checks that the UI renders that trace,
# takes a screenshot of it with headless Chromium and stops Jaeger.
#
#   deploy/jaeger/run.sh                  # exit 0 = every check passed, screenshot written
#   deploy/jaeger/run.sh --no-screenshot  # the API checks only (no UI assets needed)
#
# Jaeger: the module github.com/jaegertracing/jaeger at MEMAGENT_JAEGER_VERSION
# (default v1.76.0, whose cmd/jaeger is Jaeger v2.13.0). `go install` refuses
# it (its go.mod has replace directives), so it is built from a copy of the
# module. The binary is kept in MEMAGENT_JAEGER_CACHE (default
# ~/.cache/memagent/jaeger); the first build takes about 10 minutes on 2 busy
# cores.
#
# The UI: the module embeds only a placeholder page, and jaeger-ui is
# published to no package registry these machines reach, so this script does
# not build it. Give it a production build of jaeger-ui at the same version
# (the directory holding index.html and static/) in MEMAGENT_JAEGER_UI
# (default $MEMAGENT_JAEGER_CACHE/ui); Jaeger serves it through its
# jaeger_query extension's ui.assets_path. Without it, only --no-screenshot
# runs.
#
# The screenshot (1600 pixels wide, as tall as the trace's rows need) goes
# to MEMAGENT_JAEGER_SCREENSHOT (default docs/jaeger-trace.png).
# MEMAGENT_JAEGER_KEEP=1 keeps the temporary directory (Jaeger's log and
# config, the trace's JSON, the UI page's DOM). Everything else
# (MEMAGENT_BARE_*) goes to deploy/bare/run.sh, whose header says what it
# needs. Needs also: chromium (scripts/test-deps.sh installs it).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

screenshot=1
case "${1:-}" in
  --no-screenshot) screenshot=0 ;;
  "") ;;
  *) echo "usage: $0 [--no-screenshot]" >&2; exit 2 ;;
esac

version=${MEMAGENT_JAEGER_VERSION:-v1.76.0}
cache=${MEMAGENT_JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memagent/jaeger}
ui=${MEMAGENT_JAEGER_UI:-$cache/ui}
shot=${MEMAGENT_JAEGER_SCREENSHOT:-$root/docs/jaeger-trace.png}
chromium=${CHROMIUM:-/usr/bin/chromium}
mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/memagent-jaeger.XXXXXX")

log() { printf '%s jaeger: %s\n' "$(date +%T)" "$*" >&2; }
fail() { echo "jaeger: $*" >&2; exit 1; }

jaeger_pid=
cleanup() {
  local code=$?
  if [ -n "$jaeger_pid" ]; then
    kill -TERM "$jaeger_pid" 2>/dev/null || true
    wait "$jaeger_pid" 2>/dev/null || true
  fi
  if [ "${MEMAGENT_JAEGER_KEEP:-}" = 1 ]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in go jq curl; do
  command -v "$tool" >/dev/null || fail "$tool is needed"
done
if [ "$screenshot" = 1 ]; then
  [ -f "$ui/index.html" ] && [ -d "$ui/static" ] ||
    fail "no jaeger-ui build in $ui (index.html and static/ of jaeger-ui $version); set MEMAGENT_JAEGER_UI, or run with --no-screenshot"
  [ -x "$chromium" ] || fail "$chromium is missing (scripts/test-deps.sh installs it)"
fi

# Jaeger v2, built once per version from a writable copy of the module.
jaeger=$cache/jaeger-$version
if [ ! -x "$jaeger" ]; then
  log "building jaeger $version's cmd/jaeger (once; kept in $cache)"
  mod=$(go mod download -json "github.com/jaegertracing/jaeger@$version" | jq -r .Dir)
  cp -r "$mod" "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && GOFLAGS=-buildvcs=false go build -trimpath -o "$jaeger.tmp" ./cmd/jaeger)
  mv "$jaeger.tmp" "$jaeger"
  rm -rf "$work/src"
fi

# Three free loopback ports: OTLP/HTTP, the query service's HTTP and gRPC.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 50); do
  base=$((33000 + RANDOM % 20000)) ok=1
  for i in 0 1 2; do port_free $((base + i)) || { ok=0; break; }; done
  [ "$ok" = 1 ] && break
done
[ "$ok" = 1 ] || fail "no block of 3 free ports found"
otlp_port=$base query_port=$((base + 1)) query_grpc_port=$((base + 2))
query=http://127.0.0.1:$query_port

# Jaeger serves a copy of the UI with one page more, which widens the span
# name column of the trace view (a setting the UI keeps in localStorage) so
# that the screenshot shows the operations' names whole.
ui_config=""
if [ "$screenshot" = 1 ]; then
  cp -r "$ui" "$work/ui"
  echo '<script>localStorage.setItem("spanNameColumnWidth", "0.4")</script>' >"$work/ui/static/memagent-layout.html"
  ui_config="    ui:
      assets_path: $work/ui"
fi
cat >"$work/jaeger.yaml" <<EOF
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_storage:
    backends:
      memory_store:
        memory:
          max_traces: 1000
  jaeger_query:
    storage:
      traces: memory_store
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:$query_port
    grpc:
      endpoint: 127.0.0.1:$query_grpc_port
$ui_config
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$otlp_port
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: memory_store
EOF

"$jaeger" --config "$work/jaeger.yaml" >"$work/jaeger.log" 2>&1 &
jaeger_pid=$!
deadline=$((SECONDS + 60))
until curl -fsS "$query/api/services" >/dev/null 2>&1; do
  if ! kill -0 "$jaeger_pid" 2>/dev/null || ((SECONDS > deadline)); then
    tail -n 30 "$work/jaeger.log" >&2
    fail "jaeger did not start"
  fi
  sleep 0.5
done
log "jaeger $version: OTLP/HTTP on 127.0.0.1:$otlp_port, UI and API on $query"

# The run: every memagent process sends its spans to Jaeger.
MEMAGENT_BARE_OTLP=http://127.0.0.1:$otlp_port MEMAGENT_BARE_RESULT=$work/ask.json \
  bash deploy/bare/run.sh
chunks=$(jq -r .chunks "$work/ask.json")
workflow_id=$(jq -r .workflow_id "$work/ask.json")
[[ $chunks =~ ^[1-9][0-9]*$ ]] || fail "the ask's result names no chunk count"
log "the ask read $chunks chunks (workflow $workflow_id)"

# The trace: the starter's root span and what hangs under it. Each span as
# {name, id, parent, kind (memagent.call.kind), service}.
spans_jq='
  .data[0] as $t
  | [$t.spans[] | {
      name: .operationName, id: .spanID,
      parent: ([.references[]? | select(.refType == "CHILD_OF") | .spanID] | first),
      kind: ([.tags[]? | select(.key == "memagent.call.kind") | .value] | first),
      service: $t.processes[.processID].serviceName}]'
# The checks: each failure as a line.
check_jq="$spans_jq"' as $s
  | ($s | map(.id)) as $ids
  | ($s | map(select(.name == $u)) | map(.id)) as $updates
  | ($s | map(select(.name == "RunActivity:memagent.AnswerAndGround")) | map(.id)) as $answers
  | def n($name): $s | map(select(.name == $name)) | length;
    def chats($kind): $s | map(select((.name | startswith("chat ")) and .kind == $kind));
  [ (if (.data | length) != 1 then "\(.data | length) traces with a \"starter ask\" span, want 1" else empty end),
    (if n("starter ask") != 1 then "\(n("starter ask")) \"starter ask\" spans, want 1" else empty end),
    ($s[] | select(.name == "starter ask" and .parent != null) | "the \"starter ask\" span has a parent"),
    ("StartWorkflow:memagent.DocumentQA", "RunWorkflow:memagent.DocumentQA",
     "RunActivity:memagent.PrepareReading", "RunActivity:memagent.AnswerAndGround"
     | select(n(.) < 1) | "no \(.) span"),
    (if n($u) < $chunks then "\(n($u)) \($u) spans for \($chunks) chunks" else empty end),
    (chats("update") | length | select(. != $chunks) | "\(.) update model-call spans for \($chunks) chunks, want one per chunk"),
    (chats("final") | length | select(. != 1) | "\(.) final model-call spans, want 1"),
    (chats("update")[] | select(.parent as $p | $updates | any(.[]; . == $p) | not)
     | "model-call span \(.name) \(.id) is not a child of a \($u) span"),
    (chats("final")[] | select(.parent as $p | $answers | any(.[]; . == $p) | not)
     | "final model-call span \(.name) \(.id) is not a child of a RunActivity:memagent.AnswerAndGround span"),
    ($s[] | select(.parent != null and (.parent as $p | $ids | any(.[]; . == $p) | not))
     | "span \(.name) (\(.service)) has a parent outside the trace")
  ] | .[]'

api="$query/api/traces?service=memagent-starter&operation=starter%20ask&lookback=1h&limit=20"
deadline=$((SECONDS + 60))
while :; do
  curl -fsS "$api" >"$work/traces.json"
  problems=$(jq -r --argjson chunks "$chunks" --arg u "RunActivity:memagent.UpdateMemory" "$check_jq" "$work/traces.json")
  [ -z "$problems" ] && break
  if ((SECONDS > deadline)); then
    echo "$problems" >&2
    fail "the trace in Jaeger is not the one expected (MEMAGENT_JAEGER_KEEP=1 keeps $work/traces.json)"
  fi
  sleep 2
done
trace_id=$(jq -r '.data[0].traceID' "$work/traces.json")
jq "$spans_jq" "$work/traces.json" >"$work/spans.json"
log "trace $trace_id: $(jq length "$work/spans.json") spans from $(jq -r 'map(.service) | unique | join(", ")' "$work/spans.json")"
jq -r 'group_by(.name) | map("  \(length) × \(.[0].name)") | .[]' "$work/spans.json" >&2
echo "trace: $trace_id"
echo "spans: $(jq length "$work/spans.json")"
echo "model-call spans: $(jq '[.[] | select(.name | startswith("chat "))] | length' "$work/spans.json") ($chunks chunks + 1 final)"

[ "$screenshot" = 1 ] || { log "no screenshot (--no-screenshot)"; exit 0; }

# The UI: Jaeger serves the jaeger-ui build, not its placeholder, and the
# trace's page renders a row for each of the trace's spans, the model calls
# among them. The window is 1600 wide and tall enough for every row.
page=$query/trace/$trace_id
curl -fsS "$query/" >"$work/index.html"
grep -q 'This is not the Jaeger UI' "$work/index.html" && fail "jaeger serves its placeholder page, not $ui"
span_count=$(jq length "$work/spans.json")
height=$((300 + 29 * span_count))
((height >= 1200)) || height=1200
browse() {
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$work/chromium" --window-size="1600,$height" \
    --virtual-time-budget=15000 "$@" 2>>"$work/chromium.log"
}
browse --dump-dom "$query/static/memagent-layout.html" >/dev/null
browse --dump-dom "$page" >"$work/trace.html"
keep="(MEMAGENT_JAEGER_KEEP=1 keeps $work/trace.html)"
for want in "starter ask" "RunWorkflow:memagent.DocumentQA" "RunActivity:memagent.UpdateMemory" "memagent-worker"; do
  grep -qF "$want" "$work/trace.html" || fail "the UI's page of trace $trace_id does not show \"$want\" $keep"
done
rows=$(grep -o 'class="span-name-wrapper' "$work/trace.html" | wc -l)
((rows == span_count)) || fail "the UI's page of trace $trace_id has $rows span rows, want $span_count $keep"
model_rows=0
while read -r name; do
  model_rows=$((model_rows + $(grep -oF ">$name<" "$work/trace.html" | wc -l)))
done < <(jq -r 'map(select(.name | startswith("chat ")) | .name) | unique[]' "$work/spans.json")
((model_rows == chunks + 1)) || fail "the UI's page of trace $trace_id shows $model_rows model-call rows, want $((chunks + 1)) $keep"
mkdir -p "$(dirname "$shot")"
rm -f "$shot"
browse --screenshot="$shot" "$page" >/dev/null
[ -s "$shot" ] || fail "chromium wrote no screenshot"
log "screenshot (1600x$height) of $page in $shot"
