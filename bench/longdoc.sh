#!/usr/bin/env bash
# Long-document benchmark: one question over generated documents of several
# lengths, each through a fresh worker process, against one dev stack
# process (embedded Temporal + S3 + inference simulator). Reports wall time,
# the worker's peak RSS, chunks, and the history size of every
# continue-as-new run, so the figures for different lengths sit side by side.
#
#   bench/longdoc.sh [TOKENS ...]        default: 120000 3500000
#
# Uses the dev stack's default ports (7233, 8233, 9000, 8000): stop any
# running `devstack` first. The simulator answers instantly, so wall
# time measures the system's own overhead, not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(120000 3500000)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/worker" ./worker
go build -o "$work/starter" ./starter
go build -o "$work/devstack" ./devstack

"$work/devstack" --no-worker --in-memory >"$work/stack.log" 2>&1 &
stack_pid=$!
for _ in $(seq 300); do grep -q "dev stack ready" "$work/stack.log" && break; sleep 0.1; done
grep -q "dev stack ready" "$work/stack.log" || { cat "$work/stack.log"; exit 1; }

printf '%-10s %8s %7s %10s %12s %6s %14s %14s %s\n' tokens bytes chunks wall_s worker_rss_mb runs max_run_events max_run_bytes answer
for n in "${sizes[@]}"; do
  "$work/starter" gen-doc --tokens "$n" --out "$work/doc-$n.txt" >/dev/null
  "$work/worker" >"$work/worker-$n.log" 2>&1 &
  worker_pid=$!
  for _ in $(seq 300); do grep -q "worker polling" "$work/worker-$n.log" && break; sleep 0.1; done
  start=$(date +%s.%N)
  "$work/starter" ask --doc "$work/doc-$n.txt" --question "What is the access code for the north gate of the Halvorsen observatory?" \
    --answer 7391-ALPHA --fresh --json >"$work/result-$n.json"
  end=$(date +%s.%N)
  rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$worker_pid/status")
  id=$(sed -E 's/.*"workflow_id":"([^"]+)".*/\1/' "$work/result-$n.json")
  "$work/starter" status --history "$id" >"$work/history-$n.txt"
  kill "$worker_pid"; wait "$worker_pid" 2>/dev/null || true
  runs=$(awk '/^runs:/ {print $2}' "$work/history-$n.txt")
  read -r ev by < <(awk '/^largest run history/ {print $4, $6}' "$work/history-$n.txt")
  printf '%-10s %8s %7s %10.1f %12.1f %6s %14s %14s %s\n' "$n" "$(stat -c %s "$work/doc-$n.txt")" \
    "$(sed -E 's/.*"chunks":([0-9]+).*/\1/' "$work/result-$n.json")" "$(echo "$end - $start" | bc)" \
    "$(echo "$rss_kb / 1024" | bc -l)" "$runs" "$ev" "$by" "$(sed -E 's/.*"answer":"([^"]*)".*/\1/' "$work/result-$n.json")"
done
stack_rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$stack_pid/status")
printf 'dev stack process (Temporal + S3 + simulator) peak RSS: %.1f MB\n' "$(echo "$stack_rss_kb / 1024" | bc -l)"
