#!/usr/bin/env bash
# ui-check: the dev stack's Web UI shows a memagent run, findable by its
# document.
#
#   scripts/ui-check.sh [OUT_DIR]        (default OUT_DIR: a new temporary directory)
#
# Builds and starts `devstack --in-memory` (Temporal :7233, Web UI :8233,
# S3 :9000, simulator :8000, which must be free), asks one question about a
# generated document and one about another document, then loads in headless
# Chromium the workflow list filtered by the first document's
# MemagentDocument search attribute and the run's page. It checks their text
# (the run is listed, the other run is not, the run's page names the
# document) and saves screenshots to OUT_DIR: list.png, run.png and
# attributes.png. docs/ui-run.png is a list.png.
#
# Installs Debian's chromium when /usr/bin/chromium (or $CHROMIUM) is
# missing, which needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-$(mktemp -d)}
mkdir -p "$out"
chromium=${CHROMIUM:-/usr/bin/chromium}
ui=http://127.0.0.1:8233

if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "ui-check: $chromium is missing: install it as root (apt-get install -y chromium)" >&2
    exit 1
  fi
  echo "--- installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

for port in 7233 8233 9000 8000; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "ui-check: port $port is in use (another dev stack?): stop it first" >&2
    exit 1
  fi
done

bin=$(mktemp -d)
worker_pid=
cleanup() {
  if [ -n "$worker_pid" ]; then
    kill "$worker_pid" 2>/dev/null || true
    wait "$worker_pid" 2>/dev/null || true
  fi
  rm -rf "$bin"
}
trap cleanup EXIT

echo "--- building worker and starter"
go build -o "$bin/devstack" ./devstack
go build -o "$bin/starter" ./starter

echo "--- starting the dev stack and a worker (log: $out/worker.log)"
"$bin/devstack" --in-memory >"$out/worker.log" 2>&1 &
worker_pid=$!
deadline=$((SECONDS + 120))
until grep -q "worker polling" "$out/worker.log" && curl -sf -o /dev/null "$ui/"; do
  if ! kill -0 "$worker_pid" 2>/dev/null; then
    echo "ui-check: the worker exited:" >&2
    cat "$out/worker.log" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "ui-check: the dev stack was not ready within 120s" >&2
    exit 1
  fi
  sleep 0.5
done

echo "--- asking two questions about two documents"
"$bin/starter" gen-doc --tokens 30000 --out "$bin/contract.txt" >/dev/null
"$bin/starter" gen-doc --tokens 10000 --seed 3 --out "$bin/other.txt" >/dev/null
"$bin/starter" ask --doc "$bin/contract.txt" --batch ui-check --json \
  --question "What is the access code for the north gate of the Halvorsen observatory?" >"$out/ask.json"
"$bin/starter" ask --doc "$bin/other.txt" --batch ui-check --json --question "Who signed the lease?" >"$out/other.json"

field() { sed -n 's/.*"'"$1"'":"\([^"]*\)".*/\1/p' "$2"; }
urlencode() {
  local s=$1 i c
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      [a-zA-Z0-9._~-]) printf '%s' "$c" ;;
      *) printf '%%%02X' "'$c" ;;
    esac
  done
}
id=$(field workflow_id "$out/ask.json")
run=$(field run_id "$out/ask.json")
doc=$(field document "$out/ask.json")
other=$(field workflow_id "$out/other.json")
echo "run $id over $doc"

list_url="$ui/namespaces/default/workflows?query=$(urlencode "MemagentDocument=\"$doc\"")"
run_url="$ui/namespaces/default/workflows/$id/$run/history"
attrs_url="$ui/namespaces/default/workflows/$id/$run/search-attributes"

browse() { # browse --dump-dom|--screenshot=PATH URL
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$bin")" --virtual-time-budget=10000 --window-size=1400,1000 \
    "$1" "$2" 2>>"$out/chromium.log"
}

# expect URL FILE WANT... [! UNWANTED]: the rendered page's text holds every
# WANT and no UNWANTED; the UI renders from its API, so allow a few tries.
expect() {
  local url=$1 file=$2 ok
  shift 2
  for try in 1 2 3 4 5; do
    browse --dump-dom "$url" >"$file" || true
    ok=1
    local negate=
    for w in "$@"; do
      if [ "$w" = "!" ]; then negate=1; continue; fi
      if [ -n "$negate" ]; then
        if grep -qF -- "$w" "$file"; then ok=; fi
      elif ! grep -qF -- "$w" "$file"; then
        ok=
      fi
    done
    [ -n "$ok" ] && return 0
    sleep 2
  done
  echo "ui-check: $url: want $*; page saved as $file" >&2
  return 1
}

echo "--- checking the workflow list filtered by MemagentDocument"
expect "$list_url" "$out/list.html" "$id" "$doc" "MemagentDocument" ! "$other"
echo "--- checking the run's page"
expect "$run_url" "$out/run.html" "$id" "$doc"
expect "$attrs_url" "$out/attributes.html" "$id" "MemagentChunksDone" "MemagentStatus"

browse --screenshot="$out/list.png" "$list_url"
browse --screenshot="$out/run.png" "$run_url"
browse --screenshot="$out/attributes.png" "$attrs_url"
for png in list run attributes; do
  if [ ! -s "$out/$png.png" ]; then
    echo "ui-check: no screenshot $out/$png.png" >&2
    exit 1
  fi
done
echo "ok: the Web UI lists $id under its document and shows its page"
echo "screenshots: $out/list.png $out/run.png $out/attributes.png"
